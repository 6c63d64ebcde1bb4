package main

import (
	"testing"

	"github.com/quavon/quavon/internal/deptest"
)

// quavon-publisher holds the database and write tokens from the broker: no app key, no model, no sandbox key, no Valkey, no Docker (ARCHITECTURE.md, processes). It is the only binary that links internal/github/writer.
func TestDeps(t *testing.T) {
	t.Parallel()
	deptest.Check(t, deptest.All(deptest.AppKeys, deptest.Models, deptest.Containers, deptest.Runner, deptest.SandboxKeys, deptest.Valkey, deptest.Proxy, deptest.Entry))
}

// TestLinksWriter: the publisher is the writer's one user; if it stopped
// linking it, the guards elsewhere would be guarding nothing.
func TestLinksWriter(t *testing.T) {
	t.Parallel()
	for _, d := range deptest.List(t, ".") {
		if d == "github.com/quavon/quavon/internal/github/writer" {
			return
		}
	}
	t.Fatal("quavon-publisher does not link internal/github/writer")
}
