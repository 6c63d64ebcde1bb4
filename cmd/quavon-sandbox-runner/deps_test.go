package main

import (
	"testing"

	"github.com/quavon/quavon/internal/testenv"
)

// TestRunnerLinksNoControlPlaneAccess: the runner binary must not be able
// to reach the database, a code host or a model.
func TestRunnerLinksNoControlPlaneAccess(t *testing.T) {
	t.Parallel()
	testenv.AssertNoDeps(t, testenv.ControlPlaneClients...)
}

// TestRunnerLinksNoSandboxSideCode: the runner speaks the entry program's
// protocol (internal/sandbox/frame) but links neither PID 1's code nor the
// egress proxy.
func TestRunnerLinksNoSandboxSideCode(t *testing.T) {
	t.Parallel()
	testenv.AssertNoDeps(t, "github.com/quavon/quavon/internal/sandbox/entry", "github.com/quavon/quavon/internal/egress")
}
