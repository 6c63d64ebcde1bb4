package main

import (
	"testing"

	"github.com/quavon/quavon/internal/deptest"
)

// quavon-sandbox-egress holds a read-only Valkey user: no Docker, no runner code, no database, no GitHub, no model.
func TestDeps(t *testing.T) {
	t.Parallel()
	deptest.Check(t, deptest.All(deptest.AppKeys, deptest.Writes, deptest.Models, deptest.Containers, deptest.Database, deptest.CodeHost, deptest.Runner))
}
