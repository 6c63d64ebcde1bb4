package docker_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/sandbox/runner/docker"
)

// TestEnableShmemTHP: never and deny become advise; a value that already
// serves gVisor is the host's and stays; what happened is said in one line.
// (A regular file stands in for sysfs: writing "advise" there leaves just
// that word, where the kernel then shows "... [advise] ...".)
func TestEnableShmemTHP(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		content, before string
		changed         bool
	}{
		{"always within_size advise [never] deny force\n", "never", true},
		{"always within_size advise never [deny] force\n", "deny", true},
		{"always within_size [advise] never deny force\n", "advise", false},
		{"always [within_size] advise never deny force\n", "within_size", false},
		{"[always] within_size advise never deny force\n", "always", false},
	} {
		f := filepath.Join(dir, tc.before)
		if err := os.WriteFile(f, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		before, changed, err := docker.EnableShmemTHP(f)
		if err != nil || before != tc.before || changed != tc.changed {
			t.Errorf("%q: %q %v %v, want %q %v", tc.content, before, changed, err, tc.before, tc.changed)
		}
		got, _ := os.ReadFile(f)
		if want := map[bool]string{true: "advise", false: tc.content}[tc.changed]; string(got) != want {
			t.Errorf("%q: file now %q, want %q", tc.content, got, want)
		}
	}
	if _, _, err := docker.EnableShmemTHP(filepath.Join(dir, "absent")); !os.IsNotExist(err) {
		t.Errorf("no such file: %v", err)
	}
	for f, want := range map[string]string{
		filepath.Join(dir, "absent"): "this kernel has no",
		filepath.Join(dir, "advise"): "is advise",
		dir:                          "is a directory",
	} {
		if note := docker.ShmemTHPNote(f); !strings.Contains(note, want) {
			t.Errorf("%s: note %q, want %q", f, note, want)
		}
	}
	f := filepath.Join(dir, "again")
	os.WriteFile(f, []byte("always within_size advise [never] deny force\n"), 0o644)
	if note := docker.ShmemTHPNote(f); !strings.Contains(note, "was never, now advise") {
		t.Errorf("note %q", note)
	}
}
