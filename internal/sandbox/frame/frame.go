// Package frame is the wire protocol between the sandbox runner and the
// entry program (PID 1 in every sandbox container). Both sides link it; it
// links only the standard library, so the runner gets no PID-1 code and the
// entry program no runner code.
//
// # Why every frame is authenticated
//
// Code in a step may be able to open every descriptor PID 1 holds: gVisor
// does not honour PID 1's non-dumpable mark, so /proc/1/fd/0 and
// /proc/1/fd/1 open for reading and writing under runsc. A step can then
// write into the stream the runner parses, read (steal) from it, or write
// into PID 1's input. None of that may change the verdict, the order of the
// steps or when the run step starts. So:
//
//   - The runner draws a fresh 32-byte key per job (crypto/rand) and sends it
//     in the hello, the first bytes of the input. PID 1 reads the hello, the
//     request and the whole base snapshot before any step exists, so no step
//     can see or replace them; the key then lives only in PID 1's memory
//     (never in its environment, arguments or files), which steps cannot
//     read (/proc/1/mem and process_vm_readv need ptrace access, refused on
//     both runtimes; the escape suite checks it).
//   - Every frame after the hello, in both directions, carries
//     HMAC-SHA256(key, direction label ‖ sequence number ‖ type ‖ length ‖
//     payload). The sequence number counts the frames of one direction from
//     0, so a frame cannot be dropped, replayed, reordered or moved to the
//     other direction without the tag failing. Tags are compared in constant
//     time (hmac.Equal).
//   - A reader refuses the whole stream at the first frame that does not
//     verify ([ErrTampered]): it never resynchronises and never skips bytes,
//     so injected bytes, stolen bytes and interleaved writes all end the job
//     as failed, never as a forged verdict.
//
// # Framing
//
// Hello (runner → entry, once): [Magic] then the [KeySize]-byte key.
// Every frame after it:
//
//	type     1 byte
//	length   4 bytes, big-endian, at most MaxPayload
//	payload  length bytes
//	tag      32 bytes, HMAC-SHA256 as above
//
// Runner → entry (direction [In]), in this order:
//
//	Q  the Request, JSON
//	B  base snapshot bytes, until Request.BaseBytes
//	G  the go-ahead, empty: only with a setup step, sent after the runner has
//	   read the setup step's result and revoked its egress
//	O  overlay snapshot bytes, until Request.OverlayBytes
//
// Entry → runner (direction [Out]):
//
//	S  a step starts: its name ("setup" or "run")
//	1  stdout of the current step: uint64 skipped, then data
//	2  stderr of the current step: uint64 skipped, then data
//	R  the current step's StepResult, JSON, as soon as the step has ended
//	A  artefacts: a chunk of a tar of the requested files (after the run step)
//	E  Exit, JSON, always last
//
// The streams of a step arrive while it runs (see [FlushInterval]): the head
// of each stream (the first half of its share) in full, then the newest
// bytes; skipped counts bytes dropped before the data that follows, because
// more arrived between two flushes than the tail keeps. The runner keeps
// head and tail within the caps itself, so a job killed at the wall clock or
// the memory limit still returns what its steps printed until then.
package frame

import (
	"bufio"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"
)

// Magic starts the input; it names the protocol version.
const Magic = "QUAVON-ENTRY/2\n"

// Sizes on the wire.
const (
	KeySize    = 32
	TagSize    = sha256.Size
	headerSize = 5
	// MaxPayload bounds one frame's payload; longer data is split.
	MaxPayload = 64 << 10
	// MaxFrame is the largest frame on the wire.
	MaxFrame = headerSize + MaxPayload + TagSize
	// streamHeader is the skipped counter in front of stream data.
	streamHeader = 8
)

// FlushInterval is how often the entry program sends what a running step
// printed since the last flush. The runner's raw-bytes cap allows for it.
const FlushInterval = time.Second

// Type is a frame type.
type Type byte

// Frame types; see the package doc.
const (
	TypeRequest   Type = 'Q'
	TypeBase      Type = 'B'
	TypeGoAhead   Type = 'G'
	TypeOverlay   Type = 'O'
	TypeStart     Type = 'S'
	TypeStdout    Type = '1'
	TypeStderr    Type = '2'
	TypeResult    Type = 'R'
	TypeArtefacts Type = 'A'
	TypeExit      Type = 'E'
)

// Direction says which way frames travel; each has its own label and
// sequence, so a frame of one direction never verifies in the other.
type Direction uint8

// Directions.
const (
	In  Direction = 1 // runner → entry program
	Out Direction = 2 // entry program → runner
)

func (d Direction) label() string {
	if d == In {
		return "quavon-entry-in:v2\n"
	}
	return "quavon-entry-out:v2\n"
}

func (d Direction) allows(t Type) bool {
	switch t {
	case TypeRequest, TypeBase, TypeGoAhead, TypeOverlay:
		return d == In
	case TypeStart, TypeStdout, TypeStderr, TypeResult, TypeArtefacts, TypeExit:
		return d == Out
	}
	return false
}

// ErrTampered means the stream holds bytes the other side did not write: a
// tag that does not verify, an impossible length or type, or frames out of
// order. Nothing after it is read.
var ErrTampered = errors.New("frame stream tampered with")

// ErrTruncated means the stream ended inside a frame.
var ErrTruncated = errors.New("frame stream cut off inside a frame")

// NewKey draws a fresh per-job key.
func NewKey() ([]byte, error) {
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("frame key: %w", err)
	}
	return k, nil
}

// WriteHello starts the input: Magic and the key.
func WriteHello(w io.Writer, key []byte) error {
	if len(key) != KeySize {
		return errors.New("frame hello: key must be 32 bytes")
	}
	_, err := w.Write(append([]byte(Magic), key...))
	return err
}

// ReadHello reads Magic and the key. r must be the reader later given to
// NewReader (it reads exactly the hello's bytes).
func ReadHello(r io.Reader) ([]byte, error) {
	b := make([]byte, len(Magic)+KeySize)
	if _, err := io.ReadFull(r, b); err != nil || string(b[:len(Magic)]) != Magic {
		return nil, errors.New("entry input: bad magic")
	}
	return b[len(Magic):], nil
}

func newMAC(key []byte) hash.Hash { return hmac.New(sha256.New, key) }

// sum computes the tag of one frame into out.
func sum(mac hash.Hash, d Direction, seq uint64, hdr []byte, payload []byte, out []byte) []byte {
	mac.Reset()
	mac.Write([]byte(d.label()))
	var s [8]byte
	binary.BigEndian.PutUint64(s[:], seq)
	mac.Write(s[:])
	mac.Write(hdr)
	mac.Write(payload)
	return mac.Sum(out[:0])
}

// Writer writes authenticated frames of one direction. It is not safe for
// concurrent use.
type Writer struct {
	w   io.Writer
	d   Direction
	mac hash.Hash
	seq uint64
	buf []byte
	err error
}

// NewWriter returns a Writer of direction d under key.
func NewWriter(w io.Writer, key []byte, d Direction) *Writer {
	return &Writer{w: w, d: d, mac: newMAC(key), buf: make([]byte, 0, MaxFrame)}
}

// Write sends one frame, in one write call. The first error sticks.
func (w *Writer) Write(t Type, payload []byte) error {
	if w.err != nil {
		return w.err
	}
	if len(payload) > MaxPayload || !w.d.allows(t) {
		return fmt.Errorf("frame: %q frame of %d bytes not allowed", t, len(payload))
	}
	b := w.buf[:headerSize]
	b[0] = byte(t)
	binary.BigEndian.PutUint32(b[1:], uint32(len(payload)))
	b = append(b, payload...)
	var tag [TagSize]byte
	b = append(b, sum(w.mac, w.d, w.seq, b[:headerSize], payload, tag[:])...)
	w.seq++
	_, w.err = w.w.Write(b)
	w.buf = b[:0]
	return w.err
}

// WriteData sends data as frames of type t, split at MaxPayload; empty data
// sends nothing.
func (w *Writer) WriteData(t Type, data []byte) error {
	for len(data) > 0 {
		n := min(len(data), MaxPayload)
		if err := w.Write(t, data[:n]); err != nil {
			return err
		}
		data = data[n:]
	}
	return w.err
}

// WriteStream sends step output: skipped (bytes dropped before data) and
// data, split at MaxPayload; only the first frame carries skipped.
func (w *Writer) WriteStream(t Type, skipped int64, data []byte) error {
	if t != TypeStdout && t != TypeStderr {
		return fmt.Errorf("frame: %q is not a stream", t)
	}
	for first := true; first || len(data) > 0; first = false {
		n := min(len(data), MaxPayload-streamHeader)
		p := make([]byte, streamHeader, streamHeader+n)
		binary.BigEndian.PutUint64(p, uint64(max(skipped, 0)))
		if err := w.Write(t, append(p, data[:n]...)); err != nil {
			return err
		}
		data, skipped = data[n:], 0
	}
	return nil
}

// Reader reads and verifies frames of one direction.
type Reader struct {
	r   *bufio.Reader
	d   Direction
	mac hash.Hash
	seq uint64
	buf []byte
	err error
}

// NewReader returns a Reader of direction d under key.
func NewReader(r io.Reader, key []byte, d Direction) *Reader {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, MaxFrame)
	}
	return &Reader{r: br, d: d, mac: newMAC(key), buf: make([]byte, MaxFrame)}
}

// Next returns the next verified frame. The payload is valid until the next
// call. At a frame boundary the end of the stream is io.EOF; inside a frame
// it is ErrTruncated; a frame that does not verify is ErrTampered. Any error
// sticks.
func (r *Reader) Next() (Type, []byte, error) {
	if r.err != nil {
		return 0, nil, r.err
	}
	t, p, err := r.next()
	r.err = err
	return t, p, err
}

func (r *Reader) next() (Type, []byte, error) {
	hdr := r.buf[:headerSize]
	if n, err := io.ReadFull(r.r, hdr); err != nil {
		if n == 0 && errors.Is(err, io.EOF) {
			return 0, nil, io.EOF
		}
		return 0, nil, truncated(err)
	}
	t, n := Type(hdr[0]), binary.BigEndian.Uint32(hdr[1:])
	// Checked before reading on: a forged length must not make the reader
	// wait for or buffer bytes that never come.
	if !r.d.allows(t) || n > MaxPayload {
		return 0, nil, fmt.Errorf("%w: bad frame header", ErrTampered)
	}
	body := r.buf[headerSize : headerSize+int(n)+TagSize]
	if _, err := io.ReadFull(r.r, body); err != nil {
		return 0, nil, truncated(err)
	}
	payload, tag := body[:n], body[n:]
	var want [TagSize]byte
	if !hmac.Equal(tag, sum(r.mac, r.d, r.seq, hdr, payload, want[:])) {
		return 0, nil, fmt.Errorf("%w: frame %d does not verify", ErrTampered, r.seq)
	}
	r.seq++
	return t, payload, nil
}

func truncated(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return ErrTruncated
	}
	return err
}

// Frames returns how many frames were verified.
func (r *Reader) Frames() uint64 { return r.seq }

// Stream splits a stream frame's payload into skipped and data.
func Stream(payload []byte) (skipped int64, data []byte, err error) {
	if len(payload) < streamHeader {
		return 0, nil, fmt.Errorf("%w: short stream frame", ErrTampered)
	}
	s := binary.BigEndian.Uint64(payload)
	if s > 1<<62 {
		return 0, nil, fmt.Errorf("%w: impossible skip count", ErrTampered)
	}
	return int64(s), payload[streamHeader:], nil
}
