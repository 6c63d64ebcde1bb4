package entry

import (
	"os"
	"os/signal"
	"syscall"
)

const (
	prSetDumpable       = 4
	prSetChildSubreaper = 36
)

// takeOver prepares the process for running steps and returns what undoes
// the part that can be undone.
//
// As PID 1 it catches every signal: the kernel delivers to a namespace's
// init only signals it handles, and the Go runtime handles most of them by
// dying, so a step could otherwise end the program with kill(1, SIGTERM).
// Caught (not ignored) signals get their default disposition back in the
// steps on exec. It also clears the dumpable flag, so processes of the same
// uid can neither ptrace it nor open /proc/1/fd (its stdin holds the
// overlay, its stdout the output). gVisor honours neither the dumpable flag
// nor init's shield against SIGKILL; the authenticated channel (package
// frame) is what keeps the verdict true there.
//
// Otherwise it becomes a child subreaper: the orphans of a step stay its
// children and killAll can reap them.
func (c *Config) takeOver() (release func()) {
	if !c.PID1 {
		syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
		return func() {}
	}
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0)
	ch := make(chan os.Signal, 16)
	signal.Notify(ch)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ch:
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}
