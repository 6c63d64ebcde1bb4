package main

import (
	"testing"

	"github.com/quavon/quavon/internal/deptest"
)

// quavon-api holds the database and webhook secrets: no app key, no write token, no model, no sandbox key, no Docker (ARCHITECTURE.md, processes).
func TestDeps(t *testing.T) {
	t.Parallel()
	deptest.Check(t, deptest.All(deptest.Runner, deptest.Entry, deptest.AppKeys, deptest.Writes, deptest.Models, deptest.Containers, deptest.SandboxKeys, deptest.Valkey, deptest.Proxy))
}
