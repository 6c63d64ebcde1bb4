package main

import (
	"testing"

	"github.com/quavon/quavon/internal/deptest"
)

// quavon-token-broker holds the apps' private keys and nothing else: no database, no model, no sandbox key, no Docker, no Valkey, and it writes nothing to GitHub.
func TestDeps(t *testing.T) {
	t.Parallel()
	deptest.Check(t, deptest.All(deptest.Runner, deptest.Entry, deptest.Writes, deptest.Models, deptest.Containers, deptest.SandboxKeys, deptest.Database, deptest.Valkey, deptest.Proxy))
}
