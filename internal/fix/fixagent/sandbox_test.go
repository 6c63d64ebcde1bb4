package fixagent_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	runnerapp "github.com/quavon/quavon/internal/app/runner"
	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/fix/fixagent"
	"github.com/quavon/quavon/internal/llm"
	"github.com/quavon/quavon/internal/patch"
	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/sandbox/runner"
	"github.com/quavon/quavon/internal/sandbox/runner/docker"
	"github.com/quavon/quavon/internal/snapshot"
	"github.com/quavon/quavon/internal/testenv"
)

// startRunner starts an in-process runner on real Valkey and Docker.
func startRunner(t *testing.T, mode docker.Mode) (*runnerapp.Local, *testenv.LogBuffer) {
	t.Helper()
	admin := testenv.Valkey(t, testenv.UserControlPlane)
	backend, err := docker.New(context.Background(), testenv.Docker(t), mode, testenv.RunscPlatform(t))
	if err != nil {
		t.Fatal(err)
	}
	secret := make([]byte, 32)
	rand.Read(secret)
	key, _ := sandbox.NewKey(secret)
	keys, _ := sandbox.NewKeyRing(key)
	images, err := runner.LoadLockfile(testenv.ImagesLock(t))
	if err != nil {
		t.Fatal(err)
	}
	logs := &testenv.LogBuffer{}
	local, err := runnerapp.StartLocal(context.Background(), runnerapp.Parts{Valkey: admin, Pool: testenv.Pool(t, admin), Keys: keys,
		Backend: backend, Images: images, Concurrency: 1, Log: slog.New(slog.NewJSONHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(local.Close)
	return local, logs
}

// A real sandbox job per run_tests: setup on the unmodified base, then the
// agent's overlay (a deletion visible only in the run step), then the
// policy's test command; the model sees the exit code and the output
// inside Untrusted, and its arguments choose nothing.
//
// Exfiltration (FX2, SB2): a canary in this process's environment (the
// worker's and, in process, the runner's) and in a file beside it; the lint
// command prints every environment it can reach. The canary appears in no
// tool result, no stored tail, no patch and no log.
func TestRunTestsInTheSandbox(t *testing.T) {
	const envCanary = "QUAVON-FIX-ENV-CANARY-4d1c"
	t.Setenv("QUAVON_FIX_CANARY", envCanary)
	for name, mode := range map[string]docker.Mode{"runsc": docker.ModeRunsc} {
		t.Run(name, func(t *testing.T) {
			local, logs := startRunner(t, mode)
			files := map[string]patch.MapFile{"gone.txt": {Content: "base\n"}, "lib/kept.txt": {Content: "kept\n"}}
			read := func(s string) func() ([]byte, error) { return func() ([]byte, error) { return []byte(s), nil } }
			sb := &fixagent.JobSandbox{Runner: local.Client, TenantID: "tenant-a", ImageClass: "byo:smoke",
				Base:         snapshot.Files{{Name: "gone.txt", Read: read("base\n")}, {Name: "lib/kept.txt", Read: read("kept\n")}},
				SetupCommand: `test -f gone.txt && echo setup-saw-gone > setup.log`,
				SetupEgress:  sandbox.Egress{Mode: sandbox.EgressNone},
				TestCommand:  `test -e gone.txt && echo run-saw-gone; cat lib/kept.txt lib/new.txt setup.log; exit 3`,
				LintCommand:  `env; cat /proc/self/environ /proc/1/environ 2>&1; ls -a / ~ /run/secrets 2>&1; echo lint-ran`,
				Limits: sandbox.Limits{CPUMillis: 1000, MemoryBytes: 256 << 20, Pids: 128, WallClockSeconds: 60, SetupSeconds: 30,
					WorkBytes: 128 << 20, TmpBytes: 16 << 20, OutputBytes: 1 << 20, NoFile: 256, FileSizeBytes: 64 << 20}}
			model := llm.NewScripted(llm.Steps(
				llm.Call("delete_file", map[string]string{"path": "gone.txt"}),
				llm.Call("create_file", map[string]string{"path": "lib/new.txt", "content": "new\n"}),
				llm.Call("run_tests", struct{}{}),
				llm.Call("run_linter", struct{}{}),
				llm.Call("finish", map[string]string{"summary": "done"}),
			), "", llm.Price{})
			cfg := fixagent.Config{Model: model, Base: patch.MapBase(files),
				Fresh:   func() (*patch.Listing, error) { return patch.MapBase(files), nil },
				Scanner: leaksScanner(t), Sandbox: sb, HasTest: true, HasLint: true,
				Limits: fixagent.Limits{MaxSteps: 10, MaxSandboxRuns: 2, WallClock: 5 * time.Minute, MaxFiles: 5, MaxChangedLines: 50},
				Issue:  fixagent.Issue{Number: 1, Title: "t", Body: "b"}}
			res, err := fixagent.Run(context.Background(), cfg)
			if err != nil {
				t.Fatalf("%v\n%s", err, logs)
			}
			if res.Reason != "" || res.LastTest == nil {
				t.Fatalf("reason %s %s %v\n%s", res.Reason, res.Detail, res.Err, logs)
			}
			r := res.LastTest
			if r.ExitCode != 3 || r.TimedOut {
				t.Errorf("exit %d timed out %v", r.ExitCode, r.TimedOut)
			}
			for _, want := range []string{"kept", "new", "setup-saw-gone"} {
				if !strings.Contains(r.StdoutTail, want) {
					t.Errorf("stdout lacks %q:\n%s", want, r.StdoutTail)
				}
			}
			if strings.Contains(r.StdoutTail, "run-saw-gone") {
				t.Errorf("the deleted file was there in the run step:\n%s", r.StdoutTail)
			}
			var seen string
			for _, m := range model.Requests()[len(model.Requests())-1].Messages {
				for _, tr := range m.ToolResults {
					seen += tr.Content
				}
			}
			if !strings.Contains(seen, "exit code 3") || !strings.Contains(seen, "UNTRUSTED kind=test-output") {
				t.Errorf("the model saw:\n%s", seen)
			}
			if len(res.Changes) != 2 || res.Changes[0].Path != "gone.txt" || res.Changes[0].Operation != patch.OpDelete {
				t.Errorf("changes %+v", res.Changes)
			}
			if res.LastLint == nil || !strings.Contains(res.LastLint.StdoutTail, "lint-ran") {
				t.Errorf("the lint run: %+v", res.LastLint)
			}
			var all strings.Builder
			for _, req := range model.Requests() {
				for _, m := range req.Messages {
					all.WriteString(m.Text)
					for _, tr := range m.ToolResults {
						all.WriteString(tr.Content)
					}
				}
			}
			js, _ := json.Marshal(res)
			for what, text := range map[string]string{"the model's input": all.String(), "the result": string(js), "the runner's logs": logs.String()} {
				if strings.Contains(text, envCanary) {
					t.Errorf("the canary reached %s", what)
				}
			}
			_ = fix.KindTest
		})
	}
}
