package devstack_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/devenv"
	"github.com/quavon/quavon/internal/devstack"
	"github.com/quavon/quavon/internal/doctor"
	"github.com/quavon/quavon/internal/testenv"
)

// binaries are what the stack runs.
var binaries = []string{"quavon-dev-github", "quavon-token-broker", "quavon-api", "quavon-worker", "quavon-publisher",
	"quavon-sandbox-runner", "quavon-sandbox-egress"}

// TestDemoScenario runs `quavon dev`'s system from the real binaries, each a
// process with its own credentials, and drives the demo scenario: the apps'
// installations reach the api, the policy is set through the api, a pull
// request and a labelled issue arrive as webhooks and the fix run is
// admitted; then everything stops on SIGTERM.
func TestDemoScenario(t *testing.T) {
	if os.Geteuid() != 0 {
		if testenv.Required() {
			t.Fatal("TestDemoScenario needs root (QUAVON_TEST_REQUIRE_SERVICES=1)")
		}
		t.Skip("needs root (PostgreSQL as the postgres user, Docker)")
	}
	if _, err := os.Stat(filepath.Join(devenv.PostgresBin, "initdb")); err != nil {
		if testenv.Required() {
			t.Fatalf("PostgreSQL's binaries are required (QUAVON_TEST_REQUIRE_SERVICES=1): %v", err)
		}
		t.Skip("PostgreSQL's binaries are missing")
	}
	lock, platform := testenv.ImagesLock(t), testenv.RunscPlatform(t)
	bin := t.TempDir()
	args := []string{"build", "-o", bin + "/"}
	for _, b := range binaries {
		args = append(args, "github.com/quavon/quavon/cmd/"+b)
	}
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	work := t.TempDir()
	st, err := devstack.Start(ctx, devstack.Options{WorkDir: work, BinDir: bin, ACLTemplate: "../../deploy/valkey/users.acl.tmpl",
		Sandbox: true, ImagesLock: lock, RunscPlatform: platform, Progress: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			st.Stop()
		}
	}()
	if got := len(st.Procs); got != len(binaries) {
		t.Fatalf("%d processes, want %d", got, len(binaries))
	}
	// Each process holds only its own credentials.
	forbidden := map[string][]string{
		"quavon-api":            {"PRIVATE_KEY", "VALKEY", "SIGNING_KEY"},
		"quavon-worker":         {"PRIVATE_KEY", "WEBHOOK_SECRET", "CLIENT_SECRET", "BROKER_CALLERS"},
		"quavon-publisher":      {"PRIVATE_KEY", "VALKEY", "SIGNING_KEY", "WEBHOOK_SECRET"},
		"quavon-token-broker":   {"DATABASE", "VALKEY", "SIGNING_KEY", "WEBHOOK_SECRET"},
		"quavon-sandbox-runner": {"DATABASE", "PRIVATE_KEY", "BROKER", "GITHUB"},
		"quavon-sandbox-egress": {"DATABASE", "PRIVATE_KEY", "BROKER", "GITHUB", "SIGNING_KEY"},
	}
	for _, p := range st.Procs {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(p.Pid()) + "/environ")
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range strings.Split(string(b), "\x00") {
			for _, f := range forbidden[p.Name] {
				if strings.Contains(strings.SplitN(kv, "=", 2)[0], f) {
					t.Errorf("%s has %s", p.Name, strings.SplitN(kv, "=", 2)[0])
				}
			}
		}
	}
	// quavon doctor passes for every service with its own environment.
	ds, err := st.Doctor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != len(binaries) { // the services and the operator's view
		t.Fatalf("doctor ran for %d services", len(ds))
	}
	for _, d := range ds {
		for _, r := range d.Results {
			if d.Service == "quavon migrate" && r.Check == "migrations" && r.Status != doctor.Pass {
				t.Errorf("migrations as the operator: %+v", r)
			}
		}
		if doctor.Failed(d.Results) {
			t.Errorf("quavon doctor --service %s: %+v", d.Service, d.Results)
		}
	}
	if err := st.SetDemoPolicy(ctx); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := st.Control(ctx, "POST", "/pr", &out); err != nil {
		t.Fatal(err)
	}
	// The review run: the worker reviews with the emulated model and the
	// publisher posts the review and the check run on the emulator.
	var got struct {
		Reviews []struct {
			State string `json:"state"`
			Body  string `json:"body"`
		} `json:"reviews"`
		CheckRuns []json.RawMessage `json:"check_runs"`
	}
	for deadline := time.Now().Add(45 * time.Second); ; {
		out.Reset()
		if err := st.Control(ctx, "GET", "/reviews?pr=1", &out); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(out.String()), &got); err != nil {
			t.Fatalf("%v: %s", err, out.String())
		}
		if (len(got.Reviews) > 0 && len(got.CheckRuns) > 0) || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	if len(got.Reviews) == 0 {
		t.Fatalf("no review posted on the pull request\nworker:\n%s\npublisher:\n%s", devstack.Tail(filepath.Join(work, "logs", "quavon-worker.log"), 30),
			devstack.Tail(filepath.Join(work, "logs", "quavon-publisher.log"), 30))
	}
	t.Logf("review: %s, %d check run(s)", got.Reviews[0].State, len(got.CheckRuns))
	if got.Reviews[0].State != "COMMENTED" && got.Reviews[0].State != "COMMENT" {
		t.Errorf("review state %q, want a comment review", got.Reviews[0].State)
	}
	if len(got.CheckRuns) == 0 {
		t.Errorf("no check run")
	}
	out.Reset()
	if err := st.Control(ctx, "POST", "/issue", &out); err != nil {
		t.Fatal(err)
	}
	n := 2 // the pull request is #1
	if !strings.Contains(out.String(), `"number":2`) {
		t.Fatalf("issue: %s", out.String())
	}
	state, err := st.FixRunState(ctx, n, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// The fix agent edited the file with the emulated model and the
	// sandbox checks passed: the patch waits for a maintainer.
	if state != "awaiting_approval" {
		t.Fatalf("the labelled issue's fix run: %s\napi:\n%s\nworker:\n%s", state, devstack.Tail(filepath.Join(work, "logs", "quavon-api.log"), 20),
			devstack.Tail(filepath.Join(work, "logs", "quavon-worker.log"), 20))
	}
	t.Logf("fix run: %s", state)
	// A clean stop: every process ends on SIGTERM within the grace.
	stopped = true
	if err := st.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
}
