package entry

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/quavon/quavon/internal/sandbox/frame"
)

// output sends the authenticated output frames. The log flusher and the
// main goroutine share it. The first error sticks: later frames are
// skipped and err reports it.
type output struct {
	mu  sync.Mutex
	w   *frame.Writer
	err error
}

func (o *output) send(t frame.Type, p []byte) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err == nil {
		o.err = o.w.Write(t, p)
	}
	return o.err
}

func (o *output) data(t frame.Type, p []byte) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err == nil {
		o.err = o.w.WriteData(t, p)
	}
	return o.err
}

func (o *output) stream(t frame.Type, skipped int64, p []byte) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err == nil {
		o.err = o.w.WriteStream(t, skipped, p)
	}
	return o.err
}

// json sends v as the payload of one frame.
func (o *output) json(t frame.Type, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return o.send(t, body)
}

// artefacts sends the requested artefacts as a tar (spec §3, "Artefacts
// out") within room bytes of content in all, and reports whether any was
// cut or dropped.
func (j *job) artefacts(room int64) (truncated bool) {
	if len(j.req.Artefacts) == 0 {
		return false
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
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
		h := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(0, 0), Format: tar.FormatUSTAR}
		if tw.WriteHeader(h) != nil {
			return true
		}
		tw.Write(body)
		room -= int64(len(body))
	}
	tw.Close()
	j.out.data(frame.TypeArtefacts, buf.Bytes())
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
		body, cut = frame.TrimPartialRune(body[:room]), true
	}
	if !utf8.Valid(body) {
		return nil, false, errNotArtefact
	}
	return body, cut, nil
}
