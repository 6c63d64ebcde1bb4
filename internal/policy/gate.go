package policy

import (
	"sync/atomic"
	"testing"
)

// The review-fix gate is the constant ReviewFixSignedOff. Issue 23 asks for
// the whole feature to be built and tested with the gate lifted "only inside
// tests", while lifting it for real stays a reviewed code change. A build
// setting or a configuration key would let an operator lift it; instead the
// lift below exists only in test binaries: LiftReviewFixGate panics unless
// testing.Testing() reports a test binary, so no production program can
// call it to any effect.

var reviewFixLifted atomic.Bool

// ReviewFixesSignedOff reports whether review fixes may run: the shipped
// constant ReviewFixSignedOff, or a lift applied by a test with
// LiftReviewFixGate. Every check of the gate (API, worker, publisher,
// effective policy) goes through this function.
func ReviewFixesSignedOff() bool {
	return ReviewFixSignedOff || reviewFixLifted.Load()
}

// LiftReviewFixGate lifts the review-fix gate until the test ends. It
// panics outside a test binary. Tests that lift the gate must not run in
// parallel with tests of the gate as shipped in the same package.
func LiftReviewFixGate(t testing.TB) {
	t.Helper()
	if !testing.Testing() {
		panic("policy.LiftReviewFixGate called outside a test binary")
	}
	if !reviewFixLifted.CompareAndSwap(false, true) {
		t.Fatal("policy.LiftReviewFixGate: the gate is already lifted (two tests lifting it at once?)")
	}
	t.Cleanup(func() { reviewFixLifted.Store(false) })
}
