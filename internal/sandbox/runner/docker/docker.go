// Package docker runs sandbox containers through the Docker Engine API:
// gVisor (runtime runsc) in production, plain runc only as the explicitly
// insecure development backend.
//
// Every container gets the settings of spec §3 "Container settings" and
// nothing else: no network, read-only root, no capabilities,
// no-new-privileges with Quavon's seccomp profile (seccomp.go; under gVisor
// too, which the runsc runtime must be told with --oci-seccomp), uid 65532, pids,
// memory (= memory+swap) and CPU limits, tmpfs for /work, /out and /tmp,
// nofile and fsize ulimits, private IPC with a small /dev/shm, no mounts,
// devices or privileges, no init other than the entry program, no log
// driver (container output never lands on the host's disk) and the job id
// as its only label.
package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/quavon/quavon/internal/sandbox/runner"
)

// Mode selects the OCI runtime.
type Mode string

// Modes.
const (
	ModeRunsc        Mode = "docker-runsc"
	ModeRuncInsecure Mode = "docker-runc-insecure"
	runtimeRunsc          = "runsc"
	runtimeRunc           = "runc"
	shmBytes              = 1 << 20
	// LabelJobID is the only label a sandbox container carries.
	LabelJobID = "quavon.job-id"
)

// Backend is a runner.Backend on a Docker Engine.
type Backend struct {
	cli     *client.Client
	mode    Mode
	runtime string
	pool    prestartPool
}

var _ runner.Backend = (*Backend)(nil)

// New checks the engine and returns a backend. For ModeRunsc the engine
// must have a runtime named runsc whose runtimeArgs set --platform to
// platform and --oci-seccomp (without it gVisor ignores the container's
// seccomp profile); anything else refuses to start. The caller decides
// whether ModeRuncInsecure is allowed at all.
func New(ctx context.Context, cli *client.Client, mode Mode, platform string) (*Backend, error) {
	info, err := cli.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("docker backend: engine: %w", err)
	}
	switch mode {
	case ModeRunsc:
		rt, ok := info.Runtimes[runtimeRunsc]
		if !ok {
			return nil, errors.New("docker backend: the engine has no runsc runtime; register gVisor in daemon.json (runtimes.runsc)")
		}
		if err := CheckRunscArgs(rt.Args, platform); err != nil {
			return nil, err
		}
		return &Backend{cli: cli, mode: mode, runtime: runtimeRunsc}, nil
	case ModeRuncInsecure:
		return &Backend{cli: cli, mode: mode, runtime: runtimeRunc}, nil
	}
	return nil, fmt.Errorf("docker backend: unknown mode %q", mode)
}

// CheckRunscArgs checks the runtimeArgs of the engine's runsc runtime: an
// explicit --platform equal to platform, and --oci-seccomp, without which
// gVisor ignores the containers' seccomp profile.
func CheckRunscArgs(args []string, platform string) error {
	got, seccomp := "", false
	for _, a := range args {
		a = "--" + strings.TrimLeft(a, "-") // runsc takes -flag and --flag
		if p, ok := strings.CutPrefix(a, "--platform="); ok {
			got = p
		}
		switch a {
		case "--oci-seccomp", "--oci-seccomp=true":
			seccomp = true
		case "--oci-seccomp=false":
			seccomp = false
		}
	}
	switch {
	case got == "":
		return fmt.Errorf("docker backend: the runsc runtime sets no --platform in its runtimeArgs; set --platform=%s explicitly", platform)
	case got != platform:
		return fmt.Errorf("docker backend: runsc runs with --platform=%s, configured %s", got, platform)
	case !seccomp:
		return errors.New("docker backend: the runsc runtime does not apply the containers' seccomp profile; add --oci-seccomp to its runtimeArgs")
	}
	return nil
}

// Name is the backend mode.
func (b *Backend) Name() string { return string(b.mode) }

// Runtime is the OCI runtime containers get.
func (b *Backend) Runtime() string { return b.runtime }

// ContainerConfig returns the configuration a job's container is created
// with.
func (b *Backend) ContainerConfig(spec runner.ContainerSpec) (*container.Config, *container.HostConfig) {
	l := spec.Limits
	uid := strconv.Itoa(runner.SandboxUID)
	owned := ",uid=" + uid + ",gid=" + uid + ",mode=0700"
	no := false
	cfg := &container.Config{
		Image:      spec.ImageRef,
		Entrypoint: []string{runner.EntryPath},
		Cmd:        []string{},
		User:       uid + ":" + uid,
		Env:        spec.Env,
		WorkingDir: "/work",
		Labels:     map[string]string{LabelJobID: spec.JobID},
		// Docker puts the hostname into HOSTNAME; a fixed one says nothing.
		Hostname:        "sandbox",
		AttachStdin:     true,
		AttachStdout:    true,
		AttachStderr:    true,
		OpenStdin:       true,
		StdinOnce:       true,
		NetworkDisabled: true,
	}
	netMode := container.NetworkMode("none")
	if spec.Network != "" {
		netMode = container.NetworkMode(spec.Network)
		cfg.NetworkDisabled = false
	}
	host := &container.HostConfig{
		Runtime:        b.runtime,
		NetworkMode:    netMode,
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges:true", "seccomp=" + SeccompProfile(b.runtime)},
		IpcMode:        "private",
		ShmSize:        shmBytes,
		Init:           &no,
		Privileged:     false,
		LogConfig:      container.LogConfig{Type: "none"},
		RestartPolicy:  container.RestartPolicy{Name: container.RestartPolicyDisabled},
		Tmpfs: map[string]string{
			"/work": fmt.Sprintf("rw,exec,nosuid,nodev,size=%d%s", l.WorkBytes, owned),
			"/out":  fmt.Sprintf("rw,noexec,nosuid,nodev,size=%d%s", l.OutputBytes, owned),
			"/tmp":  fmt.Sprintf("rw,noexec,nosuid,nodev,size=%d,mode=1777", l.TmpBytes),
		},
		Resources: container.Resources{
			PidsLimit:  &l.Pids,
			Memory:     l.MemoryBytes,
			MemorySwap: l.MemoryBytes,
			NanoCPUs:   l.CPUMillis * 1_000_000,
			Ulimits: []*container.Ulimit{
				{Name: "nofile", Soft: l.NoFile, Hard: l.NoFile},
				{Name: "fsize", Soft: l.FileSizeBytes, Hard: l.FileSizeBytes},
			},
		},
	}
	return cfg, host
}

// Exec runs one sandbox container to the end and removes it. The
// container is one started ahead for the job's shape when there is one
// (prestart.go), otherwise it is created and started now.
func (b *Backend) Exec(ctx context.Context, spec runner.ContainerSpec, stdin io.Reader, stdout io.Writer) (res runner.ExecResult, err error) {
	cfg, host := b.ContainerConfig(spec)
	shape := b.shapeOf(spec, cfg, host)
	c := b.take(ctx, shape)
	if c == nil {
		if c, err = b.start(ctx, cfg, host); err != nil {
			return res, err
		}
	}
	id, att, waitC, waitErr := c.id, c.att, c.waitC, c.waitErr
	// Removal must happen whatever ctx has become.
	cleanup := context.WithoutCancel(ctx)
	defer func() {
		if rerr := b.remove(cleanup, c); rerr != nil && err == nil {
			err = rerr
		}
		// The next job of this shape finds its container started.
		b.refill(shape, cfg, host)
	}()

	copied := make(chan error, 1)
	go func() {
		// stderr is the entry program's own diagnostics: never logged or
		// kept (it may quote repository output), only drained.
		_, err := stdcopy.StdCopy(stdout, io.Discard, att.Reader)
		copied <- err
	}()
	go func() {
		io.Copy(att.Conn, stdin)
		att.CloseWrite()
	}()

	killed := false // by this runner: the wall clock, the output cap
	kill := func() {
		killed = true
		kctx, cancel := context.WithTimeout(cleanup, 30*time.Second)
		defer cancel()
		b.cli.ContainerKill(kctx, id, "KILL")
	}
	wall := time.NewTimer(time.Duration(spec.Limits.WallClockSeconds) * time.Second)
	defer wall.Stop()
	var copyErr error
	copyDone := false
	for {
		select {
		case <-wall.C:
			res.TimedOut = true
			kill()
		case <-ctx.Done():
			kill()
			return res, ctx.Err()
		case copyErr = <-copied:
			copyDone = true
			copied = nil
			if copyErr != nil {
				// The reader gave up (output cap): stop the container.
				kill()
			}
		case w := <-waitC:
			if w.Error != nil {
				return res, fmt.Errorf("docker: wait: %s", w.Error.Message)
			}
			res.ExitCode = int(w.StatusCode)
			if res.ExitCode != 0 {
				// Killed at the memory limit? Under gVisor the whole sandbox
				// dies then; the result says why.
				res.OOMKilled = b.oomKilled(cleanup, id, res.ExitCode == killedBySignal && !killed)
			}
			if !copyDone {
				// The stream ends with the container; collect what is left.
				select {
				case copyErr = <-copied:
				case <-time.After(10 * time.Second):
					copyErr = errors.New("output stream did not end after the container exited")
				}
			}
			if copyErr != nil && !res.TimedOut {
				return res, fmt.Errorf("docker: output: %w", copyErr)
			}
			return res, nil
		case err := <-waitErr:
			return res, fmt.Errorf("docker: wait: %w", err)
		}
	}
}

// killedBySignal is a container's exit status after SIGKILL.
const killedBySignal = 137

// oomKilled asks the engine whether the container was killed at its memory
// limit. The engine learns that from an OOM event of its own, which need
// not arrive before the exit the wait returned. So a container something
// else than this runner killed with SIGKILL (wait) is asked again for up
// to two seconds before no is taken for an answer: in one CI run on a
// loaded machine a runsc sandbox killed at its limit was reported as "PID 1
// killed", where every other run had the flag at the first question.
func (b *Backend) oomKilled(ctx context.Context, id string, wait bool) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	deadline := time.Now().Add(2 * time.Second)
	for {
		info, err := b.cli.ContainerInspect(ctx, id)
		if err != nil || info.State == nil {
			return false
		}
		if info.State.OOMKilled || !wait || time.Now().After(deadline) {
			return info.State.OOMKilled
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Isolate disconnects the job's container from every network it is on; it
// keeps its loopback only.
func (b *Backend) Isolate(ctx context.Context, jobID string) error {
	cs, err := b.cli.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", LabelJobID+"="+jobID))})
	if err != nil {
		return fmt.Errorf("docker: isolate: %w", err)
	}
	for _, c := range cs {
		if c.NetworkSettings == nil {
			continue
		}
		for name := range c.NetworkSettings.Networks {
			if name == "none" {
				continue
			}
			if err := b.cli.NetworkDisconnect(ctx, name, c.ID, true); err != nil {
				return fmt.Errorf("docker: isolate %s from %s: %w", c.ID[:12], name, err)
			}
		}
	}
	return nil
}

// inhibitIPv4 is the bridge option that keeps the host without an address
// on the network, so sandboxes on it cannot reach services of the host.
const inhibitIPv4 = "com.docker.network.bridge.inhibit_ipv4"

// CheckEgress accepts network only if it exists and is internal (no route
// out but through the proxy) and the proxy is on it. Normally the proxy is
// a container of the network and the host has no address on it (bridge
// option inhibit_ipv4), so a setup step can reach nothing but the proxy.
// With hostProxy (development only) the proxy listens on the host at the
// network's gateway address instead; the host's other services listening
// on all addresses are then reachable from setup steps too.
func (b *Backend) CheckEgress(ctx context.Context, name string, proxy netip.AddrPort, hostProxy bool) error {
	n, err := b.cli.NetworkInspect(ctx, name, network.InspectOptions{})
	if err != nil {
		return fmt.Errorf("egress network %q: %w", name, err)
	}
	if !n.Internal {
		return fmt.Errorf("egress network %q is not internal", name)
	}
	if hostProxy {
		for _, cfg := range n.IPAM.Config {
			if gw, err := netip.ParseAddr(cfg.Gateway); err == nil && gw == proxy.Addr() && n.Options[inhibitIPv4] != "true" {
				return nil
			}
		}
		return fmt.Errorf("egress network %q: the host proxy %s is not its gateway", name, proxy.Addr())
	}
	if n.Options[inhibitIPv4] != "true" {
		return fmt.Errorf("egress network %q gives the host an address (set %s=true): setup steps could reach host services", name, inhibitIPv4)
	}
	for _, c := range n.Containers {
		if p, err := netip.ParsePrefix(c.IPv4Address); err == nil && p.Addr() == proxy.Addr() {
			return nil
		}
	}
	return fmt.Errorf("egress network %q: no proxy container at %s", name, proxy.Addr())
}

// EnsureEgressNetwork creates the egress network if it is missing: internal,
// and without an address of the host on it.
func (b *Backend) EnsureEgressNetwork(ctx context.Context, name string) error {
	if _, err := b.cli.NetworkInspect(ctx, name, network.InspectOptions{}); err == nil {
		return nil
	}
	_, err := b.cli.NetworkCreate(ctx, name, network.CreateOptions{Driver: "bridge", Internal: true,
		Options: map[string]string{inhibitIPv4: "true"}, Labels: map[string]string{"quavon.egress": "true"}})
	if err != nil {
		return fmt.Errorf("docker: create egress network %q: %w", name, err)
	}
	return nil
}
