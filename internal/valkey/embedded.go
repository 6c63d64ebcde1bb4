package valkey

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/valkey-io/valkey-go"
)

// Embedded is a private Valkey (or Redis) server for one process: `quavon
// scan` runs the sandbox's queue and blob store on it, so the CLI speaks
// exactly the contract a separate runner does without any shared service.
// It listens only on a Unix socket in a fresh 0700 directory, with a random
// password, keeps nothing on disk and is killed by Close.
type Embedded struct {
	dir    string
	cmd    *exec.Cmd
	done   chan struct{}
	Client valkey.Client
}

// ServerBinaries are the names StartEmbedded looks for, in order.
var ServerBinaries = []string{"valkey-server", "redis-server"}

// StartEmbedded starts the server and connects to it.
func StartEmbedded(ctx context.Context) (*Embedded, error) {
	var bin string
	for _, name := range ServerBinaries {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		return nil, fmt.Errorf("embedded valkey: none of %s found in PATH (Debian: apt-get install redis-server)",
			strings.Join(ServerBinaries, ", "))
	}
	dir, err := os.MkdirTemp("", "quavon-valkey-")
	if err != nil {
		return nil, fmt.Errorf("embedded valkey: %w", err)
	}
	var pw [24]byte
	rand.Read(pw[:])
	password := hex.EncodeToString(pw[:])
	sock := filepath.Join(dir, "valkey.sock")
	conf := strings.Join([]string{
		"port 0",
		"unixsocket " + sock,
		"unixsocketperm 700",
		`save ""`,
		"appendonly no",
		"dir " + dir,
		"daemonize no",
		"loglevel warning",
		"logfile " + filepath.Join(dir, "server.log"),
		"requirepass " + password,
		"maxmemory 2gb",
		"maxmemory-policy noeviction",
	}, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "valkey.conf"), []byte(conf), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("embedded valkey: %w", err)
	}
	cmd := exec.Command(bin, filepath.Join(dir, "valkey.conf"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("embedded valkey: %w", err)
	}
	e := &Embedded{dir: dir, cmd: cmd, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(e.done)
	}()
	deadline := time.Now().Add(10 * time.Second)
	// The socket file appears at bind(), before the server listens: wait
	// until it accepts a connection.
	for {
		if conn, err := net.Dial("unix", sock); err == nil {
			conn.Close()
			break
		}
		select {
		case <-e.done:
			logText, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			e.Close()
			return nil, fmt.Errorf("embedded valkey: %s exited: %s", bin, bytes.TrimSpace(logText))
		case <-ctx.Done():
			e.Close()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			e.Close()
			return nil, errors.New("embedded valkey: no socket after 10s")
		}
	}
	c, err := valkey.NewClient(valkey.ClientOption{
		InitAddress:   []string{sock},
		Password:      password,
		DisableCache:  true,
		ClientSetInfo: valkey.DisableClientSetInfo,
		DialCtxFn: func(ctx context.Context, _ string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
			return d.DialContext(ctx, "unix", sock)
		},
	})
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("embedded valkey: %w", err)
	}
	e.Client = c
	return e, nil
}

// Close disconnects, kills the server and removes its directory.
func (e *Embedded) Close() {
	if e.Client != nil {
		e.Client.Close()
	}
	if e.cmd.Process != nil {
		syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
		<-e.done
	}
	os.RemoveAll(e.dir)
}

// Socket is the server's Unix socket.
func (e *Embedded) Socket() string { return filepath.Join(e.dir, "valkey.sock") }
