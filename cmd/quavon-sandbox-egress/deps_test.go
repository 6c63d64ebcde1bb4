package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestEgressLinksNothingElse: the proxy binary must not be able to reach
// the database, a code host, a model or the container runtime, whatever
// its code does.
func TestEgressLinksNothingElse(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := []string{
		"github.com/docker/", "github.com/moby/", "github.com/containerd/",
		"github.com/quavon/quavon/internal/sandbox/runner",
		"github.com/jackc/", "github.com/lib/pq", "database/sql", "github.com/riverqueue/",
		"github.com/google/go-github", "github.com/shurcooL/githubv4", "github.com/quavon/quavon/internal/github",
		"github.com/quavon/quavon/internal/postgres", "github.com/quavon/quavon/internal/llm",
		"github.com/anthropics/", "github.com/openai/", "github.com/sashabaranov/",
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("implausible dependency list (%d packages)", len(deps))
	}
	for _, d := range deps {
		for _, f := range forbidden {
			if strings.HasPrefix(d, f) {
				t.Errorf("quavon-sandbox-egress links %s", d)
			}
		}
	}
}
