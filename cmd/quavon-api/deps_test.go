package main

import (
	"testing"

	"github.com/quavon/quavon/internal/testenv"
)

// Only the publisher may link the code host's write methods (ARCHITECTURE.md,
// boundaries).
func TestLinksNoProviderWrites(t *testing.T) {
	testenv.AssertNoDeps(t, "github.com/quavon/quavon/internal/github/writer")
}
