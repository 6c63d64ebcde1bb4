// Package snapshot turns a work tree into the gzip tar that travels to the
// sandbox, and checks such a tar on the way in.
//
// A snapshot holds only directories and regular files, under clean relative
// UTF-8 names, never a .git segment, symlink, hard link, device or anything
// outside the root; it is capped in compressed bytes, unpacked bytes and
// entries. Build never produces anything else and Check accepts nothing
// else, so the producer (the worker's checkout) and the consumer (the entry
// program inside the sandbox) hold each other to the same rules.
//
// Build is deterministic: the same tree gives the same bytes (sorted walk,
// fixed owner, mode and time), so its SHA-256 names the content.
package snapshot

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits cap a snapshot.
type Limits struct {
	MaxBytes         int64 // compressed (MAX_SNAPSHOT_BYTES)
	MaxEntries       int   // files and directories
	MaxUnpackedBytes int64 // sum of file sizes
}

// Defaults, used where a configuration leaves a limit at zero.
const (
	DefaultMaxEntries       = 50_000
	DefaultMaxUnpackedBytes = 1 << 30
	maxNameBytes            = 1024
)

// Errors callers branch on.
var (
	ErrTooLarge  = errors.New("snapshot exceeds its limits")
	ErrForbidden = errors.New("snapshot holds a forbidden entry")
	ErrMalformed = errors.New("snapshot is not a well-formed gzip tar")
)

// Stats describe a snapshot.
type Stats struct {
	Entries       int
	UnpackedBytes int64
	// Skipped counts what Build left out, by reason (symlink, device, name…).
	Skipped map[string]int
}

func (l Limits) withDefaults(maxBytes int64) Limits {
	if l.MaxBytes == 0 {
		l.MaxBytes = maxBytes
	}
	if l.MaxEntries == 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	if l.MaxUnpackedBytes == 0 {
		l.MaxUnpackedBytes = DefaultMaxUnpackedBytes
	}
	return l
}

// epoch is the modification time of every entry.
var epoch = time.Unix(0, 0).UTC()

// checkName reports why a tar name is not allowed, or "" if it is.
func checkName(name string) string {
	switch {
	case name == "" || len(name) > maxNameBytes:
		return "name length"
	case !utf8.ValidString(name):
		return "name not UTF-8"
	case strings.HasPrefix(name, "/"):
		return "absolute name"
	}
	for _, r := range name {
		if unicode.IsControl(r) || r == '\\' {
			return "control character or backslash in name"
		}
	}
	for _, seg := range strings.Split(name, "/") {
		switch {
		case seg == "" || seg == "." || seg == "..":
			return "name not clean"
		case strings.EqualFold(seg, ".git"):
			return ".git segment"
		}
	}
	return ""
}

type countingWriter struct {
	w   io.Writer
	n   int64
	max int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.n+int64(len(p)) > c.max {
		return 0, fmt.Errorf("%w: more than %d compressed bytes", ErrTooLarge, c.max)
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Build writes the tree under root as a gzip tar. Directories named .git
// (any case) are left out with everything below them; symlinks, devices,
// sockets, pipes and names Check would refuse are left out and counted.
// Files are opened without following symlinks, so a tree that changes
// during the walk cannot smuggle in a file from outside root.
func Build(root string, lim Limits) ([]byte, Stats, error) {
	lim = lim.withDefaults(128 << 20)
	st := Stats{Skipped: map[string]int{}}
	var buf bytes.Buffer
	cw := &countingWriter{w: &buf, max: lim.MaxBytes}
	// BestSpeed: snapshots are built per job, on the hot path; level 1 costs a
	// fraction of the default level's time for slightly larger output.
	zw, _ := gzip.NewWriterLevel(cw, gzip.BestSpeed)
	tw := tar.NewWriter(zw)

	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		name := filepath.ToSlash(rel)
		if why := checkName(name); why != "" {
			st.Skipped[why]++
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch {
		case d.IsDir():
			return addEntry(tw, &st, lim, &tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755})
		case d.Type().IsRegular():
			return addFile(tw, &st, lim, p, name)
		case d.Type()&fs.ModeSymlink != 0:
			st.Skipped["symlink"]++
		default:
			st.Skipped["special file"]++
		}
		return nil
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		return nil, Stats{}, fmt.Errorf("snapshot.Build %s: %w", root, err)
	}
	return buf.Bytes(), st, nil
}

func addEntry(tw *tar.Writer, st *Stats, lim Limits, h *tar.Header) error {
	if st.Entries++; st.Entries > lim.MaxEntries {
		return fmt.Errorf("%w: more than %d entries", ErrTooLarge, lim.MaxEntries)
	}
	h.ModTime, h.Format = epoch, tar.FormatPAX
	return tw.WriteHeader(h)
}

func addFile(tw *tar.Writer, st *Stats, lim Limits, p, name string) error {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) { // became a symlink since the walk
			st.Skipped["symlink"]++
			return nil
		}
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		st.Skipped["special file"]++
		return nil
	}
	size := fi.Size()
	if st.UnpackedBytes += size; st.UnpackedBytes > lim.MaxUnpackedBytes {
		return fmt.Errorf("%w: more than %d unpacked bytes", ErrTooLarge, lim.MaxUnpackedBytes)
	}
	mode := int64(0o644)
	if fi.Mode().Perm()&0o111 != 0 {
		mode = 0o755
	}
	if err := addEntry(tw, st, lim, &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: size}); err != nil {
		return err
	}
	// Exactly size bytes: a file that grows during the walk is cut, one
	// that shrinks fails the write.
	if _, err := io.CopyN(tw, f, size); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// Check reads a snapshot and verifies every rule of the package: gzip tar
// with only directories and regular files, clean relative UTF-8 names
// without .git, no duplicates, modes 0644/0755 and the limits. It reads the
// whole stream, so a snapshot that passes is entirely as checked.
func Check(r io.Reader, lim Limits) (Stats, error) {
	return read(r, lim, nil)
}

// read is the one reader loop behind Check and Extract. visit, if not nil,
// is called for each entry once it has passed every rule, with the entry's
// content as body; what visit leaves unread is discarded. An error of visit
// ends the read: a read error of the stream inside body is reported as
// ErrMalformed or ErrTooLarge, anything else as visit returned it.
func read(r io.Reader, lim Limits, visit func(h *tar.Header, name string, body io.Reader) error) (Stats, error) {
	lim = lim.withDefaults(128 << 20)
	st := Stats{}
	lr := &io.LimitedReader{R: r, N: lim.MaxBytes + 1}
	// A ByteReader stops gzip from reading ahead, so what is left in br after
	// the member is exactly the trailing data.
	br := bufio.NewReader(lr)
	malformed := func(err error) error {
		if lr.N <= 0 { // cut off at the cap, not broken
			return fmt.Errorf("%w: more than %d compressed bytes", ErrTooLarge, lim.MaxBytes)
		}
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return st, malformed(err)
	}
	zr.Multistream(false)
	tr := tar.NewReader(zr)
	seen := map[string]byte{} // name → tar type flag
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return st, malformed(err)
		}
		if st.Entries++; st.Entries > lim.MaxEntries {
			return st, fmt.Errorf("%w: more than %d entries", ErrTooLarge, lim.MaxEntries)
		}
		name := h.Name
		switch h.Typeflag {
		case tar.TypeDir:
			name = strings.TrimSuffix(name, "/")
			if h.Mode != 0o755 {
				return st, fmt.Errorf("%w: %q: mode %o", ErrForbidden, name, h.Mode)
			}
		case tar.TypeReg:
			if h.Mode != 0o644 && h.Mode != 0o755 {
				return st, fmt.Errorf("%w: %q: mode %o", ErrForbidden, name, h.Mode)
			}
			if st.UnpackedBytes += h.Size; h.Size < 0 || st.UnpackedBytes > lim.MaxUnpackedBytes {
				return st, fmt.Errorf("%w: more than %d unpacked bytes", ErrTooLarge, lim.MaxUnpackedBytes)
			}
		default:
			return st, fmt.Errorf("%w: %q: type %q", ErrForbidden, clip(name), h.Typeflag)
		}
		if why := checkName(name); why != "" {
			return st, fmt.Errorf("%w: %q: %s", ErrForbidden, clip(name), why)
		}
		// Exact names: README.md and readme.md may both exist in a repository,
		// and /work is case-sensitive.
		if _, dup := seen[name]; dup {
			return st, fmt.Errorf("%w: %q: duplicate", ErrForbidden, clip(name))
		}
		seen[name] = h.Typeflag
		if dir := path.Dir(name); dir != "." && seen[dir] != tar.TypeDir {
			return st, fmt.Errorf("%w: %q: parent directory not listed before it", ErrForbidden, clip(name))
		}
		if visit != nil {
			body := &errReader{r: tr}
			if err := visit(h, name, body); err != nil {
				if body.err != nil {
					return st, malformed(body.err)
				}
				return st, err
			}
		}
		if _, err := io.Copy(io.Discard, tr); err != nil {
			return st, malformed(err)
		}
	}
	// The gzip member must end exactly here: no trailing data.
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return st, malformed(err)
	}
	if n, _ := io.Copy(io.Discard, br); n > 0 || lr.N <= 0 {
		if lr.N <= 0 {
			return st, fmt.Errorf("%w: more than %d compressed bytes", ErrTooLarge, lim.MaxBytes)
		}
		return st, fmt.Errorf("%w: data after the gzip stream", ErrMalformed)
	}
	return st, nil
}

// errReader remembers the first read error other than io.EOF, so read can
// tell a broken stream from a failure of visit itself.
type errReader struct {
	r   io.Reader
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF && e.err == nil {
		e.err = err
	}
	return n, err
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
