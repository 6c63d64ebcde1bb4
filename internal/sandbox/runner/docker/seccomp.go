package docker

import (
	"bytes"
	_ "embed"
	"encoding/json"
)

// seccompProfile is Quavon's seccomp profile (seccomp.json beside this
// file), applied to every sandbox container on runc and, with runsc's
// --oci-seccomp, inside gVisor too.
//
// It is Docker's default profile (moby/profiles v0.1.0, the one Docker 28
// ships) as it resolves for a container without capabilities on amd64 and
// arm64, flattened so that it means the same on every engine version, with
// these calls removed as well:
//
//   - process_vm_readv, process_vm_writev: read and write another process's
//     memory; the entry program's per-job key lives in PID 1's memory.
//   - modify_ldt: 16-bit segments, for Wine and old binaries; a recurring
//     source of kernel bugs.
//   - personality other than PER_LINUX and the query: no READ_IMPLIES_EXEC,
//     UNAME26 or 32-bit personas.
//
// Flattening keeps out, whatever the engine's own default says (older
// engines, 20.10 on Debian bookworm among them, still allow io_uring and
// unshare): io_uring_setup/enter/register, userfaultfd, add_key, keyctl,
// request_key, bpf, perf_event_open, unshare and setns, clone with any
// CLONE_NEW* flag (user namespaces included) and clone3 (ENOSYS: its flags
// lie in memory where a filter cannot see them, so libc falls back to
// clone), the mount family (mount, umount2, pivot_root, fsopen, fsmount,
// fspick, fsconfig, move_mount, open_tree, mount_setattr), kexec_load,
// kexec_file_load, init_module, finit_module, delete_module, and the other
// calls Docker only grants with a capability. The calls named above fail
// with EPERM (one explicit rule), everything else not allowed too.
//
// # Under gVisor
//
// runsc (with --oci-seccomp) applies the profile inside the sandbox, but
// its filter knows only the calls gVisor implements by name and ignores
// errnoRet, and Docker 20.10 drops defaultErrnoRet. An allowlist would
// therefore answer EPERM to every call gVisor lacks (openat2, fchmodat2,
// cachestat …) where programs expect ENOSYS and fall back: Go's os.Root,
// which the entry program extracts snapshots with, fails so. For runsc the
// same file is applied inverted (runscProfile): everything allowed but the
// refused calls, clone with any CLONE_NEW* flag, socket(AF_VSOCK) and the
// personalities Docker permits that this profile does not. clone3 must
// answer ENOSYS for glibc to fall back to clone (EPERM makes pthread_create
// fail) and gVisor ignores errnoRet, so there clone3 is SCMP_ACT_TRACE:
// with no tracer attached the call fails with ENOSYS. That refuses user
// namespaces inside the sandbox too (runsc 0.0~20240729 has no switch of
// its own for them), with one residual: a step that ptraces its own child
// with PTRACE_O_TRACESECCOMP can let the child's clone3 through, and
// gVisor's clone3 accepts CLONE_NEWUSER; the namespace then exists only
// inside gVisor's sentry. On runc clone3 stays ERRNO(ENOSYS), where no
// tracer can override it. The filter sits in front of gVisor's sentry,
// which is the boundary to the host; the allowlist matters on runc, where
// the host kernel answers.
//
// Tests, builds and scanners need none of these; the probe in
// internal/doctor/probe checks that each fails on both runtimes.
//
//go:embed seccomp.json
var seccompJSON []byte

// SeccompProfile returns the profile for runtime as the compact JSON that
// goes into the container's SecurityOpt: seccomp.json for runc, its
// inversion for runsc.
func SeccompProfile(runtime string) string {
	var b bytes.Buffer
	if runtime == runtimeRunsc {
		out, err := json.Marshal(runscProfile())
		if err != nil {
			panic("docker: seccomp profile: " + err.Error())
		}
		return string(out)
	}
	if err := json.Compact(&b, seccompJSON); err != nil {
		panic("docker: seccomp.json is not JSON: " + err.Error()) // embedded, checked by TestSeccompProfile
	}
	return b.String()
}

type seccompArg struct {
	Index    uint   `json:"index"`
	Value    uint64 `json:"value"`
	ValueTwo uint64 `json:"valueTwo,omitempty"`
	Op       string `json:"op"`
}

type seccompRule struct {
	Names    []string     `json:"names"`
	Action   string       `json:"action"`
	ErrnoRet *uint        `json:"errnoRet,omitempty"`
	Args     []seccompArg `json:"args,omitempty"`
	Comment  string       `json:"comment,omitempty"`
}

type seccompFile struct {
	DefaultAction   string          `json:"defaultAction"`
	DefaultErrnoRet *uint           `json:"defaultErrnoRet,omitempty"`
	ArchMap         json.RawMessage `json:"archMap"`
	Syscalls        []seccompRule   `json:"syscalls"`
}

// Personalities Docker's default allows and this profile does not.
var refusedPersonalities = []uint64{0x0008, 0x20000, 0x20008}

// runscProfile inverts seccomp.json for gVisor (see the doc above): the
// refusals of the file, and a refusal for each condition under which the
// file allows clone, personality and socket only partly.
func runscProfile() seccompFile {
	var f seccompFile
	if err := json.Unmarshal(seccompJSON, &f); err != nil {
		panic("docker: seccomp.json: " + err.Error())
	}
	eperm := uint(1)
	out := seccompFile{DefaultAction: "SCMP_ACT_ALLOW", ArchMap: f.ArchMap}
	for _, r := range f.Syscalls {
		switch {
		case r.Action == "SCMP_ACT_ERRNO" && len(r.Names) == 1 && r.Names[0] == "clone3":
			// ENOSYS without errnoRet: a traced call with no tracer.
			out.Syscalls = append(out.Syscalls, seccompRule{Names: r.Names, Action: "SCMP_ACT_TRACE", Comment: r.Comment})
		case r.Action != "SCMP_ACT_ALLOW":
			out.Syscalls = append(out.Syscalls, r)
		case len(r.Args) == 1 && r.Names[0] == "clone" && r.Args[0].Op == "SCMP_CMP_MASKED_EQ":
			for bit := uint64(1); bit != 0 && bit <= r.Args[0].Value; bit <<= 1 {
				if r.Args[0].Value&bit != 0 {
					out.Syscalls = append(out.Syscalls, seccompRule{Names: []string{"clone"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: &eperm,
						Args: []seccompArg{{Index: r.Args[0].Index, Value: bit, ValueTwo: bit, Op: "SCMP_CMP_MASKED_EQ"}}})
				}
			}
		case len(r.Args) == 1 && r.Names[0] == "socket" && r.Args[0].Op == "SCMP_CMP_NE":
			out.Syscalls = append(out.Syscalls, seccompRule{Names: []string{"socket"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: &eperm,
				Args: []seccompArg{{Index: 0, Value: r.Args[0].Value, Op: "SCMP_CMP_EQ"}}})
		}
	}
	for _, p := range refusedPersonalities {
		out.Syscalls = append(out.Syscalls, seccompRule{Names: []string{"personality"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: &eperm,
			Args: []seccompArg{{Index: 0, Value: p, Op: "SCMP_CMP_EQ"}}})
	}
	return out
}
