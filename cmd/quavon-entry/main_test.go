package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRunTakesNoArguments(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	err := run(context.Background(), []string{"--help"}, nil, 4242, strings.NewReader(""), &out)
	if err == nil || out.Len() != 0 {
		t.Fatalf("run with arguments = %v, wrote %d bytes", err, out.Len())
	}
}
