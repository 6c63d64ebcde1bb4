package docker_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/sandbox/runner/docker"
)

type seccompProfile struct {
	DefaultAction   string `json:"defaultAction"`
	DefaultErrnoRet *uint  `json:"defaultErrnoRet"`
	ArchMap         []struct {
		Architecture     string   `json:"architecture"`
		SubArchitectures []string `json:"subArchitectures"`
	} `json:"archMap"`
	Syscalls []struct {
		Names    []string `json:"names"`
		Action   string   `json:"action"`
		ErrnoRet *uint    `json:"errnoRet"`
		Args     []struct {
			Index    uint   `json:"index"`
			Value    uint64 `json:"value"`
			ValueTwo uint64 `json:"valueTwo"`
			Op       string `json:"op"`
		} `json:"args"`
		Comment string `json:"comment"`
	} `json:"syscalls"`
}

func parseProfile(t *testing.T, s string) seccompProfile {
	t.Helper()
	var p seccompProfile
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("seccomp profile: %v", err)
	}
	return p
}

// TestSeccompProfile holds the committed profile (runc) to what seccomp.go
// says: default EPERM, the refused calls refused explicitly and never
// allowed; clone only without namespace flags, clone3 ENOSYS, personality
// only PER_LINUX and the query.
func TestSeccompProfile(t *testing.T) {
	t.Parallel()
	p := parseProfile(t, docker.SeccompProfile("runc"))
	if p.DefaultAction != "SCMP_ACT_ERRNO" || p.DefaultErrnoRet == nil || *p.DefaultErrnoRet != 1 {
		t.Fatalf("default %s %v, want SCMP_ACT_ERRNO with EPERM", p.DefaultAction, p.DefaultErrnoRet)
	}
	if len(p.ArchMap) != 2 {
		t.Errorf("archMap %+v", p.ArchMap)
	}
	refused := []string{
		"io_uring_setup", "io_uring_enter", "io_uring_register", "userfaultfd", "add_key", "keyctl", "request_key",
		"bpf", "perf_event_open", "unshare", "setns", "mount", "umount", "umount2", "pivot_root", "fsopen", "fsmount",
		"fspick", "fsconfig", "move_mount", "open_tree", "mount_setattr", "kexec_load", "kexec_file_load",
		"init_module", "finit_module", "delete_module", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
		"modify_ldt", "kcmp", "chroot", "reboot", "swapon", "swapoff", "acct", "iopl", "ioperm", "syslog",
		"settimeofday", "clock_settime", "open_by_handle_at", "lookup_dcookie", "quotactl", "vhangup",
		"nfsservctl", "uselib", "ustat", "sysfs", "_sysctl", "get_kernel_syms", "query_module",
	}
	eperm := []string{"io_uring_setup", "io_uring_enter", "io_uring_register", "userfaultfd", "add_key", "keyctl",
		"request_key", "bpf", "perf_event_open", "unshare", "setns", "mount", "umount2", "pivot_root", "fsopen",
		"kexec_load", "init_module", "finit_module", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "modify_ldt"}
	conditional, refusedEPERM := map[string]bool{}, map[string]bool{}
	for _, s := range p.Syscalls {
		for _, n := range s.Names {
			if s.Action == "SCMP_ACT_ALLOW" && slices.Contains(refused, n) {
				t.Errorf("%s is allowed", n)
			}
			if s.Action == "SCMP_ACT_ERRNO" && s.ErrnoRet != nil && *s.ErrnoRet == 1 && len(s.Args) == 0 {
				refusedEPERM[n] = true
			}
			if len(s.Args) > 0 || s.Action != "SCMP_ACT_ALLOW" {
				conditional[n] = true
			}
		}
		switch {
		case slices.Equal(s.Names, []string{"clone"}):
			// Every CLONE_NEW* flag (user namespaces: 0x10000000) must be
			// masked to zero.
			const newFlags = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
			if len(s.Args) != 1 || s.Args[0].Op != "SCMP_CMP_MASKED_EQ" || s.Args[0].Index != 0 || s.Args[0].Value&newFlags != newFlags || s.Args[0].ValueTwo != 0 {
				t.Errorf("clone rule %+v", s.Args)
			}
		case slices.Equal(s.Names, []string{"clone3"}):
			if s.Action != "SCMP_ACT_ERRNO" || s.ErrnoRet == nil || *s.ErrnoRet != 38 {
				t.Errorf("clone3 rule: %s %v, want ENOSYS", s.Action, s.ErrnoRet)
			}
		case slices.Equal(s.Names, []string{"personality"}):
			if len(s.Args) != 1 || s.Args[0].Op != "SCMP_CMP_EQ" || s.Args[0].Value != 0 && s.Args[0].Value != 0xffffffff {
				t.Errorf("personality rule %+v", s.Args)
			}
		}
	}
	for _, n := range eperm {
		if !refusedEPERM[n] {
			t.Errorf("%s is not refused with EPERM", n)
		}
	}
	for _, n := range []string{"clone", "clone3", "personality", "socket"} {
		if !conditional[n] {
			t.Errorf("%s has no rule of its own", n)
		}
	}
	// What every workload needs is there.
	for _, n := range []string{"read", "write", "openat", "execve", "mmap", "futex", "wait4", "kill", "ptrace", "arch_prctl", "rseq"} {
		found := false
		for _, s := range p.Syscalls {
			found = found || s.Action == "SCMP_ACT_ALLOW" && len(s.Args) == 0 && slices.Contains(s.Names, n)
		}
		if !found {
			t.Errorf("%s is not allowed", n)
		}
	}
}

// TestRunscArgs: the runner refuses a runsc runtime without an explicit,
// matching platform or without --oci-seccomp.
func TestRunscArgs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--platform=systrap", "--network=none", "--oci-seccomp"}, ""},
		{[]string{"-platform=systrap", "-oci-seccomp=true"}, ""},
		{[]string{"--platform=systrap", "--network=none"}, "--oci-seccomp"},
		{[]string{"--platform=systrap", "--oci-seccomp", "--oci-seccomp=false"}, "--oci-seccomp"},
		{[]string{"--oci-seccomp"}, "sets no --platform"},
		{[]string{"--platform=ptrace", "--oci-seccomp"}, "configured systrap"},
	}
	for _, c := range cases {
		err := docker.CheckRunscArgs(c.args, "systrap")
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

// TestSeccompProfileRunsc: the inverted profile for gVisor allows by
// default (gVisor's filter cannot name the calls it lacks, which must stay
// ENOSYS) and refuses every call and condition the runc profile refuses
// explicitly or only allows partly.
func TestSeccompProfileRunsc(t *testing.T) {
	t.Parallel()
	p := parseProfile(t, docker.SeccompProfile("runsc"))
	if p.DefaultAction != "SCMP_ACT_ALLOW" || p.DefaultErrnoRet != nil {
		t.Fatalf("default %s", p.DefaultAction)
	}
	eperm := map[string]bool{}
	cloneFlags, vsock := uint64(0), false
	personalities := map[uint64]bool{}
	clone3 := false
	for _, s := range p.Syscalls {
		if slices.Equal(s.Names, []string{"clone3"}) {
			// ENOSYS while no tracer is attached.
			clone3 = s.Action == "SCMP_ACT_TRACE" && len(s.Args) == 0
			continue
		}
		if s.Action != "SCMP_ACT_ERRNO" || s.ErrnoRet == nil || *s.ErrnoRet != 1 {
			t.Errorf("rule %+v: want refusals with EPERM only", s)
		}
		switch {
		case len(s.Args) == 0:
			for _, n := range s.Names {
				eperm[n] = true
			}
		case slices.Equal(s.Names, []string{"clone"}) && s.Args[0].Op == "SCMP_CMP_MASKED_EQ" && s.Args[0].Value == s.Args[0].ValueTwo:
			cloneFlags |= s.Args[0].Value
		case slices.Equal(s.Names, []string{"socket"}) && s.Args[0].Op == "SCMP_CMP_EQ" && s.Args[0].Value == 40:
			vsock = true
		case slices.Equal(s.Names, []string{"personality"}) && s.Args[0].Op == "SCMP_CMP_EQ":
			personalities[s.Args[0].Value] = true
		default:
			t.Errorf("unexpected rule %+v", s)
		}
	}
	for _, n := range []string{"io_uring_setup", "userfaultfd", "keyctl", "bpf", "perf_event_open", "unshare", "setns", "mount",
		"pivot_root", "kexec_load", "init_module", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "modify_ldt"} {
		if !eperm[n] {
			t.Errorf("%s is not refused under gVisor", n)
		}
	}
	if !clone3 || cloneFlags != 0x7E020000 || !vsock || !personalities[0x8] || !personalities[0x20000] || !personalities[0x20008] {
		t.Errorf("clone flags %#x, vsock %v, personalities %v", cloneFlags, vsock, personalities)
	}
}
