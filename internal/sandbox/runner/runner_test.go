package runner_test

import (
	"github.com/quavon/quavon/internal/sandbox/valkeyq"
	"slices"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/quavon/quavon/internal/canonical"
	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/sandbox/runner"
	"github.com/quavon/quavon/internal/snapshot"
	"github.com/quavon/quavon/internal/testenv"
)

func emptySnapshot(t *testing.T) []byte {
	t.Helper()
	snap, _, err := snapshot.Build(t.TempDir(), snapshot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// countingRuntime stands in for a container backend: it counts calls and,
// like the real runner, fetches and deletes the job's snapshot.
type countingRuntime struct {
	calls atomic.Int32
	blobs *valkeyq.BlobStore
	seen  []byte
}

func (r *countingRuntime) Run(ctx context.Context, job *sandbox.SandboxJob) (*sandbox.SandboxResult, error) {
	r.calls.Add(1)
	res := &sandbox.SandboxResult{Status: sandbox.StatusCompleted, ImageDigest: "sha256:" + strings.Repeat("a", 64),
		Artefacts: map[string]string{"stdout.log": "secret-output-canary\n"}}
	if r.blobs != nil {
		data, err := r.blobs.Fetch(ctx, job.Base, job.TenantID)
		if err != nil {
			return nil, err
		}
		if _, err := snapshot.Check(bytes.NewReader(data), snapshot.Limits{}); err != nil {
			return nil, err
		}
		r.seen = data
		if err := r.blobs.Delete(ctx, job.Base); err != nil {
			return nil, err
		}
	}
	return res, nil
}

var _ runner.Runtime = (*countingRuntime)(nil)

func key(tb testing.TB, fill byte) sandbox.Key {
	k, err := sandbox.NewKey(bytes.Repeat([]byte{fill}, 32))
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

func keyRing(tb testing.TB, cur sandbox.Key, prev ...sandbox.Key) *sandbox.KeyRing {
	r, err := sandbox.NewKeyRing(cur, prev...)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

type fixture struct {
	pool    string
	names   valkeyq.Names
	keys    *sandbox.KeyRing
	queue   *valkeyq.Queue
	runner  *runner.Runner
	runtime *countingRuntime
	logs    *testenv.LogBuffer
	metrics *observer
}

// observer records what the runner tells its metrics.
type observer struct {
	mu             sync.Mutex
	done, rejected []string
}

func (o *observer) JobDone(purpose, imageClass, status string, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.done = append(o.done, purpose+" "+imageClass+" "+status)
}

func (o *observer) JobRejected(reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.rejected = append(o.rejected, reason)
}

func (o *observer) get() (done, rejected []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.done), slices.Clone(o.rejected)
}

// newFixture wires a real runner to real Valkey. worker is the control
// plane's client, runnerClient the runner's (sandbox ACL user for the
// default pool).
func newFixture(t *testing.T, worker, runnerClient valkey.Client, pool string, keys *sandbox.KeyRing) *fixture {
	t.Helper()
	names, err := valkeyq.NamesFor(pool)
	if err != nil {
		t.Fatal(err)
	}
	consumer, err := valkeyq.NewConsumer(runnerClient, names, "runner-test", 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if err := consumer.EnsureGroup(context.Background()); err != nil {
		t.Fatal(err)
	}
	verifier, err := sandbox.NewVerifier(keys, pool, valkeyq.NewReplayGuard(runnerClient, names), nil)
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := valkeyq.NewBlobStore(runnerClient, valkeyq.BlobConfig{Names: names, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	rt := &countingRuntime{blobs: blobs}
	logs := &testenv.LogBuffer{}
	obs := &observer{}
	r, err := runner.New(runner.Config{ID: "runner-test", Source: consumer, Verifier: verifier, Keys: keys, Runtime: rt,
		Log: slog.New(slog.NewJSONHandler(logs, nil)), Metrics: obs})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{pool: pool, names: names, keys: keys, queue: valkeyq.NewQueue(worker, names, keys), runner: r, runtime: rt, logs: logs,
		metrics: obs}
}

func (f *fixture) job(t *testing.T, worker valkey.Client, id string, snapshot []byte) *sandbox.SandboxJob {
	t.Helper()
	blobs, err := valkeyq.NewBlobStore(worker, valkeyq.BlobConfig{Names: f.names, Keys: f.keys})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := blobs.Store(context.Background(), "tenant-a", snapshot)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	return &sandbox.SandboxJob{
		ID: id, Pool: f.pool, TenantID: "tenant-a", Purpose: sandbox.PurposeFixTest, ImageClass: "node",
		Base: ref, RunCommand: "npm test -- --canary-command", Egress: sandbox.Egress{Mode: sandbox.EgressNone},
		Env: map[sandbox.SandboxEnvKey]string{sandbox.EnvNodeEnv: "canary-env-value"},
		Limits: sandbox.Limits{CPUMillis: 1000, MemoryBytes: 256 << 20, Pids: 128, WallClockSeconds: 2, SetupSeconds: 1,
			WorkBytes: 64 << 20, TmpBytes: 16 << 20, OutputBytes: 1 << 20, NoFile: 256, FileSizeBytes: 64 << 20},
		IssuedAt: now, NotAfter: now.Add(5 * time.Minute),
	}
}

// handle runs the runner once and returns the worker's view of the result.
func (f *fixture) handle(t *testing.T, jobID string, wait time.Duration) (*sandbox.SandboxResult, error) {
	t.Helper()
	ctx := context.Background()
	if err := f.runner.HandleOne(ctx); err != nil && !errors.Is(err, sandbox.ErrReplayed) {
		t.Logf("HandleOne: %v", err)
	}
	return f.queue.AwaitResult(ctx, jobID, time.Now().Add(wait))
}

// TestEndToEndUnderACL runs worker and runner with their real Valkey users:
// the sandbox user's permissions cover everything the runner does, and the
// runner's logs carry no command, env or output (SB10).
func TestEndToEndUnderACL(t *testing.T) {
	worker := testenv.Valkey(t, testenv.UserControlPlane)
	sandboxUser := testenv.Valkey(t, testenv.UserSandbox)
	f := newFixture(t, worker, sandboxUser, sandbox.DefaultPool, keyRing(t, key(t, 7)))
	tree := t.TempDir()
	if err := os.WriteFile(filepath.Join(tree, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	snap, _, err := snapshot.Build(tree, snapshot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	j := f.job(t, worker, "job-acl-e2e-"+time.Now().Format("150405.000000")[7:], snap)
	t.Cleanup(func() { testenv.DeletePrefix(t, worker, f.names.Result(j.ID)) })
	if err := f.queue.Enqueue(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	res, err := f.handle(t, j.ID, 5*time.Second)
	if err != nil {
		t.Fatalf("result: %v\nrunner logs:\n%s", err, f.logs)
	}
	if res.Status != sandbox.StatusCompleted || res.RunnerID != "runner-test" || res.JobID != j.ID {
		t.Fatalf("result %+v", res)
	}
	if !bytes.Equal(f.runtime.seen, snap) {
		t.Fatalf("runtime saw snapshot %q", f.runtime.seen)
	}
	logs := f.logs.String()
	for _, canary := range []string{"canary-command", "canary-env-value", "secret-output-canary"} {
		if strings.Contains(logs, canary) {
			t.Errorf("runner logs contain %q:\n%s", canary, logs)
		}
	}
	if !strings.Contains(logs, j.ID) {
		t.Errorf("runner logs do not name the job:\n%s", logs)
	}
	if done, rejected := f.metrics.get(); !slices.Equal(done, []string{"fix_test node completed"}) || len(rejected) != 0 {
		t.Errorf("metrics told %q, rejected %q", done, rejected)
	}
}

// TestRejectedBeforeAnyRuntimeCall: every forged, stale or tampered job is
// refused, reported to the worker as a rejected run, and never reaches the
// runtime.
func TestRejectedBeforeAnyRuntimeCall(t *testing.T) {
	t.Parallel()
	worker := testenv.Valkey(t, testenv.UserControlPlane)
	pool := testenv.Pool(t, worker)
	cur, other := key(t, 1), key(t, 2)
	f := newFixture(t, worker, worker, pool, keyRing(t, cur))
	ctx := context.Background()

	sign := func(k sandbox.Key, j *sandbox.SandboxJob) []byte {
		env, err := sandbox.SignJob(keyRing(t, k), j)
		if err != nil {
			t.Fatal(err)
		}
		return env
	}
	tamper := func(env []byte, from, to string) []byte {
		if !bytes.Contains(env, []byte(from)) {
			t.Fatalf("envelope lacks %q", from)
		}
		return bytes.Replace(env, []byte(from), []byte(to), 1)
	}
	n := 0
	newJob := func(mut func(j *sandbox.SandboxJob)) *sandbox.SandboxJob {
		n++
		j := f.job(t, worker, "job-reject-"+string(rune('a'+n))+"-x", emptySnapshot(t))
		if mut != nil {
			mut(j)
		}
		return j
	}
	unsigned := func(j *sandbox.SandboxJob) []byte {
		c, _ := canonical.JSON(j)
		b, _ := json.Marshal(map[string]any{"keyId": cur.ID(), "payload": json.RawMessage(c)})
		return b
	}

	cases := []struct {
		name string
		job  *sandbox.SandboxJob
		env  func(j *sandbox.SandboxJob) []byte
		want sandbox.RejectReason
	}{
		{"unsigned", newJob(nil), unsigned, sandbox.RejectMalformed},
		{"unknown key id", newJob(nil), func(j *sandbox.SandboxJob) []byte { return sign(other, j) }, sandbox.RejectUnknownKey},
		{"wrong key under the current id", newJob(nil), func(j *sandbox.SandboxJob) []byte {
			return tamper(sign(other, j), other.ID(), cur.ID())
		}, sandbox.RejectBadSignature},
		{"tampered command", newJob(nil), func(j *sandbox.SandboxJob) []byte {
			return tamper(sign(cur, j), "npm test", "curl evil")
		}, sandbox.RejectBadSignature},
		{"tampered image class", newJob(nil), func(j *sandbox.SandboxJob) []byte {
			return tamper(sign(cur, j), `"imageClass":"node"`, `"imageClass":"python"`)
		}, sandbox.RejectBadSignature},
		{"tampered tenant", newJob(nil), func(j *sandbox.SandboxJob) []byte {
			return tamper(sign(cur, j), `"tenantId":"tenant-a"`, `"tenantId":"tenant-b"`)
		}, sandbox.RejectBadSignature},
		{"tampered egress", newJob(nil), func(j *sandbox.SandboxJob) []byte {
			return tamper(sign(cur, j), `"mode":"none"`, `"mode":"registries"`)
		}, sandbox.RejectBadSignature},
		{"tampered limits", newJob(nil), func(j *sandbox.SandboxJob) []byte {
			return tamper(sign(cur, j), `"pids":128`, `"pids":99999`)
		}, sandbox.RejectBadSignature},
		{"other pool", newJob(func(j *sandbox.SandboxJob) { j.Pool = "acme" }), func(j *sandbox.SandboxJob) []byte {
			return sign(cur, j)
		}, sandbox.RejectSchemaInvalid},
		{"expired", newJob(func(j *sandbox.SandboxJob) {
			j.IssuedAt, j.NotAfter = j.IssuedAt.Add(-10*time.Minute), j.IssuedAt.Add(-time.Minute)
		}), func(j *sandbox.SandboxJob) []byte { return sign(cur, j) }, sandbox.RejectExpired},
		{"too far ahead", newJob(func(j *sandbox.SandboxJob) {
			j.IssuedAt, j.NotAfter = j.IssuedAt.Add(5*time.Minute), j.IssuedAt.Add(17*time.Minute)
		}), func(j *sandbox.SandboxJob) []byte { return sign(cur, j) }, sandbox.RejectTooFarAhead},
	}
	for _, c := range cases {
		if err := f.queue.EnqueueSigned(ctx, c.env(c.job)); err != nil {
			t.Fatal(err)
		}
		res, err := f.handle(t, c.job.ID, 5*time.Second)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if res.Status != sandbox.StatusRejected || res.RejectReason != c.want {
			t.Errorf("%s: status %s reason %s, want rejected %s", c.name, res.Status, res.RejectReason, c.want)
		}
	}
	if got := f.runtime.calls.Load(); got != 0 {
		t.Fatalf("runtime called %d times for rejected jobs", got)
	}

	// A valid job runs once; its replay never reaches the runtime and does
	// not overwrite the first run's result.
	j := newJob(nil)
	env := sign(cur, j)
	for range 2 {
		if err := f.queue.EnqueueSigned(ctx, env); err != nil {
			t.Fatal(err)
		}
	}
	res, err := f.handle(t, j.ID, 5*time.Second)
	if err != nil || res.Status != sandbox.StatusCompleted {
		t.Fatalf("valid job: %+v, %v", res, err)
	}
	if _, err := f.handle(t, j.ID, time.Second); !errors.Is(err, valkeyq.ErrResultTimeout) {
		t.Fatalf("replay produced a result: %v", err)
	}
	if got := f.runtime.calls.Load(); got != 1 {
		t.Fatalf("runtime called %d times, want exactly 1", got)
	}
	if !strings.Contains(f.logs.String(), `"reason":"replayed"`) {
		t.Fatalf("replay not logged:\n%s", f.logs)
	}
	// Every refusal reached the metrics with its reason, the one run too.
	done, rejected := f.metrics.get()
	if !slices.Equal(done, []string{"fix_test node completed"}) || !slices.Contains(rejected, "replayed") ||
		!slices.Contains(rejected, string(sandbox.RejectBadSignature)) {
		t.Fatalf("metrics told %q, rejected %q", done, rejected)
	}
}

// slowRuntime records how many jobs run at once.
type slowRuntime struct {
	mu       sync.Mutex
	now, max int
	release  chan struct{}
}

func (s *slowRuntime) Run(ctx context.Context, job *sandbox.SandboxJob) (*sandbox.SandboxResult, error) {
	s.mu.Lock()
	s.now++
	s.max = max(s.max, s.now)
	s.mu.Unlock()
	<-s.release
	s.mu.Lock()
	s.now--
	s.mu.Unlock()
	return &sandbox.SandboxResult{Status: sandbox.StatusCompleted}, nil
}

// TestConcurrencyLimit: Serve never runs more jobs at once than configured.
func TestConcurrencyLimit(t *testing.T) {
	t.Parallel()
	worker := testenv.Valkey(t, testenv.UserControlPlane)
	pool := testenv.Pool(t, worker)
	keys := keyRing(t, key(t, 3))
	f := newFixture(t, worker, worker, pool, keys)
	names, _ := valkeyq.NamesFor(pool)
	consumer, _ := valkeyq.NewConsumer(worker, names, "runner-c", 100*time.Millisecond)
	verifier, _ := sandbox.NewVerifier(keys, pool, valkeyq.NewReplayGuard(worker, names), nil)
	rt := &slowRuntime{release: make(chan struct{})}
	r, err := runner.New(runner.Config{ID: "runner-c", Source: consumer, Verifier: verifier, Keys: keys, Runtime: rt,
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Serve(ctx); close(done) }()
	var ids []string
	for i := range 6 {
		j := f.job(t, worker, "job-conc-"+string(rune('a'+i))+"-x", emptySnapshot(t))
		ids = append(ids, j.ID)
		if err := f.queue.Enqueue(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	waitFor := func(n int) {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			rt.mu.Lock()
			cur := rt.now
			rt.mu.Unlock()
			if cur == n {
				return
			}
			time.Sleep(10 * time.Millisecond) // polling with a deadline
		}
		t.Fatalf("never reached %d running jobs", n)
	}
	for range 3 {
		waitFor(2)
		rt.release <- struct{}{}
		rt.release <- struct{}{}
	}
	for _, id := range ids {
		if res, err := f.queue.AwaitResult(ctx, id, time.Now().Add(10*time.Second)); err != nil || res.Status != sandbox.StatusCompleted {
			t.Fatalf("job %s: %+v %v", id, res, err)
		}
	}
	cancel()
	<-done
	if rt.max != 2 {
		t.Fatalf("at most %d jobs ran at once, want exactly 2", rt.max)
	}
}
