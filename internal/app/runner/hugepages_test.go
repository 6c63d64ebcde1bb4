package runner

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWarnShmemTHP: a runsc runner on a host whose kernel gives gVisor no
// huge pages says so, with the fix, and nothing when it does.
func TestWarnShmemTHP(t *testing.T) {
	dir := t.TempDir()
	for content, want := range map[string]string{
		"always within_size advise [never] deny force\n": "echo advise > ",
		"always within_size [advise] never deny force\n": "",
		"always advise never\n":                          "cannot read",
	} {
		f := filepath.Join(dir, "shmem_enabled")
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		warnShmemTHP(slog.New(slog.NewTextHandler(&buf, nil)), f)
		if got := buf.String(); want == "" && got != "" || want != "" && !strings.Contains(got, want) {
			t.Errorf("%q: logged %q, want %q", content, got, want)
		}
	}
}
