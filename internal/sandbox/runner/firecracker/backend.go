package firecracker

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/quavon/quavon/internal/sandbox/frame"
	"github.com/quavon/quavon/internal/sandbox/runner"
)

// Config configures the backend.
type Config struct {
	// Lock pins Firecracker, the jailer, the kernel and the rootfs images.
	Lock *Lock
	// Images is the runner's image lockfile: a job's image ref picks the
	// rootfs built from it.
	Images *runner.Lockfile
	// KVMDevice is probed at start; ProbeKVM (nil: the real probe) lets
	// tests stand in for it.
	KVMDevice string
	ProbeKVM  func(string) error
	// ChrootBase is the jailer's --chroot-base-dir.
	ChrootBase string
	// UIDFirst..UIDLast (inclusive) are the uids (= gids) VMs run as.
	UIDFirst, UIDLast int
	// CgroupParent is the cgroup v2 parent of the VMs' cgroups, below
	// CgroupRoot (default /sys/fs/cgroup).
	CgroupParent string
	CgroupRoot   string
	// BootTimeout bounds the time until the guest connects.
	BootTimeout time.Duration
	// EgressProxy is the proxy setup steps with egress may reach; zero:
	// no egress.
	EgressProxy netip.AddrPort
	// Mkfs is mkfs.ext4 (default: from PATH).
	Mkfs string
	// Commander runs ip and nft (default: exec).
	Commander Commander
	Log       *slog.Logger
}

// Backend is a runner.Backend on Firecracker microVMs.
type Backend struct {
	cfg     Config
	verify  verifier
	rootfs  map[string]Rootfs // by image ref
	uids    *uidPool
	runtime string

	mu  sync.Mutex
	vms map[string]*vm // by job id
}

var _ runner.Backend = (*Backend)(nil)

// New checks everything a VM needs and refuses to start otherwise: the
// KVM device (fail closed, no fallback), every pinned file's digest, the
// binaries' versions, mkfs.ext4, the cgroup parent; it removes what
// earlier runs of the runner left behind.
func New(ctx context.Context, cfg Config) (*Backend, error) {
	if cfg.Lock == nil || cfg.Images == nil || cfg.Log == nil {
		return nil, errors.New("firecracker.New: lock, images and log are required")
	}
	probe := cfg.ProbeKVM
	if probe == nil {
		probe = ProbeKVM
	}
	if err := probe(cfg.KVMDevice); err != nil {
		return nil, fmt.Errorf("the firecracker backend refuses to start: %w (there is no fallback to another backend)", err)
	}
	if !filepath.IsAbs(cfg.ChrootBase) || filepath.Clean(cfg.ChrootBase) == "/" {
		return nil, errors.New("firecracker: the chroot base must be an absolute path other than /")
	}
	if cfg.UIDFirst <= 65536 || cfg.UIDLast < cfg.UIDFirst {
		return nil, errors.New("firecracker: the uid range must lie above 65536")
	}
	if cfg.CgroupRoot == "" {
		cfg.CgroupRoot = "/sys/fs/cgroup"
	}
	if cfg.BootTimeout <= 0 {
		cfg.BootTimeout = 30 * time.Second
	}
	if cfg.Commander == nil {
		cfg.Commander = execCommander
	}
	if cfg.Mkfs == "" {
		p, err := exec.LookPath("mkfs.ext4")
		if err != nil {
			return nil, errors.New("firecracker: mkfs.ext4 not found (e2fsprogs): it formats each job's scratch drive")
		}
		cfg.Mkfs = p
	}
	b := &Backend{cfg: cfg, rootfs: map[string]Rootfs{}, uids: newUIDPool(cfg.UIDFirst, cfg.UIDLast), vms: map[string]*vm{}}
	l := cfg.Lock
	for _, a := range []Artefact{l.Firecracker.Artefact, l.Jailer.Artefact, l.Kernel.Artefact} {
		if _, err := b.verify.check(a); err != nil {
			return nil, fmt.Errorf("firecracker: %w", err)
		}
	}
	for class, r := range l.Rootfs {
		ref, err := cfg.Images.Resolve(class)
		if err != nil {
			continue // a class this runner does not serve
		}
		if ref != r.Image {
			return nil, fmt.Errorf("firecracker: the rootfs of %s was built from %s, the image lockfile pins %s: build both again (deploy/images/build --rootfs)", class, r.Image, ref)
		}
		if _, err := b.verify.check(r.Artefact); err != nil {
			return nil, fmt.Errorf("firecracker: rootfs %s: %w", class, err)
		}
		b.rootfs[ref] = r
	}
	for _, class := range append(classesOf(cfg.Images.Classes, ""), classesOf(cfg.Images.BYO, "byo:")...) {
		if _, ok := l.Rootfs[class]; !ok {
			cfg.Log.Warn("firecracker: no rootfs for an image class; its jobs fail", slog.String("image_class", class))
		}
	}
	for _, bin := range []Binary{l.Jailer, l.Firecracker} {
		if err := checkVersion(ctx, bin); err != nil {
			return nil, err
		}
	}
	b.runtime = fmt.Sprintf("firecracker %s (jailer %s)", strings.TrimPrefix(l.Firecracker.Version, "v"), strings.TrimPrefix(l.Jailer.Version, "v"))
	if err := b.prepareCgroup(); err != nil {
		return nil, err
	}
	b.sweep(ctx)
	return b, nil
}

func classesOf[T any](m map[string]T, prefix string) []string {
	var out []string
	for k := range m {
		out = append(out, prefix+k)
	}
	return out
}

var versionInOutput = regexp.MustCompile(`v?([0-9]+\.[0-9]+\.[0-9]+)`)

// checkVersion runs bin --version and compares it with the pinned version.
func checkVersion(ctx context.Context, bin Binary) error {
	vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c := exec.CommandContext(vctx, bin.Path, "--version")
	c.Env = []string{}
	out, err := c.Output()
	if err != nil {
		return fmt.Errorf("firecracker: %s --version: %w", bin.Path, err)
	}
	m := versionInOutput.FindSubmatch(out[:min(len(out), 4096)])
	if m == nil || string(m[1]) != strings.TrimPrefix(bin.Version, "v") {
		return fmt.Errorf("firecracker: %s is not the pinned version %s", bin.Path, bin.Version)
	}
	return nil
}

// prepareCgroup makes the parent cgroup and delegates the cpu, memory and
// pids controllers to the VMs' cgroups below it.
func (b *Backend) prepareCgroup() error {
	dir := b.cfg.CgroupRoot
	for _, seg := range strings.Split(b.cfg.CgroupParent, "/") {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+cpu +memory +pids"), 0o644); err != nil {
			return fmt.Errorf("firecracker: cgroup v2 controllers at %s: %w", dir, err)
		}
		dir = filepath.Join(dir, seg)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("firecracker: cgroup %s: %w", dir, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+cpu +memory +pids"), 0o644); err != nil {
		return fmt.Errorf("firecracker: cgroup v2 controllers at %s: %w", dir, err)
	}
	return nil
}

var vmIDRE = regexp.MustCompile(`^quavon-[0-9a-f]{16}$`)

// sweep removes chroots, cgroups and namespaces of VMs an earlier process
// left (a crash or a kill of the runner).
func (b *Backend) sweep(ctx context.Context) {
	base := filepath.Join(b.cfg.ChrootBase, execName(b.cfg.Lock.Firecracker.Path))
	entries, _ := os.ReadDir(base)
	for _, e := range entries {
		if !vmIDRE.MatchString(e.Name()) {
			continue
		}
		v := &vm{b: b, id: e.Name(), dir: filepath.Join(base, e.Name()), pid: -1, pidfd: -1}
		v.readPid()
		if v.pid > 0 {
			syscall.Kill(v.pid, syscall.SIGKILL) // its namespace is gone with it
			time.Sleep(100 * time.Millisecond)
		}
		v.net = &netPlan{NS: "quavon-" + e.Name()}
		runCmds(ctx, b.cfg.Commander, v.net.downCmds(), false)
		v.net = nil
		err := v.removeFiles()
		b.cfg.Log.Warn("firecracker: removed a VM left by an earlier run", slog.String("vm_id", e.Name()), slog.Any("error", err))
	}
}

// Name is the backend's name (QUAVON_SANDBOX_BACKEND).
func (b *Backend) Name() string { return runner.BackendFirecracker }

// Close releases nothing: every VM is removed when its job ends.
func (b *Backend) Close() error { return nil }

// Runtime names the pinned Firecracker and jailer versions.
func (b *Backend) Runtime() string { return b.runtime }

// CheckEgress accepts setup-step egress when a proxy address is
// configured that a VM's namespace can reach (not loopback: the namespace
// has none of the host's), and never the host-proxy development mode.
func (b *Backend) CheckEgress(_ context.Context, _ string, proxy netip.AddrPort, hostProxy bool) error {
	switch {
	case hostProxy:
		return errors.New("firecracker: the host proxy (development mode) is not supported")
	case !proxy.IsValid() || !proxy.Addr().Is4() || proxy.Addr().IsLoopback() || proxy.Addr().IsUnspecified():
		return fmt.Errorf("firecracker: egress proxy %s: want the IPv4 address the host routes to the proxy", proxy)
	case proxy != b.cfg.EgressProxy:
		return fmt.Errorf("firecracker: egress proxy %s is not the one the backend was configured with", proxy)
	}
	for _, bin := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("firecracker: egress needs %s on the host", bin)
		}
	}
	return nil
}

// Isolate cuts a VM's egress path (before the run step).
func (b *Backend) Isolate(ctx context.Context, jobID string) error {
	b.mu.Lock()
	v := b.vms[jobID]
	b.mu.Unlock()
	if v == nil || v.net == nil {
		return nil
	}
	return v.cutNet(ctx)
}

// vm is one job's microVM and everything made for it.
type vm struct {
	b       *Backend
	id      string
	jobID   string
	uid     int
	dir     string // <chroot base>/<exec name>/<id>
	ln      *net.UnixListener
	conn    *net.UnixConn
	jailer  *exec.Cmd
	pid     int
	pidfd   int
	exited  chan struct{}
	net     *netPlan
	netMu   sync.Mutex
	netCut  bool
	killed  bool
	cgroup  string
	version string
}

func (v *vm) root() string { return filepath.Join(v.dir, "root") }

// Exec runs one job in a fresh microVM and removes everything made for it
// before returning.
func (b *Backend) Exec(ctx context.Context, spec runner.ContainerSpec, stdin io.Reader, stdout io.Writer) (res runner.ExecResult, err error) {
	rootfs, ok := b.rootfs[spec.ImageRef]
	if !ok {
		return res, fmt.Errorf("firecracker: the VM lockfile has no rootfs built from %s", spec.ImageRef)
	}
	uid, err := b.uids.take()
	if err != nil {
		return res, err
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	id := "quavon-" + hex.EncodeToString(rnd[:])
	v := &vm{b: b, id: id, jobID: spec.JobID, uid: uid, dir: chrootDir(b.cfg.ChrootBase, b.cfg.Lock.Firecracker.Path, id), pid: -1, pidfd: -1,
		cgroup: filepath.Join(b.cfg.CgroupRoot, b.cfg.CgroupParent, id)}
	cleanup := context.WithoutCancel(ctx)
	defer func() {
		if cerr := v.destroy(cleanup); cerr != nil {
			b.cfg.Log.Error("firecracker: cleanup failed", slog.String("vm_id", id), slog.String("error", cerr.Error()))
			if err == nil {
				err = cerr
			}
			return // the uid stays taken: something of the VM may be left
		}
		b.uids.release(uid)
	}()
	b.mu.Lock()
	b.vms[spec.JobID] = v
	b.mu.Unlock()

	wall := time.NewTimer(time.Duration(spec.Limits.WallClockSeconds) * time.Second)
	defer wall.Stop()
	started := make(chan error, 1)
	go func() { started <- v.start(ctx, spec, rootfs) }()
	select {
	case err := <-started:
		if err != nil {
			return res, err
		}
	case <-wall.C:
		v.kill()
		<-started
		res.TimedOut, res.ExitCode = true, killedExit
		return res, nil
	case <-ctx.Done():
		v.kill()
		<-started
		return res, ctx.Err()
	}
	b.cfg.Log.Info("firecracker: vm started", slog.String("job_id", spec.JobID), slog.String("vm_id", id), slog.Int("uid", uid))

	if err := frame.WriteBoot(v.conn, boot(spec)); err != nil {
		return res, fmt.Errorf("firecracker: boot preamble: %w", err)
	}
	go func() { io.Copy(v.conn, stdin) }()
	copied := make(chan error, 1)
	go func() {
		_, err := io.Copy(stdout, v.conn)
		copied <- err
	}()
	var refused <-chan struct{}
	if s, ok := stdout.(runner.OutputSink); ok {
		refused = s.Refused()
	}
	for {
		select {
		case <-refused:
			// The parser gave up (a frame that does not verify, the caps):
			// unknown or malformed data ends the VM (FC2).
			res.ExitCode = killedExit
			v.kill()
			<-copied
			return res, nil
		case <-wall.C:
			res.TimedOut, res.ExitCode = true, killedExit
			v.kill()
			<-copied
			return res, nil
		case <-ctx.Done():
			v.kill()
			<-copied
			return res, ctx.Err()
		case cerr := <-copied:
			if cerr != nil && !isClosed(cerr) {
				// The reader refused the output (caps, a frame that does
				// not verify): the VM ends now.
				res.ExitCode = killedExit
				v.kill()
				return res, nil
			}
			// The guest closed the connection: it has said everything.
			// Give the VM a moment to power off, then end it.
			select {
			case <-v.exited:
			case <-time.After(2 * time.Second):
			}
			v.kill()
			res.OOMKilled = v.oomKilled()
			return res, nil
		case <-v.exited:
			// The VM ended before the guest closed the connection: a crash,
			// or the memory limit of its cgroup.
			v.conn.SetReadDeadline(time.Now().Add(time.Second))
			<-copied
			res.ExitCode, res.OOMKilled = 1, v.oomKilled()
			return res, nil
		}
	}
}

// killedExit is a process killed by SIGKILL, as the shell reports it.
const killedExit = 128 + 9

func isClosed(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, syscall.ECONNRESET)
}

// boot is the preamble of spec's job.
func boot(spec runner.ContainerSpec) *frame.Boot {
	seed := make([]byte, frame.SeedSize)
	rand.Read(seed)
	l := spec.Limits
	return &frame.Boot{Seed: seed, Env: spec.Env, TmpBytes: l.TmpBytes, OutputBytes: l.OutputBytes, NoFile: l.NoFile,
		FileSizeBytes: l.FileSizeBytes, Pids: l.Pids}
}

// start builds the chroot, launches the jailer, configures and starts the
// VM and accepts the guest's connection.
func (v *vm) start(ctx context.Context, spec runner.ContainerSpec, rootfs Rootfs) error {
	b := v.b
	root := v.root()
	if err := os.MkdirAll(filepath.Dir(v.dir), 0o711); err != nil {
		return fmt.Errorf("firecracker: chroot base: %w", err)
	}
	if err := os.Mkdir(v.dir, 0o711); err != nil {
		return fmt.Errorf("firecracker: chroot: %w", err)
	}
	if err := os.Mkdir(root, 0o700); err != nil {
		return fmt.Errorf("firecracker: chroot: %w", err)
	}
	if err := b.verify.linkVerified(b.cfg.Lock.Kernel.Artefact, filepath.Join(root, chrootKernel)); err != nil {
		return err
	}
	if err := b.verify.linkVerified(rootfs.Artefact, filepath.Join(root, chrootRootfs)); err != nil {
		return err
	}
	if err := v.makeScratch(ctx, filepath.Join(root, chrootScratch), spec.Limits.WorkBytes); err != nil {
		return err
	}
	run := filepath.Join(root, chrootRunDir)
	if err := os.Mkdir(run, 0o700); err != nil {
		return err
	}
	if err := os.Chown(run, v.uid, v.uid); err != nil {
		return err
	}
	// The guest's one connection: Firecracker forwards a guest connection
	// to port P to <uds_path>_P.
	lnPath := filepath.Join(root, strings.TrimPrefix(vsockUDS, "/")+"_"+strconv.Itoa(frame.VsockPort))
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: lnPath, Net: "unix"})
	if err != nil {
		return fmt.Errorf("firecracker: vsock listener: %w", err)
	}
	ln.SetUnlinkOnClose(true)
	v.ln = ln
	if err := os.Chown(lnPath, v.uid, v.uid); err != nil {
		return err
	}
	if err := os.Chmod(lnPath, 0o600); err != nil {
		return err
	}
	var netnsPath string
	if spec.Network != "" {
		if !b.cfg.EgressProxy.IsValid() {
			return errors.New("firecracker: egress asked for, but no proxy is configured")
		}
		plan, err := newNetPlan(v.id, v.uid-b.cfg.UIDFirst, v.uid, b.cfg.EgressProxy)
		if err != nil {
			return err
		}
		v.net = plan
		if err := runCmds(ctx, b.cfg.Commander, plan.upCmds(), true); err != nil {
			return fmt.Errorf("firecracker: egress path: %w", err)
		}
		netnsPath = plan.NetnsPath
	}
	if err := v.launch(ctx, spec, netnsPath); err != nil {
		return err
	}
	api := newAPIClient(filepath.Join(root, strings.TrimPrefix(apiSocket, "/")))
	if err := v.waitFor(ctx, filepath.Join(root, strings.TrimPrefix(apiSocket, "/"))); err != nil {
		return err
	}
	version, err := api.version(ctx)
	if err != nil {
		return err
	}
	if strings.TrimPrefix(version, "v") != strings.TrimPrefix(b.cfg.Lock.Firecracker.Version, "v") {
		return fmt.Errorf("firecracker: the VM reports version %q, pinned %s", clip(version), b.cfg.Lock.Firecracker.Version)
	}
	v.version = version
	vc := vmConfig{
		Boot: BootSource{KernelImagePath: "/" + chrootKernel, BootArgs: bootArgs(v.net)},
		Drives: []Drive{
			{DriveID: "rootfs", IsRootDevice: true, IsReadOnly: true, PathOnHost: "/" + chrootRootfs},
			{DriveID: "work", IsRootDevice: false, IsReadOnly: false, PathOnHost: "/" + chrootScratch},
		},
		Machine: vmShape(spec.Limits),
		Vsock:   Vsock{GuestCID: guestCID, UDSPath: vsockUDS},
	}
	if v.net != nil {
		vc.Net = &NetworkInterface{IfaceID: "eth0", HostDevName: tapName, GuestMAC: guestMAC}
	}
	if err := api.configure(ctx, vc); err != nil {
		return err
	}
	if err := v.checkProcess(); err != nil {
		return err
	}
	return v.accept()
}

// bootArgs is the guest kernel's command line: no serial console, no
// modules, read-only root, the entry program as init in its VM mode
// (after --), and the static address of the egress path when there is one.
func bootArgs(p *netPlan) string {
	args := "reboot=k panic=1 pci=off nomodule 8250.nr_uarts=0 i8042.noaux i8042.nomux i8042.dumbkbd quiet loglevel=0 " +
		"root=/dev/vda rootfstype=ext4 ro rootflags=noload init=" + runner.EntryPath
	if p != nil {
		args += " " + p.bootArg()
	}
	return args + " -- vm"
}

// makeScratch creates the job's /work drive: an ext4 of size bytes whose
// root belongs to the sandbox user, owned by the VM's uid.
func (v *vm) makeScratch(ctx context.Context, path string, size int64) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("firecracker: scratch drive: %w", err)
	}
	err = f.Truncate(max(size, 8<<20))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("firecracker: scratch drive: %w", err)
	}
	mctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	owner := strconv.Itoa(runner.SandboxUID)
	c := exec.CommandContext(mctx, v.b.cfg.Mkfs, "-q", "-F", "-m", "0", "-L", "work", "-E", "root_owner="+owner+":"+owner, path)
	c.Env = []string{}
	if out, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("firecracker: mkfs.ext4: %w: %s", err, strings.TrimSpace(string(out[:min(len(out), 200)])))
	}
	return os.Chown(path, v.uid, v.uid)
}

// launch runs the jailer, which clones Firecracker into its new PID
// namespace and exits, and opens a pidfd on Firecracker.
func (v *vm) launch(ctx context.Context, spec runner.ContainerSpec, netns string) error {
	b := v.b
	c := exec.Command(b.cfg.Lock.Jailer.Path, jailerArgs(b.cfg, v.id, v.uid, spec.Limits, netns)...)
	c.Env = []string{} // the jailer clears it too; nothing of the runner's
	c.Stdin, c.Stdout, c.Stderr = nil, nil, nil
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		return fmt.Errorf("firecracker: jailer: %w", err)
	}
	v.jailer = c
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("firecracker: jailer: %w", err)
		}
	case <-time.After(b.cfg.BootTimeout):
		c.Process.Kill()
		<-done
		return errors.New("firecracker: the jailer did not finish in time")
	case <-ctx.Done():
		c.Process.Kill()
		<-done
		return ctx.Err()
	}
	if err := v.readPid(); err != nil {
		return err
	}
	fd, err := unix.PidfdOpen(v.pid, 0)
	if err != nil {
		return fmt.Errorf("firecracker: pidfd of %d: %w", v.pid, err)
	}
	v.pidfd = fd
	v.exited = make(chan struct{})
	go func() {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			if _, err := unix.Poll(fds, -1); err != unix.EINTR {
				break
			}
		}
		close(v.exited)
	}()
	return nil
}

// readPid reads the pid the jailer stored in the chroot.
func (v *vm) readPid() error {
	data, err := os.ReadFile(filepath.Join(v.root(), execName(v.b.cfg.Lock.Firecracker.Path)+".pid"))
	if err != nil {
		return fmt.Errorf("firecracker: the jailer left no pid file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 {
		return errors.New("firecracker: the jailer's pid file is malformed")
	}
	v.pid = pid
	return nil
}

// waitFor waits until the API socket at path accepts connections or the
// VM ends.
func (v *vm) waitFor(ctx context.Context, path string) error {
	deadline := time.Now().Add(v.b.cfg.BootTimeout)
	for {
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-v.exited:
			return errors.New("firecracker: the VM process ended before its API socket appeared")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.New("firecracker: no API socket within the boot timeout")
		}
	}
}

// checkProcess holds the running VM to what the jailer promised: every
// uid and gid the VM's, and a seccomp filter installed (Firecracker's
// default filters; mode 2 in /proc/<pid>/status).
func (v *vm) checkProcess() error {
	deadline := time.Now().Add(2 * time.Second)
	for {
		st, err := readStatus(v.pid)
		if err != nil {
			return fmt.Errorf("firecracker: status of the VM process: %w", err)
		}
		want := strconv.Itoa(v.uid)
		for _, k := range []string{"Uid", "Gid"} {
			f := strings.Fields(st[k])
			if len(f) != 4 || f[0] != want || f[1] != want || f[2] != want || f[3] != want {
				return fmt.Errorf("firecracker: the VM process runs with %s %q, want %s", k, st[k], want)
			}
		}
		if st["Seccomp"] == "2" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("firecracker: the VM process has no seccomp filter (Seccomp %q): Firecracker must run with its default filters", st["Seccomp"])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readStatus(pid int) (map[string]string, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st := map[string]string{}
	sc := bufio.NewScanner(io.LimitReader(f, 64<<10))
	for sc.Scan() {
		if k, val, ok := strings.Cut(sc.Text(), ":"); ok {
			st[k] = strings.TrimSpace(val)
		}
	}
	return st, sc.Err()
}

// accept takes the guest's one connection, from the VM's uid, within the
// boot timeout; the listener is closed right after, so no second
// connection (another process in the guest) ever reaches the runner.
func (v *vm) accept() error {
	v.ln.SetDeadline(time.Now().Add(v.b.cfg.BootTimeout))
	type accepted struct {
		c   *net.UnixConn
		err error
	}
	ch := make(chan accepted, 1)
	go func() {
		c, err := v.ln.AcceptUnix()
		ch <- accepted{c, err}
	}()
	var a accepted
	select {
	case a = <-ch:
	case <-v.exited:
		v.ln.Close()
		if a = <-ch; a.c != nil {
			a.c.Close()
		}
		return errors.New("firecracker: the VM ended before its entry program connected")
	}
	v.ln.Close()
	if a.err != nil {
		return fmt.Errorf("firecracker: the entry program did not connect over vsock within %s: %w", v.b.cfg.BootTimeout, a.err)
	}
	raw, err := a.c.SyscallConn()
	if err != nil {
		a.c.Close()
		return err
	}
	var cred *unix.Ucred
	raw.Control(func(fd uintptr) { cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
	if err != nil || cred.Uid != uint32(v.uid) {
		a.c.Close()
		return errors.New("firecracker: the vsock connection does not come from the VM's process")
	}
	v.conn = a.c
	return nil
}

// kill ends the VM (SIGKILL through its pidfd: never another process that
// reused the pid) and closes the connection, so nothing the guest sends
// afterwards is read.
func (v *vm) kill() {
	if v.conn != nil {
		v.conn.Close()
	}
	if v.pidfd >= 0 {
		unix.PidfdSendSignal(v.pidfd, unix.SIGKILL, nil, 0)
	}
	v.killed = true
}

// oomKilled reports whether the VM's cgroup hit memory.max.
func (v *vm) oomKilled() bool {
	data, err := os.ReadFile(filepath.Join(v.cgroup, "memory.events"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "oom_kill" && f[1] != "0" {
			return true
		}
	}
	return false
}

// cutNet cuts the egress path once.
func (v *vm) cutNet(ctx context.Context) error {
	v.netMu.Lock()
	defer v.netMu.Unlock()
	if v.netCut {
		return nil
	}
	if err := runCmds(ctx, v.b.cfg.Commander, v.net.cutCmds(), false); err != nil {
		return fmt.Errorf("firecracker: cutting the egress path: %w", err)
	}
	v.netCut = true
	v.b.cfg.Log.Info("firecracker: egress path cut", slog.String("job_id", v.jobID))
	return nil
}

// destroy kills the VM, waits for it and removes everything made for it:
// the network path, the chroot (kernel and rootfs links, scratch drive,
// sockets, pid file) and the cgroup.
func (v *vm) destroy(ctx context.Context) error {
	v.b.mu.Lock()
	if v.b.vms[v.jobID] == v {
		delete(v.b.vms, v.jobID)
	}
	v.b.mu.Unlock()
	if v.ln != nil {
		v.ln.Close()
	}
	v.kill()
	var errs []error
	if v.exited != nil {
		select {
		case <-v.exited:
		case <-time.After(30 * time.Second):
			errs = append(errs, fmt.Errorf("firecracker: VM process %d did not end after SIGKILL", v.pid))
		}
		unix.Close(v.pidfd)
		var ws syscall.WaitStatus
		syscall.Wait4(v.pid, &ws, syscall.WNOHANG, nil) // when the runner is its reaper
	}
	if v.net != nil {
		if err := v.cutNet(ctx); err != nil && !v.netCut {
			// the devices may be gone already: the namespace goes next
			v.b.cfg.Log.Warn("firecracker: egress path", slog.String("error", err.Error()))
		}
		if err := runCmds(ctx, v.b.cfg.Commander, v.net.downCmds(), false); err != nil {
			errs = append(errs, err)
		}
	}
	if err := v.removeFiles(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// removeFiles removes the VM's chroot directory and its cgroup.
func (v *vm) removeFiles() error {
	var errs []error
	if err := os.RemoveAll(v.dir); err != nil {
		errs = append(errs, fmt.Errorf("firecracker: remove chroot: %w", err))
	}
	cg := filepath.Join(v.b.cfg.CgroupRoot, v.b.cfg.CgroupParent, v.id)
	for i := 0; ; i++ {
		err := os.Remove(cg)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			break
		}
		if !errors.Is(err, syscall.EBUSY) || i == 50 {
			// A cgroup directory holds only the kernel's files; a test's
			// stand-in for it holds real ones.
			if rerr := os.RemoveAll(cg); rerr != nil || !isCgroupFS(v.b.cfg.CgroupRoot) {
				if rerr != nil {
					errs = append(errs, fmt.Errorf("firecracker: remove cgroup: %w", err))
				}
				break
			}
			errs = append(errs, fmt.Errorf("firecracker: remove cgroup: %w", err))
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.Join(errs...)
}

// isCgroupFS reports whether dir is a mounted cgroup v2 file system.
func isCgroupFS(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC
}

func clip(s string) string {
	if len(s) > 40 {
		s = s[:40]
	}
	return strings.ToValidUTF8(s, "?")
}
