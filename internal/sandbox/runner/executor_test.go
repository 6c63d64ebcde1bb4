package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/sandbox/frame"
	"github.com/quavon/quavon/internal/sandbox/runner"
	"github.com/quavon/quavon/internal/sandbox/valkeyq"
	"github.com/quavon/quavon/internal/testenv"
)

// fakeBackend plays a container: it reads the whole input and answers with
// a minimal output tar. At the start of Exec it records whether the job's
// snapshot chunks were still in Valkey.
type fakeBackend struct {
	t          *testing.T
	chunksLeft func() int
	left       int
	spec       runner.ContainerSpec
	input      []byte
}

func (f *fakeBackend) Name() string { return "fake" }

func (f *fakeBackend) Exec(ctx context.Context, spec runner.ContainerSpec, stdin io.Reader, stdout io.Writer) (runner.ExecResult, error) {
	f.left, f.spec = f.chunksLeft(), spec
	f.input, _ = io.ReadAll(stdin)
	// Answer as the entry program would, under the key of the hello.
	key, err := frame.ReadHello(bytes.NewReader(f.input))
	if err != nil {
		return runner.ExecResult{ExitCode: 1}, nil
	}
	w := frame.NewWriter(stdout, key, frame.Out)
	w.Write(frame.TypeStart, []byte(frame.StepRun))
	res, _ := json.Marshal(frame.StepResult{Step: frame.StepRun, Ran: true, ExitCode: 0})
	w.Write(frame.TypeResult, res)
	w.Write(frame.TypeExit, []byte(`{}`))
	return runner.ExecResult{}, nil
}

func (f *fakeBackend) Isolate(context.Context, string) error { return nil }

func (f *fakeBackend) CheckEgress(context.Context, string, netip.AddrPort, bool) error { return nil }

// TestExecutorUsesSnapshotsOnce: the runner deletes a job's snapshot chunks
// as soon as it has fetched them, before the container starts, and those
// of a job it refuses before fetching them, and clamps the job's limits to
// its ceiling.
func TestExecutorUsesSnapshotsOnce(t *testing.T) {
	t.Parallel()
	admin := testenv.Valkey(t, testenv.UserControlPlane)
	pool := testenv.Pool(t, admin)
	names, _ := valkeyq.NamesFor(pool)
	keys := keyRing(t, key(t, 4))
	blobs, err := valkeyq.NewBlobStore(admin, valkeyq.BlobConfig{Names: names, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	countChunks := func() int {
		e, err := admin.Do(context.Background(), admin.B().Scan().Cursor(0).Match(names.Prefix()+":blob:*").Count(10000).Build()).AsScanEntry()
		if err != nil {
			t.Fatal(err)
		}
		return len(e.Elements)
	}
	fb := &fakeBackend{t: t, chunksLeft: countChunks}
	lock, err := runner.ParseLockfile([]byte(`{"version":1,"classes":{"node":{"name":"n","ref":"sha256:` + strings.Repeat("c", 64) + `"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	ceiling := sandbox.Limits{CPUMillis: 500, MemoryBytes: 64 << 20, Pids: 32, WallClockSeconds: 10, SetupSeconds: 5,
		WorkBytes: 1 << 20, TmpBytes: 1 << 20, OutputBytes: 1 << 20, NoFile: 64, FileSizeBytes: 1 << 20}
	ex, err := runner.NewExecutor(runner.ExecutorConfig{Backend: fb, Images: lock, Blobs: blobs, Ceiling: ceiling,
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := blobs.Store(context.Background(), "tenant-a", emptySnapshot(t))
	if err != nil {
		t.Fatal(err)
	}
	if countChunks() != 1 {
		t.Fatalf("want one stored chunk, have %d", countChunks())
	}
	now := time.Now().UTC()
	job := &sandbox.SandboxJob{ID: "job-exec-once", Pool: pool, TenantID: "tenant-a", Purpose: sandbox.PurposeFixTest,
		ImageClass: "node", Base: ref, RunCommand: "npm test", Egress: sandbox.Egress{Mode: sandbox.EgressNone},
		Limits: sandbox.Limits{CPUMillis: 4000, MemoryBytes: 1 << 30, Pids: 4096, WallClockSeconds: 600, SetupSeconds: 60,
			WorkBytes: 1 << 30, TmpBytes: 1 << 30, OutputBytes: 1 << 20, NoFile: 1024, FileSizeBytes: 1 << 30},
		IssuedAt: now, NotAfter: now.Add(time.Minute)}
	res, err := ex.Run(context.Background(), job)
	if err != nil || res.Status != sandbox.StatusCompleted {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if fb.left != 0 {
		t.Fatalf("%d snapshot chunks still in Valkey when the container started", fb.left)
	}
	if fb.spec.Limits != ceiling {
		t.Fatalf("limits reached the backend unclamped: %+v", fb.spec.Limits)
	}
	if !strings.HasPrefix(string(fb.input), frame.Magic) {
		t.Fatal("the container did not get the framed input")
	}
	// A second run of the same job finds no snapshot: it was used once.
	res, err = ex.Run(context.Background(), job)
	if err != nil || res.Status != sandbox.StatusFailed {
		t.Fatalf("second Run = %+v, %v", res, err)
	}
	// A job refused before its snapshot is fetched (an image class the
	// lockfile lacks) still leaves no chunk behind.
	if job.Base, err = blobs.Store(context.Background(), "tenant-a", emptySnapshot(t)); err != nil {
		t.Fatal(err)
	}
	job.ID, job.ImageClass, fb.left = "job-exec-refused", "nope", -1
	res, err = ex.Run(context.Background(), job)
	if err != nil || res.Status != sandbox.StatusFailed || fb.left != -1 {
		t.Fatalf("Run of an unknown image class = %+v, %v (container started: %t)", res, err, fb.left != -1)
	}
	if n := countChunks(); n != 0 {
		t.Fatalf("%d snapshot chunks left in Valkey after the job was refused", n)
	}
}
