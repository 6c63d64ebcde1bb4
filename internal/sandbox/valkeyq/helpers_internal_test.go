package valkeyq

import (
	"bytes"
	"testing"

	"github.com/quavon/quavon/internal/sandbox"
)

func testKey(tb testing.TB, fill byte) sandbox.Key {
	tb.Helper()
	k, err := sandbox.NewKey(bytes.Repeat([]byte{fill}, 32))
	if err != nil {
		tb.Fatal(err)
	}
	return k
}
