// Package firecracker runs sandbox jobs in Firecracker microVMs launched
// through Firecracker's jailer, one VM per job (spec §3 "Runtimes", SB1,
// SB11, FC1–FC4). It is a runner.Backend: the executor's input (hello,
// request, snapshots) goes into the VM and the entry program's
// authenticated output comes back over vsock instead of a container's
// stdin and stdout; the output is parsed by the same code and caps as on
// Docker (FC2).
//
// # One job
//
//  1. The rootfs of the job's image (an ext4 built from the same image,
//     pinned with the kernel, Firecracker and the jailer in the VM
//     lockfile, vm-images.lock.json) is checked against its SHA-256, then
//     hard-linked read-only into a fresh chroot
//     <chroot base>/firecracker/<vm id>/root with the kernel, a per-job
//     scratch drive (ext4, the job's workBytes, owned by the VM's uid) for
//     /work and the vsock listener. Nothing else is put there.
//  2. The jailer starts Firecracker as a uid/gid of its own (one of the
//     configured range, never two running VMs on the same one), in the
//     chroot, in new PID and mount namespaces, under a cgroup v2 of its own
//     (cpu.max, memory.max, pids.max), with the fsize and no-file rlimits,
//     and with Firecracker's built-in seccomp filters at their default:
//     the runner never passes --no-seccomp or --seccomp-filter and refuses
//     a VM whose process reports no seccomp filter (/proc/<pid>/status).
//  3. Firecracker is configured over its API socket with the request shapes
//     of its OpenAPI description (api.go): boot source, the two drives,
//     machine config, vsock, entropy device, a network interface only for
//     a setup step with egress, then InstanceStart. Its version must be the
//     pinned one; the versions of Firecracker and the jailer are recorded
//     in the result (runtime).
//  4. The guest's init is the entry program (`quavon-entry vm`): it opens
//     one vsock connection to the host, reads the boot preamble
//     (frame.Boot: environment, tmpfs sizes, rlimits and fresh random
//     bytes it reseeds its kernel's pool with before anything runs, FC4),
//     mounts /work, /out and /tmp, drops to uid 65532 without capabilities
//     and speaks the same framed protocol as in a container. The host
//     accepts exactly one connection per VM within the boot timeout.
//  5. The runner kills the VM at the wall clock, when the output is
//     refused (caps, a frame that does not verify: FC2) and after the
//     output ended; afterwards the chroot, the scratch drive, the sockets,
//     the VM's cgroup and its network namespace are removed, whatever
//     happened (FC3), and only then is the uid free again.
//
// # Egress
//
// Egress none (the default): the VM has no network device at all. A setup
// step with egress registries gets a tap device in a network namespace of
// its own (net.go): nftables there forward only TCP to the proxy's
// address and port, masqueraded onto a veth pair to the host; everything
// else is dropped. Isolate, called before the run step's go-ahead, drops
// everything and deletes the tap device and the veth pair.
//
// # Fail closed
//
// The runner refuses to start without a usable KVM device (ProbeKVM: it
// must exist, open read-write and answer KVM's API version and
// KVM_CREATE_VM) or when an artefact of the VM lockfile is missing or does
// not match its digest. There is never a fallback to another backend
// (runner.BackendPolicy).
package firecracker
