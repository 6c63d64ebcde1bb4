// Package deptest encodes ARCHITECTURE.md's privilege table as dependency
// rules, one test per binary (cmd/<binary>/deps_test.go): what a binary
// cannot link, it cannot use, whatever its code does.
//
// Each binary also has a committed snapshot of its `go list -deps` closure
// (cmd/<binary>/deps.txt, tailscale's depaware habit) so that a new
// dependency shows in review. Regenerate after a deliberate change with
//
//	go test ./cmd/... -run TestDeps -update-deps
package deptest

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update-deps", false, "rewrite the committed deps.txt snapshots")

// Rule forbids a package, or (with a trailing "/...") a package and every
// package under it, for a reason derived from the privilege table.
type Rule struct {
	Pattern string
	Reason  string
}

func (r Rule) matches(pkg string) bool {
	if p, ok := strings.CutSuffix(r.Pattern, "/..."); ok {
		return pkg == p || strings.HasPrefix(pkg, p+"/")
	}
	return pkg == r.Pattern
}

const q = "github.com/quavon/quavon/"

// The rules, grouped by what they keep out.
var (
	// AppKeys: whoever holds an app's private key can mint any token its
	// installation allows; only the token broker may.
	AppKeys = []Rule{
		{q + "internal/github/appauth/...", "app private keys and token minting: only quavon-token-broker"},
		{"github.com/golang-jwt/...", "signs app JWTs: only quavon-token-broker"},
		{q + "internal/app/broker", "reads the app keys: only quavon-token-broker"},
	}
	// Writes: every external write goes through the publisher (spec Z2).
	Writes = []Rule{{q + "internal/github/writer/...", "GitHub write methods: only quavon-publisher"}}
	// Models: the LLM SDKs and the model layer (keys, prompts).
	Models = []Rule{
		{q + "internal/llm/...", "the model layer and its keys: only quavon-worker and the quavon CLI"},
		{"github.com/anthropics/...", "an LLM SDK: only quavon-worker and the quavon CLI"},
		{"github.com/openai/...", "an LLM SDK: only quavon-worker and the quavon CLI"},
		{"github.com/sashabaranov/...", "an LLM SDK: only quavon-worker and the quavon CLI"},
	}
	// Containers: Docker socket access is root on the host (SB6).
	Containers = []Rule{
		{"github.com/docker/...", "the container runtime (SB6): only quavon-sandbox-runner and quavon scan"},
		{"github.com/moby/...", "the container runtime (SB6): only quavon-sandbox-runner and quavon scan"},
		{"github.com/containerd/...", "the container runtime (SB6): only quavon-sandbox-runner and quavon scan"},
		{"k8s.io/...", "the Kubernetes API creates sandbox pods (SB6): only quavon-sandbox-runner"},
	}
	// Runner: the runner's code drives the runtime.
	Runner = []Rule{{q + "internal/sandbox/runner/...", "the sandbox runner's code: only quavon-sandbox-runner and quavon scan"}}
	// SandboxKeys: the pool key signs jobs that start containers (SB4).
	SandboxKeys = []Rule{
		{q + "internal/sandbox", "sandbox signing and keys (SB4): only quavon-worker, quavon-sandbox-runner and the CLI"},
		{q + "internal/sandbox/valkeyq", "the sandbox queue and blobs: only quavon-worker, quavon-sandbox-runner and the egress proxy"},
	}
	// Database: the control plane's data (SB5: the sandbox zone has none).
	Database = []Rule{
		{"github.com/jackc/...", "PostgreSQL: only the control plane (api, worker, publisher, CLI)"},
		{"github.com/lib/pq/...", "PostgreSQL: only the control plane"},
		{"database/sql", "a database client: only the control plane"},
		{"github.com/riverqueue/...", "the job queue in PostgreSQL: only the control plane"},
		{q + "internal/postgres/...", "the control plane's database: only api, worker, publisher and the CLI"},
	}
	// Valkey: the sandbox transport and grants.
	Valkey = []Rule{{"github.com/valkey-io/...", "Valkey: only the worker, the runner, the egress proxy and the CLI"}}
	// CodeHost: GitHub clients and tokens.
	CodeHost = []Rule{
		{"github.com/google/go-github/...", "a GitHub client: not in the sandbox zone"},
		{"github.com/shurcooL/githubv4/...", "a GitHub client: not in the sandbox zone"},
		{q + "internal/github/...", "GitHub and its tokens: not in the sandbox zone"},
	}
	// Entry: PID 1's code belongs to the sandbox images.
	Entry = []Rule{{q + "internal/sandbox/entry/...", "PID 1's code: only quavon-entry (the runner shares internal/sandbox/frame with it)"}}
	// Proxy: the egress proxy's code belongs to its own process.
	Proxy = []Rule{{q + "internal/egress/...", "the egress proxy: only quavon-sandbox-egress"}}
	// Network: programs that run inside the sandbox need no network client.
	Network = []Rule{
		{"net", "a network client: nothing inside the sandbox talks to the network"},
		{"net/http", "a network client: nothing inside the sandbox talks to the network"},
	}
)

// All joins rule groups.
func All(groups ...[]Rule) []Rule { return slices.Concat(groups...) }

// Check fails t when the package in the current directory (a cmd/<binary>)
// links a forbidden package, naming the chain's end and the reason, and
// when its closure differs from the committed deps.txt.
func Check(t *testing.T, forbidden []Rule) {
	t.Helper()
	deps := List(t, ".")
	for _, v := range Violations(deps, forbidden) {
		t.Error(v)
	}
	checkSnapshot(t, deps)
}

// Violations names each package of deps that a rule forbids, with the
// rule's reason.
func Violations(deps []string, forbidden []Rule) []string {
	var out []string
	for _, d := range deps {
		for _, r := range forbidden {
			if r.matches(d) {
				out = append(out, fmt.Sprintf("links %s: %s", d, r.Reason))
			}
		}
	}
	return out
}

// List returns the import closure of pkg for linux/amd64 without cgo (the
// way the binaries are built), without the standard library's internal and
// vendored packages.
func List(tb testing.TB, pkg string) []string {
	tb.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}", pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("go list -deps %s: %v", pkg, err)
	}
	var deps []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		d, std, _ := strings.Cut(line, " ")
		if std == "true" && (strings.HasPrefix(d, "internal/") || strings.HasPrefix(d, "vendor/") || strings.Contains(d, "/internal/")) {
			continue
		}
		deps = append(deps, d)
	}
	slices.Sort(deps)
	if len(deps) < 10 {
		tb.Fatalf("implausible dependency list (%d packages)", len(deps))
	}
	return deps
}

const snapshotFile = "deps.txt"

const snapshotHeader = "# go list -deps of this binary (linux/amd64, CGO_ENABLED=0), without std internal packages.\n" +
	"# Committed so a new dependency shows in review: go test . -run TestDeps -update-deps\n"

func checkSnapshot(t *testing.T, deps []string) {
	t.Helper()
	want := snapshotHeader + strings.Join(deps, "\n") + "\n"
	if *update {
		if err := os.WriteFile(snapshotFile, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(snapshotFile)
	if err != nil {
		t.Fatalf("%s: %v (create it: go test . -run TestDeps -update-deps)", snapshotFile, err)
	}
	if string(got) == want {
		return
	}
	old := map[string]bool{}
	for _, l := range strings.Split(string(got), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			old[l] = true
		}
	}
	var added, removed []string
	for _, d := range deps {
		if !old[d] {
			added = append(added, d)
		}
		delete(old, d)
	}
	for d := range old {
		removed = append(removed, d)
	}
	slices.Sort(removed)
	t.Errorf("the dependency closure changed; review it, then run go test . -run TestDeps -update-deps\n%s",
		fmt.Sprintf("added:   %s\nremoved: %s", strings.Join(added, " "), strings.Join(removed, " ")))
}
