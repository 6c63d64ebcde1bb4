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
