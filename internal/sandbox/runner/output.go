package runner

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"

	"github.com/quavon/quavon/internal/sandbox/frame"
)

// Output is what survived parsing a container's output. Every frame of it
// verified under the job's key, so it is what the entry program sent; its
// content (logs, artefacts) is still hostile: repository code printed it,
// and a compromised entry program could have sent anything the protocol
// allows.
type Output struct {
	// Files holds the accepted files by name: stdout.log and stderr.log
	// (assembled from the forwarded streams, head and tail within the caps,
	// valid UTF-8) and requested artefacts, all within the caps.
	Files map[string]string
	// Started lists the steps that started, in order; Results the results
	// of those that ended.
	Started []string
	Results []frame.StepResult
	// Exit is the exit frame; nil when the stream ended without one (PID 1
	// killed, the sandbox killed, the stream refused).
	Exit *frame.Exit
	// Truncated is set when anything was cut, dropped or refused.
	Truncated bool
	// RawBytes counts the bytes read from the stream; StreamBytes what the
	// steps printed in all (stdout, stderr), forwarded or not.
	RawBytes    int64
	StreamBytes [2]int64
}

// Result returns the result of step, if it ended.
func (o *Output) Result(step string) *frame.StepResult {
	for i := range o.Results {
		if o.Results[i].Step == step {
			return &o.Results[i]
		}
	}
	return nil
}

// OutputLimits cap what is kept and what is read.
type OutputLimits struct {
	// Total caps the kept content of all files together (the job's
	// outputBytes); no single file is kept beyond it either.
	Total int64
	// PerFile caps each artefact; zero means Total.
	PerFile int64
	// Raw caps the bytes read from the stream at all; past it parsing stops
	// with ErrOutputOverflow and the caller kills the container.
	Raw int64
}

// ErrOutputOverflow means the stream went on past OutputLimits.Raw.
var ErrOutputOverflow = errors.New("container output exceeds the raw cap")

// maxStatusBytes caps a result or exit frame.
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

// ReadOutput parses the entry program's output frames under key for the
// job req describes (its setup step, artefacts and output budget). onSetup,
// if not nil, is called as soon as the setup step's authenticated result
// has arrived, while the container still runs.
//
// The logs are assembled from whatever arrived, so a stream that ends early
// still yields the output so far. The errors: frame.ErrTampered (wrapped)
// when a frame does not verify or breaks the protocol's order (nothing
// after it is used), ErrOutputOverflow past the raw cap, and read errors of
// r. A stream cut off inside a frame is not an error: Exit stays nil.
func ReadOutput(r io.Reader, key []byte, req *frame.Request, lim OutputLimits, onSetup func(frame.StepResult)) (*Output, error) {
	out := &Output{Files: map[string]string{}}
	if lim.PerFile <= 0 {
		lim.PerFile = lim.Total
	}
	logs := [2]*streamLog{{max: frame.LogMax(req.OutputBytes)}, {max: frame.LogMax(req.OutputBytes)}}
	var artefacts bytes.Buffer
	cr := &countingReader{r: r, max: lim.Raw}
	err := readFrames(frame.NewReader(cr, key, frame.Out), req, out, logs, &artefacts, lim, onSetup)
	out.RawBytes = cr.n
	for i, name := range []string{frame.StdoutName, frame.StderrName} {
		body, cut := logs[i].render()
		out.Truncated = out.Truncated || cut
		out.Files[name] = string(body)
	}
	if err != nil {
		// The stream as a whole is refused; what verified before stays, as
		// the steps' true output so far, but there is no exit.
		out.Exit, out.Truncated = nil, true
		return out, err
	}
	if out.Exit != nil {
		out.Truncated = out.Truncated || out.Exit.ArtefactsTruncated
		room := lim.Total - int64(len(out.Files[frame.StdoutName])+len(out.Files[frame.StderrName]))
		if readArtefacts(&artefacts, req.Artefacts, room, lim.PerFile, out.Files) {
			out.Truncated = true
		}
	} else {
		out.Truncated = true
	}
	return out, nil
}

func tampered(format string, args ...any) error {
	return fmt.Errorf("%w: %s", frame.ErrTampered, fmt.Sprintf(format, args...))
}

// readFrames applies the protocol's order: per step S, its streams, R;
// setup (when the request has one) before run, run only after a setup that
// passed; artefacts only after the run step; the exit frame last, then the
// end of the stream.
func readFrames(fr *frame.Reader, req *frame.Request, out *Output, logs [2]*streamLog, artefacts *bytes.Buffer,
	lim OutputLimits, onSetup func(frame.StepResult)) error {
	cur := "" // the step that runs
	for {
		t, p, err := fr.Next()
		switch {
		case errors.Is(err, frame.ErrTruncated) && out.Exit != nil:
			return tampered("bytes after the exit frame")
		case errors.Is(err, io.EOF) || errors.Is(err, frame.ErrTruncated):
			return nil // ended (early, without an exit frame: Exit stays nil)
		case err != nil:
			return err
		}
		if out.Exit != nil {
			return tampered("a frame after the exit frame")
		}
		switch t {
		case frame.TypeStart:
			next := nextStep(req, out)
			if cur != "" || next == "" || string(p) != next {
				return tampered("step %q started out of order", clip(string(p)))
			}
			cur = next
			out.Started = append(out.Started, cur)
			for _, l := range logs {
				l.begin(cur, req.OutputBytes)
			}
		case frame.TypeStdout, frame.TypeStderr:
			if cur == "" {
				return tampered("output outside a step")
			}
			skipped, data, err := frame.Stream(p)
			if err != nil {
				return err
			}
			i := 0
			if t == frame.TypeStderr {
				i = 1
			}
			c := logs[i].cur()
			c.skip(skipped)
			c.Write(data)
			out.StreamBytes[i] += skipped + int64(len(data))
		case frame.TypeResult:
			var s frame.StepResult
			if cur == "" || !decodeStrict(p, &s) || s.Step != cur || s.DurationMillis < 0 {
				return tampered("a step result out of order or malformed")
			}
			out.Results = append(out.Results, s)
			cur = ""
			if s.Step == frame.StepSetup && onSetup != nil {
				onSetup(s)
			}
		case frame.TypeArtefacts:
			if cur != "" || out.Result(frame.StepRun) == nil {
				return tampered("artefacts before the run step ended")
			}
			if int64(artefacts.Len()+len(p)) > lim.Total+artefactOverhead {
				return ErrOutputOverflow
			}
			artefacts.Write(p)
		case frame.TypeExit:
			var e frame.Exit
			if !decodeStrict(p, &e) || len(e.Error) > frame.MaxErrorBytes || !utf8.ValidString(e.Error) {
				return tampered("a malformed exit frame")
			}
			if cur != "" && e.Error == "" {
				return tampered("exit while a step runs")
			}
			out.Exit = &e
		}
	}
}

// artefactOverhead is what a tar of MaxArtefacts files adds to their
// content: a header and padding each, and the end blocks.
const artefactOverhead = (frame.MaxArtefacts+2)*1024 + 1024

// nextStep is the step that may start next, or "" when none may.
func nextStep(req *frame.Request, out *Output) string {
	switch {
	case len(out.Started) == 0 && req.SetupCommand != "":
		return frame.StepSetup
	case slices.Contains(out.Started, frame.StepRun):
		return ""
	case req.SetupCommand == "":
		return frame.StepRun
	}
	s := out.Result(frame.StepSetup)
	if s == nil || s.ExitCode != 0 || s.TimedOut {
		return "" // a failed setup step skips the run step
	}
	return frame.StepRun
}

// readArtefacts parses the artefacts tar: only regular files named in
// requested, once each, UTF-8, within room in all and perFile each; it
// reports whether anything was cut or dropped. A malformed tar keeps what
// was read before it.
func readArtefacts(r io.Reader, requested []string, room, perFile int64, files map[string]string) (truncated bool) {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return truncated
		}
		if err != nil {
			return true
		}
		name := h.Name
		if h.Typeflag != tar.TypeReg || !slices.Contains(requested, name) || name == frame.StdoutName || name == frame.StderrName {
			truncated = true
			continue // tr.Next discards the body
		}
		if _, seen := files[name]; seen {
			truncated = true
			continue
		}
		body, err := io.ReadAll(io.LimitReader(tr, max(min(room, perFile), 0)))
		if err != nil {
			return true
		}
		if h.Size > int64(len(body)) {
			truncated = true
			body = frame.TrimPartialRune(body) // a cut file may end mid-rune
		}
		if !utf8.Valid(body) {
			truncated = true
			continue
		}
		room -= int64(len(body))
		files[name] = string(body)
	}
}

func decodeStrict(body []byte, v any) bool {
	if len(body) > maxStatusBytes {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if dec.Decode(v) != nil {
		return false
	}
	_, err := dec.Token()
	return err == io.EOF
}

func clip(s string) string {
	if len(s) > 32 {
		s = s[:32]
	}
	return fmt.Sprintf("%q", s)
}
