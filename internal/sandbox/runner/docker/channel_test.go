package docker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/sandbox/runner/docker"
	"github.com/quavon/quavon/internal/sandbox/valkeyq"
)

var attackOnce = buildStatic("attack")

// attackTree is a repository whose code is the channel attack.
func attackTree(t *testing.T) string {
	t.Helper()
	bin, err := attackOnce()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "attack"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Why a job the attack spoilt may fail: each names what happened.
var attackFailures = []string{
	"tampered with",            // the output or input did not verify
	"PID 1) was killed",        // kill(1, SIGKILL) under gVisor
	"without an exit status",   // the stream ended otherwise
	"killed at the wall clock", // a stolen go-ahead leaves PID 1 waiting
	"the sandbox container failed",
}

// TestPID1ChannelAttacks runs every attack on the entry program's channel
// as repository code, in the setup step and in the run step, on runc and
// runsc. The true verdict is always a failure (setup or run exits 1); the
// attacks try to turn it into a pass. Each job must end with the true
// verdict or as failed (or timed out) with its reason, never forged. Under
// runsc, where a step can open /proc/1/fd, the forging attacks must be seen
// and refused: that proves they reached PID 1's descriptors, so the test is
// not passing for want of an attack.
func TestPID1ChannelAttacks(t *testing.T) {
	t.Parallel()
	attacks := []string{"forge-out", "forge-out-v1", "garbage-out", "inject-in", "read-in", "read-out", "signals", "kill", "linger"}
	if a := os.Getenv("ATTACK_ONLY"); a != "" {
		attacks = []string{a}
	}
	for name, mode := range modes(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, mode)
			repo := attackTree(t)
			type job struct {
				name       string
				s          valkeyq.JobSpec
				wantExit   int
				wantRunRan bool
			}
			var jobs []job
			for _, a := range attacks {
				setup := spec("byo:smoke", `echo RUN-STEP-RAN; exit 0`)
				setup.SetupCommand = "./attack " + a + " setup; exit 1"
				jobs = append(jobs, job{a + " in setup", setup, 1, false})
				run := spec("byo:smoke", "./attack "+a+" run; exit 1")
				run.SetupCommand = "true"
				jobs = append(jobs, job{a + " in run", run, 1, true})
			}
			// Input injected while the setup step passes: the go-ahead and
			// the overlay must still be the runner's.
			inject := spec("byo:smoke", `test -f from-overlay && echo overlay-applied; exit 3`)
			inject.SetupCommand = "./attack inject-in"
			jobs = append(jobs, job{"inject-in before a go-ahead that follows", inject, 3, true})

			results := make([]*sandbox.SandboxResult, len(jobs))
			var wg sync.WaitGroup
			for i, j := range jobs {
				j.s.Limits.WallClockSeconds = 30
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
					defer cancel()
					overlay := ""
					if strings.HasPrefix(j.name, "inject-in before") {
						overlay = tree(t, map[string]string{"from-overlay": "x"})
					}
					res, err := h.client.Run(ctx, j.s, repo, overlay)
					if err != nil {
						t.Errorf("%s: %v", j.name, err)
						return
					}
					results[i] = res
				})
			}
			wg.Wait()
			refused := map[string]bool{}
			for i, j := range jobs {
				res := results[i]
				if res == nil {
					continue
				}
				if err := judge(res, j.wantExit, j.wantRunRan); err != nil {
					t.Errorf("%s: %v\nstdout: %s\nstderr: %s", j.name, err, res.Artefacts["stdout.log"], res.Artefacts["stderr.log"])
				}
				if res.Status != sandbox.StatusCompleted {
					refused[j.name] = true
				}
				t.Logf("%s: %s exit %d %q steps %+v", j.name, res.Status, res.ExitCode, res.Error, res.Steps)
				if os.Getenv("ATTACK_DEBUG") != "" {
					t.Logf("stdout %q\nstderr %q", res.Artefacts["stdout.log"], res.Artefacts["stderr.log"])
				}
			}
			if mode == docker.ModeRunsc {
				for _, must := range []string{"forge-out in setup", "forge-out in run", "garbage-out in run", "kill in run"} {
					if !refused[must] {
						t.Errorf("%s: under gVisor this attack reaches PID 1 and must fail the job; it completed", must)
					}
				}
			}
		})
	}
}

// judge accepts the true verdict (completed with wantExit, the run step
// run only when it should have) or a failure with its reason.
func judge(res *sandbox.SandboxResult, wantExit int, wantRunRan bool) error {
	switch res.Status {
	case sandbox.StatusCompleted:
		ranRun := false
		for _, s := range res.Steps {
			ranRun = ranRun || s.Name == "run" && s.Ran
		}
		if res.ExitCode != wantExit || res.Error != "" || ranRun != wantRunRan || strings.Contains(res.Artefacts["stdout.log"], "RUN-STEP-RAN") {
			return fmt.Errorf("forged verdict: completed, exit %d (true %d), run step ran %v (true %v), steps %+v", res.ExitCode, wantExit, ranRun, wantRunRan, res.Steps)
		}
		return nil
	case sandbox.StatusFailed, sandbox.StatusTimedOut:
		for _, why := range attackFailures {
			if strings.Contains(res.Error, why) {
				return nil
			}
		}
		return fmt.Errorf("%s without a known reason: %q", res.Status, res.Error)
	}
	return fmt.Errorf("status %s", res.Status)
}
