package main

import (
	"testing"

	"github.com/quavon/quavon/internal/deptest"
)

// The quavon CLI runs the operator's commands: it never holds an app key or writes to GitHub.
func TestDeps(t *testing.T) {
	t.Parallel()
	deptest.Check(t, deptest.All(deptest.AppKeys, deptest.Writes, deptest.Proxy))
}
