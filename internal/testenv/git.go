package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Git runs git in dir with a fixed identity, no system or user config,
// and fails the test on error; it returns trimmed stdout and stderr.
func Git(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=quavon-test", "GIT_AUTHOR_EMAIL=test@localhost",
		"GIT_COMMITTER_NAME=quavon-test", "GIT_COMMITTER_EMAIL=test@localhost", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// WriteFiles writes files (slash-separated relative paths) under dir.
func WriteFiles(tb testing.TB, dir string, files map[string]string) {
	tb.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// GitRepo makes a repository whose branch "main" holds base and whose
// checked-out branch "change" adds head in one more commit.
func GitRepo(tb testing.TB, base, head map[string]string) string {
	tb.Helper()
	dir := tb.TempDir()
	Git(tb, dir, "init", "-q", "-b", "main")
	WriteFiles(tb, dir, base)
	Git(tb, dir, "add", "-A")
	Git(tb, dir, "commit", "-q", "--allow-empty", "-m", "base")
	Git(tb, dir, "checkout", "-q", "-b", "change")
	WriteFiles(tb, dir, head)
	Git(tb, dir, "add", "-A")
	Git(tb, dir, "commit", "-q", "-m", "change")
	return dir
}
