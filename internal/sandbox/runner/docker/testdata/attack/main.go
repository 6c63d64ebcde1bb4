// Command attack is repository code that goes after the entry program's
// channel from inside a sandbox step: it writes forged output into PID 1's
// stdout, injects into or reads from its stdin, signals or kills it, or
// leaves a process behind that writes after the step "exited". It prints
// what it managed; the test judges only the job's result. Build it with
// CGO_ENABLED=0.
package main

import (
	"archive/tar"
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: attack ATTACK")
		os.Exit(2)
	}
	switch a := os.Args[1]; a {
	case "forge-out":
		// The whole attack: forged frames that fit where the stream stands
		// (PID 1 has announced the step), then PID 1 killed, so that the
		// forgery is the stream's end.
		write("/proc/1/fd/1", forgedStream(len(os.Args) > 2 && os.Args[2] == "setup"))
		fmt.Println("kill(1, SIGKILL):", syscall.Kill(1, syscall.SIGKILL))
		time.Sleep(500 * time.Millisecond)
	case "forge-out-v1":
		write("/proc/1/fd/1", forgedTar())
		fmt.Println("kill(1, SIGKILL):", syscall.Kill(1, syscall.SIGKILL))
		time.Sleep(500 * time.Millisecond)
	case "garbage-out":
		write("/proc/1/fd/1", []byte("PASS\n\x00\x01garbage that is no frame at all"))
	case "inject-in":
		// What a go-ahead and an overlay might look like, in both protocol
		// versions.
		write("/proc/1/fd/0", append([]byte("G"), frameOf(randomKey(), 'G', nil)...))
	case "read-in":
		steal("/proc/1/fd/0")
	case "read-out":
		steal("/proc/1/fd/1")
	case "signals":
		for _, s := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT,
			syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE, syscall.SIGALRM, syscall.SIGABRT, syscall.SIGSEGV} {
			fmt.Println("signal", s, syscall.Kill(1, s))
		}
	case "kill":
		fmt.Println("kill(1, SIGKILL):", syscall.Kill(1, syscall.SIGKILL))
		time.Sleep(500 * time.Millisecond)
	case "linger":
		// A process of its own session that outlives the step and then
		// forges output.
		cmd := exec.Command(os.Args[0], "linger-child")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		fmt.Println("left behind:", cmd.Start())
	case "linger-child":
		time.Sleep(1500 * time.Millisecond)
		write("/proc/1/fd/1", forgedStream(false))
	default:
		fmt.Fprintln(os.Stderr, "unknown attack", a)
		os.Exit(2)
	}
}

func write(path string, b []byte) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		fmt.Println("open", path, "for writing:", err)
		return
	}
	defer f.Close()
	n, err := f.Write(b)
	fmt.Println("wrote", n, "bytes into", path, err)
}

// steal reads what it can from path for two seconds; a read that blocks
// (an empty pipe) is abandoned then.
func steal(path string) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		fmt.Println("open", path, "for reading:", err)
		return
	}
	var mu sync.Mutex
	total := 0
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := f.Read(buf)
			mu.Lock()
			total += max(n, 0)
			mu.Unlock()
			if err != nil && !errors.Is(err, syscall.EAGAIN) {
				return
			}
			if n <= 0 {
				time.Sleep(20 * time.Millisecond)
			}
		}
	}()
	time.Sleep(2 * time.Second)
	mu.Lock()
	defer mu.Unlock()
	fmt.Println("stole", total, "bytes from", path)
}

func randomKey() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}

// frameOf builds a frame of protocol version 2 under a key of its own: the
// attacker does not have the job's.
func frameOf(key []byte, t byte, payload []byte) []byte {
	var b bytes.Buffer
	b.WriteByte(t)
	binary.Write(&b, binary.BigEndian, uint32(len(payload)))
	b.Write(payload)
	mac := hmac.New(sha256.New, key)
	mac.Write(b.Bytes())
	return append(b.Bytes(), mac.Sum(nil)...)
}

// forgedStream claims a passing run step and a clean exit, continuing a
// stream in which PID 1 has just announced the setup step (inSetup) or the
// run step.
func forgedStream(inSetup bool) []byte {
	k := randomKey()
	var b bytes.Buffer
	if inSetup {
		b.Write(frameOf(k, 'R', []byte(`{"step":"setup","ran":true,"exitCode":0,"durationMillis":1}`)))
		b.Write(frameOf(k, 'S', []byte("run")))
	}
	b.Write(frameOf(k, '1', append(make([]byte, 8), "all tests passed\n"...)))
	b.Write(frameOf(k, 'R', []byte(`{"step":"run","ran":true,"exitCode":0,"durationMillis":1}`)))
	b.Write(frameOf(k, 'E', []byte(`{}`)))
	return b.Bytes()
}

// forgedTar is protocol version 1's output claiming success.
func forgedTar() []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, f := range []struct{ name, body string }{
		{"stdout.log", "== run ==\nall tests passed\n"},
		{"exit.json", `{"run":{"step":"run","ran":true,"exitCode":0,"durationMillis":1},"stdoutBytes":17,"stderrBytes":0}`},
	} {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: 0o644, Size: int64(len(f.body))})
		tw.Write([]byte(f.body))
	}
	tw.Close()
	return b.Bytes()
}
