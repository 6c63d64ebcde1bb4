package main

import (
	"testing"

	"github.com/quavon/quavon/internal/deptest"
)

// quavon-gosec runs inside the scanners image: nothing of the control
// plane, no network client. It links package net only through crypto/tls
// and crypto/x509 (gosec's TLS rules read their constants), so of
// deptest.Network only net/http is forbidden.
func TestDeps(t *testing.T) {
	t.Parallel()
	deptest.Check(t, deptest.All(deptest.AppKeys, deptest.Writes, deptest.Models, deptest.Containers, deptest.SandboxKeys, deptest.Database, deptest.Valkey, deptest.CodeHost, deptest.Proxy,
		[]deptest.Rule{{Pattern: "net/http", Reason: "a network client: nothing inside the sandbox talks to the network"}}))
}
