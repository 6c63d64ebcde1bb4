package main

import (
	"testing"

	"github.com/quavon/quavon/internal/deptest"
)

// quavon-scan-driver runs inside the scanners image: nothing of the control plane, no network client.
func TestDeps(t *testing.T) {
	t.Parallel()
	deptest.Check(t, deptest.All(deptest.AppKeys, deptest.Writes, deptest.Models, deptest.Containers, deptest.SandboxKeys, deptest.Database, deptest.Valkey, deptest.CodeHost, deptest.Proxy, deptest.Network))
}
