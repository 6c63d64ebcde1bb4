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
// calls Docker only grants with a capability. Everything else fails with
// EPERM. Under gVisor that also refuses user namespaces inside the sandbox:
// runsc 0.0~20240729 has no switch of its own for them.
//
// Tests, builds and scanners need none of these; the probe in
// testdata/probe checks that each fails on both runtimes.
//
//go:embed seccomp.json
var seccompJSON []byte

// SeccompProfile returns the profile as the compact JSON that goes into
// the container's SecurityOpt.
func SeccompProfile() string {
	var b bytes.Buffer
	if err := json.Compact(&b, seccompJSON); err != nil {
		panic("docker: seccomp.json is not JSON: " + err.Error()) // embedded, checked by TestSeccompProfile
	}
	return b.String()
}
