package docker_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/sandbox/runner/docker"
	"github.com/quavon/quavon/internal/testenv"
)

// pid1Age prints how long PID 1 had been running when the step ran, in
// clock ticks of 10 ms (/proc/uptime in hundredths less PID 1's start
// time, both of the sandbox's own clock under gVisor and of the host's
// under runc), and what the last
// job could have left in /work, /tmp and /out.
const pid1Age = `set -- $(cat /proc/1/stat); awk -v start=${22} '{ printf "age=%d\n", $1 * 100 - start }' /proc/uptime; ` +
	`ls -A /work /tmp /out | tr '\n' ' '; echo; ` +
	`echo secret > /work/left-by-job; echo secret > /tmp/left-by-job; echo secret > /out/left-by-job`

// running reports whether the container id runs on the engine.
func running(t *testing.T, dc *client.Client, id string) bool {
	t.Helper()
	info, err := dc.ContainerInspect(context.Background(), id)
	return err == nil && info.State != nil && info.State.Running
}

// ageOf is the age of PID 1 in seconds the pid1Age step printed.
func ageOf(t *testing.T, res *sandbox.SandboxResult) float64 {
	t.Helper()
	out := res.Artefacts["stdout.log"]
	_, rest, ok := strings.Cut(out, "age=")
	if !ok {
		t.Fatalf("no age in %q (status %s %s)", out, res.Status, res.Error)
	}
	ticks, err := strconv.Atoi(strings.Fields(rest)[0])
	if err != nil {
		t.Fatal(err)
	}
	return float64(ticks) / 100 // CLK_TCK is 100 on Linux and under gVisor
}

// runAged runs the pid1Age job and reports whether its container was
// started ahead: PID 1 older than the whole job (from its sending to its
// result), which a container created for the job cannot be, however slow
// the machine.
func runAged(t *testing.T, h *harness, base string) (*sandbox.SandboxResult, bool) {
	t.Helper()
	t0 := time.Now()
	res := h.run(t, spec("byo:smoke", pid1Age), base)
	elapsed := time.Since(t0).Seconds()
	if res.Status != sandbox.StatusCompleted || res.ExitCode != 0 {
		t.Fatalf("job: %s %d %s\n%q", res.Status, res.ExitCode, res.Error, res.Artefacts)
	}
	age := ageOf(t, res)
	t.Logf("PID 1 %.2f s old in a job of %.2f s", age, elapsed)
	return res, age > elapsed+0.02 // a tick of /proc/uptime
}

// TestPrestart: with prestarting on, a job finds its container started
// (PID 1 older than the job), the container serves that job only and is
// removed after it, the next one is started for the next job, nothing of
// a job is seen by the next, a prestarted container that died is replaced
// by a fresh one, and Close removes what waits.
func TestPrestart(t *testing.T) {
	t.Parallel()
	for name, mode := range modes(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dc := testenv.Docker(t)
			backend := newBackend(t, mode)
			backend.Prestart(1)
			t.Cleanup(func() { backend.Close(context.Background()) })
			admin := testenv.Valkey(t, testenv.UserControlPlane)
			h := newHarnessWith(t, backend, admin, testenv.Pool(t, admin), nil)
			base := tree(t, map[string]string{"x": "x\n"})

			if _, ahead := runAged(t, h, base); ahead {
				t.Error("the first job's container was started ahead")
			}
			backend.WaitPrestarts()
			before := backend.Prestarted()
			if len(before) != 1 || !running(t, dc, before[0]) {
				t.Fatalf("after the first job: prestarted %v", before)
			}
			// Its PID 1 gets older than the next job will take from its
			// sending to its result.
			time.Sleep(2 * time.Second)
			second, ahead := runAged(t, h, base)
			if !ahead {
				t.Error("the second job's container was not started ahead")
			}
			if out := second.Artefacts["stdout.log"]; strings.Contains(out, "left-by-job") {
				t.Errorf("the second job saw the first's files: %q", out)
			}
			backend.WaitPrestarts()
			if _, err := dc.ContainerInspect(context.Background(), before[0]); err == nil {
				t.Errorf("container %s served a job and is still there", before[0][:12])
			}
			after := backend.Prestarted()
			if len(after) != 1 || after[0] == before[0] || !running(t, dc, after[0]) {
				t.Fatalf("no new container started for the next job: %v (was %v)", after, before)
			}

			// One that dies while it waits is not handed out.
			if err := dc.ContainerKill(context.Background(), after[0], "KILL"); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for running(t, dc, after[0]) && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if _, ahead := runAged(t, h, base); ahead {
				t.Error("the job after the kill ran in a container started ahead")
			}
			backend.WaitPrestarts()
			if _, err := dc.ContainerInspect(context.Background(), after[0]); err == nil {
				t.Errorf("the dead prestarted container %s was not removed", after[0][:12])
			}

			left := backend.Prestarted()
			if len(left) != 1 {
				t.Errorf("prestarted after the third job: %v", left)
			}
			if err := backend.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			for _, id := range left {
				if _, err := dc.ContainerInspect(context.Background(), id); err == nil {
					t.Errorf("Close left the prestarted container %s", id[:12])
				}
			}
			// Closed: a job still runs, in a container of its own, and no
			// new one is started ahead.
			if _, ahead := runAged(t, h, base); ahead {
				t.Error("a job after Close ran in a container started ahead")
			}
			backend.WaitPrestarts()
			if len(backend.Prestarted()) != 0 {
				t.Error("a container was started ahead after Close")
			}
		})
	}
}

// TestNoPrestartByDefault: without Prestart no job's container is started
// ahead: the control for TestPrestart's check.
func TestNoPrestartByDefault(t *testing.T) {
	t.Parallel()
	h := newHarness(t, docker.ModeRuncInsecure)
	base := tree(t, map[string]string{"x": "x\n"})
	for range 2 {
		if _, ahead := runAged(t, h, base); ahead {
			t.Error("a container started ahead without Prestart")
		}
	}
	if len(h.backend.Prestarted()) != 0 {
		t.Error("containers started ahead without Prestart")
	}
}

// TestPrestartLeftovers: a runner that dies leaves its prestarted
// container without its attach connection; the entry program reads the end
// of its input and exits, and the next runner's RemoveLeftovers removes
// it. Running ones (a live runner's) stay.
func TestPrestartLeftovers(t *testing.T) {
	t.Parallel()
	dc := testenv.Docker(t)
	dying := newBackend(t, docker.ModeRuncInsecure)
	dying.Prestart(1)
	admin := testenv.Valkey(t, testenv.UserControlPlane)
	h := newHarnessWith(t, dying, admin, testenv.Pool(t, admin), nil)
	h.run(t, spec("byo:smoke", "true"), tree(t, map[string]string{"x": "x\n"}))
	dying.WaitPrestarts()
	ids := dying.Prestarted()
	if len(ids) != 1 || !running(t, dc, ids[0]) {
		t.Fatalf("prestarted: %v", ids)
	}
	id := ids[0]
	// The runner dies: its connections close, Close never runs.
	dying.DieForTest()
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := dc.ContainerInspect(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if !info.State.Running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the prestarted container still runs after its runner's connection closed")
		}
		time.Sleep(100 * time.Millisecond)
	}
	next := newBackend(t, docker.ModeRuncInsecure)
	n, err := next.RemoveLeftovers(context.Background())
	if err != nil || n < 1 {
		t.Fatalf("RemoveLeftovers: %d, %v", n, err)
	}
	if _, err := dc.ContainerInspect(context.Background(), id); err == nil {
		t.Errorf("leftover %s not removed", id[:12])
	}
}
