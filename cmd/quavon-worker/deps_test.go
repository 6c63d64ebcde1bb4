package main

import (
	"testing"

	"github.com/quavon/quavon/internal/deptest"
)

// quavon-worker holds the database, model keys and the sandbox key: no app key, no write token, no Docker.
func TestDeps(t *testing.T) {
	t.Parallel()
	deptest.Check(t, deptest.All(deptest.Runner, deptest.Entry, deptest.AppKeys, deptest.Writes, deptest.Containers, deptest.Proxy))
}
