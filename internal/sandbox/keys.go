package sandbox

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/quavon/quavon/internal/secretfile"
)

// MinKeyBytes is the shortest pool key Quavon accepts.
const MinKeyBytes = 32

// A Key is one pool signing key. Its secret never leaves this package except
// into HMAC and HKDF.
type Key struct {
	id     string
	secret []byte
}

// NewKey wraps secret; it refuses keys shorter than MinKeyBytes.
func NewKey(secret []byte) (Key, error) {
	if len(secret) < MinKeyBytes {
		return Key{}, fmt.Errorf("sandbox key: %d bytes, want at least %d", len(secret), MinKeyBytes)
	}
	sum := sha256.Sum256(secret)
	return Key{id: hex.EncodeToString(sum[:8]), secret: bytes.Clone(secret)}, nil
}

// ID is the first 16 hex digits of SHA-256(key): safe to log and to send.
func (k Key) ID() string { return k.id }

// String never prints the secret.
func (k Key) String() string { return "sandbox key " + k.id }

// KeyRing holds the current key (signs and verifies) and previous keys
// (verify only), so keys can rotate without failing jobs in flight.
type KeyRing struct {
	current  Key
	previous []Key
}

// NewKeyRing builds a ring; a previous key equal to the current one is
// dropped, and duplicates are refused.
func NewKeyRing(current Key, previous ...Key) (*KeyRing, error) {
	if current.id == "" {
		return nil, errors.New("sandbox key ring: no current key")
	}
	r := &KeyRing{current: current}
	seen := map[string]bool{current.id: true}
	for _, k := range previous {
		if k.id == "" {
			return nil, errors.New("sandbox key ring: empty previous key")
		}
		if seen[k.id] {
			if k.id == current.id {
				continue
			}
			return nil, fmt.Errorf("sandbox key ring: duplicate previous key %s", k.id)
		}
		seen[k.id] = true
		r.previous = append(r.previous, k)
	}
	return r, nil
}

// Current is the key that signs.
func (r *KeyRing) Current() Key { return r.current }

// Lookup finds a key by id among the current and previous keys.
func (r *KeyRing) Lookup(id string) (Key, bool) {
	if id == r.current.id {
		return r.current, true
	}
	for _, k := range r.previous {
		if k.id == id {
			return k, true
		}
	}
	return Key{}, false
}

// IDs lists the ids of all keys, current first.
func (r *KeyRing) IDs() []string {
	ids := []string{r.current.id}
	for _, k := range r.previous {
		ids = append(ids, k.id)
	}
	return ids
}

// ParseKey decodes one key in its file form: standard base64 of at least
// MinKeyBytes random bytes (`quavon keys generate` or
// `openssl rand -base64 32`).
func ParseKey(text string) (Key, error) {
	raw, err := base64.StdEncoding.Strict().DecodeString(strings.TrimSpace(text))
	if err != nil {
		return Key{}, errors.New("sandbox key: not standard base64")
	}
	return NewKey(raw)
}

// LoadKeyRing reads the current key from currentFile (one base64 key) and,
// when previousFile is not empty, the previous keys from it (one base64 key
// per line; blank lines and lines starting with # are ignored), both with
// secretfile.Read. Errors never contain key material.
func LoadKeyRing(currentFile, previousFile string) (*KeyRing, error) {
	data, err := secretfile.Read("QUAVON_SANDBOX_SIGNING_KEY_FILE", currentFile, 1)
	if err != nil {
		return nil, fmt.Errorf("sandbox signing key: %w", err)
	}
	cur, err := ParseKey(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", currentFile, err)
	}
	var prev []Key
	if previousFile != "" {
		data, err := secretfile.Read("QUAVON_SANDBOX_PREVIOUS_KEYS_FILE", previousFile, 1)
		if err != nil {
			return nil, fmt.Errorf("sandbox previous keys: %w", err)
		}
		for n, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			k, err := ParseKey(line)
			if err != nil {
				return nil, fmt.Errorf("%s line %d: %w", previousFile, n+1, err)
			}
			prev = append(prev, k)
		}
	}
	return NewKeyRing(cur, prev...)
}
