package devstack_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/devenv"
	"github.com/quavon/quavon/internal/devstack"
	"github.com/quavon/quavon/internal/doctor"
	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/patch"
	"github.com/quavon/quavon/internal/testenv"
)

// binaries are what the stack runs.
var binaries = []string{"quavon-dev-github", "quavon-token-broker", "quavon-api", "quavon-worker", "quavon-publisher",
	"quavon-sandbox-runner", "quavon-sandbox-egress"}

// TestDemoScenario runs `quavon dev`'s system from the real binaries, each a
// process with its own credentials, and drives the demo scenario with
// --approve: the apps' installations reach the api, the policy is set
// through the api, a pull request is reviewed (a COMMENT review and a check
// run), a labelled issue's fix run ends awaiting approval, the demo's
// maintainer approves it through the dashboard (signed in on the emulator)
// and the publisher opens the draft pull request with exactly the stored
// patch; then everything stops on SIGTERM. One slow test on purpose.
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
	ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
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
	sawWorker := false
	for _, d := range ds {
		canaries := 0
		for _, r := range d.Results {
			if d.Service == "quavon migrate" && r.Check == "migrations" && r.Status != doctor.Pass {
				t.Errorf("migrations as the operator: %+v", r)
			}
			if strings.HasPrefix(r.Check, "canary-") {
				t.Logf("%s %s: %s", r.Status, r.Check, r.Detail)
			}
			if strings.HasPrefix(r.Check, "canary-") && r.Status == doctor.Pass {
				canaries++
			}
		}
		if d.Service == "quavon-worker" {
			sawWorker = true
			if canaries != 4 {
				t.Errorf("quavon doctor --canary: %d of 4 canary checks passed: %+v", canaries, d.Results)
			}
		}
		if doctor.Failed(d.Results) {
			t.Errorf("quavon doctor --service %s: %+v", d.Service, d.Results)
		}
	}
	if !sawWorker {
		t.Error("no doctor results for quavon-worker")
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
	// --approve: through the dashboard, as the demo's maintainer.
	a, err := st.ApproveFix(ctx, n)
	if err != nil {
		t.Fatalf("%v\napi:\n%s", err, devstack.Tail(filepath.Join(work, "logs", "quavon-api.log"), 20))
	}
	if a.Grants != http.StatusOK {
		t.Errorf("the grants page answered the demo's maintainer (the instance admin) %d", a.Grants)
	}
	pr, err := st.WaitFixPR(ctx, n, a.FixRunID, 60*time.Second)
	if err != nil {
		t.Fatalf("%v\npublisher:\n%s", err, devstack.Tail(filepath.Join(work, "logs", "quavon-publisher.log"), 30))
	}
	if !pr.Draft || pr.Base != "main" || pr.Author != devstack.FixerAppSlug+"[bot]" || pr.State != "open" {
		t.Errorf("fix PR %+v: want an open draft into main by the Fixer's bot", pr)
	}
	// The pull request carries exactly the patch stored and approved.
	conn, err := pgx.Connect(ctx, st.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	changes, _, sum, err := fix.Patch(ctx, tx, a.FixRunID)
	tx.Rollback(ctx)
	if err != nil || sum != a.PatchSHA256 || len(changes) == 0 {
		t.Fatalf("stored patch %s (approved %s), %d changes: %v", sum, a.PatchSHA256, len(changes), err)
	}
	want := map[string]*string{}
	for _, c := range changes {
		content := c.NewContent
		want[c.Path] = &content
		if c.Operation == patch.OpDelete {
			want[c.Path] = nil
		}
	}
	if len(pr.Files) != len(want) {
		t.Errorf("the pull request changes %d files, the patch %d", len(pr.Files), len(want))
	}
	for path, w := range want {
		got, ok := pr.Files[path]
		if !ok || (w == nil) != (got == nil) || (w != nil && *w != *got) {
			t.Errorf("%s differs between the pull request and the stored patch", path)
		}
	}
	// The approval is audited as the demo's maintainer with the bound hashes.
	var identity, patchSum string
	if err := conn.QueryRow(ctx, `SELECT metadata->'identity'->>'login', metadata->>'patchSha256' FROM audit_log
		WHERE action = 'fix_run.approve' AND subject_id = $1`, a.FixRunID).Scan(&identity, &patchSum); err != nil {
		t.Fatalf("audit entry of the approval: %v", err)
	}
	if identity != devstack.DemoAdmin || patchSum != a.PatchSHA256 {
		t.Errorf("approval audited as %q for patch %s", identity, patchSum)
	}
	t.Logf("fix PR #%d %s (%d files)", pr.Number, pr.Head, len(pr.Files))
	// A clean stop: every process ends on SIGTERM within the grace.
	stopped = true
	if err := st.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
}
