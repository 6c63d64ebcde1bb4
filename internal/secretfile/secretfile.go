// Package secretfile is the one way a Quavon process reads a secret from
// disk (QUAVON_*_FILE settings): permissions, size and length checked, the
// content never in an error.
package secretfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// MaxBytes bounds a secret file (a PEM private key is ~3 KiB).
const MaxBytes = 64 << 10

// Read reads a secret: the file
// named by setting (for messages) at path must be a regular file (symlinks
// are followed, as secret mounts use them), writable by its owner only, at
// most MaxBytes, and hold at least minLen bytes after trailing
// newlines are trimmed. Errors name the setting and the path, never the
// content.
func Read(setting, path string, minLen int) ([]byte, error) {
	if path == "" {
		return nil, fmt.Errorf("%s is not set", setting)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", setting, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", setting, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %s is not a regular file", setting, path)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("%s: %s is writable by group or others (mode %#o): make it 0600 or 0400", setting, path, fi.Mode().Perm())
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", setting, err)
	}
	if len(b) > MaxBytes {
		return nil, fmt.Errorf("%s: %s is larger than %d bytes", setting, path, MaxBytes)
	}
	b = bytes.TrimRight(b, "\r\n")
	if len(b) < minLen {
		return nil, fmt.Errorf("%s: %s holds %d bytes, want at least %d", setting, path, len(b), minLen)
	}
	if len(b) == 0 {
		return nil, errors.New(setting + ": empty")
	}
	return b, nil
}
