package testenv

import (
	"os"
	"testing"
)

// Root skips a test that needs root (namespaces, other uids, cgroups) on a
// developer's `go test ./...` as another user, and fails it when
// QUAVON_TEST_REQUIRE_SERVICES=1: scripts/test runs as root.
func Root(tb testing.TB, why string) {
	tb.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if Required() {
		tb.Fatalf("needs root (%s), and QUAVON_TEST_REQUIRE_SERVICES=1; run scripts/test as root", why)
	}
	tb.Skipf("needs root: %s (scripts/test runs as root)", why)
}
