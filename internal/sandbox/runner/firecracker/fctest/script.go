package fctest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/quavon/quavon/internal/sandbox/frame"
)

// Script is what a scripted guest sends after the hello, in order.
type Script []Op

// Op is one step of a Script: exactly one of its fields is set.
type Op struct {
	// Raw bytes go out as they are (they do not verify).
	Raw []byte `json:"raw,omitempty"`
	// Frame goes out authenticated under the hello's key, in the
	// entry program's direction; Stream (with Repeat) as stream frames.
	Frame *Frame `json:"frame,omitempty"`
	// WaitKill waits until the host closed the connection or the VM
	// process ended: what follows arrives after the kill.
	WaitKill bool `json:"waitKill,omitempty"`
}

// Frame is an authenticated frame; with Repeat > 0 its payload is sent
// Repeat times as stream data (frame.Writer.WriteStream).
type Frame struct {
	Type    frame.Type `json:"type"`
	Payload []byte     `json:"payload,omitempty"`
	Repeat  int        `json:"repeat,omitempty"`
}

// LoadScript reads a Script written with WriteScript.
func LoadScript(path string) (Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Script
	return s, json.Unmarshal(data, &s)
}

// WriteScript writes s to path, readable by the VM's uid.
func WriteScript(path string, s Script) error {
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// Play sends s on conn; in is the rest of the host's input (read and
// discarded meanwhile). vmPid, when > 0, is the VM process WaitKill
// watches. It returns the bytes written and the first write error.
func (s Script) Play(conn io.Writer, in io.Reader, key []byte, vmPid int) (int64, error) {
	eof := make(chan struct{})
	go func() {
		io.Copy(io.Discard, in)
		close(eof)
	}()
	died := make(chan struct{})
	if vmPid > 0 {
		if fd, err := unix.PidfdOpen(vmPid, 0); err == nil {
			go func() {
				fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
				for {
					if _, err := unix.Poll(fds, -1); err != unix.EINTR {
						break
					}
				}
				close(died)
			}()
		} else {
			close(died) // gone already
		}
	}
	cw := &countWriter{w: conn}
	w := frame.NewWriter(cw, key, frame.Out)
	for _, op := range s {
		var err error
		switch {
		case op.WaitKill:
			select {
			case <-eof:
			case <-died:
			}
		case op.Frame != nil && op.Frame.Repeat > 0:
			for i := 0; i < op.Frame.Repeat && err == nil; i++ {
				err = w.WriteStream(op.Frame.Type, 0, op.Frame.Payload)
			}
		case op.Frame != nil:
			err = w.Write(op.Frame.Type, op.Frame.Payload)
		default:
			_, err = cw.Write(op.Raw)
		}
		_ = err // a frame the writer refuses (wrong direction, too long) never left
		if cw.err != nil {
			return cw.n, cw.err
		}
	}
	return cw.n, nil
}

// countWriter counts what reached the connection and keeps its first
// error.
type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}

// outsideMain is the OutsideGuest program.
func outsideMain() int {
	if len(os.Args) != 5 {
		return fail("guest: want <socket> <pid> <script> <log>")
	}
	sock, scriptPath, logPath := os.Args[1], os.Args[3], os.Args[4]
	pid, err := strconv.Atoi(os.Args[2])
	if err != nil {
		return fail("guest: pid %q", os.Args[2])
	}
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fail("guest: log: %v", err)
	}
	lg := &logger{f: f}
	script, err := LoadScript(scriptPath)
	if err != nil {
		return fail("guest: script: %v", err)
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		lg.log("outside", map[string]any{"connected": false, "err": err.Error()})
		return 0
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	if _, err := frame.ReadBoot(br); err != nil {
		lg.log("outside", map[string]any{"connected": true, "err": "boot: " + err.Error()})
		return 0
	}
	key, err := frame.ReadHello(br)
	if err != nil {
		lg.log("outside", map[string]any{"connected": true, "err": "hello: " + err.Error()})
		return 0
	}
	sent, err := script.Play(conn, br, key, pid)
	lg.log("outside", map[string]any{"connected": true, "played": true, "sent": sent, "err": fmt.Sprint(err)})
	return 0
}
