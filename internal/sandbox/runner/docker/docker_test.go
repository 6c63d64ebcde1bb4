package docker_test

import (
	"github.com/quavon/quavon/internal/snapshot"

	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/sandbox/runner"
	"github.com/quavon/quavon/internal/sandbox/runner/docker"
	"github.com/quavon/quavon/internal/testenv"
)

// TestEndToEnd: a worker-side client submits a real signed job with a real
// snapshot and overlay to a real runner and gets a verified result, on
// both backends.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	for name, mode := range modes(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, mode)
			base := tree(t, map[string]string{"hello.txt": "hello from the base\n", "lib/x.txt": "base version\n"})
			overlay := tree(t, map[string]string{"lib/x.txt": "overlay version\n"})
			s := spec("byo:smoke", `cat hello.txt lib/x.txt; test -f setup-ran && echo setup-was-here; echo to-stderr >&2; echo "artefact" > /out/report.txt; exit 3`)
			s.SetupCommand = `cat lib/x.txt > setup-ran`
			s.Artefacts = []string{"report.txt", "missing.txt"}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			res, err := h.client.Run(ctx, s, base, overlay)
			if err != nil {
				t.Fatalf("%v\n%s", err, h.logs)
			}
			if res.Status != sandbox.StatusCompleted || res.ExitCode != 3 {
				t.Fatalf("status %s exit %d error %q\nlogs:\n%s", res.Status, res.ExitCode, res.Error, h.logs)
			}
			out := res.Artefacts["stdout.log"]
			for _, want := range []string{"hello from the base", "overlay version", "setup-was-here"} {
				if !strings.Contains(out, want) {
					t.Errorf("stdout.log lacks %q:\n%s", want, out)
				}
			}
			// Setup saw the unmodified base, the run step the overlay.
			if !strings.Contains(res.Artefacts["stdout.log"], "overlay version") {
				t.Error("overlay not applied")
			}
			if !strings.Contains(res.Artefacts["stderr.log"], "to-stderr") || strings.TrimSpace(res.Artefacts["report.txt"]) != "artefact" {
				t.Errorf("artefacts %q", res.Artefacts)
			}
			if _, ok := res.Artefacts["missing.txt"]; ok {
				t.Error("a missing artefact appeared")
			}
			if len(res.Steps) != 2 || res.Steps[0].Name != "setup" || res.Steps[0].ExitCode != 0 || res.Steps[1].ExitCode != 3 {
				t.Errorf("steps %+v", res.Steps)
			}
			lock, _ := runner.LoadLockfile(testenv.ImagesLock(t))
			if want, _ := lock.Resolve("byo:smoke"); res.ImageDigest != want {
				t.Errorf("image digest %q, want %q", res.ImageDigest, want)
			}
		})
	}
}

// TestOverlayDeletesAfterSetup: a snapshot built from memory (as the
// worker builds them from git objects) and an overlay that deletes a file:
// the setup step still sees it, the run step no longer does.
func TestOverlayDeletesAfterSetup(t *testing.T) {
	t.Parallel()
	for name, mode := range modes(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, mode)
			read := func(s string) func() ([]byte, error) { return func() ([]byte, error) { return []byte(s), nil } }
			base := snapshot.Files{{Name: "gone.txt", Read: read("base\n")}, {Name: "lib/kept.txt", Read: read("kept\n")}}
			overlay := snapshot.Overlay{Files: []snapshot.File{{Name: "lib/new.txt", Read: read("new\n")}}, Deletions: []string{"gone.txt"}}
			s := spec("byo:smoke", `test -e gone.txt && echo run-saw-gone; cat lib/kept.txt lib/new.txt setup.log`)
			s.SetupCommand = `test -f gone.txt && echo setup-saw-gone > setup.log`
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			res, err := h.client.RunSources(ctx, s, base, overlay)
			if err != nil {
				t.Fatalf("%v\n%s", err, h.logs)
			}
			out := res.Artefacts["stdout.log"]
			if res.Status != sandbox.StatusCompleted || res.ExitCode != 0 {
				t.Fatalf("status %s exit %d error %q\n%s", res.Status, res.ExitCode, res.Error, out)
			}
			for _, want := range []string{"kept", "new", "setup-saw-gone"} {
				if !strings.Contains(out, want) {
					t.Errorf("stdout.log lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "run-saw-gone") {
				t.Errorf("the deleted file was there in the run step:\n%s", out)
			}
		})
	}
}

// TestClassImages runs each built-in class image's toolchain.
func TestClassImages(t *testing.T) {
	t.Parallel()
	for name, mode := range modes(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, mode)
			base := tree(t, map[string]string{"x": "x"})
			for class, cmd := range map[string]string{
				"node":   `node -e 'console.log("node", 6*7)' && npm --version`,
				"python": `python3 -c 'print("python", 6*7)'`,
				"go": `cat > main.go <<'GO'
package main
import "fmt"
func main() { fmt.Println("go", 6*7) }
GO
go run main.go`,
			} {
				res := h.run(t, spec(class, cmd), base)
				if res.Status != sandbox.StatusCompleted || res.ExitCode != 0 || !strings.Contains(res.Artefacts["stdout.log"], "42") {
					t.Errorf("%s: %s exit %d %q\nstdout: %s\nstderr: %s", class, res.Status, res.ExitCode, res.Error,
						res.Artefacts["stdout.log"], res.Artefacts["stderr.log"])
				}
			}
		})
	}
}

// TestContainerSettings reads back the configuration of a running sandbox
// container and checks every setting of spec §3.
func TestContainerSettings(t *testing.T) {
	t.Parallel()
	for name, mode := range modes(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, mode)
			s := spec("byo:smoke", "sleep 20")
			s.Limits.MemoryBytes = 2 << 30 // above the harness ceiling (1 GiB): clamped
			// A marker in the environment tells this job's container from
			// those of tests running alongside.
			marker := "TZ=settings-" + name + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			s.Env[sandbox.EnvTZ] = strings.TrimPrefix(marker, "TZ=")
			done := make(chan *sandbox.SandboxResult, 1)
			base := tree(t, map[string]string{"x": "x"})
			go func() {
				res, err := h.client.Run(context.Background(), s, base, "")
				if err != nil {
					t.Errorf("job: %v", err)
				}
				done <- res
			}()
			var id string
			deadline := time.Now().Add(60 * time.Second)
			for id == "" && time.Now().Before(deadline) {
				cs, err := h.docker.ContainerList(context.Background(), container.ListOptions{
					Filters: filters.NewArgs(filters.Arg("label", docker.LabelJobID), filters.Arg("status", "running"))})
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range cs {
					if info, err := h.docker.ContainerInspect(context.Background(), c.ID); err == nil && slices.Contains(info.Config.Env, marker) {
						id = c.ID
					}
				}
				if id == "" {
					select {
					case res := <-done:
						t.Fatalf("the job ended before its container was seen: %+v", res)
					case <-time.After(100 * time.Millisecond): // polling with a deadline
					}
				}
			}
			if id == "" {
				t.Fatal("the sandbox container never appeared")
			}
			info, err := h.docker.ContainerInspect(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			l := s.Limits
			l.MemoryBytes = 1 << 30
			hc, cfg := info.HostConfig, info.Config
			check := func(what string, ok bool) {
				if !ok {
					t.Errorf("%s: got %+v", what, hc)
				}
			}
			check("runtime", hc.Runtime == h.backend.Runtime())
			check("network none", string(hc.NetworkMode) == "none" && cfg.NetworkDisabled)
			check("read-only root", hc.ReadonlyRootfs)
			check("cap drop ALL", slices.Equal(hc.CapDrop, []string{"ALL"}) && len(hc.CapAdd) == 0)
			// The profile read back is the committed one, unchanged.
			check("no-new-privileges, Quavon's seccomp profile", len(hc.SecurityOpt) == 2 && hc.SecurityOpt[0] == "no-new-privileges:true" &&
				strings.HasPrefix(hc.SecurityOpt[1], "seccomp="))
			if len(hc.SecurityOpt) == 2 {
				got, want := parseProfile(t, strings.TrimPrefix(hc.SecurityOpt[1], "seccomp=")), parseProfile(t, docker.SeccompProfile(h.backend.Runtime()))
				if !reflect.DeepEqual(got, want) {
					t.Errorf("the container's seccomp profile differs from seccomp.json")
				}
			}
			check("user", cfg.User == "65532:65532")
			check("pids", hc.PidsLimit != nil && *hc.PidsLimit == l.Pids)
			check("memory = swap, clamped to the ceiling", hc.Memory == l.MemoryBytes && hc.MemorySwap == l.MemoryBytes)
			check("cpus", hc.NanoCPUs == l.CPUMillis*1_000_000)
			check("tmpfs /work", strings.Contains(hc.Tmpfs["/work"], "exec") && !strings.Contains(hc.Tmpfs["/work"], "noexec") &&
				strings.Contains(hc.Tmpfs["/work"], "nosuid") && strings.Contains(hc.Tmpfs["/work"], "nodev"))
			for _, p := range []string{"/out", "/tmp"} {
				check("tmpfs "+p, strings.Contains(hc.Tmpfs[p], "noexec") && strings.Contains(hc.Tmpfs[p], "nosuid") &&
					strings.Contains(hc.Tmpfs[p], "nodev") && strings.Contains(hc.Tmpfs[p], "size="))
			}
			check("three tmpfs only", len(hc.Tmpfs) == 3)
			check("HOME under /work", slices.Contains(cfg.Env, "HOME=/work/.home"))
			// Exactly PATH (ours, over the image's), HOME and the job's keys.
			if !(len(cfg.Env) == 4 && slices.Contains(cfg.Env, "CI=true") && slices.Contains(cfg.Env, marker) &&
				slices.Contains(cfg.Env, "PATH="+runner.SandboxPath) && slices.Contains(cfg.Env, "HOME="+runner.SandboxHome)) {
				t.Errorf("env: %q", cfg.Env)
			}
			check("ulimits", len(hc.Ulimits) == 2 && hc.Ulimits[0].Name == "nofile" && hc.Ulimits[0].Hard == l.NoFile &&
				hc.Ulimits[1].Name == "fsize" && hc.Ulimits[1].Hard == l.FileSizeBytes)
			check("ipc private", string(hc.IpcMode) == "private" && hc.ShmSize > 0 && hc.ShmSize <= 1<<20)
			check("no binds, mounts, volumes, devices", len(hc.Binds) == 0 && len(hc.Mounts) == 0 && len(info.Mounts) == 0 &&
				len(hc.Devices) == 0 && len(cfg.Volumes) == 0 && len(hc.VolumesFrom) == 0)
			check("not privileged", !hc.Privileged && !hc.PublishAllPorts && len(hc.PortBindings) == 0)
			check("no host init", hc.Init != nil && !*hc.Init)
			check("entry program is PID 1", slices.Equal(cfg.Entrypoint, []string{runner.EntryPath}) && len(cfg.Cmd) == 0)
			check("no log driver", hc.LogConfig.Type == "none")
			img, err := h.docker.ImageInspect(context.Background(), info.Image)
			if err != nil {
				t.Fatal(err)
			}
			own := 0 // labels not inherited from the image
			for k, v := range cfg.Labels {
				if img.Config == nil || img.Config.Labels[k] != v {
					own++
				}
			}
			check("labels: job id only", own == 1 && cfg.Labels[docker.LabelJobID] != "")
			check("fixed hostname", cfg.Hostname == "sandbox")
			check("pid, uts, userns not the host's", !hc.PidMode.IsHost() && !hc.UTSMode.IsHost() && !hc.UsernsMode.IsHost() && !hc.IpcMode.IsHost())
			check("image pinned by id", info.Image == mustResolve(t, "byo:smoke"))
			res := <-done
			if res == nil || res.Status != sandbox.StatusCompleted {
				t.Fatalf("job %+v", res)
			}
		})
	}
}

func mustResolve(t *testing.T, class string) string {
	lock, err := runner.LoadLockfile(testenv.ImagesLock(t))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := lock.Resolve(class)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// TestEscapeProbes runs the escape probe as repository code: every way out
// must be blocked, and the canaries in the runner's and worker's
// environment must never reach the sandbox, its artefacts or the logs.
// Not parallel: it sets the process environment.
func TestEscapeProbes(t *testing.T) {
	t.Setenv("QUAVON_TEST_CANARY_RUNNER", runnerCanary)
	t.Setenv("AWS_SECRET_ACCESS_KEY", workerCanary)
	for name, mode := range modes(t) {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, mode)
			outputCanary := "QUAVON-OUTPUT-CANARY-c0ffee"
			res := h.run(t, spec("byo:smoke", "./probe "+runnerCanary+"; echo "+outputCanary), probeTree(t))
			if res.Status != sandbox.StatusCompleted {
				t.Fatalf("probe job: %s %q\nstderr: %s", res.Status, res.Error, res.Artefacts["stderr.log"])
			}
			stdout := res.Artefacts["stdout.log"]
			start := strings.Index(stdout, "{")
			end := strings.LastIndex(stdout, "}")
			var probes map[string]string
			if start < 0 || end < start || json.Unmarshal([]byte(stdout[start:end+1]), &probes) != nil {
				t.Fatalf("probe output not JSON:\n%s\nstderr:\n%s", stdout, res.Artefacts["stderr.log"])
			}
			if len(probes) < 25 {
				t.Fatalf("only %d probes ran", len(probes))
			}
			for probe, verdict := range probes {
				if !strings.HasPrefix(verdict, "blocked") {
					t.Errorf("%s: %s", probe, verdict)
				}
			}
			// HOSTNAME (fixed, "sandbox") comes from Docker, PWD and SHLVL
			// from the shell; nothing else may appear.
			if got := probes["env self"]; got != "blocked: keys CI,HOME,HOSTNAME,PATH,PWD,SHLVL" {
				t.Errorf("sandbox environment: %s", got)
			}
			for name, body := range res.Artefacts {
				if strings.Contains(body, runnerCanary+"=") || strings.Contains(body, workerCanary) {
					t.Errorf("artefact %s holds a canary", name)
				}
			}
			if strings.Contains(h.logs.String(), outputCanary) {
				t.Error("the runner logged job output")
			}
		})
	}
}

// TestResourceLimits: fork bomb, filling /work, endless stdout and a step
// past the wall clock are all contained.
func TestResourceLimits(t *testing.T) {
	t.Parallel()
	for name, mode := range modes(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, mode)
			base := tree(t, map[string]string{"x": "x"})

			fork := spec("byo:smoke", `i=0; while [ $i -lt 400 ]; do sleep 60 & i=$((i+1)); done; echo forked`)
			fork.Limits.Pids = 48
			forkStart := time.Now()
			res := h.run(t, fork, base)
			// runc: forks fail inside the container ("can't fork") and the
			// job completes. gVisor: the pids limit bounds the sentry's host
			// threads, so the bomb takes the whole sandbox down and the job
			// fails without an exit status. Either way it is stopped, fast.
			contained := res.Status == sandbox.StatusCompleted && strings.Contains(strings.ToLower(res.Artefacts["stderr.log"]), "fork") ||
				res.Status == sandbox.StatusFailed && strings.Contains(res.Error, "without an exit status")
			if !contained || time.Since(forkStart) > 30*time.Second {
				t.Errorf("fork bomb: %s %q after %s\nstderr: %.500s", res.Status, res.Error, time.Since(forkStart), res.Artefacts["stderr.log"])
			}

			fill := spec("byo:smoke", `dd if=/dev/zero of=/work/fill bs=1M count=200`)
			fill.Limits.WorkBytes = 32 << 20
			res = h.run(t, fill, base)
			if res.ExitCode == 0 || !strings.Contains(res.Artefacts["stderr.log"], "No space left on device") {
				t.Errorf("filling /work: exit %d\nstderr: %.500s", res.ExitCode, res.Artefacts["stderr.log"])
			}

			// 1 GiB in 1 MiB writes (busybox head's small writes take
			// minutes of syscalls under gVisor).
			flood := spec("byo:smoke", `dd if=/dev/zero bs=1M count=1024 2>/dev/null; echo done >&2`)
			flood.Limits.OutputBytes = 64 << 10
			res = h.run(t, flood, base)
			if res.Status != sandbox.StatusCompleted || !res.OutputTruncated || int64(len(res.Artefacts["stdout.log"])) > flood.Limits.OutputBytes {
				t.Errorf("1 GiB stdout: %s truncated=%v kept %d bytes %q", res.Status, res.OutputTruncated, len(res.Artefacts["stdout.log"]), res.Error)
			}

			slow := spec("byo:smoke", `sleep 600`)
			slow.Limits.WallClockSeconds, slow.Limits.SetupSeconds = 3, 1
			start := time.Now()
			res = h.run(t, slow, base)
			if res.Status != sandbox.StatusTimedOut || time.Since(start) > 60*time.Second {
				t.Errorf("past the wall clock: %s after %s", res.Status, time.Since(start))
			}
			if left, err := leftContainers(res.JobID); err != nil || len(left) > 0 {
				t.Errorf("timed-out container not removed: %v %v", left, err)
			}
		})
	}
}

// TestUnknownImageClassFails: a class the lockfile lacks never runs.
func TestUnknownImageClassFails(t *testing.T) {
	t.Parallel()
	h := newHarness(t, docker.ModeRunsc)
	res := h.run(t, spec("byo:not-there", "true"), tree(t, map[string]string{"x": "x"}))
	if res.Status != sandbox.StatusFailed || !strings.Contains(res.Error, "not in this runner's lockfile") {
		t.Fatalf("%+v", res)
	}
}

// TestEgressRegistriesRefusedWithoutEgress: a runner without egress
// configured fails such a job instead of running its setup step offline.
func TestEgressRegistriesRefusedWithoutEgress(t *testing.T) {
	t.Parallel()
	h := newHarness(t, docker.ModeRunsc)
	s := spec("byo:smoke", "true")
	s.SetupCommand = "npm ci"
	s.Egress = sandbox.Egress{Mode: sandbox.EgressRegistries, Hosts: []string{"registry.npmjs.org"}}
	res := h.run(t, s, tree(t, map[string]string{"x": "x"}))
	if res.Status != sandbox.StatusFailed || !strings.Contains(res.Error, "not enabled on this runner") {
		t.Fatalf("%+v", res)
	}
}

// TestRunscPlatformMismatchRefuses: a runner configured for another gVisor
// platform than the engine's refuses to start.
func TestRunscPlatformMismatchRefuses(t *testing.T) {
	t.Parallel()
	dc := testenv.Docker(t)
	other := "ptrace"
	if testenv.RunscPlatform(t) == "ptrace" {
		other = "systrap"
	}
	if _, err := docker.New(context.Background(), dc, docker.ModeRunsc, other); err == nil || !strings.Contains(err.Error(), "platform") {
		t.Fatalf("mismatched platform accepted: %v", err)
	}
}

// TestKilledJobKeepsItsOutput: a job killed at the wall clock, or at the
// memory limit, still returns what its steps printed until then and the
// steps so far; the step that was cut off is marked.
func TestKilledJobKeepsItsOutput(t *testing.T) {
	t.Parallel()
	for name, mode := range modes(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, mode)
			base := tree(t, map[string]string{"x": "x"})

			hang := spec("byo:smoke", `echo test_a ok; echo test_b ok; echo "test_c: waiting for the server" >&2; sleep 600`)
			hang.SetupCommand = "echo deps installed"
			hang.Limits.WallClockSeconds, hang.Limits.SetupSeconds = 6, 3
			res := h.run(t, hang, base)
			if res.Status != sandbox.StatusTimedOut || len(res.Steps) != 2 {
				t.Fatalf("hung job: %s %q steps %+v", res.Status, res.Error, res.Steps)
			}
			if s := res.Steps[0]; s.Name != "setup" || !s.Ran || s.ExitCode != 0 || s.TimedOut {
				t.Errorf("setup step %+v", s)
			}
			if s := res.Steps[1]; s.Name != "run" || !s.Ran || !s.TimedOut {
				t.Errorf("run step %+v", s)
			}
			if out, errs := res.Artefacts["stdout.log"], res.Artefacts["stderr.log"]; !strings.Contains(out, "deps installed") ||
				!strings.Contains(out, "== run ==\ntest_a ok\ntest_b ok\n") || !strings.Contains(errs, "test_c: waiting for the server") {
				t.Errorf("partial output lost:\nstdout: %q\nstderr: %q", out, errs)
			}

			// Output is forwarded every frame.FlushInterval, so the leak
			// starts two of them after the line. Then a string doubles to
			// 1 GiB in the shell itself: memory, not syscalls (a pipe
			// through tr took over the minute of the wall clock under runsc
			// on a loaded 2-core machine before reaching the limit).
			leak := spec("byo:smoke", `echo before the leak; sleep 2; x=a; i=0; while [ $i -lt 30 ]; do x=$x$x; i=$((i+1)); done; echo after the leak`)
			leak.Limits.MemoryBytes = 64 << 20
			res = h.run(t, leak, base)
			out := res.Artefacts["stdout.log"]
			// runc: the kernel kills the biggest process, the step's shell,
			// and PID 1 reports it. gVisor: the whole sandbox dies at the
			// limit; the runner says so and keeps the output so far.
			steppedOut := res.Status == sandbox.StatusCompleted && res.ExitCode == 137
			sandboxDied := res.Status == sandbox.StatusFailed && strings.Contains(res.Error, "memory limit") &&
				len(res.Steps) == 1 && res.Steps[0].Ran && res.ExitCode == sandbox.NoExitCode
			if !(steppedOut || sandboxDied) || !strings.Contains(out, "before the leak") || strings.Contains(out, "after the leak") {
				t.Errorf("memory limit: %s exit %d %q steps %+v\nstdout: %q", res.Status, res.ExitCode, res.Error, res.Steps, out)
			}
		})
	}
}
