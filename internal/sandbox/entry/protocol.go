package entry

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// The wire protocol between the runner and the entry program.
//
// Runner → entry, on the container's stdin:
//
//	"QUAVON-ENTRY/1\n"
//	uint32 big-endian n, then n bytes of Request JSON
//	Request.BaseBytes bytes: the base snapshot (gzip tar)
//	GoAhead, one byte, only when there is a setup step: sent by the runner
//	after it read setup.json and revoked the step's egress
//	Request.OverlayBytes bytes: the overlay snapshot (gzip tar), if any
//
// Entry → runner, on the container's stdout: one tar stream (the output).
// Its entries, in this order:
//
//	setup.json    StepResult of the setup step, written and flushed as soon
//	              as the step ends (so the runner can revoke egress before
//	              the run step starts); absent when there is no setup step
//	stdout.log    captured stdout of the steps (head and tail kept), each
//	              step after a "== setup ==" / "== run ==" line; always
//	              present, empty when no step ran
//	stderr.log    the same for stderr
//	<artefact>    each requested file found in /out, regular, UTF-8,
//	              capped; only when the run step ran
//	exit.json     Exit, always last
//
// The runner treats every byte of the output as hostile.
const Magic = "QUAVON-ENTRY/1\n"

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

// Well-known output names.
const (
	SetupName  = "setup.json"
	StdoutName = "stdout.log"
	StderrName = "stderr.log"
	ExitName   = "exit.json"
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

// Exit is the last entry of the output.
type Exit struct {
	Setup *StepResult `json:"setup,omitempty"`
	Run   StepResult  `json:"run"`
	// Error is set when the entry program itself failed (bad input,
	// extraction refused); then Run.Ran is false.
	Error           string `json:"error,omitempty"`
	StdoutBytes     int64  `json:"stdoutBytes"` // total produced, not kept
	StderrBytes     int64  `json:"stderrBytes"`
	OutputTruncated bool   `json:"outputTruncated,omitempty"`
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
		case slices.Contains([]string{SetupName, StdoutName, StderrName, ExitName}, a):
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

// GoAhead is the byte the runner sends after the setup step's setup.json,
// once it has revoked the step's egress: the entry program applies the
// overlay and starts the run step only after reading it.
const GoAhead byte = 'G'

// WriteHead writes the framed input up to the base snapshot: magic, request
// and base. It sets req.BaseBytes and req.OverlayBytes. When the request
// has a setup step, the caller must send GoAhead before the overlay.
func WriteHead(w io.Writer, req *Request, base []byte, overlayBytes int64) error {
	req.BaseBytes, req.OverlayBytes = int64(len(base)), overlayBytes
	if err := req.Validate(); err != nil {
		return err
	}
	hdr, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if len(hdr) > MaxRequestBytes {
		return errors.New("entry request: too large")
	}
	bw := bufio.NewWriter(w)
	bw.WriteString(Magic)
	binary.Write(bw, binary.BigEndian, uint32(len(hdr)))
	bw.Write(hdr)
	bw.Write(base)
	return bw.Flush()
}

// WriteInput writes the whole framed input at once (GoAhead included when
// there is a setup step): for callers with nothing to do between the steps.
func WriteInput(w io.Writer, req *Request, base, overlay []byte) error {
	if err := WriteHead(w, req, base, int64(len(overlay))); err != nil {
		return err
	}
	if req.SetupCommand != "" {
		if _, err := w.Write([]byte{GoAhead}); err != nil {
			return err
		}
	}
	_, err := w.Write(overlay)
	return err
}

// Rest is the input after the base snapshot.
type Rest struct {
	br  *bufio.Reader
	req *Request
}

// AwaitGoAhead blocks until the runner's go-ahead arrives. Only a request
// with a setup step has one.
func (r *Rest) AwaitGoAhead() error {
	if r.req.SetupCommand == "" {
		return nil
	}
	b, err := r.br.ReadByte()
	if err != nil || b != GoAhead {
		return errors.New("entry input: no go-ahead from the runner after the setup step")
	}
	return nil
}

// Overlay is the overlay snapshot, limited to its declared size.
func (r *Rest) Overlay() io.Reader { return io.LimitReader(r.br, r.req.OverlayBytes) }

// ReadInput reads the framed input up to the base snapshot, returned as a
// reader limited to its declared size; it must be consumed before Rest is
// used, and r must not be read other than through them (ReadInput buffers
// it).
func ReadInput(r io.Reader) (*Request, io.Reader, *Rest, error) {
	br := bufio.NewReader(r)
	magic := make([]byte, len(Magic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != Magic {
		return nil, nil, nil, errors.New("entry input: bad magic")
	}
	var n uint32
	if err := binary.Read(br, binary.BigEndian, &n); err != nil || n == 0 || n > MaxRequestBytes {
		return nil, nil, nil, errors.New("entry input: bad request length")
	}
	hdr := make([]byte, n)
	if _, err := io.ReadFull(br, hdr); err != nil {
		return nil, nil, nil, fmt.Errorf("entry input: request: %w", err)
	}
	var req Request
	dec := json.NewDecoder(bytes.NewReader(hdr))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, nil, nil, fmt.Errorf("entry input: request: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, nil, errors.New("entry input: request: data after the JSON object")
	}
	if err := req.Validate(); err != nil {
		return nil, nil, nil, err
	}
	return &req, io.LimitReader(br, req.BaseBytes), &Rest{br: br, req: &req}, nil
}
