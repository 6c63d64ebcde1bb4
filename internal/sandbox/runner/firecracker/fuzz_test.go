package firecracker_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/quavon/quavon/internal/sandbox/frame"
	"github.com/quavon/quavon/internal/sandbox/runner"
	"github.com/quavon/quavon/internal/sandbox/runner/firecracker/fctest"
)

// guestScript turns fuzz bytes into what the fake guest sends after the
// hello: raw bytes (which do not verify), frames authenticated under the
// job's key, and long stream runs. unverified reports whether raw bytes
// go out before the first authenticated exit frame; exits whether any
// authenticated exit frame does.
func guestScript(ops []byte) (s fctest.Script, unverified, exits bool) {
	for len(ops) >= 2 {
		tag, n := ops[0], int(ops[1])
		ops = ops[2:]
		switch tag % 3 {
		case 0: // raw bytes
			n = min(n, len(ops))
			if n > 0 {
				s = append(s, fctest.Op{Raw: append([]byte(nil), ops[:n]...)})
				unverified = unverified || !exits
			}
			ops = ops[n:]
		case 1: // one authenticated frame: type, then n bytes of payload
			if len(ops) == 0 {
				return s, unverified, exits
			}
			typ := frame.Type(ops[0])
			ops = ops[1:]
			n = min(n, len(ops))
			s = append(s, fctest.Op{Frame: &fctest.Frame{Type: typ, Payload: append([]byte(nil), ops[:n]...)}})
			exits = exits || typ == frame.TypeExit
			ops = ops[n:]
		case 2: // n stream frames of 60 KiB: past the caps
			s = append(s, fctest.Op{Frame: &fctest.Frame{Type: frame.TypeStdout, Payload: make([]byte, 60<<10), Repeat: n % 100}})
		}
	}
	return s, unverified, exits
}

// FuzzGuestOutput drives the host side of the vsock protocol (Backend.Exec
// and the runner's output parser, as the executor wires them) with what a
// fuzzed guest sends through the fake Firecracker (FC2): whatever it
// sends, Exec returns without panicking, ends the VM and removes it; what
// is kept stays within the output caps; and a verdict (the exit frame)
// comes only from a stream of frames that all verify.
func FuzzGuestOutput(f *testing.F) {
	run := []byte("\x01\x03Srun\x01\x0e1\x00\x00\x00\x00\x00\x00\x00\x00hello!\x01\x39R" +
		`{"step":"run","ran":true,"exitCode":0,"durationMillis":1}` + "\x01\x02E{}")
	f.Add(run)                                                                 // a complete, valid answer
	f.Add(append([]byte("\x00\x04junk"), run...))                              // garbage first
	f.Add(append(append([]byte(nil), run[:20]...), "\x00\x01x\x01\x02E{}"...)) // garbage inside
	f.Add([]byte("\x01\x03Srun\x02\x50"))                                      // a stream past the caps
	f.Add([]byte("\x01\x02E{}\x01\x02E{}\x00\x03abc"))                         // more after the exit
	f.Add([]byte("\x01\x01Qx\x01\x02E{}"))                                     // a frame of the wrong direction
	f.Add([]byte{})                                                            // the guest hangs up at once
	e := newEnv(f, fctest.Config{}, nil)
	l := limits()
	l.WallClockSeconds, l.OutputBytes = 5, 64<<10
	f.Fuzz(func(t *testing.T, ops []byte) {
		script, unverified, exits := guestScript(ops)
		if err := fctest.WriteScript(e.script, script); err != nil {
			t.Fatal(err)
		}
		o := e.run(t, job{behaviour: fctest.GuestScript, run: "true", limits: l})
		if o.err != nil {
			t.Fatalf("Exec: %v", o.err)
		}
		if o.perr != nil && !errors.Is(o.perr, frame.ErrTampered) && !errors.Is(o.perr, frame.ErrTruncated) && !errors.Is(o.perr, runner.ErrOutputOverflow) {
			t.Fatalf("the parser failed otherwise than refusing: %v", o.perr)
		}
		if o.out.Exit != nil && (unverified || !exits || o.perr != nil) {
			t.Fatalf("a verdict from a stream that does not verify: %+v (raw bytes first %v, exit sent %v, %v)", o.out.Exit, unverified, exits, o.perr)
		}
		if bytes.Equal(ops, run) && o.out.Exit == nil {
			t.Fatalf("the valid answer got no verdict: %v", o.perr)
		}
		var kept int
		for _, body := range o.out.Files {
			kept += len(body)
		}
		if int64(kept) > l.OutputBytes || o.out.RawBytes > 4<<20+int64(frame.MaxFrame) {
			t.Fatalf("kept %d bytes, read %d raw: past the caps", kept, o.out.RawBytes)
		}
		if left := e.leftovers(t); len(left) > 0 {
			t.Fatalf("left behind: %v", left)
		}
	})
}
