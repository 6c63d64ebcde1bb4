package docker

import (
	"testing"

	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/sandbox/runner"
)

// TestShapeOf: a job's shape is its container's configuration but the
// job-id label; jobs with a network (setup-step egress, per-job
// credentials, Isolate by label) and backends without prestarting have
// none.
func TestShapeOf(t *testing.T) {
	b := &Backend{mode: ModeRunsc, runtime: runtimeRunsc}
	limits := sandbox.Limits{CPUMillis: 1000, MemoryBytes: 1 << 30, Pids: 64, WallClockSeconds: 60, SetupSeconds: 1,
		WorkBytes: 1 << 20, TmpBytes: 1 << 20, OutputBytes: 1 << 20, NoFile: 64, FileSizeBytes: 1 << 20}
	spec := func(id, image string, l sandbox.Limits, network string, env ...string) runner.ContainerSpec {
		return runner.ContainerSpec{JobID: id, ImageRef: image, Env: env, Limits: l, Network: network}
	}
	shape := func(s runner.ContainerSpec) string {
		cfg, host := b.ContainerConfig(s)
		return b.shapeOf(s, cfg, host)
	}
	a := spec("job-a", "sha256:1", limits, "", "A=1", "B=2")
	if shape(a) != "" {
		t.Fatal("a shape without Prestart")
	}
	b.Prestart(2)
	if shape(a) == "" {
		t.Fatal("no shape with Prestart")
	}
	if shape(a) != shape(spec("job-b", "sha256:1", limits, "", "B=2", "A=1")) {
		t.Error("the job id or the environment's order changed the shape")
	}
	more := limits
	more.MemoryBytes *= 2
	for name, other := range map[string]runner.ContainerSpec{
		"image":       spec("job-a", "sha256:2", limits, "", "A=1", "B=2"),
		"limits":      spec("job-a", "sha256:1", more, "", "A=1", "B=2"),
		"environment": spec("job-a", "sha256:1", limits, "", "A=1", "B=3"),
	} {
		if shape(other) == shape(a) {
			t.Errorf("another %s, the same shape", name)
		}
	}
	if s := shape(spec("job-a", "sha256:1", limits, "quavon-sandbox-egress", "A=1", "B=2")); s != "" {
		t.Error("a job with a network has a shape: it could get a container started ahead")
	}
}
