// Package entry is the logic of quavon-entry, the static program that is
// PID 1 in every sandbox container. It speaks the authenticated frame
// protocol of package frame with the runner: it reads frames from stdin and
// sends frames to stdout.
//
// # One job
//
//  1. The hello (magic and the per-job key), the request and the whole base
//     snapshot are read before any step exists. Bad input ends the job.
//  2. The base snapshot is extracted into the empty work directory with
//     snapshot.Extract (every rule of snapshot.Check, nothing written
//     outside it, no symlink followed); HOME (/work/.home) is created.
//  3. The setup step, if any, runs on the unmodified base tree. It gets its
//     own budget (SetupSeconds). When it ends every other process is killed
//     and its result frame is sent at once, so the runner can revoke the
//     egress credential before anything else runs.
//  4. If the setup step failed (non-zero exit, signal or timeout), the run
//     step is skipped: a failed `npm ci` makes test results meaningless, and
//     the run step must never execute with a half-installed tree.
//  5. Otherwise the program waits for the runner's authenticated go-ahead;
//     then the overlay snapshot, if any, is read and applied with
//     snapshot.ExtractOverlay (files replace files, directories may exist,
//     a whiteout dir/.wh.name deletes the file dir/name; opaque whiteouts and
//     whiteouts of directories are refused).
//  6. The run step runs without a timeout of its own (the runner owns the
//     wall clock and kills the container) and without any *_PROXY
//     variable; then every other process is killed and its result is sent.
//  7. The requested artefacts from /out (only when the run step ran) go out
//     as a tar, then the exit frame.
//
// Each step is `/bin/sh -c <command>` in /work with stdin /dev/null, in its
// own process group. While it runs, what it prints is forwarded (head in
// full, then the newest bytes; see forward.go) every frame.FlushInterval and
// when it ends, so a job killed at the wall clock or the memory limit still
// returns its output so far.
//
// # The channel
//
// A step runs as the same uid as PID 1 and, under gVisor, can open PID 1's
// descriptors through /proc/1/fd. It can therefore write into the output,
// steal bytes from it, write into or read from the input, and (gVisor does
// not shield a namespace's init from SIGKILL) kill PID 1. None of it can
// change the verdict: every frame is authenticated under the per-job key,
// which only PID 1 and the runner hold (package frame). Injected or stolen
// output makes the runner refuse the output; injected or stolen input makes
// PID 1 stop with Exit.InputTampered (or, when the go-ahead is stolen,
// wait until the runner's wall clock); a killed PID 1 leaves a stream
// without its exit frame. Each ends the job as failed or timed out with
// its reason, never with a forged result.
//
// A separate uid for the steps, or a pid namespace of their own, would make
// PID 1 unreachable, but each needs a capability the container does not
// have (CAP_SETUID/CAP_SETGID, or CAP_SYS_ADMIN through a user namespace,
// which the seccomp profile refuses): spec §3 keeps uid 65532 with every
// capability dropped, and the authenticated channel holds without them.
//
// # Errors
//
// An error of the entry program itself (bad input, a refused snapshot, a
// step that cannot start, output that cannot be written) still ends the
// output with an exit frame carrying Error; Run then returns the error and
// the program exits non-zero. A step's own failure is not an error: its
// exit code is in its result frame and the program exits 0.
//
// # Processes
//
// As PID 1 (Config.PID1) the program is the container's init: it reaps
// every process (orphans are re-parented to it) and ends each step with
// kill(-1, SIGKILL) until wait4 reports no child is left; as uid 65532
// without capabilities that reaches every process in the container but
// itself. It also catches every signal (PID 1 dies of none it handles, and
// its children get default dispositions back on exec) and makes itself
// non-dumpable, so under runc a step can neither kill it nor open
// /proc/1/fd. gVisor honours neither; the channel above does not rely on
// them.
//
// Not as PID 1 (tests on a host) it never calls kill(-1): it becomes a child
// subreaper, so the orphans of a step stay its children, and kills and
// reaps only the step's process group. A process that leaves the group
// (setsid) escapes the kill in this mode.
//
// # Output caps
//
// Each log (stdout.log, stderr.log, assembled by the runner) gets a quarter
// of Request.OutputBytes; within a log the setup step may use half, the run
// step the rest (frame.StepBudget). A stream is forwarded within its step's
// budget: the head (first half) in full, then, per flush, only the newest
// bytes that fit the other half, with the count of bytes dropped before
// them, so memory stays constant however much is written. The runner cuts
// each log in the middle, keeping head and tail with the line
// "[… N bytes omitted …]" between them, and replaces invalid UTF-8.
// Artefacts share what the logs can at most use, in the order requested:
// each is cut to the room left (at a rune boundary) or dropped when it is
// not a regular file (opened with O_NOFOLLOW|O_NONBLOCK and checked with
// fstat) or not UTF-8; Exit.ArtefactsTruncated says so. A missing artefact
// is just absent.
package entry
