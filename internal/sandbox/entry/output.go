package entry

import (
	"archive/tar"
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
	"unicode/utf8"
)

// output writes the output tar. The first error sticks: later writes are
// skipped and close reports it.
type output struct {
	bw  *bufio.Writer
	tw  *tar.Writer
	err error
}

func newOutput(w io.Writer) *output {
	bw := bufio.NewWriter(w)
	return &output{bw: bw, tw: tar.NewWriter(bw)}
}

// file writes one regular file entry.
func (o *output) file(name string, body []byte) error {
	if o.err != nil {
		return o.err
	}
	h := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(0, 0), Format: tar.FormatUSTAR}
	if err := o.tw.WriteHeader(h); err != nil {
		o.err = err
		return err
	}
	if _, err := o.tw.Write(body); err != nil {
		o.err = err
	}
	return o.err
}

// status writes v as a JSON entry and flushes it to the runner at once.
func (o *output) status(name string, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := o.file(name, body); err != nil {
		return err
	}
	if err := o.tw.Flush(); err != nil {
		o.err = err
		return err
	}
	if err := o.bw.Flush(); err != nil {
		o.err = err
	}
	return o.err
}

func (o *output) close() error {
	if o.err != nil {
		return o.err
	}
	if err := o.tw.Close(); err != nil {
		o.err = err
		return err
	}
	o.err = o.bw.Flush()
	return o.err
}

// artefacts writes the requested artefacts within room bytes in all and
// reports whether any was cut or dropped.
func (j *job) artefacts(room int64) (truncated bool) {
	for _, name := range j.req.Artefacts {
		body, cut, err := readArtefact(filepath.Join(j.cfg.OutDir, name), room)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // never written: just absent
		case err != nil:
			truncated = true
			continue
		}
		truncated = truncated || cut
		if cut && len(body) == 0 {
			continue // no room left at all
		}
		if j.out.file(name, body) != nil {
			return truncated
		}
		room -= int64(len(body))
	}
	return truncated
}

var errNotArtefact = errors.New("not a regular UTF-8 file")

// readArtefact reads a regular file of at most room bytes, cut at a rune
// boundary when it is longer. It never follows a symlink (O_NOFOLLOW: the
// name is one element inside the trusted OutDir), never blocks on a FIFO
// (O_NONBLOCK) and checks what it opened with fstat.
func readArtefact(path string, room int64) (body []byte, cut bool, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, false, err
		}
		return nil, false, errNotArtefact
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, false, errNotArtefact
	}
	room = max(room, 0)
	body, err = io.ReadAll(io.LimitReader(f, room+1))
	if err != nil {
		return nil, false, errNotArtefact
	}
	if int64(len(body)) > room {
		body, cut = TrimPartialRune(body[:room]), true
	}
	if !utf8.Valid(body) {
		return nil, false, errNotArtefact
	}
	return body, cut, nil
}
