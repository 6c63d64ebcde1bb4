package main

import (
	"testing"

	"github.com/quavon/quavon/internal/testenv"
)

// TestEgressLinksNothingElse: the proxy binary must not be able to reach
// the database, a code host, a model or the container runtime.
func TestEgressLinksNothingElse(t *testing.T) {
	t.Parallel()
	testenv.AssertNoDeps(t, append([]string{"github.com/docker/", "github.com/moby/", "github.com/containerd/",
		"github.com/quavon/quavon/internal/sandbox/runner"}, testenv.ControlPlaneClients...)...)
}
