package testenv

import (
	"os/exec"
	"strings"
	"testing"
)

// ControlPlaneClients are the package prefixes a sandbox-zone binary must
// never link: database, job queue, code host and model clients.
var ControlPlaneClients = []string{
	"github.com/jackc/", "github.com/lib/pq", "database/sql", "github.com/riverqueue/",
	"github.com/google/go-github", "github.com/shurcooL/githubv4", "github.com/quavon/quavon/internal/github",
	"github.com/quavon/quavon/internal/postgres", "github.com/quavon/quavon/internal/llm",
	"github.com/anthropics/", "github.com/openai/", "github.com/sashabaranov/",
}

// AssertNoDeps fails when the package in the current directory links any
// package whose path starts with one of forbidden (go list -deps): what a
// binary cannot link, it cannot use, whatever its code does.
func AssertNoDeps(t *testing.T, forbidden ...string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("implausible dependency list (%d packages)", len(deps))
	}
	for _, d := range deps {
		for _, f := range forbidden {
			if strings.HasPrefix(d, f) {
				t.Errorf("links %s", d)
			}
		}
	}
}
