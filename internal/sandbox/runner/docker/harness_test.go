package docker_test

import (
	"regexp"

	runnerapp "github.com/quavon/quavon/internal/app/runner"

	"github.com/quavon/quavon/internal/sandbox/valkeyq"

	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/valkey-io/valkey-go"

	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/sandbox/runner"
	"github.com/quavon/quavon/internal/sandbox/runner/docker"
	"github.com/quavon/quavon/internal/testenv"
)

// Canaries the sandbox must never see or echo: one in the runner's own
// environment, one in the worker's.
const (
	runnerCanary = "QUAVON-RUNNER-CANARY-7f3a9c"
	workerCanary = "QUAVON-WORKER-CANARY-51be20"
)

// harness is a worker-side client and a real runner (in-process) on real
// Valkey and a real Docker Engine, one pool per test.
type harness struct {
	client  *valkeyq.Client
	docker  *client.Client
	backend *docker.Backend
	logs    *testenv.LogBuffer
}

func modes(t *testing.T) map[string]docker.Mode {
	return map[string]docker.Mode{"runc": docker.ModeRuncInsecure, "runsc": docker.ModeRunsc}
}

func newHarness(t *testing.T, mode docker.Mode) *harness {
	t.Helper()
	admin := testenv.Valkey(t, testenv.UserControlPlane)
	return newHarnessWith(t, newBackend(t, mode), admin, testenv.Pool(t, admin), nil)
}

// newBackend is a Docker backend in mode on the test engine.
func newBackend(t *testing.T, mode docker.Mode) *docker.Backend {
	t.Helper()
	backend, err := docker.New(context.Background(), testenv.Docker(t), mode, testenv.RunscPlatform(t))
	if err != nil {
		t.Fatal(err)
	}
	return backend
}

// newHarnessWith starts an in-process runner on backend for pool, with
// setup-step egress when eg is not nil.
func newHarnessWith(t *testing.T, backend *docker.Backend, admin valkey.Client, pool string, eg *runner.EgressConfig) *harness {
	t.Helper()
	ctx := context.Background()
	secret := make([]byte, 32)
	rand.Read(secret)
	key, _ := sandbox.NewKey(secret)
	keys, _ := sandbox.NewKeyRing(key)
	dc := testenv.Docker(t)
	images, err := runner.LoadLockfile(testenv.ImagesLock(t))
	if err != nil {
		t.Fatal(err)
	}
	logs := &testenv.LogBuffer{}
	harnessLogs.Lock()
	harnessLogs.all = append(harnessLogs.all, logs)
	harnessLogs.Unlock()
	ceiling := sandbox.Limits{CPUMillis: 2000, MemoryBytes: 1 << 30, Pids: 512, WallClockSeconds: 120, SetupSeconds: 60,
		WorkBytes: 512 << 20, TmpBytes: 64 << 20, OutputBytes: 4 << 20, NoFile: 1024, FileSizeBytes: 512 << 20}
	local, err := runnerapp.StartLocal(ctx, runnerapp.Parts{Valkey: admin, Pool: pool, Keys: keys, Backend: backend,
		Images: images, Ceiling: ceiling, Concurrency: 2, Log: slog.New(slog.NewJSONHandler(logs, nil)), Egress: eg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		local.Close()
		if strings.Contains(logs.String(), runnerCanary) || strings.Contains(logs.String(), workerCanary) {
			t.Errorf("runner logs contain a canary:\n%s", logs)
		}
	})
	return &harness{client: local.Client, docker: dc, backend: backend, logs: logs}
}

// harnessLogs are the logs of every runner this process started: the job
// ids in them are this process's jobs.
var harnessLogs struct {
	sync.Mutex
	all []*testenv.LogBuffer
}

var jobIDInLog = regexp.MustCompile(`"job_id":"([A-Za-z0-9_-]+)"`)

// TestMain checks, after every test has ended, that no sandbox container
// of this process's jobs is left on the engine: jobs that passed, failed,
// timed out or were cancelled all removed theirs. (Other processes may run
// jobs on the same engine at the same time; their containers are theirs.)
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 && os.Getenv("QUAVON_TEST_VALKEY_ADDR") != "" {
		ours := map[string]bool{}
		harnessLogs.Lock()
		for _, l := range harnessLogs.all {
			for _, m := range jobIDInLog.FindAllStringSubmatch(l.String(), -1) {
				ours[m[1]] = true
			}
		}
		harnessLogs.Unlock()
		left, err := leftContainers("")
		var mine []string
		for _, c := range left {
			if f := strings.Fields(c); len(f) >= 3 && ours[f[2]] {
				mine = append(mine, c)
			}
		}
		if err != nil || len(mine) > 0 {
			fmt.Fprintf(os.Stderr, "sandbox containers left behind: %v %v\n", mine, err)
			code = 1
		}
	}
	os.Exit(code)
}

// leftContainers lists sandbox containers, of one job or (jobID "") all.
func leftContainers(jobID string) ([]string, error) {
	dc, err := client.NewClientWithOpts(client.WithHost("unix:///var/run/docker.sock"), client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, err
	}
	defer dc.Close()
	label := docker.LabelJobID
	if jobID != "" {
		label += "=" + jobID
	}
	cs, err := dc.ContainerList(context.Background(), container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", label))})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range cs {
		out = append(out, c.ID[:12]+" job "+c.Labels[docker.LabelJobID]+" "+c.State)
	}
	return out, nil
}

func smallLimits() sandbox.Limits {
	return sandbox.Limits{CPUMillis: 1000, MemoryBytes: 256 << 20, Pids: 128, WallClockSeconds: 60, SetupSeconds: 30,
		WorkBytes: 128 << 20, TmpBytes: 16 << 20, OutputBytes: 1 << 20, NoFile: 256, FileSizeBytes: 64 << 20}
}

func spec(class, run string) valkeyq.JobSpec {
	return valkeyq.JobSpec{TenantID: "tenant-a", Purpose: sandbox.PurposeFixTest, ImageClass: class, RunCommand: run,
		Egress: sandbox.Egress{Mode: sandbox.EgressNone}, Limits: smallLimits(),
		Env: map[sandbox.SandboxEnvKey]string{sandbox.EnvCI: "true"}}
}

func (h *harness) run(t *testing.T, s valkeyq.JobSpec, base string) *sandbox.SandboxResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := h.client.Run(ctx, s, base, "")
	if err != nil {
		t.Fatalf("job: %v\nrunner logs:\n%s", err, h.logs)
	}
	return res
}

// tree writes files into a fresh directory.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// buildStatic builds ./testdata/<name> as a static binary, once per run.
func buildStatic(name string) func() (string, error) {
	return buildStaticFrom(name, "./testdata/"+name)
}

// buildStaticFrom builds the package at pkg as a static binary called
// name, once per run.
func buildStaticFrom(name, pkg string) func() (string, error) {
	return sync.OnceValues(func() (string, error) {
		dir, err := os.MkdirTemp("", "quavon-"+name)
		if err != nil {
			return "", err
		}
		out := filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", &buildError{string(b)}
		}
		return out, nil
	})
}

// The escape probe is also quavon doctor --canary's, which builds it from
// source inside a job of the go class.
var probeOnce = buildStaticFrom("probe", "../../../doctor/probe")

type buildError struct{ out string }

func (e *buildError) Error() string { return "building a test program: " + e.out }

// probeTree is a repository whose code is the escape probe.
func probeTree(t *testing.T) string {
	t.Helper()
	bin, err := probeOnce()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "probe"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
