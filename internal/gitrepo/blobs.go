package gitrepo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Blobs reads blobs through one long-lived `git cat-file --batch`
// process. Every blob is checked against its id (a corrupt pack or a lying
// process cannot substitute content) and capped. It is safe for concurrent
// use (requests are serialised on the one process); Close ends it.
type Blobs struct {
	repo *Repo
	mu   sync.Mutex
	cmd  *exec.Cmd
	in   *bufio.Writer
	out  *bufio.Reader
	err  error // sticky: the process died or the protocol broke
}

// Blobs starts the batch reader.
func (r *Repo) Blobs(ctx context.Context) (*Blobs, error) {
	c := r.r.command(context.WithoutCancel(ctx), nil, "cat-file", "--batch")
	in, err := c.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, ErrNoGit
		}
		return nil, err
	}
	return &Blobs{repo: r, cmd: c, in: bufio.NewWriter(in), out: bufio.NewReaderSize(out, 64<<10)}, nil
}

// Read returns the content of blob oid, at most max bytes (0 means the
// repository's MaxBlobBytes); a larger blob is ErrTooLarge and not read.
// A missing object is ErrNotFound; an object that is not a blob is refused.
func (b *Blobs) Read(oid string, max int64) ([]byte, error) {
	if !ValidOID(oid) {
		return nil, fmt.Errorf("gitrepo.Blobs.Read %q: want a blob id", oid)
	}
	if max <= 0 {
		max = b.repo.lim.MaxBlobBytes
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return nil, b.err
	}
	data, err := b.read(oid, max)
	if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrTooLarge) {
		b.err = err
		b.kill()
	}
	return data, err
}

func (b *Blobs) read(oid string, max int64) ([]byte, error) {
	if _, err := b.in.WriteString(oid + "\n"); err != nil {
		return nil, fmt.Errorf("gitrepo cat-file: %w", err)
	}
	if err := b.in.Flush(); err != nil {
		return nil, fmt.Errorf("gitrepo cat-file: %w", err)
	}
	header, err := b.out.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("gitrepo cat-file: %w", err)
	}
	f := strings.Fields(header)
	if len(f) == 2 && f[1] == "missing" {
		return nil, fmt.Errorf("blob %s: %w", oid, ErrNotFound)
	}
	if len(f) != 3 || f[0] != oid {
		return nil, fmt.Errorf("gitrepo cat-file: unexpected header %q", strings.TrimSpace(header))
	}
	size, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || size < 0 {
		return nil, fmt.Errorf("gitrepo cat-file: bad size in %q", strings.TrimSpace(header))
	}
	if f[1] != "blob" || size > max {
		// Skip the content (and its newline) to keep the stream in step.
		if _, err := io.CopyN(io.Discard, b.out, size+1); err != nil {
			return nil, fmt.Errorf("gitrepo cat-file: %w", err)
		}
		if f[1] != "blob" {
			return nil, fmt.Errorf("object %s is a %s, not a blob: %w", oid, f[1], ErrNotFound)
		}
		return nil, fmt.Errorf("blob %s: %d bytes, at most %d: %w", oid, size, max, ErrTooLarge)
	}
	data := make([]byte, size+1) // content and the trailing newline
	if _, err := io.ReadFull(b.out, data); err != nil {
		return nil, fmt.Errorf("gitrepo cat-file: %w", err)
	}
	data = data[:size]
	if BlobSHA(data) != oid {
		return nil, fmt.Errorf("blob %s: %w", oid, ErrCorrupted)
	}
	return data, nil
}

func (b *Blobs) kill() {
	if b.cmd.Process != nil {
		syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
	}
	b.cmd.Wait()
}

// Close ends the process.
func (b *Blobs) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err == nil {
		b.err = errors.New("gitrepo: blobs reader closed")
		b.kill()
	}
	return nil
}
