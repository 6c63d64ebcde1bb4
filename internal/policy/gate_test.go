package policy

import "testing"

func TestReviewFixGateAsShippedAndLifted(t *testing.T) {
	if ReviewFixesSignedOff() {
		t.Fatal("the gate as shipped must be closed")
	}
	if got := Resolve([]byte(`{"version":1,"features":{"fix":{"mode":"approval","reviewFixes":"stacked_pr"}}}`), RepoFacts{}).Policy.Features.Fix.ReviewFixes; got != ReviewFixesOff {
		t.Fatalf("reviewFixes with the gate closed = %q, want off", got)
	}
	t.Run("lifted", func(t *testing.T) {
		LiftReviewFixGate(t)
		if !ReviewFixesSignedOff() {
			t.Fatal("lifted gate still closed")
		}
	})
	if ReviewFixesSignedOff() {
		t.Fatal("the lift outlived its test")
	}
}
