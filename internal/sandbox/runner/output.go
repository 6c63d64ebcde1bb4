package runner

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"unicode/utf8"

	"github.com/quavon/quavon/internal/sandbox/entry"
)

// Output is what survived parsing a container's output tar. The tar is
// hostile: anything written inside the sandbox, including a compromised
// entry program, may have produced it.
type Output struct {
	// Files holds the accepted entries by name: stdout.log, stderr.log and
	// requested artefacts, all valid UTF-8 and within the caps.
	Files map[string]string
	Setup *entry.StepResult
	Exit  *entry.Exit
	// Truncated is set when anything was cut, dropped or refused.
	Truncated bool
	// RawBytes counts the bytes read from the stream.
	RawBytes int64
}

// OutputLimits cap what is kept and what is read.
type OutputLimits struct {
	// Total caps the kept content of all files together (the job's
	// outputBytes); no single file is kept beyond it either.
	Total int64
	// PerFile caps each file; zero means Total.
	PerFile int64
	// Raw caps the bytes read from the stream at all; past it parsing stops
	// with ErrOutputOverflow and the caller kills the container.
	Raw int64
}

// ErrOutputOverflow means the stream went on past OutputLimits.Raw.
var ErrOutputOverflow = errors.New("container output exceeds the raw cap")

// maxStatusBytes caps setup.json and exit.json.
const maxStatusBytes = 16 << 10

type countingReader struct {
	r   io.Reader
	n   int64
	max int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.n >= c.max {
		return 0, ErrOutputOverflow
	}
	if int64(len(p)) > c.max-c.n {
		p = p[:c.max-c.n]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// ReadOutput parses the output tar. Only regular files named in requested
// or written by the entry program are kept; each must be UTF-8; content
// beyond the caps is cut. onSetup, if not nil, is called as soon as
// setup.json has been read, while the container still runs.
//
// A malformed stream is not an error: what was read so far is kept and
// Truncated is set. The only errors are ErrOutputOverflow and read errors
// of r itself.
func ReadOutput(r io.Reader, requested []string, lim OutputLimits, onSetup func(entry.StepResult)) (*Output, error) {
	out := &Output{Files: map[string]string{}}
	if lim.PerFile <= 0 {
		lim.PerFile = lim.Total
	}
	cr := &countingReader{r: r, max: lim.Raw}
	defer func() { out.RawBytes = cr.n }()
	// stop ends parsing on a read error: what was kept stays; only the
	// overflow is reported, a malformed or cut-off stream is just flagged.
	stop := func(err error) (*Output, error) {
		out.Truncated = true
		if errors.Is(err, ErrOutputOverflow) {
			return out, err
		}
		return out, nil
	}
	kept := int64(0)
	seen := map[string]bool{}
	tr := tar.NewReader(cr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return stop(err)
		}
		name := h.Name
		status := name == entry.SetupName || name == entry.ExitName
		allowed := status || name == entry.StdoutName || name == entry.StderrName || slices.Contains(requested, name)
		if h.Typeflag != tar.TypeReg || !allowed || seen[name] {
			out.Truncated = true
			continue // tr.Next discards the body
		}
		seen[name] = true
		if status {
			body, err := io.ReadAll(io.LimitReader(tr, maxStatusBytes+1))
			if err != nil {
				return stop(err)
			}
			if !decodeStatus(name, body, out, onSetup) {
				out.Truncated = true
			}
			continue
		}
		room := min(lim.Total-kept, lim.PerFile)
		body, err := io.ReadAll(io.LimitReader(tr, max(room, 0)))
		if err != nil {
			return stop(err)
		}
		if h.Size > int64(len(body)) {
			out.Truncated = true
			body = entry.TrimPartialRune(body) // a cut file may end mid-rune
		}
		if !utf8.Valid(body) {
			out.Truncated = true
			continue
		}
		kept += int64(len(body))
		out.Files[name] = string(body)
	}
}

func decodeStatus(name string, body []byte, out *Output, onSetup func(entry.StepResult)) bool {
	if len(body) > maxStatusBytes {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	switch name {
	case entry.SetupName:
		var s entry.StepResult
		if dec.Decode(&s) != nil || s.Step != "setup" {
			return false
		}
		out.Setup = &s
		if onSetup != nil {
			onSetup(s)
		}
	case entry.ExitName:
		var e entry.Exit
		if dec.Decode(&e) != nil || e.Run.Step != "run" || (e.Setup != nil && e.Setup.Step != "setup") || len(e.Error) > 1024 || !utf8.ValidString(e.Error) {
			return false
		}
		out.Exit = &e
	}
	return true
}
