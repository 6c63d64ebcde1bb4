// Package vm is the entry program's mode as the init of a Firecracker
// guest (`quavon-entry vm`, from the kernel command line after --). A
// container's runtime gives PID 1 its stdin and stdout, its mounts, its
// rlimits and uid 65532; in a microVM the entry program does that itself,
// as root, before anything of the job exists, and then runs exactly as in a
// container (package entry), over one vsock connection:
//
//  1. mount /proc and /dev (devtmpfs; the raw drives stay root's);
//  2. connect to the host (CID 2) on frame.VsockPort, read the boot
//     preamble (frame.Boot) and mix its fresh random bytes into the
//     kernel's pool, crediting them and forcing a reseed of the CRNG, so two
//     VMs of the same image never share random state (FC4);
//  3. mount the scratch drive (/dev/vdb, ext4) on /work (nosuid, nodev) and
//     tmpfs on /out and /tmp (noexec, nosuid, nodev, the job's sizes) and a
//     small /dev/shm; remove the drive's lost+found;
//  4. set the steps' rlimits: open files, file size, and processes of uid
//     65532 (the job's pids limit);
//  5. set no_new_privs, empty the capability bounding set, drop the
//     supplementary groups and become uid and gid 65532 (every thread);
//  6. run the job (entry.Run as PID 1) on the connection.
//
// When it returns, PID 1 exits; the kernel then panics and, with panic=1
// and reboot=k on its command line, resets, which ends the Firecracker
// process. The host kills the VM anyway once the output has ended.
package vm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"

	"github.com/quavon/quavon/internal/sandbox/entry"
	"github.com/quavon/quavon/internal/sandbox/frame"
)

// Mount is one mount of the guest.
type Mount struct {
	Source, Target, FSType string
	Flags                  uintptr
	Data                   string
}

const (
	sandboxUID = 65532
	scratchDev = "/dev/vdb"
	shmBytes   = 1 << 20
)

// EarlyMounts come before the connection.
func EarlyMounts() []Mount {
	return []Mount{
		{"proc", "/proc", "proc", syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOEXEC, ""},
		{"devtmpfs", "/dev", "devtmpfs", syscall.MS_NOSUID | syscall.MS_NOEXEC, "mode=0755"},
	}
}

// JobMounts are the job's file systems, sized by the preamble.
func JobMounts(b *frame.Boot) []Mount {
	const noexec = syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOEXEC
	return []Mount{
		{scratchDev, entry.DefaultWorkDir, "ext4", syscall.MS_NOSUID | syscall.MS_NODEV, ""},
		{"tmpfs", entry.DefaultOutDir, "tmpfs", noexec, fmt.Sprintf("size=%d,uid=%d,gid=%d,mode=0700", b.OutputBytes, sandboxUID, sandboxUID)},
		{"tmpfs", entry.DefaultTmpDir, "tmpfs", noexec, fmt.Sprintf("size=%d,mode=1777", b.TmpBytes)},
		{"tmpfs", "/dev/shm", "tmpfs", noexec, fmt.Sprintf("size=%d,mode=1777", shmBytes)},
	}
}

func mount(ms []Mount) error {
	for _, m := range ms {
		os.MkdirAll(m.Target, 0o755) // on the read-only root it must exist already
		if err := syscall.Mount(m.Source, m.Target, m.FSType, m.Flags, m.Data); err != nil && !(errors.Is(err, syscall.EBUSY) && m.FSType == "devtmpfs") {
			return fmt.Errorf("mount %s: %w", m.Target, err)
		}
	}
	return nil
}

// Run is PID 1 of the guest; see the package doc.
func Run(ctx context.Context) error {
	if os.Getpid() != 1 || os.Getuid() != 0 {
		return errors.New("vm mode: only as the guest's init (PID 1, root)")
	}
	if err := mount(EarlyMounts()); err != nil {
		return err
	}
	conn, err := dialHost(frame.VsockPort, 10*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	b, err := frame.ReadBoot(conn)
	if err != nil {
		return err
	}
	if err := Reseed(b.Seed); err != nil {
		return err
	}
	if err := mount(JobMounts(b)); err != nil {
		return err
	}
	if err := os.Remove(entry.DefaultWorkDir + "/lost+found"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("scratch drive: %w", err)
	}
	syscall.Sethostname([]byte("sandbox"))
	for _, rl := range []struct {
		res int
		n   int64
	}{{syscall.RLIMIT_NOFILE, b.NoFile}, {syscall.RLIMIT_FSIZE, b.FileSizeBytes}, {rlimitNproc, b.Pids}} {
		if err := syscall.Setrlimit(rl.res, &syscall.Rlimit{Cur: uint64(rl.n), Max: uint64(rl.n)}); err != nil {
			return fmt.Errorf("rlimit %d: %w", rl.res, err)
		}
	}
	if err := dropPrivileges(); err != nil {
		return err
	}
	cfg := entry.DefaultConfig()
	cfg.Env, cfg.PID1 = b.Env, true
	return entry.Run(ctx, cfg, conn, conn)
}

const (
	rlimitNproc      = 6
	prSetNoNewPrivs  = 38
	prCapbsetDrop    = 24
	lastCap          = 63
	rndAddEntropy    = 0x40085203 // _IOW('R', 0x03, int[2])
	rndReseedCRNG    = 0x5207     // _IO('R', 0x07)
	afVsock          = 40
	vmaddrCIDHost    = 2
	sockaddrVMLength = 16
)

// dropPrivileges makes the process uid and gid 65532 with no capability
// left and none to gain.
func dropPrivileges() error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0); e != 0 {
		return fmt.Errorf("no_new_privs: %w", e)
	}
	for c := 0; c <= lastCap; c++ {
		if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prCapbsetDrop, uintptr(c), 0); e != 0 && e != syscall.EINVAL {
			return fmt.Errorf("capability bounding set: %w", e)
		}
	}
	if err := syscall.Setgroups(nil); err != nil {
		return err
	}
	if err := syscall.Setgid(sandboxUID); err != nil {
		return err
	}
	return syscall.Setuid(sandboxUID)
}

// Reseed mixes seed into the kernel's entropy pool, credited, and forces
// the CRNG to reseed from it.
func Reseed(seed []byte) error {
	f, err := os.OpenFile("/dev/urandom", os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("reseed: %w", err)
	}
	defer f.Close()
	buf := RandPoolInfo(seed)
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), rndAddEntropy, uintptr(unsafe.Pointer(&buf[0]))); e != 0 {
		return fmt.Errorf("reseed: RNDADDENTROPY: %w", e)
	}
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), rndReseedCRNG, 0); e != 0 {
		return fmt.Errorf("reseed: RNDRESEEDCRNG: %w", e)
	}
	return nil
}

// RandPoolInfo is struct rand_pool_info for seed: entropy_count (bits),
// buf_size (bytes), then the bytes.
func RandPoolInfo(seed []byte) []byte {
	buf := make([]byte, 8+len(seed))
	*(*int32)(unsafe.Pointer(&buf[0])) = int32(8 * len(seed))
	*(*int32)(unsafe.Pointer(&buf[4])) = int32(len(seed))
	copy(buf[8:], seed)
	return buf
}

// SockaddrVM is struct sockaddr_vm for the host's port.
func SockaddrVM(port uint32) [sockaddrVMLength]byte {
	var sa [sockaddrVMLength]byte
	*(*uint16)(unsafe.Pointer(&sa[0])) = afVsock
	*(*uint32)(unsafe.Pointer(&sa[4])) = port
	*(*uint32)(unsafe.Pointer(&sa[8])) = vmaddrCIDHost
	return sa
}

// dialHost connects to the host over vsock with raw system calls (no
// network package in PID 1), retrying while the device comes up.
func dialHost(port uint32, wait time.Duration) (*os.File, error) {
	deadline := time.Now().Add(wait)
	for {
		fd, err := syscall.Socket(afVsock, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("vsock: %w", err)
		}
		sa := SockaddrVM(port)
		_, _, e := syscall.Syscall(syscall.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&sa[0])), sockaddrVMLength)
		if e == 0 {
			return os.NewFile(uintptr(fd), "vsock"), nil
		}
		syscall.Close(fd)
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("vsock: connect to the host: %w", e)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
