package main

import (
	"testing"

	"github.com/quavon/quavon/internal/deptest"
)

// quavon-sandbox-runner holds the container runtime, its Valkey user and the pool key: no database, no GitHub client or token, no model, and neither the proxy's nor PID 1's code (it shares only internal/sandbox/frame with the entry program).
func TestDeps(t *testing.T) {
	t.Parallel()
	deptest.Check(t, deptest.All(deptest.AppKeys, deptest.Writes, deptest.Models, deptest.Database, deptest.CodeHost, deptest.Proxy, deptest.Entry))
}
