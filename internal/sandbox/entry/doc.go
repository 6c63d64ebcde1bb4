// Package entry is the logic of quavon-entry, the static program that is
// PID 1 in every sandbox container, and the wire protocol the runner speaks
// with it (protocol.go).
//
// # One job
//
// Run reads the framed input from stdin and writes the output tar to
// stdout, in this order:
//
//  1. ReadInput: magic, Request, base snapshot. Bad input ends the job.
//  2. The base snapshot is extracted into the empty work directory with
//     snapshot.Extract (every rule of snapshot.Check, nothing written
//     outside it, no symlink followed); HOME (/work/.home) is created.
//  3. The setup step, if any, runs on the unmodified base tree. It gets its
//     own budget (SetupSeconds). When it ends every other process is killed
//     and setup.json is written and flushed at once, so the runner can
//     revoke the egress credential before anything else runs.
//  4. If the setup step failed (non-zero exit, signal or timeout), the run
//     step is skipped (Exit.Run.Ran is false, Exit.Error empty): a failed
//     `npm ci` makes test results meaningless, and the run step must never
//     execute with a half-installed tree.
//  5. The overlay snapshot, if any, is read from stdin only now and applied
//     with snapshot.ExtractOverlay (files replace files, directories may
//     exist).
//  6. The run step runs without a timeout of its own (the runner owns the
//     wall clock and kills the container) and without any *_PROXY
//     variable; then every other process is killed.
//  7. stdout.log and stderr.log, the requested artefacts from /out (only
//     when the run step ran) and exit.json are written; the tar is closed.
//
// Each step is `/bin/sh -c <command>` in /work with stdin /dev/null, in its
// own process group.
//
// # Errors
//
// An error of the entry program itself (bad input, a refused snapshot, a
// step that cannot start, output that cannot be written) still produces a
// well-formed output tar whose exit.json carries Error, with Run.Ran false
// when the run step did not run; Run then returns the error and the
// program exits non-zero. A step's own failure is not an error: its exit
// code is in exit.json and the program exits 0.
//
// # Processes
//
// As PID 1 (Config.PID1) the program is the container's init: it reaps
// every process (orphans are re-parented to it) and ends each step with
// kill(-1, SIGKILL) until wait4 reports no child is left; as uid 65532
// without capabilities that reaches every process in the container but
// itself. It also catches every signal (PID 1 dies of none it handles, and
// its children get default dispositions back on exec) and makes itself
// non-dumpable, so a step can neither kill it nor open /proc/1/fd to read
// the input or write into the output.
//
// Not as PID 1 (tests on a host) it never calls kill(-1): it becomes a child
// subreaper, so the orphans of a step stay its children, and kills and
// reaps only the step's process group. A process that leaves the group
// (setsid) escapes the kill in this mode.
//
// # Output caps
//
// The output stays within Request.OutputBytes of content, plus setup.json
// and exit.json: each log gets a quarter of it; within a log the setup step
// may use half, the run step the rest. A step's output beyond its share is
// cut in the middle: the head and the tail are kept (the tail in a ring
// buffer, so memory stays constant however much is written) with the line
// "[… N bytes omitted …]" between them. Invalid UTF-8 is replaced with
// U+FFFD, as the runner accepts only UTF-8. Artefacts share what the logs
// left, in the order requested: each is cut to the room left (at a rune
// boundary) or dropped when it is not a regular file (opened with
// O_NOFOLLOW|O_NONBLOCK and checked with fstat) or not UTF-8.
// Exit.OutputTruncated says that something was cut or dropped; a missing
// artefact is just absent.
package entry
