// Package fctest is a stand-in for Firecracker and its jailer, for tests
// on hosts without them: a test binary copied to files named jailer and
// firecracker becomes the fake when it starts (Main). It holds the runner
// to the real programs' rules:
//
//   - the jailer's arguments as its documentation (docs/jailer.md) lists
//     them, unknown ones refused; it builds the chroot
//     <chroot base>/<exec file name>/<id>/root, copies the exec file into
//     it, makes dev/kvm and dev/net/tun (regular files here), chowns the
//     chroot to the VM's uid, creates the cgroup v2 <parent>/<id> (the
//     parent must delegate cpu, memory and pids) with the --cgroup values,
//     sets the rlimits, clones Firecracker into new PID and mount
//     namespaces as the VM's uid and gid, stores its pid in
//     <exec file name>.pid and exits;
//   - Firecracker's API as its OpenAPI description defines it (api.go):
//     request shapes (required and unknown properties, types, enums,
//     ranges), pre-boot-only resources refused after InstanceStart,
//     InstanceStart without a boot source refused, drive ids matching the
//     path; every file the VM is given opened as the VM's uid, as the jailed
//     Firecracker would; its default seccomp filter (an allow-all filter
//     here, so /proc/<pid>/status reports mode 2) unless the test asks for
//     none;
//   - the guest: on InstanceStart it connects to <uds_path>_1024 and does
//     what the first line of its rootfs file says (Behaviours), the real
//     entry program's logic for "entry", a Script (Config.Script) for
//     "script"; for "outside" the test plays the guest with the
//     OutsideGuest program, which survives the VM's kill and can answer
//     after it.
//
// Everything it sees is logged as JSON lines to <LogDir>/<vm id>.jsonl.
package fctest

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/quavon/quavon/internal/sandbox/entry"
	"github.com/quavon/quavon/internal/sandbox/frame"
)

// Config is fake.json beside the fake binaries.
type Config struct {
	Version    string `json:"version"`
	CgroupRoot string `json:"cgroupRoot"`
	LogDir     string `json:"logDir"`
	// NoSeccomp: Firecracker runs without its filters (as with
	// --no-seccomp), which the runner must refuse.
	NoSeccomp bool `json:"noSeccomp,omitempty"`
	// JailerVersion is the jailer's --version (default Version).
	JailerVersion string `json:"jailerVersion,omitempty"`
	// Script is the file a GuestScript guest plays (a JSON Script).
	Script string `json:"script,omitempty"`
}

// Guest behaviours: the first line of a rootfs file.
const (
	GuestEntry     = "entry"     // the real entry program over vsock
	GuestGarbage   = "garbage"   // random bytes after the preamble
	GuestHuge      = "huge"      // authenticated output without end
	GuestMute      = "mute"      // connects, reads, never answers
	GuestNoConnect = "noconnect" // never connects
	GuestCrash     = "crash"     // the VM dies after the preamble
	GuestTwoConn   = "twoconn"   // a second connection, then entry
	GuestOutside   = "outside"   // the test connects instead (OutsideGuest)
	GuestScript    = "script"    // plays Config.Script after the hello
)

// OutsideGuest is the file name under which the fake binary is the guest
// of a GuestOutside VM, run by the test as the VM's uid:
//
//	guest <vsock listener> <VM pid> <script> <log file>
//
// It connects, reads the boot preamble and the hello, and plays the
// script; unlike a guest inside the VM it survives the VM's kill, so it
// can answer afterwards (Op.WaitKill).
const OutsideGuest = "guest"

const configEnv = "QUAVON_FAKE_FC_CONFIG"

// Main turns the process into the fake jailer or Firecracker when its name
// says so, and never returns then.
func Main() {
	switch name := filepath.Base(os.Args[0]); {
	case name == "jailer":
		os.Exit(jailerMain())
	case name == "firecracker":
		os.Exit(firecrackerMain())
	case name == OutsideGuest:
		os.Exit(outsideMain())
	}
}

func loadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Config
	return &c, json.Unmarshal(data, &c)
}

func fail(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "fake: "+format+"\n", args...)
	return 1
}

// logger appends JSON lines.
type logger struct {
	mu sync.Mutex
	f  *os.File
}

func (l *logger) log(kind string, v any) {
	if l == nil || l.f == nil {
		return
	}
	b, _ := json.Marshal(map[string]any{"kind": kind, "v": v})
	l.mu.Lock()
	l.f.Write(append(b, '\n'))
	l.mu.Unlock()
}

var idRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)

// jailerMain is the fake jailer.
func jailerMain() int {
	self, _ := os.Executable()
	cfgPath := filepath.Join(filepath.Dir(self), "fake.json")
	cfg, err := loadConfig(cfgPath)
	if err != nil {
		return fail("jailer config: %v", err)
	}
	args := os.Args[1:]
	if len(args) == 1 && args[0] == "--version" {
		fmt.Printf("Jailer v%s\n", strings.TrimPrefix(cmp.Or(cfg.JailerVersion, cfg.Version), "v"))
		return 0
	}
	if len(os.Environ()) != 0 {
		return fail("jailer: the environment must be empty, got %d variables", len(os.Environ()))
	}
	var (
		id, execFile, parent, cgVersion = "", "", "", "1"
		uid, gid                        = -1, -1
		base                            = "/srv/jailer"
		cgroups, rlimits                []string
		netns                           string
		newPidNS, daemonize             bool
		extra                           []string
	)
	for i := 0; i < len(args); i++ {
		a := args[i]
		val := func() string {
			if i+1 >= len(args) {
				panic("missing value for " + a)
			}
			i++
			return args[i]
		}
		switch a {
		case "--id":
			id = val()
		case "--exec-file":
			execFile = val()
		case "--uid":
			uid, _ = strconv.Atoi(val())
		case "--gid":
			gid, _ = strconv.Atoi(val())
		case "--parent-cgroup":
			parent = val()
		case "--cgroup-version":
			cgVersion = val()
		case "--cgroup":
			cgroups = append(cgroups, val())
		case "--chroot-base-dir":
			base = val()
		case "--netns":
			netns = val()
		case "--resource-limit":
			rlimits = append(rlimits, val())
		case "--daemonize":
			daemonize = true
		case "--new-pid-ns":
			newPidNS = true
		case "--":
			extra = args[i+1:]
			i = len(args)
		default:
			return fail("jailer: unknown argument %q", a)
		}
	}
	switch {
	case !idRE.MatchString(id):
		return fail("jailer: invalid --id %q", id)
	case execFile == "" || !strings.Contains(filepath.Base(execFile), "firecracker"):
		return fail("jailer: --exec-file must name firecracker")
	case uid < 0 || gid < 0:
		return fail("jailer: --uid and --gid are required")
	case cgVersion != "1" && cgVersion != "2":
		return fail("jailer: --cgroup-version %q", cgVersion)
	}
	name := filepath.Base(execFile)
	if parent == "" {
		parent = name
	}
	root := filepath.Join(base, name, id, "root")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return fail("jailer: %v", err)
	}
	f, err := os.OpenFile(filepath.Join(cfg.LogDir, id+".jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fail("jailer: log: %v", err)
	}
	os.Chown(f.Name(), uid, gid)
	lg := &logger{f: f}
	lg.log("jailer", map[string]any{"args": args, "uid": uid, "gid": gid, "netns": netns, "newPidNS": newPidNS, "daemonize": daemonize})
	data, err := os.ReadFile(execFile)
	if err != nil {
		return fail("jailer: exec file: %v", err)
	}
	if err := os.WriteFile(filepath.Join(root, name), data, 0o755); err != nil {
		return fail("jailer: copy: %v", err)
	}
	for _, dev := range []string{"dev/kvm", "dev/net/tun"} {
		p := filepath.Join(root, dev)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, nil, 0o600)
		os.Chown(p, uid, gid)
	}
	os.Chown(root, uid, gid)
	if cgVersion == "2" {
		pdir := filepath.Join(cfg.CgroupRoot, parent)
		sub, err := os.ReadFile(filepath.Join(pdir, "cgroup.subtree_control"))
		if err != nil || !strings.Contains(string(sub), "+cpu") || !strings.Contains(string(sub), "+memory") || !strings.Contains(string(sub), "+pids") {
			return fail("jailer: parent cgroup %s does not delegate cpu, memory and pids", pdir)
		}
		dir := filepath.Join(pdir, id)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return fail("jailer: cgroup: %v", err)
		}
		for _, c := range cgroups {
			k, v, ok := strings.Cut(c, "=")
			if !ok || !slices.Contains([]string{"cpu.max", "memory.max", "pids.max"}, k) {
				return fail("jailer: --cgroup %q", c)
			}
			os.WriteFile(filepath.Join(dir, k), []byte(v+"\n"), 0o644)
		}
		os.WriteFile(filepath.Join(dir, "memory.events"), []byte("oom 0\noom_kill 0\n"), 0o644)
	}
	for _, r := range rlimits {
		k, v, _ := strings.Cut(r, "=")
		n, err := strconv.ParseUint(v, 10, 64)
		res := map[string]int{"fsize": syscall.RLIMIT_FSIZE, "no-file": syscall.RLIMIT_NOFILE}
		rl, ok := res[k]
		if err != nil || !ok {
			return fail("jailer: --resource-limit %q", r)
		}
		if err := syscall.Setrlimit(rl, &syscall.Rlimit{Cur: n, Max: n}); err != nil {
			return fail("jailer: setrlimit %s: %v", k, err)
		}
	}
	p, err := os.StartProcess(filepath.Join(root, name), append([]string{"./" + name, "--id=" + id, "--start-time-us=1", "--start-time-cpu-us=1"}, extra...),
		&os.ProcAttr{Dir: root, Env: []string{configEnv + "=" + cfgPath}, Files: []*os.File{nil, nil, nil},
			Sys: &syscall.SysProcAttr{Setsid: true, Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}},
				Cloneflags: cloneFlags(newPidNS)}})
	if err != nil {
		return fail("jailer: start: %v", err)
	}
	os.WriteFile(filepath.Join(root, name+".pid"), []byte(strconv.Itoa(p.Pid)), 0o644)
	p.Release()
	return 0
}

func cloneFlags(newPidNS bool) uintptr {
	if newPidNS {
		return syscall.CLONE_NEWPID | syscall.CLONE_NEWNS
	}
	return 0
}

// fc is the fake Firecracker's state.
type fc struct {
	mu      sync.Mutex
	root    string
	lg      *logger
	cfg     *Config
	started bool
	boot    map[string]any
	drives  map[string]map[string]any
	machine map[string]any
	vsock   map[string]any
}

func firecrackerMain() int {
	cfgPath := os.Getenv(configEnv)
	if cfgPath == "" {
		self, _ := os.Executable()
		cfgPath = filepath.Join(filepath.Dir(self), "fake.json")
	}
	cfg, err := loadConfig(cfgPath)
	if err != nil {
		return fail("firecracker config: %v", err)
	}
	args := os.Args[1:]
	if len(args) == 1 && args[0] == "--version" {
		fmt.Printf("Firecracker v%s\n\nSupported snapshot data format versions: 5.0.0\n", strings.TrimPrefix(cfg.Version, "v"))
		return 0
	}
	id, sock := "", "/run/firecracker.socket"
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case strings.HasPrefix(a, "--id="):
			id = strings.TrimPrefix(a, "--id=")
		case strings.HasPrefix(a, "--start-time-us="), strings.HasPrefix(a, "--start-time-cpu-us="):
		case a == "--api-sock" && i+1 < len(args):
			i++
			sock = args[i]
		default:
			// --no-seccomp, --seccomp-filter and anything else: the runner
			// never passes them.
			return fail("firecracker: unexpected argument %q", a)
		}
	}
	root, _ := os.Getwd()
	f, err := os.OpenFile(filepath.Join(cfg.LogDir, id+".jsonl"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fail("firecracker: log: %v", err)
	}
	s := &fc{root: root, lg: &logger{f: f}, cfg: cfg, drives: map[string]map[string]any{}}
	s.lg.log("firecracker", map[string]any{"args": args, "pid": os.Getpid(), "uid": os.Getuid(), "gid": os.Getgid()})
	if !cfg.NoSeccomp {
		if err := allowAllSeccomp(); err != nil {
			return fail("firecracker: seccomp: %v", err)
		}
	}
	ln, err := net.Listen("unix", filepath.Join(root, sock))
	if err != nil {
		return fail("firecracker: api socket: %v", err)
	}
	http.Serve(ln, s)
	return 0
}

// allowAllSeccomp installs a filter that allows everything, on every
// thread: Firecracker's own filters are stricter, but what the runner
// checks is that a filter is installed.
func allowAllSeccomp() error {
	const seccompRetAllow = 0x7fff0000
	type sockFilter struct {
		code uint16
		jt   uint8
		jf   uint8
		k    uint32
	}
	type sockFprog struct {
		len    uint16
		filter *sockFilter
	}
	prog := []sockFilter{{code: 0x06, k: seccompRetAllow}} // BPF_RET|BPF_K
	fp := sockFprog{len: 1, filter: &prog[0]}
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, 38 /* PR_SET_NO_NEW_PRIVS */, 1, 0); e != 0 {
		return e
	}
	const seccompSetModeFilter, tsync = 1, 1
	if _, _, e := syscall.RawSyscall(317 /* seccomp */, seccompSetModeFilter, tsync, uintptr(unsafe.Pointer(&fp))); e != 0 {
		return e
	}
	return nil
}

func (s *fc) reply(w http.ResponseWriter, r *http.Request, body map[string]any, status int, fault string) {
	s.lg.log("request", map[string]any{"method": r.Method, "path": r.URL.Path, "body": body, "status": status, "fault": fault})
	if status == http.StatusNoContent {
		w.WriteHeader(status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if fault != "" {
		json.NewEncoder(w).Encode(map[string]string{"fault_message": fault})
	}
}

func (s *fc) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var body map[string]any
	if r.Method == http.MethodPut || r.Method == http.MethodPatch {
		if r.Header.Get("Content-Type") != "application/json" {
			s.reply(w, r, nil, 400, "Content-Type must be application/json")
			return
		}
		data, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&body); err != nil {
			s.reply(w, r, nil, 400, "An error occurred when deserializing the json body of a request: "+err.Error())
			return
		}
	}
	status, fault := s.handle(r.Method, r.URL.Path, body)
	switch {
	case status == 200 && r.URL.Path == "/version":
		s.lg.log("request", map[string]any{"method": r.Method, "path": r.URL.Path, "status": 200})
		json.NewEncoder(w).Encode(map[string]string{"firecracker_version": strings.TrimPrefix(s.cfg.Version, "v")})
	case status == 200:
		s.lg.log("request", map[string]any{"method": r.Method, "path": r.URL.Path, "status": 200})
		state := "Not started"
		if s.started {
			state = "Running"
		}
		json.NewEncoder(w).Encode(map[string]string{"app_name": "Firecracker", "id": "anonymous-instance", "state": state, "vmm_version": s.cfg.Version})
	default:
		s.reply(w, r, body, status, fault)
	}
}

// handle applies one request; see the package doc for the rules.
func (s *fc) handle(method, path string, body map[string]any) (int, string) {
	preBoot := func() (int, string) {
		if s.started {
			return 400, "The requested operation is not supported after starting the microVM."
		}
		return 0, ""
	}
	switch {
	case method == http.MethodGet && (path == "/version" || path == "/"):
		return 200, ""
	case method != http.MethodPut:
		return 400, "Invalid request method and/or path: " + method + " " + path
	case path == "/boot-source":
		if st, f := preBoot(); st != 0 {
			return st, f
		}
		if err := check(BootSourceSchema, body); err != "" {
			return 400, err
		}
		s.boot = body
	case strings.HasPrefix(path, "/drives/"):
		if st, f := preBoot(); st != 0 {
			return st, f
		}
		if err := check(DriveSchema, body); err != "" {
			return 400, err
		}
		id := strings.TrimPrefix(path, "/drives/")
		if body["drive_id"] != id {
			return 400, "The id from the path does not match the id from the body!"
		}
		if _, sock := body["socket"]; !sock && (body["path_on_host"] == nil || body["is_read_only"] == nil) {
			return 400, "path_on_host and is_read_only are required for a virtio-block drive"
		}
		if body["is_root_device"] == true {
			for other, d := range s.drives {
				if other != id && d["is_root_device"] == true {
					return 400, "A root block device already exists!"
				}
			}
		}
		s.drives[id] = body
	case path == "/machine-config":
		if st, f := preBoot(); st != 0 {
			return st, f
		}
		if err := check(MachineConfigurationSchema, body); err != "" {
			return 400, err
		}
		n, _ := body["vcpu_count"].(json.Number).Int64()
		if body["smt"] == true && n != 1 && n%2 != 0 {
			return 400, "The vCPU number is invalid! The vCPU number can only be 1 or an even number when SMT is enabled."
		}
		s.machine = body
	case path == "/vsock":
		if st, f := preBoot(); st != 0 {
			return st, f
		}
		if err := check(VsockSchema, body); err != "" {
			return 400, err
		}
		s.vsock = body
	case path == "/entropy":
		if st, f := preBoot(); st != 0 {
			return st, f
		}
		if err := check(EntropyDeviceSchema, body); err != "" {
			return 400, err
		}
	case strings.HasPrefix(path, "/network-interfaces/"):
		if st, f := preBoot(); st != 0 {
			return st, f
		}
		if err := check(NetworkInterfaceSchema, body); err != "" {
			return 400, err
		}
		if body["iface_id"] != strings.TrimPrefix(path, "/network-interfaces/") {
			return 400, "The id from the path does not match the id from the body!"
		}
	case path == "/actions":
		if err := check(InstanceActionInfoSchema, body); err != "" {
			return 400, err
		}
		if body["action_type"] != "InstanceStart" {
			return 204, ""
		}
		if s.started {
			return 400, "The requested operation is not supported after starting the microVM."
		}
		if s.boot == nil {
			return 400, "Start microvm error: Cannot start microvm without kernel configuration."
		}
		if err := s.startGuest(); err != "" {
			return 400, err
		}
		s.started = true
	default:
		return 400, "Invalid request method and/or path: " + method + " " + path
	}
	return 204, ""
}

// inChroot maps a path the jailed process was given to the host.
func (s *fc) inChroot(p string) string { return filepath.Join(s.root, filepath.Clean("/"+p)) }

// startGuest opens every file as the jailed Firecracker would, records
// the chroot's contents and starts the guest.
func (s *fc) startGuest() string {
	kernel := s.inChroot(s.boot["kernel_image_path"].(string))
	if f, err := os.Open(kernel); err != nil {
		return "Cannot load kernel due to invalid memory configuration or invalid kernel image: " + err.Error()
	} else {
		f.Close()
	}
	var rootfs string
	for id, d := range s.drives {
		flag := os.O_RDWR
		if d["is_read_only"] == true {
			flag = os.O_RDONLY
		}
		f, err := os.OpenFile(s.inChroot(d["path_on_host"].(string)), flag, 0)
		if err != nil {
			return "Unable to open block device " + id + ": " + err.Error()
		}
		f.Close()
		if d["is_root_device"] == true {
			rootfs = s.inChroot(d["path_on_host"].(string))
		}
	}
	behaviour := GuestEntry
	if data, err := os.ReadFile(rootfs); err == nil {
		behaviour, _, _ = strings.Cut(string(data), "\n")
	}
	if s.vsock == nil {
		return ""
	}
	uds := s.inChroot(s.vsock["uds_path"].(string))
	// Firecracker creates the host-initiated socket at uds_path.
	if ln, err := net.Listen("unix", uds); err == nil {
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	var files []string
	filepath.WalkDir(s.root, func(p string, d fs.DirEntry, err error) error {
		if rel, _ := filepath.Rel(s.root, p); rel != "." && err == nil {
			fi, _ := d.Info()
			files = append(files, fmt.Sprintf("%s %v", rel, fi.Mode().Type()))
		}
		return nil
	})
	s.lg.log("chroot", files)
	s.lg.log("machine", s.machine)
	go s.guest(behaviour, uds+"_"+strconv.Itoa(frame.VsockPort))
	return ""
}

func (s *fc) guest(behaviour, path string) {
	if behaviour == GuestNoConnect || behaviour == GuestOutside {
		s.lg.log("guest", behaviour)
		return
	}
	conn, err := net.Dial("unix", path)
	if err != nil {
		s.lg.log("guest-error", err.Error())
		return
	}
	br := bufio.NewReader(conn)
	b, err := frame.ReadBoot(br)
	if err != nil {
		s.lg.log("guest-error", err.Error())
		os.Exit(1)
	}
	s.lg.log("seed", hex.EncodeToString(b.Seed))
	s.lg.log("boot", map[string]any{"env": b.Env, "tmpBytes": b.TmpBytes, "outputBytes": b.OutputBytes, "noFile": b.NoFile, "fileSizeBytes": b.FileSizeBytes, "pids": b.Pids})
	switch behaviour {
	case GuestGarbage:
		junk := make([]byte, 4096)
		rand.Read(junk)
		conn.Write(junk)
		select {}
	case GuestHuge:
		key, err := frame.ReadHello(br)
		if err != nil {
			os.Exit(1)
		}
		w := frame.NewWriter(conn, key, frame.Out)
		w.Write(frame.TypeStart, []byte(frame.StepRun))
		chunk := bytes.Repeat([]byte("A"), 60<<10)
		for w.WriteStream(frame.TypeStdout, 0, chunk) == nil {
		}
		select {}
	case GuestMute:
		io.Copy(io.Discard, br)
		select {}
	case GuestCrash:
		os.Exit(3)
	case GuestScript:
		key, err := frame.ReadHello(br)
		if err != nil {
			os.Exit(1)
		}
		script, err := LoadScript(s.cfg.Script)
		if err != nil {
			s.lg.log("guest-error", err.Error())
			os.Exit(1)
		}
		sent, err := script.Play(conn, br, key, -1)
		s.lg.log("script", map[string]any{"sent": sent, "err": fmt.Sprint(err)})
		conn.Close()
		os.Exit(0)
	case GuestTwoConn:
		c2, err := net.Dial("unix", path)
		s.lg.log("second-connection", map[string]any{"refused": err != nil})
		if err == nil {
			c2.Close()
		}
	}
	err = runEntry(b, br, conn)
	s.lg.log("guest-done", fmt.Sprint(err))
	conn.Close()
	os.Exit(0) // the VM powers off
}

// runEntry runs the real entry program's logic on the guest's connection,
// in directories of its own (the VM's /work, /out and /tmp).
func runEntry(b *frame.Boot, in io.Reader, out io.Writer) error {
	dir, err := os.MkdirTemp("", "fcguest")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := entry.Config{WorkDir: filepath.Join(dir, "work"), OutDir: filepath.Join(dir, "out"), TmpDir: filepath.Join(dir, "tmp"), Shell: "/bin/sh", Env: b.Env}
	for _, d := range []string{cfg.WorkDir, cfg.OutDir, cfg.TmpDir} {
		os.Mkdir(d, 0o700)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	return entry.Run(ctx, cfg, in, out)
}

// Wait polls path until it exists or the deadline passes.
func Wait(path string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}
