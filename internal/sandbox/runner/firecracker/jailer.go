package firecracker

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/quavon/quavon/internal/sandbox"
)

// Names inside a VM's chroot, as the jailed Firecracker sees them.
const (
	chrootKernel  = "vmlinux"
	chrootRootfs  = "rootfs.ext4"
	chrootScratch = "scratch.ext4"
	chrootRunDir  = "run"
	apiSocket     = "/run/firecracker.socket"
	vsockUDS      = "/v.sock"
	// guestCID is the guest's vsock address (3 is the first a guest may
	// have; each VM is alone on its device).
	guestCID = 3
	// vmmOverheadBytes is what Firecracker itself may use on top of the
	// guest's memory before its cgroup's memory.max stops it.
	vmmOverheadBytes = 64 << 20
	// vmmPids bounds Firecracker's threads (API, VMM, vCPUs).
	vmmPids = 64
	// vmmNoFile bounds Firecracker's descriptors.
	vmmNoFile = 256
	// cpuPeriod is cgroup v2's cpu.max period in microseconds.
	cpuPeriod = 100000
)

// execName is the jailer's <exec_file_name>: the last path element of the
// Firecracker binary, also the chroot's middle directory and the pid
// file's name.
func execName(firecrackerPath string) string { return filepath.Base(firecrackerPath) }

// chrootDir is <chroot base>/<exec_file_name>/<id>: the jailer's chroot is
// its root subdirectory; the whole directory is the VM's.
func chrootDir(base, fcPath, id string) string { return filepath.Join(base, execName(fcPath), id) }

// vmShape is the machine a job's limits ask for.
func vmShape(l sandbox.Limits) MachineConfiguration {
	vcpus := max(min((l.CPUMillis+999)/1000, 32), 1)
	return MachineConfiguration{VCPUCount: vcpus, MemSizeMiB: max(l.MemoryBytes>>20, 128), SMT: false}
}

// jailerArgs are the jailer's arguments for one VM. Firecracker's own
// arguments (after --) never include --no-seccomp or --seccomp-filter: its
// built-in filters stay at their default.
func jailerArgs(c Config, id string, uid int, l sandbox.Limits, netns string) []string {
	args := []string{
		"--id", id,
		"--exec-file", c.Lock.Firecracker.Path,
		"--uid", strconv.Itoa(uid),
		"--gid", strconv.Itoa(uid),
		"--chroot-base-dir", c.ChrootBase,
		"--cgroup-version", "2",
		"--parent-cgroup", c.CgroupParent,
		"--cgroup", fmt.Sprintf("cpu.max=%d %d", max(l.CPUMillis*cpuPeriod/1000, 1000), cpuPeriod),
		"--cgroup", fmt.Sprintf("memory.max=%d", vmShape(l).MemSizeMiB<<20+vmmOverheadBytes),
		"--cgroup", fmt.Sprintf("pids.max=%d", vmmPids),
		// The scratch drive is created at its full size: no file of the
		// VM's process ever needs to be larger.
		"--resource-limit", fmt.Sprintf("fsize=%d", max(l.WorkBytes, 1<<20)),
		"--resource-limit", fmt.Sprintf("no-file=%d", vmmNoFile),
		"--new-pid-ns",
	}
	if netns != "" {
		args = append(args, "--netns", netns)
	}
	return append(args, "--", "--api-sock", apiSocket)
}

// uidPool hands out the uids VMs run as: one per running VM, in turn, so
// a uid is used again as late as possible.
type uidPool struct {
	mu          sync.Mutex
	first, last int
	next        int
	used        map[int]bool
}

func newUIDPool(first, last int) *uidPool {
	return &uidPool{first: first, last: last, next: first, used: map[int]bool{}}
}

var errNoUID = errors.New("firecracker: every uid of the range runs a VM")

func (p *uidPool) take() (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.last - p.first + 1
	for i := 0; i < n; i++ {
		uid := p.first + (p.next-p.first+i)%n
		if !p.used[uid] {
			p.used[uid] = true
			p.next = p.first + (uid-p.first+1)%n
			return uid, nil
		}
	}
	return 0, errNoUID
}

func (p *uidPool) release(uid int) {
	p.mu.Lock()
	delete(p.used, uid)
	p.mu.Unlock()
}
