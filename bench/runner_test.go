package bench

import (
	runnerapp "github.com/quavon/quavon/internal/app/runner"

	"github.com/quavon/quavon/internal/sandbox/valkeyq"

	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/sandbox/runner"
	"github.com/quavon/quavon/internal/sandbox/runner/docker"
	"github.com/quavon/quavon/internal/testenv"
)

func benchModes() []docker.Mode { return []docker.Mode{docker.ModeRuncInsecure, docker.ModeRunsc} }

type runnerBench struct {
	local   *runnerapp.Local
	backend *docker.Backend
	image   string
	base    string
}

func newRunnerBench(b *testing.B, mode docker.Mode, concurrency int) *runnerBench {
	ctx := context.Background()
	admin := testenv.Valkey(b, testenv.UserControlPlane)
	pool := testenv.Pool(b, admin)
	dc := testenv.Docker(b)
	backend, err := docker.New(ctx, dc, mode, testenv.RunscPlatform(b))
	if err != nil {
		b.Fatal(err)
	}
	images, err := runner.LoadLockfile(testenv.ImagesLock(b))
	if err != nil {
		b.Fatal(err)
	}
	image, err := images.Resolve("byo:smoke")
	if err != nil {
		b.Fatal(err)
	}
	local, err := runnerapp.StartLocal(ctx, runnerapp.Parts{Valkey: admin, Pool: pool, Keys: benchRing(b), Backend: backend,
		Images: images, Ceiling: benchLimits(), Concurrency: concurrency, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(local.Close)
	base := b.TempDir()
	data := make([]byte, 1<<20)
	rand.Read(data)
	if err := os.WriteFile(filepath.Join(base, "blob.bin"), data, 0o644); err != nil {
		b.Fatal(err)
	}
	return &runnerBench{local: local, backend: backend, image: image, base: base}
}

func benchLimits() sandbox.Limits {
	return sandbox.Limits{CPUMillis: 1000, MemoryBytes: 256 << 20, Pids: 128, WallClockSeconds: 60, SetupSeconds: 30,
		WorkBytes: 64 << 20, TmpBytes: 16 << 20, OutputBytes: 1 << 20, NoFile: 256, FileSizeBytes: 64 << 20}
}

func (rb *runnerBench) job(b *testing.B) {
	res, err := rb.local.Client.Run(context.Background(), valkeyq.JobSpec{TenantID: "tenant-bench", Purpose: sandbox.PurposeFixTest,
		ImageClass: "byo:smoke", RunCommand: "true", Egress: sandbox.Egress{Mode: sandbox.EgressNone}, Limits: benchLimits()}, rb.base, "")
	if err != nil || res.Status != sandbox.StatusCompleted || res.ExitCode != 0 {
		b.Fatalf("job: %+v %v", res, err)
	}
}

// bare is the baseline: create, start, wait for and remove a container of
// the same image and runtime that runs /bin/true, through the same Engine
// API, with no snapshot, signing or queue.
func (rb *runnerBench) bare(b *testing.B) {
	ctx := context.Background()
	dc := testenv.Docker(b)
	cfg := &container.Config{Image: rb.image, Entrypoint: []string{"/bin/true"}, User: "65532:65532", NetworkDisabled: true}
	host := &container.HostConfig{Runtime: rb.backend.Runtime(), NetworkMode: "none", LogConfig: container.LogConfig{Type: "none"}}
	c, err := dc.ContainerCreate(ctx, cfg, host, nil, nil, "")
	if err != nil {
		b.Fatal(err)
	}
	waitC, errC := dc.ContainerWait(ctx, c.ID, container.WaitConditionNextExit)
	if err := dc.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
		b.Fatal(err)
	}
	select {
	case <-waitC:
	case err := <-errC:
		b.Fatal(err)
	}
	if err := dc.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSandboxJob: one job running `true` on a 1 MiB snapshot, from
// enqueue to verified result, against a bare container run of the same
// image and runtime, interleaved in one loop (goal: ratio ≤ 1.25).
func BenchmarkSandboxJob(b *testing.B) {
	for _, mode := range benchModes() {
		b.Run(string(mode), func(b *testing.B) {
			rb := newRunnerBench(b, mode, 1)
			rb.bare(b) // warm both paths once
			rb.job(b)
			var bare, job time.Duration
			for b.Loop() {
				t0 := time.Now()
				rb.bare(b)
				t1 := time.Now()
				rb.job(b)
				bare += t1.Sub(t0)
				job += time.Since(t1)
			}
			n := float64(b.N)
			b.ReportMetric(float64(bare.Milliseconds())/n, "bare-ms/op")
			b.ReportMetric(float64(job.Milliseconds())/n, "job-ms/op")
			b.ReportMetric(float64(job)/float64(bare), "job/bare")
		})
	}
}

// BenchmarkSandboxThroughput submits 20 jobs at once to a runner with
// concurrency 2 and reports jobs per minute and the p95 latency.
func BenchmarkSandboxThroughput(b *testing.B) {
	const jobs = 20
	for _, mode := range benchModes() {
		b.Run(string(mode), func(b *testing.B) {
			rb := newRunnerBench(b, mode, 2)
			var all []time.Duration
			var total time.Duration
			for b.Loop() {
				lat := make([]time.Duration, jobs)
				var wg sync.WaitGroup
				start := time.Now()
				for i := range jobs {
					wg.Go(func() {
						t0 := time.Now()
						rb.job(b)
						lat[i] = time.Since(t0)
					})
				}
				wg.Wait()
				total += time.Since(start)
				all = append(all, lat...)
			}
			slices.Sort(all)
			p95 := all[(len(all)*95+99)/100-1]
			b.ReportMetric(float64(len(all))/total.Minutes(), "jobs/min")
			b.ReportMetric(float64(p95.Milliseconds()), "p95-ms")
		})
	}
}
