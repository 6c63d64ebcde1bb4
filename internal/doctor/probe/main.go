// Command probe is the escape smoke suite's "repository code" and quavon
// doctor --canary's: run inside a sandbox container, it tries each way out
// and prints one JSON object mapping probe name to "blocked: <why>" or
// "OPEN: <what got through>".
//
//	probe [CANARY [PATH...]]
//
// CANARY is a value that must not be in its environment or PID 1's; each
// PATH a host file that must not be readable in the sandbox (directly or
// through /proc/1/root). It never prints CANARY or a file's content.
//
// Build it with CGO_ENABLED=0; it needs nothing from the image. It uses
// the standard library of Go 1.19 only (the go image class's toolchain
// builds it from source for quavon doctor --canary).
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

func blocked(err error) string { return "blocked: " + err.Error() }

// readHost tries to read a host file.
func readHost(p, canary string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return blocked(err)
	}
	if canary != "" && strings.Contains(string(b), canary) {
		return open("read %s: it holds the canary", p)
	}
	return open("read %s (%d bytes)", p, len(b))
}

func open(format string, args ...any) string { return "OPEN: " + fmt.Sprintf(format, args...) }

// allowedDev is the minimal /dev of a container. gVisor adds fuse and
// net/tun, which its sentry emulates (no host device behind them); using
// them needs mount or CAP_NET_ADMIN, which the "mount" and "tun" probes
// show are refused.
var allowedDev = map[string]bool{
	"console": true, "core": true, "fd": true, "full": true, "mqueue": true, "null": true, "ptmx": true,
	"pts": true, "random": true, "shm": true, "stderr": true, "stdin": true, "stdout": true, "tty": true,
	"urandom": true, "zero": true, "fuse": true, "net": true,
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "--version" {
		return // the "exec from /tmp" probe runs a copy of itself
	}
	if os.Getuid() == 0 {
		// The probes really try: as root on a host they would mount over
		// /tmp and more. They are meant for uid 65532 inside a sandbox.
		fmt.Fprintln(os.Stderr, "probe: running as root, so not inside a Quavon sandbox; refusing")
		os.Exit(2)
	}
	canary := ""
	if len(os.Args) > 1 {
		canary = os.Args[1]
	}
	var paths []string
	if len(os.Args) > 2 {
		paths = os.Args[2:]
	}
	r := map[string]string{}

	r["mount"] = func() string {
		if err := syscall.Mount("none", "/tmp", "tmpfs", 0, ""); err != nil {
			return blocked(err)
		}
		return open("mounted a tmpfs")
	}()
	r["ptrace-pid1"] = func() string {
		if err := syscall.PtraceAttach(1); err != nil {
			return blocked(err)
		}
		syscall.PtraceDetach(1)
		return open("attached to pid 1")
	}()
	for _, p := range []string{"/etc/probe", "/probe", "/usr/probe", "/opt/quavon/probe", "/var/probe", "/root/probe"} {
		r["write "+p] = func() string {
			if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
				return blocked(err)
			}
			return open("wrote %s", p)
		}()
	}
	r["overwrite entry"] = func() string {
		f, err := os.OpenFile("/opt/quavon/entry", os.O_WRONLY, 0)
		if err != nil {
			return blocked(err)
		}
		f.Close()
		return open("opened the entry program for writing")
	}()
	r["/proc/1/root"] = func() string {
		if _, err := os.ReadDir("/proc/1/root/"); err != nil {
			return blocked(err)
		}
		// Readable: it must at least not be the host's root.
		if _, err := os.Stat("/proc/1/root/var/lib/docker"); err == nil {
			return open("/proc/1/root is the host's root")
		}
		return "blocked: /proc/1/root is the container's own root"
	}()
	r["tun"] = func() string {
		f, err := os.OpenFile("/dev/net/tun", os.O_RDWR, 0)
		if err != nil {
			return blocked(err)
		}
		defer f.Close()
		var req [40]byte // struct ifreq: name "q0", flags IFF_TUN
		copy(req[:], "q0")
		req[16] = 0x01
		if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), 0x400454ca /* TUNSETIFF */, uintptr(unsafe.Pointer(&req[0]))); errno != 0 {
			return blocked(errno)
		}
		return open("created a tun device")
	}()
	r["raw socket"] = func() string {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_ICMP)
		if err != nil {
			return blocked(err)
		}
		syscall.Close(fd)
		return open("raw socket")
	}()
	r["packet socket"] = func() string {
		fd, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_RAW, 0)
		if err != nil {
			return blocked(err)
		}
		syscall.Close(fd)
		return open("packet socket")
	}()
	r["/dev"] = func() string {
		es, err := os.ReadDir("/dev")
		if err != nil {
			return blocked(err)
		}
		var extra []string
		for _, e := range es {
			if !allowedDev[e.Name()] {
				extra = append(extra, e.Name())
			}
		}
		if len(extra) > 0 {
			return open("/dev has %v", extra)
		}
		return "blocked: only the minimal set"
	}()
	r["env self"] = func() string {
		b, err := os.ReadFile("/proc/self/environ")
		if err != nil {
			return blocked(err)
		}
		var keys []string
		for _, kv := range strings.Split(strings.TrimRight(string(b), "\x00"), "\x00") {
			k, _, _ := strings.Cut(kv, "=")
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if canary != "" && strings.Contains(string(b), canary) {
			return open("canary in /proc/self/environ")
		}
		return "blocked: keys " + strings.Join(keys, ",")
	}()
	r["env pid1"] = func() string {
		b, err := os.ReadFile("/proc/1/environ")
		if err != nil {
			return blocked(err)
		}
		if canary != "" && strings.Contains(string(b), canary) {
			return open("canary in /proc/1/environ")
		}
		return "blocked: no canary"
	}()
	home, _ := os.UserHomeDir()
	for _, p := range []string{"/run/secrets", filepath.Join(home, ".ssh"), filepath.Join(home, ".gitconfig"), "/work/.git",
		"/var/run/docker.sock", "/run/docker.sock", "/etc/docker", "/root/.docker"} {
		r["exists "+p] = func() string {
			if _, err := os.Lstat(p); err != nil {
				return blocked(err)
			}
			return open("%s exists", p)
		}()
	}
	dial := func(network, addr string) string {
		c, err := net.DialTimeout(network, addr, 2*time.Second)
		if err != nil {
			return blocked(err)
		}
		defer c.Close()
		if network == "udp" {
			c.SetDeadline(time.Now().Add(2 * time.Second))
			if _, err := c.Write([]byte("x")); err != nil {
				return blocked(err)
			}
			buf := make([]byte, 1)
			if _, err := c.Read(buf); err != nil {
				return blocked(err)
			}
		}
		return open("connected to %s %s", network, addr)
	}
	r["metadata 169.254.169.254:80"] = dial("tcp", "169.254.169.254:80")
	r["tcp 1.1.1.1:443"] = dial("tcp", "1.1.1.1:443")
	r["udp 8.8.8.8:53"] = dial("udp", "8.8.8.8:53")
	r["tcp [2606:4700:4700::1111]:443"] = dial("tcp", "[2606:4700:4700::1111]:443")
	r["dns"] = func() string {
		addrs, err := net.LookupHost("deb.debian.org")
		if err != nil {
			return blocked(err)
		}
		return open("resolved %v", addrs)
	}()
	r["interfaces"] = func() string {
		ifs, err := net.Interfaces()
		if err != nil {
			return blocked(err)
		}
		var names []string
		for _, i := range ifs {
			if i.Flags&net.FlagLoopback == 0 && i.Flags&net.FlagUp != 0 {
				names = append(names, i.Name)
			}
		}
		if len(names) > 0 {
			return open("interfaces up: %v", names)
		}
		return "blocked: loopback only"
	}()
	r["setuid"] = func() string {
		if err := syscall.Setuid(0); err != nil {
			return blocked(err)
		}
		return open("became root")
	}()
	r["exec from /tmp"] = func() string {
		self, _ := os.Executable()
		b, err := os.ReadFile(self)
		if err != nil {
			return blocked(err)
		}
		if err := os.WriteFile("/tmp/probe-copy", b, 0o755); err != nil {
			return blocked(err)
		}
		if err := exec.Command("/tmp/probe-copy", "--version").Run(); err != nil {
			return blocked(err)
		}
		return open("executed a file from /tmp")
	}()

	for _, p := range paths {
		r["read "+p] = readHost(p, canary)
		r["read /proc/1/root"+p] = readHost("/proc/1/root"+p, canary)
	}
	r["host pids"] = func() string {
		es, err := os.ReadDir("/proc")
		if err != nil {
			return blocked(err)
		}
		n := 0
		for _, e := range es {
			if e.Name() == "" || e.Name()[0] < '0' || e.Name()[0] > '9' {
				continue
			}
			n++
			b, err := os.ReadFile("/proc/" + e.Name() + "/comm")
			if err == nil && hostProcesses[strings.TrimSpace(string(b))] {
				return open("a host process is visible: %s (pid %s)", strings.TrimSpace(string(b)), e.Name())
			}
		}
		return fmt.Sprintf("blocked: %d processes, none of the host's", n)
	}()
	r["capabilities"] = func() string {
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return blocked(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			for _, k := range []string{"CapEff:", "CapPrm:", "CapAmb:"} {
				if v := strings.TrimPrefix(line, k); strings.HasPrefix(line, k) && strings.Trim(strings.TrimSpace(v), "0") != "" {
					return open("%s %s", k, strings.TrimSpace(v))
				}
			}
		}
		return "blocked: no effective, permitted or ambient capabilities"
	}()

	// PID 1 holds the job's channel key in memory: no way to read it.
	r["/proc/1/mem"] = func() string {
		f, err := os.Open("/proc/1/mem")
		if err != nil {
			return blocked(err)
		}
		defer f.Close()
		return open("opened PID 1's memory")
	}()
	seccompProbes(r)

	json.NewEncoder(os.Stdout).Encode(r)
}

func containsErrno(es []syscall.Errno, e syscall.Errno) bool {
	for _, x := range es {
		if x == e {
			return true
		}
	}
	return false
}

// hostProcesses are names that only the host's PID namespace has.
var hostProcesses = map[string]bool{"systemd": true, "init": true, "dockerd": true, "containerd": true,
	"containerd-shim": true, "runsc-sandbox": true, "runsc-gofer": true, "quavon-sandbox-": true, "quavon-worker": true,
	"quavon-api": true, "sshd": true, "kthreadd": true}

// seccompProbes calls what Quavon's seccomp profile refuses (syscall
// numbers of linux/amd64). Each must fail with EPERM, the profile's answer:
// an error of another kind means the call got past the filter to the
// kernel or gVisor's sentry, which answer differently (without the
// profile io_uring_setup and personality(UNAME26) succeed on runc, and
// under runsc unshare(CLONE_NEWUSER) succeeds and personality(UNAME26) is
// EINVAL). Under gVisor, calls its filter cannot name (it implements
// neither) get gVisor's own ENOSYS; clone3 answers ENOSYS (so that libc
// falls back to clone, whose flags the filter sees).
func seccompProbes(r map[string]string) {
	want := func(name string, errno syscall.Errno, wantErrno ...syscall.Errno) {
		switch {
		case containsErrno(wantErrno, errno):
			r["seccomp "+name] = "blocked: " + errno.Error()
		case errno == 0:
			r["seccomp "+name] = "OPEN: the call succeeded"
		default:
			r["seccomp "+name] = fmt.Sprintf("OPEN: %v, not %v: the call reached the kernel", errno, wantErrno)
		}
	}
	// gVisor has no io_uring, keyring, bpf, perf, new mount API, kexec or
	// module calls: its filter cannot name them, so they get ENOSYS there.
	raw := func(name string, trap uintptr, args ...uintptr) {
		var a [6]uintptr
		copy(a[:], args)
		_, _, e := syscall.Syscall6(trap, a[0], a[1], a[2], a[3], a[4], a[5])
		want(name, e, syscall.EPERM, syscall.ENOSYS)
	}
	eperm := func(name string, trap uintptr, args ...uintptr) {
		var a [6]uintptr
		copy(a[:], args)
		_, _, e := syscall.Syscall6(trap, a[0], a[1], a[2], a[3], a[4], a[5])
		want(name, e, syscall.EPERM)
	}
	var params [120]byte
	raw("io_uring_setup", 425, 1, uintptr(unsafe.Pointer(&params[0])))
	raw("io_uring_enter", 426, ^uintptr(0), 0, 0, 0, 0)
	raw("io_uring_register", 427, ^uintptr(0), 0, 0, 0)
	raw("userfaultfd", 323, 0)
	raw("add_key", 248, 0, 0, 0, 0, 0)
	raw("keyctl", 250, 0 /* KEYCTL_GET_KEYRING_ID */, ^uintptr(0), 0)
	raw("request_key", 249, 0, 0, 0, 0)
	raw("bpf", 321, 0, 0, 0)
	raw("perf_event_open", 298, 0, 0, ^uintptr(0), ^uintptr(0), 0)
	raw("fsopen", 430, 0, 0)
	raw("pivot_root", 155, 0, 0)
	raw("kexec_load", 246, 0, 0, 0, 0)
	raw("kexec_file_load", 320, ^uintptr(0), ^uintptr(0), 0, 0, 0)
	raw("init_module", 175, 0, 0, 0)
	raw("finit_module", 313, ^uintptr(0), 0, 0)
	raw("delete_module", 176, 0, 0)
	eperm("personality UNAME26", 135, 0x0020000)
	eperm("personality PER_LINUX32", 135, 0x0008)
	eperm("modify_ldt", 154, 0, 0, 0)
	eperm("setns", 308, ^uintptr(0), 0)
	raw("pidfd_getfd", 438, ^uintptr(0), 0, 0)
	var buf [8]byte
	local := syscall.Iovec{Base: &buf[0], Len: 8}
	eperm("process_vm_readv", 310, 1, uintptr(unsafe.Pointer(&local)), 1, uintptr(unsafe.Pointer(&local)), 1, 0)
	eperm("process_vm_writev", 311, 1, uintptr(unsafe.Pointer(&local)), 1, uintptr(unsafe.Pointer(&local)), 1, 0)
	// clone3 into a new user namespace; should it ever succeed, the child
	// leaves at once.
	var cl [11]uint64
	cl[0], cl[4] = syscall.CLONE_NEWUSER, uint64(syscall.SIGCHLD)
	pid, _, e := syscall.RawSyscall(435, uintptr(unsafe.Pointer(&cl[0])), unsafe.Sizeof(cl), 0)
	if e == 0 && pid == 0 {
		syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 0, 0, 0)
	}
	want("clone3(CLONE_NEWUSER)", e, syscall.ENOSYS)
	// User namespaces, both ways: unshare in a fresh (single-threaded)
	// child, and clone with CLONE_NEWUSER.
	self, _ := os.Executable()
	for name, attr := range map[string]*syscall.SysProcAttr{
		"unshare(CLONE_NEWUSER)": {Unshareflags: syscall.CLONE_NEWUSER},
		"clone(CLONE_NEWUSER)":   {Cloneflags: syscall.CLONE_NEWUSER},
		"clone(CLONE_NEWNS)":     {Cloneflags: syscall.CLONE_NEWNS},
	} {
		cmd := exec.Command(self, "--version")
		cmd.SysProcAttr = attr
		err := cmd.Run()
		var errno syscall.Errno
		if err == nil {
			r["seccomp "+name] = "OPEN: a process in a new namespace ran"
			continue
		}
		if !errors.As(err, &errno) {
			r["seccomp "+name] = "OPEN: " + err.Error()
			continue
		}
		want(name, errno, syscall.EPERM)
	}
}
