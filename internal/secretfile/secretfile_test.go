package secretfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	secret := "s3cr3t-value-of-enough-length-000"
	good := write("good", secret+"\n", 0o600)
	// Secret mounts of Docker and Kubernetes are read-only and often
	// readable by all (0444, 0644 defaults): accepted; writable is not.
	readOnly := write("ro", secret, 0o444)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{good, readOnly, link} {
		b, err := Read("QUAVON_X_FILE", p, 32)
		if err != nil || string(b) != secret {
			t.Errorf("%s: %q %v", p, b, err)
		}
	}
	for name, c := range map[string]struct {
		path string
		want string
	}{
		"unset":          {"", "QUAVON_X_FILE is not set"},
		"missing":        {filepath.Join(dir, "nope"), "no such file"},
		"directory":      {dir, "not a regular file"},
		"group-writable": {write("gw", secret, 0o620), "writable by group or others"},
		"world-writable": {write("ww", secret, 0o606), "writable by group or others"},
		"short":          {write("short", "abc\n", 0o600), "holds 3 bytes, want at least 32"},
		"empty":          {write("empty", "\n", 0o600), "want at least 32"},
		"huge":           {write("huge", strings.Repeat("x", MaxBytes+1), 0o600), "larger than"},
	} {
		b, err := Read("QUAVON_X_FILE", c.path, 32)
		if err == nil || !strings.Contains(err.Error(), c.want) || b != nil {
			t.Errorf("%s: %q %v, want %q", name, b, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "abc") {
			t.Errorf("%s: the error shows the content: %v", name, err)
		}
	}
}
