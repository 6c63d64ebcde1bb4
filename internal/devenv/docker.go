package devenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/quavon/quavon/internal/sandbox/runner/docker"
)

// DockerOptions configure EnsureDockerd.
type DockerOptions struct {
	// StateDir holds the locks and the marker of a dockerd a run started
	// (default /run/quavon-test), shared by every concurrent run.
	StateDir string
	// Runsc is the runsc binary to register (default /usr/local/bin/runsc).
	Runsc string
	// Platform is runsc's platform (systrap or ptrace).
	Platform string
	// RuntimeArgs are runsc's arguments after --platform (default
	// DefaultRuntimeArgs).
	RuntimeArgs []string
	// WorkDir holds the daemon's config and log of a dockerd started here.
	WorkDir string
}

// Dockerd is a Docker Engine with a runsc runtime that this process uses.
// Concurrent runs share one daemon: each holds a shared lock on
// <StateDir>/dockerd.users.lock while it uses it, and the last one to leave
// stops a daemon that a run started (never one it found running).
type Dockerd struct {
	// Platform is the runsc platform the daemon's runtime uses.
	Platform string
	// HugePages says whether the host's kernel gives gVisor huge pages
	// and whether EnsureDockerd set it to (docker.ShmemTHPNote).
	HugePages string
	opt       DockerOptions
	users     *os.File
}

// DefaultRuntimeArgs are runsc's arguments after --platform, as
// scripts/lib/runsc.sh's runsc_runtime_args gives them to a persistent
// daemon: no network of runsc's own (egress is tested on runc here), and
// the container's seccomp profile applied inside gVisor too (the runner
// refuses a runsc runtime without --oci-seccomp).
var DefaultRuntimeArgs = []string{"--network=none", "--oci-seccomp"}

func (o *DockerOptions) defaults() {
	if o.StateDir == "" {
		o.StateDir = "/run/quavon-test"
	}
	if o.Runsc == "" {
		o.Runsc = "/usr/local/bin/runsc"
	}
	if o.RuntimeArgs == nil {
		o.RuntimeArgs = DefaultRuntimeArgs
	}
}

func dockerUp(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, "docker", "info").Run() == nil
}

func dockerRuntimes(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, "docker", "info", "--format", "{{json .Runtimes}}").Output()
	return string(out)
}

var platformRE = regexp.MustCompile(`"runsc"[^}]*--platform=([a-z]+)`)

func lock(f *os.File, how int, wait time.Duration) error {
	end := time.Now().Add(wait)
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(end) {
			return fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// EnsureDockerd uses the running Docker Engine if it has a runsc runtime,
// or starts dockerd with its own --config-file registering runsc (data root
// /var/lib/docker, so images stay cached between runs). It never
// reconfigures a daemon it did not start. It sets the kernel's shmem huge
// pages to advise when they are off (docker.EnableShmemTHP), which only
// gVisor's own request changes: sandboxed programs run on huge pages.
func EnsureDockerd(ctx context.Context, opt DockerOptions) (*Dockerd, error) {
	opt.defaults()
	if err := os.MkdirAll(opt.StateDir, 0o755); err != nil {
		return nil, err
	}
	users, err := os.OpenFile(filepath.Join(opt.StateDir, "dockerd.users.lock"), os.O_CREATE|os.O_RDWR|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, err
	}
	start, err := os.OpenFile(filepath.Join(opt.StateDir, "dockerd.start.lock"), os.O_CREATE|os.O_RDWR|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		users.Close()
		return nil, err
	}
	defer start.Close()
	// Held while checking or starting (and, in Release, stopping) the
	// daemon, so concurrent runs neither start two nor stop one in use.
	if err := lock(start, syscall.LOCK_EX, 2*time.Minute); err != nil {
		users.Close()
		return nil, err
	}
	d := &Dockerd{Platform: opt.Platform, HugePages: docker.ShmemTHPNote(docker.ShmemTHPFile), opt: opt, users: users}
	if dockerUp(ctx) {
		rt := dockerRuntimes(ctx)
		if !strings.Contains(rt, `"runsc"`) {
			users.Close()
			return nil, fmt.Errorf(`a Docker Engine is running but has no 'runsc' runtime; this will not reconfigure a daemon it did
not start. Either stop that daemon (then one is started with runsc), or add to its daemon.json:
  "runtimes": {"runsc": {"path": %q, "runtimeArgs": ["--platform=%s", "--network=none"]}}
and reload it with: kill -HUP $(pidof dockerd)`, opt.Runsc, opt.Platform)
		}
		if missing := missingArgs(rt, opt.RuntimeArgs); len(missing) > 0 {
			// A daemon a run started with older arguments is restarted when
			// nobody uses it; any other is its owner's to change.
			pid, ours := markerPid(opt.StateDir)
			if !ours || syscall.Flock(int(users.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
				users.Close()
				return nil, fmt.Errorf("the running Docker Engine's runsc runtime lacks %v; add them to its runtimeArgs and reload it (kill -HUP $(pidof dockerd)), or stop it so that one is started with them", missing)
			}
			stopPid(pid)
			os.Remove(filepath.Join(opt.StateDir, "dockerd.pid"))
			syscall.Flock(int(users.Fd()), syscall.LOCK_UN)
			if err := startDockerd(ctx, opt); err != nil {
				users.Close()
				return nil, err
			}
		} else if m := platformRE.FindStringSubmatch(rt); m != nil {
			d.Platform = m[1]
		}
	} else if err := startDockerd(ctx, opt); err != nil {
		users.Close()
		return nil, err
	}
	// Register as a user. Only a holder of the start lock takes this lock
	// exclusively, so this does not wait.
	if err := lock(users, syscall.LOCK_SH, 10*time.Second); err != nil {
		users.Close()
		return nil, err
	}
	return d, nil
}

func startDockerd(ctx context.Context, opt DockerOptions) error {
	if os.Getenv("DOCKER_HOST") != "" {
		return fmt.Errorf("DOCKER_HOST=%s is set but docker info fails there", os.Getenv("DOCKER_HOST"))
	}
	// A daemon that holds the default socket or pidfile but does not
	// answer makes the new one fail at start (its pidfile lock), with the
	// reason in the log shown below: never two daemons on one data root.
	if _, err := exec.LookPath("dockerd"); err != nil {
		return errors.New("dockerd is not on PATH (apt-get install docker.io)")
	}
	if err := os.MkdirAll(opt.WorkDir, 0o755); err != nil {
		return err
	}
	conf := map[string]any{"runtimes": map[string]any{"runsc": map[string]any{
		"path": opt.Runsc, "runtimeArgs": append([]string{"--platform=" + opt.Platform}, opt.RuntimeArgs...)}}}
	b, _ := json.MarshalIndent(conf, "", "  ")
	confFile := filepath.Join(opt.WorkDir, "dockerd.json")
	if err := os.WriteFile(confFile, b, 0o644); err != nil {
		return err
	}
	logFile := filepath.Join(opt.WorkDir, "dockerd.log")
	lf, err := os.Create(logFile)
	if err != nil {
		return err
	}
	defer lf.Close()
	cmd := exec.Command("dockerd", "--config-file", confFile)
	cmd.Stdout, cmd.Stderr = lf, lf
	// Its own process group: a Ctrl-C of the run must not kill the daemon
	// other runs share; Release stops it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	go cmd.Wait()
	marker := fmt.Sprintf("%d %s\n", pid, procStart(pid))
	if err := os.WriteFile(filepath.Join(opt.StateDir, "dockerd.pid"), []byte(marker), 0o644); err != nil {
		return err
	}
	alive := func() bool { return syscall.Kill(pid, 0) == nil && procStart(pid) != "" }
	if err := waitFor(ctx, "dockerd", Deadline, alive, func() bool { return dockerUp(ctx) }); err != nil {
		return fmt.Errorf("%w (log %s):\n%s", err, logFile, tail(logFile, 30))
	}
	if !strings.Contains(dockerRuntimes(ctx), `"runsc"`) {
		return errors.New("dockerd started but has no runsc runtime")
	}
	return nil
}

// procStart is field 22 of /proc/<pid>/stat (start time), so that a
// recycled pid is not mistaken for the daemon.
func procStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		if f := strings.Fields(s[i+1:]); len(f) > 19 {
			return f[19]
		}
	}
	return ""
}

// markerPid is the pid of the dockerd a run started, if it still runs.
func markerPid(stateDir string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(stateDir, "dockerd.pid"))
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil {
		return 0, false
	}
	comm, _ := os.ReadFile("/proc/" + f[0] + "/comm")
	if strings.TrimSpace(string(comm)) != "dockerd" || procStart(pid) != f[1] {
		return 0, false
	}
	return pid, true
}

// Release unregisters this run; if no other run uses the daemon, it stops
// a dockerd that a run started (this one, or one an earlier run left).
func (d *Dockerd) Release() error {
	defer d.users.Close()
	syscall.Flock(int(d.users.Fd()), syscall.LOCK_UN)
	start, err := os.OpenFile(filepath.Join(d.opt.StateDir, "dockerd.start.lock"), os.O_CREATE|os.O_RDWR|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	defer start.Close()
	if err := lock(start, syscall.LOCK_EX, 2*time.Minute); err != nil {
		return fmt.Errorf("not stopping dockerd: %w", err)
	}
	if syscall.Flock(int(d.users.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return nil // another run uses it
	}
	pid, ok := markerPid(d.opt.StateDir)
	if !ok {
		return nil
	}
	stopPid(pid)
	return os.Remove(filepath.Join(d.opt.StateDir, "dockerd.pid"))
}

// stopPid sends SIGTERM, waits up to 60 s, then SIGKILL.
func stopPid(pid int) {
	syscall.Kill(pid, syscall.SIGTERM)
	for i := 0; i < 600 && syscall.Kill(pid, 0) == nil && procStart(pid) != ""; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	if syscall.Kill(pid, 0) == nil && procStart(pid) != "" {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// missingArgs lists the args the runsc runtime of `docker info`'s
// runtimes JSON lacks.
func missingArgs(runtimes string, args []string) []string {
	var rt map[string]struct {
		RuntimeArgs []string `json:"runtimeArgs"`
	}
	if json.Unmarshal([]byte(runtimes), &rt) != nil {
		return args
	}
	var missing []string
	for _, a := range args {
		if !slices.Contains(rt["runsc"].RuntimeArgs, a) {
			missing = append(missing, a)
		}
	}
	return missing
}
