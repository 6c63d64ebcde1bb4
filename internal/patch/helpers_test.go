package patch

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/quavon/quavon/internal/secret/leaks"
)

// gitBin fails the test when git is missing: the round-trip tests are the
// proof that our diffs apply, never skip them silently.
func gitBin(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("git binary required: %v", err)
	}
	return p
}

func runGit(t testing.TB, dir string, stdin []byte, args ...string) string {
	t.Helper()
	cmd := exec.Command(gitBin(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// gitRepo writes files into a fresh repository and commits them.
func gitRepo(t testing.TB, files map[string]MapFile) string {
	t.Helper()
	dir := t.TempDir()
	runGit(t, dir, nil, "init", "-q")
	runGit(t, dir, nil, "config", "core.autocrlf", "false")
	for p, f := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		switch f.Mode {
		case ModeSymlink:
			if err := os.Symlink(f.Content, full); err != nil {
				t.Fatal(err)
			}
		case ModeExecutable:
			if err := os.WriteFile(full, []byte(f.Content), 0o755); err != nil {
				t.Fatal(err)
			}
		default:
			if err := os.WriteFile(full, []byte(f.Content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	runGit(t, dir, nil, "add", "-A")
	runGit(t, dir, nil, "commit", "-q", "--allow-empty", "-m", "base")
	return dir
}

// gitApply checks and applies diff in dir with the real git.
func gitApply(t testing.TB, dir, diff string) {
	t.Helper()
	runGit(t, dir, []byte(diff), "apply", "--check", "-")
	runGit(t, dir, []byte(diff), "apply", "-")
}

// treeFiles reads every file of a work tree except .git.
func treeFiles(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if d.Type()&os.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			out[filepath.ToSlash(rel)] = "symlink:" + target
			return nil
		}
		b, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mapContents(files map[string]MapFile) map[string]string {
	out := map[string]string{}
	for p, f := range files {
		if f.Mode == ModeSymlink {
			out[p] = "symlink:" + f.Content
		} else if f.Mode != ModeGitlink {
			out[p] = f.Content
		}
	}
	return out
}

func diffMaps(want, got map[string]string) string {
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		w, wok := want[k]
		g, gok := got[k]
		if w != g || wok != gok {
			fmt.Fprintf(&b, "%s: want %q (%v), got %q (%v)\n", k, w, wok, g, gok)
		}
	}
	return b.String()
}

// applyUnified is an independent, strict re-implementation of applying one
// file's section of a unified diff to old: every context and removed line
// must match at the stated line numbers.
func applyUnified(old, section string) (string, error) {
	lines := strings.SplitAfter(section, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	i := 0
	for i < len(lines) && !strings.HasPrefix(lines[i], "@@ ") {
		i++
	}
	oldLines := splitLinesRef(old)
	var out []string
	pos := 0 // next old line to copy
	for i < len(lines) {
		var a, b, c, d int
		h := strings.TrimSuffix(lines[i], "\n")
		if err := parseHunkHeader(h, &a, &b, &c, &d); err != nil {
			return "", err
		}
		i++
		start := a - 1
		if b == 0 {
			start = a
		}
		if start < pos || start > len(oldLines) {
			return "", fmt.Errorf("hunk %q out of order", h)
		}
		out = append(out, oldLines[pos:start]...)
		pos = start
		var gotOld, gotNew int
		for i < len(lines) && !strings.HasPrefix(lines[i], "@@ ") {
			l := lines[i]
			i++
			if strings.HasPrefix(l, `\ No newline at end of file`) {
				continue
			}
			text := l[1:]
			// a following "\ No newline" marker strips this line's "\n"
			if i < len(lines) && strings.HasPrefix(lines[i], `\ `) {
				text = strings.TrimSuffix(text, "\n")
			}
			switch l[0] {
			case ' ', '-':
				if pos >= len(oldLines) || oldLines[pos] != text {
					return "", fmt.Errorf("line %d does not match: %q", pos+1, text)
				}
				pos++
				gotOld++
				if l[0] == ' ' {
					out = append(out, text)
					gotNew++
				}
			case '+':
				out = append(out, text)
				gotNew++
			default:
				return "", fmt.Errorf("bad diff line %q", l)
			}
		}
		if gotOld != b || gotNew != d {
			return "", fmt.Errorf("hunk %q has %d/%d lines", h, gotOld, gotNew)
		}
	}
	out = append(out, oldLines[pos:]...)
	return strings.Join(out, ""), nil
}

func splitLinesRef(s string) []string {
	if s == "" {
		return nil
	}
	ls := strings.SplitAfter(s, "\n")
	if ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}

func parseHunkHeader(h string, a, b, c, d *int) error {
	f := strings.Fields(h)
	if len(f) < 4 || f[0] != "@@" || f[3] != "@@" || f[1][0] != '-' || f[2][0] != '+' {
		return fmt.Errorf("bad hunk header %q", h)
	}
	parse := func(s string, x, y *int) error {
		n, cnt, ok := strings.Cut(s, ",")
		var err error
		if *x, err = strconv.Atoi(n); err != nil {
			return err
		}
		*y = 1
		if ok {
			*y, err = strconv.Atoi(cnt)
		}
		return err
	}
	if err := parse(f[1][1:], a, b); err != nil {
		return err
	}
	return parse(f[2][1:], c, d)
}

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// The production scanner satisfies SecretScanner; asserted here, not in
// validate.go, so that importing patch does not link gitleaks.
var _ SecretScanner = (*leaks.Scanner)(nil)

var scannerOnce = sync.OnceValues(leaks.NewScanner)

func testScanner(t testing.TB) *leaks.Scanner {
	t.Helper()
	s, err := scannerOnce()
	if err != nil {
		t.Fatal(err)
	}
	return s
}
