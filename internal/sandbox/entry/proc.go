package entry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/quavon/quavon/internal/sandbox/frame"
)

// drainTimeout bounds reading a step's pipes after every process was killed.
// As PID 1 nothing can hold them open any more; on a host a process that
// left the step's process group could, and must not hang the program.
const drainTimeout = 5 * time.Second

// step runs command as one step: `<shell> -c command` in the work directory,
// stdin /dev/null, stdout and stderr forwarded to the runner (fw), in its
// own process group. It returns when the shell has exited (or timeout has
// passed, or ctx is done), every other process of the step is killed and
// reaped and what the step printed is flushed. An error means the step
// could not be run at all.
func (j *job) step(ctx context.Context, name, command string, env []string, timeout time.Duration, fw [2]*forwarder) (frame.StepResult, error) {
	res := frame.StepResult{Step: name}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return res, fmt.Errorf("%s step: %w", name, err)
	}
	defer devnull.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		return res, fmt.Errorf("%s step: %w", name, err)
	}
	defer outR.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		outW.Close()
		return res, fmt.Errorf("%s step: %w", name, err)
	}
	defer errR.Close()

	attr := &syscall.ProcAttr{
		Dir:   j.cfg.WorkDir,
		Env:   env,
		Files: []uintptr{devnull.Fd(), outW.Fd(), errW.Fd()},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	}
	start := time.Now()
	// No wait4 runs between steps, so nothing can reap the child before
	// its pid is known here.
	pid, err := syscall.ForkExec(j.cfg.Shell, []string{j.cfg.Shell, "-c", command}, attr)
	outW.Close()
	errW.Close()
	if err != nil {
		return res, fmt.Errorf("%s step: start %s: %w", name, j.cfg.Shell, err)
	}
	res.Ran = true

	var copying sync.WaitGroup
	for i, r := range []*os.File{outR, errR} {
		copying.Go(func() { io.Copy(fw[i], r) })
	}
	stopFlush := make(chan struct{})
	flushed := make(chan struct{})
	go func() {
		flushEvery(j.out, stopFlush, fw[0], fw[1])
		close(flushed)
	}()

	type exit struct {
		ws  syscall.WaitStatus
		err error
	}
	exited := make(chan exit, 1)
	go func() {
		ws, err := j.waitFor(pid)
		exited <- exit{ws, err}
	}()
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	var e exit
	select {
	case e = <-exited:
	case <-expired:
		res.TimedOut = true
		j.kill(pid)
		e = <-exited
	case <-ctx.Done():
		j.kill(pid)
		e = <-exited
	}
	res.DurationMillis = time.Since(start).Milliseconds()
	j.killAll(j.group(pid))

	deadline := time.Now().Add(drainTimeout)
	outR.SetReadDeadline(deadline)
	errR.SetReadDeadline(deadline)
	copying.Wait()
	close(stopFlush)
	<-flushed
	for _, f := range fw {
		f.flush(j.out)
	}

	if e.err != nil {
		return res, fmt.Errorf("%s step: wait: %w", name, e.err)
	}
	switch {
	case e.ws.Exited():
		res.ExitCode = e.ws.ExitStatus()
	case e.ws.Signaled():
		res.ExitCode = 128 + int(e.ws.Signal())
		res.Signal = signalName(e.ws.Signal())
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("%s step: %w", name, err)
	}
	return res, nil
}

// waitFor waits until the process pid has exited and returns its status.
// As PID 1 it reaps every process that exits meanwhile.
func (j *job) waitFor(pid int) (syscall.WaitStatus, error) {
	target := pid
	if j.cfg.PID1 {
		target = -1
	}
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(target, &ws, 0, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
		case err != nil:
			return ws, err
		case got == pid:
			return ws, nil
		}
	}
}

// kill ends a step early: its process group and the shell itself (which
// may have left the group), or as PID 1 every process.
func (j *job) kill(pid int) {
	syscall.Kill(j.group(pid), syscall.SIGKILL)
	if !j.cfg.PID1 {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// group is what kill and wait4 address to reach every process of the step
// whose shell is pid: its process group, or as PID 1 every process (-1).
func (j *job) group(pid int) int {
	if j.cfg.PID1 {
		return -1
	}
	return -pid
}

// killAll kills and reaps every process of target (a group from group). It
// kills again after each reap, so a process forked meanwhile is caught too,
// and returns once wait4 reports no such child is left. As PID 1, kill(-1)
// reaches every process but the caller; as uid 65532 without capabilities
// those are all processes of the container.
func (j *job) killAll(target int) {
	for {
		syscall.Kill(target, syscall.SIGKILL)
		_, err := syscall.Wait4(target, nil, 0, nil)
		if err != nil && !errors.Is(err, syscall.EINTR) {
			return // ECHILD: nothing left
		}
	}
}

// runEnv is env without any proxy variable: only the setup step may reach
// the egress proxy (spec §3, Egress).
func runEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasSuffix(strings.ToUpper(k), "PROXY") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func signalName(s syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
		syscall.SIGILL: "SIGILL", syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT",
		syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL",
		syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV", syscall.SIGUSR2: "SIGUSR2",
		syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM",
		syscall.SIGXCPU: "SIGXCPU", syscall.SIGXFSZ: "SIGXFSZ", syscall.SIGSYS: "SIGSYS",
	}
	if n, ok := names[s]; ok {
		return n
	}
	return fmt.Sprintf("signal %d", int(s))
}
