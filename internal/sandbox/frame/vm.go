package frame

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// A Firecracker microVM has no stdin or stdout for its init: the runner and
// the entry program (the guest's init) talk over vsock, one connection
// that the guest opens to the host (CID 2) on VsockPort. Before the
// protocol above (hello, request, snapshots, …) the runner sends a boot
// preamble: BootMagic, a 4-byte big-endian length and the Boot JSON. It
// carries what a container gets from its runtime (the environment, the
// sizes of the tmpfs mounts, the rlimits) and fresh random bytes, which
// the guest mixes into its kernel's pool and reseeds from before anything
// runs (FC4). The guest reads it as root, before any step exists, then
// drops to uid 65532; nothing in it is secret (the frame key travels in the
// hello that follows, as in a container).

// VM constants.
const (
	// VsockPort is the host port the guest connects to (CID 2).
	VsockPort = 1024
	// BootMagic starts the preamble.
	BootMagic = "QUAVON-VM/1\n"
	// SeedSize is how many random bytes each boot carries.
	SeedSize = 64
	// maxBootBytes caps the preamble's JSON.
	maxBootBytes = 64 << 10
	maxBootEnv   = 256
)

// Boot is the preamble's payload.
type Boot struct {
	// Seed is fresh random bytes from the host's crypto/rand.
	Seed []byte `json:"seed"`
	// Env is the steps' complete environment (KEY=VALUE).
	Env []string `json:"env"`
	// Sizes of the guest's tmpfs mounts; /work is the scratch drive.
	TmpBytes    int64 `json:"tmpBytes"`
	OutputBytes int64 `json:"outputBytes"`
	// Rlimits of the steps (uid 65532): open files, file size, processes.
	NoFile        int64 `json:"noFile"`
	FileSizeBytes int64 `json:"fileSizeBytes"`
	Pids          int64 `json:"pids"`
}

// Validate checks a preamble's shape.
func (b *Boot) Validate() error {
	switch {
	case len(b.Seed) != SeedSize:
		return fmt.Errorf("vm boot: seed must be %d bytes", SeedSize)
	case len(b.Env) > maxBootEnv:
		return errors.New("vm boot: too many environment entries")
	case b.TmpBytes <= 0 || b.OutputBytes <= 0 || b.NoFile <= 0 || b.FileSizeBytes <= 0 || b.Pids <= 0:
		return errors.New("vm boot: sizes and limits must be positive")
	}
	for _, kv := range b.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || !utf8.ValidString(kv) || strings.ContainsRune(kv, 0) {
			return errors.New("vm boot: environment entries must be KEY=VALUE, UTF-8, without NUL")
		}
	}
	return nil
}

// WriteBoot sends the preamble.
func WriteBoot(w io.Writer, b *Boot) error {
	if err := b.Validate(); err != nil {
		return err
	}
	body, err := json.Marshal(b)
	if err != nil {
		return err
	}
	if len(body) > maxBootBytes {
		return errors.New("vm boot: preamble too large")
	}
	msg := make([]byte, 0, len(BootMagic)+4+len(body))
	msg = append(msg, BootMagic...)
	msg = binary.BigEndian.AppendUint32(msg, uint32(len(body)))
	_, err = w.Write(append(msg, body...))
	return err
}

// ReadBoot reads and validates the preamble; it reads exactly its bytes.
func ReadBoot(r io.Reader) (*Boot, error) {
	hdr := make([]byte, len(BootMagic)+4)
	if _, err := io.ReadFull(r, hdr); err != nil || string(hdr[:len(BootMagic)]) != BootMagic {
		return nil, errors.New("vm boot: bad magic")
	}
	n := binary.BigEndian.Uint32(hdr[len(BootMagic):])
	if n == 0 || n > maxBootBytes {
		return nil, errors.New("vm boot: bad length")
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, fmt.Errorf("vm boot: %w", ErrTruncated)
	}
	var b Boot
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("vm boot: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("vm boot: data after the JSON object")
	}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	return &b, nil
}
