package frame

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// Caps of the input side. The snapshots themselves are capped by the job.
const (
	MaxRequestBytes = 64 << 10
	MaxInputBytes   = 2 << 30
	// MaxOutputBytes bounds Request.OutputBytes (the job contract's hard
	// maximum): the entry program holds up to that much in memory.
	MaxOutputBytes = 64 << 20
	// MaxArtefacts and MaxArtefactName bound Request.Artefacts as the job
	// contract does.
	MaxArtefacts    = 16
	MaxArtefactName = 64
	// MaxErrorBytes bounds Exit.Error.
	MaxErrorBytes = 1024
	// maxSetupSeconds is far above any job's budget; it keeps the budget
	// from overflowing a time.Duration.
	maxSetupSeconds = 24 * 60 * 60
)

// Names the runner gives the logs it assembles; artefacts may not use
// them.
const (
	StdoutName = "stdout.log"
	StderrName = "stderr.log"
	// setupName and exitName were output entries of protocol version 1;
	// still reserved so that no artefact is called like them.
	setupName = "setup.json"
	exitName  = "exit.json"
)

// Step names.
const (
	StepSetup = "setup"
	StepRun   = "run"
)

// Request is what the entry program is asked to do. The runner builds it
// from the verified job: nothing in it comes from the repository.
type Request struct {
	SetupCommand string   `json:"setupCommand,omitempty"`
	RunCommand   string   `json:"runCommand"`
	Artefacts    []string `json:"artefacts,omitempty"`
	// OutputBytes caps each captured stream and each artefact, and the
	// output as a whole.
	OutputBytes  int64 `json:"outputBytes"`
	SetupSeconds int64 `json:"setupSeconds,omitempty"`
	BaseBytes    int64 `json:"baseBytes"`
	OverlayBytes int64 `json:"overlayBytes,omitempty"`
	// Snapshot caps applied while extracting.
	MaxEntries       int   `json:"maxEntries"`
	MaxUnpackedBytes int64 `json:"maxUnpackedBytes"`
}

// StepResult is the outcome of one step.
type StepResult struct {
	Step           string `json:"step"` // "setup" or "run"
	Ran            bool   `json:"ran"`
	ExitCode       int    `json:"exitCode"`
	Signal         string `json:"signal,omitempty"`
	TimedOut       bool   `json:"timedOut,omitempty"`
	DurationMillis int64  `json:"durationMillis"`
}

// Exit is the payload of the last frame. The steps' results travel in
// their own frames as each step ends; the streams' sizes the runner counts
// itself.
type Exit struct {
	// Error is set when the entry program itself failed (bad or tampered
	// input, extraction refused, a step that could not start).
	Error string `json:"error,omitempty"`
	// InputTampered: the input did not verify (a step wrote into or read
	// from PID 1's input).
	InputTampered bool `json:"inputTampered,omitempty"`
	// ArtefactsTruncated: an artefact was cut or dropped (not a regular
	// UTF-8 file, or no room left).
	ArtefactsTruncated bool `json:"artefactsTruncated,omitempty"`
}

// Validate checks a request's shape.
func (r *Request) Validate() error {
	switch {
	case r.RunCommand == "":
		return errors.New("entry request: no run command")
	case !validCommand(r.RunCommand) || !validCommand(r.SetupCommand):
		return errors.New("entry request: commands must be UTF-8 without NUL")
	case r.OutputBytes <= 0 || r.OutputBytes > MaxOutputBytes:
		return fmt.Errorf("entry request: outputBytes must be 1..%d", MaxOutputBytes)
	case r.SetupSeconds < 0 || r.SetupSeconds > maxSetupSeconds:
		return fmt.Errorf("entry request: setupSeconds must be 0..%d", maxSetupSeconds)
	// Each on its own: their sum could overflow.
	case r.BaseBytes <= 0 || r.BaseBytes > MaxInputBytes || r.OverlayBytes < 0 || r.OverlayBytes > MaxInputBytes-r.BaseBytes:
		return errors.New("entry request: snapshot sizes out of range")
	case r.MaxEntries <= 0 || r.MaxUnpackedBytes <= 0:
		return errors.New("entry request: snapshot caps must be positive")
	case len(r.Artefacts) > MaxArtefacts:
		return fmt.Errorf("entry request: more than %d artefacts", MaxArtefacts)
	}
	for i, a := range r.Artefacts {
		switch {
		case !validArtefactName(a):
			return fmt.Errorf("entry request: artefact %q: want a file name of [A-Za-z0-9._-], not starting with a dot, at most %d bytes", clip(a), MaxArtefactName)
		case slices.Contains([]string{setupName, StdoutName, StderrName, exitName}, a):
			return fmt.Errorf("entry request: artefact %q is reserved", a)
		case slices.Contains(r.Artefacts[:i], a):
			return fmt.Errorf("entry request: artefact %q listed twice", a)
		}
	}
	return nil
}

func validCommand(c string) bool {
	return utf8.ValidString(c) && !strings.ContainsRune(c, 0)
}

// validArtefactName accepts what the job contract accepts: one path element
// of [A-Za-z0-9._-], not hidden, so it can never name anything outside /out.
func validArtefactName(a string) bool {
	if a == "" || len(a) > MaxArtefactName || a[0] == '.' {
		return false
	}
	for _, c := range []byte(a) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func clip(s string) string {
	if len(s) > 80 {
		return strings.ToValidUTF8(s[:80], "") + "…"
	}
	return s
}

// WriteHead sends the input up to the base snapshot: the request (Q) and
// the base (B frames). It sets req.BaseBytes and req.OverlayBytes. When
// the request has a setup step, the caller must send the go-ahead before
// the overlay.
func WriteHead(w *Writer, req *Request, base []byte, overlayBytes int64) error {
	req.BaseBytes, req.OverlayBytes = int64(len(base)), overlayBytes
	if err := req.Validate(); err != nil {
		return err
	}
	hdr, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if len(hdr) > MaxRequestBytes || len(hdr) > MaxPayload {
		return errors.New("entry request: too large")
	}
	if err := w.Write(TypeRequest, hdr); err != nil {
		return err
	}
	return w.WriteData(TypeBase, base)
}

// WriteGoAhead sends the go-ahead (G).
func WriteGoAhead(w *Writer) error { return w.Write(TypeGoAhead, nil) }

// WriteOverlay sends the overlay snapshot (O frames).
func WriteOverlay(w *Writer, overlay []byte) error { return w.WriteData(TypeOverlay, overlay) }

// WriteInput writes the whole input at once, hello and go-ahead included:
// for callers with nothing to do between the steps (tests).
func WriteInput(raw io.Writer, key []byte, req *Request, base, overlay []byte) error {
	if err := WriteHello(raw, key); err != nil {
		return err
	}
	w := NewWriter(raw, key, In)
	if err := WriteHead(w, req, base, int64(len(overlay))); err != nil {
		return err
	}
	if req.SetupCommand != "" {
		if err := WriteGoAhead(w); err != nil {
			return err
		}
	}
	return WriteOverlay(w, overlay)
}

// ReadRequest reads and validates the request frame, the first after the
// hello.
func ReadRequest(r *Reader) (*Request, error) {
	t, hdr, err := r.Next()
	if err != nil {
		return nil, fmt.Errorf("entry input: request: %w", err)
	}
	if t != TypeRequest || len(hdr) == 0 || len(hdr) > MaxRequestBytes {
		return nil, fmt.Errorf("entry input: %w: want the request first", ErrTampered)
	}
	var req Request
	dec := json.NewDecoder(bytes.NewReader(hdr))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, fmt.Errorf("entry input: request: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("entry input: request: data after the JSON object")
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	return &req, nil
}

// AwaitGoAhead reads the go-ahead: the next frame must be it.
func AwaitGoAhead(r *Reader) error {
	t, _, err := r.Next()
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, ErrTruncated):
		return errors.New("entry input: no go-ahead from the runner after the setup step")
	case err != nil:
		return fmt.Errorf("entry input: %w", err)
	case t != TypeGoAhead:
		return fmt.Errorf("entry input: %w: want the go-ahead", ErrTampered)
	}
	return nil
}

// SnapshotReader returns the n bytes that frames of type t carry, as a
// reader: a frame of any other type, or one that goes past n, is
// ErrTampered; the end of the stream before n bytes is ErrTruncated.
func SnapshotReader(r *Reader, t Type, n int64) io.Reader {
	return &snapshotReader{r: r, t: t, left: n}
}

type snapshotReader struct {
	r    *Reader
	t    Type
	left int64
	buf  []byte
	err  error
}

func (s *snapshotReader) Read(p []byte) (int, error) {
	for len(s.buf) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		if s.left == 0 {
			return 0, io.EOF
		}
		t, payload, err := s.r.Next()
		switch {
		case errors.Is(err, io.EOF):
			s.err = ErrTruncated
		case err != nil:
			s.err = err
		case t != s.t || int64(len(payload)) > s.left || len(payload) == 0:
			s.err = fmt.Errorf("%w: snapshot frames out of order", ErrTampered)
		default:
			s.buf = payload
			s.left -= int64(len(payload))
		}
	}
	n := copy(p, s.buf)
	s.buf = s.buf[n:]
	return n, nil
}

// Header is the line that starts a step's section in stdout.log and
// stderr.log.
func Header(step string) string { return "== " + step + " ==\n" }

// StepBudget is how many bytes of one stream of step the logs keep at most
// (its head and its tail, half each): a quarter of OutputBytes per log, of
// which the setup step may use half and the run step what is left. The
// entry program forwards within it and the runner renders within it.
func StepBudget(outputBytes int64, step string) int {
	share := int(outputBytes / 4)
	if step == StepSetup {
		share /= 2
	}
	return max(share-len(Header(step))-1, 0) // 1: a closing newline
}

// LogMax is the most one log (stdout.log or stderr.log) holds.
func LogMax(outputBytes int64) int { return int(outputBytes / 4) }

// TrimPartialRune drops an incomplete UTF-8 sequence at the end of b, as
// left by cutting valid text at a byte count. Both sides cut this way.
func TrimPartialRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}
