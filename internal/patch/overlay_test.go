package patch

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func newOverlay(t testing.TB, base Base, pol PathPolicy, lim Limits) *Overlay {
	t.Helper()
	ov, err := NewOverlay(base, pol, lim)
	if err != nil {
		t.Fatal(err)
	}
	return ov
}

func violationRule(err error) Rule {
	var v *Violation
	if errors.As(err, &v) {
		return v.Rule
	}
	return ""
}

func TestEditFileMatchCount(t *testing.T) {
	t.Parallel()
	ov := newOverlay(t, MapBase(map[string]MapFile{"a.go": {Content: "x := 1\ny := 1\nz := aaa\n"}}), PathPolicy{}, Limits{})
	var mc *MatchCountError
	if err := ov.EditFile("a.go", "1", "2"); !errors.As(err, &mc) || mc.Count != 2 || !strings.Contains(err.Error(), "2 times") {
		t.Fatalf("ambiguous edit: %v", err)
	}
	if err := ov.EditFile("a.go", "nope", "2"); !errors.As(err, &mc) || mc.Count != 0 {
		t.Fatalf("missing oldText: %v", err)
	}
	// overlapping occurrences are ambiguous too
	if err := ov.EditFile("a.go", "aa", "b"); !errors.As(err, &mc) || mc.Count != 2 {
		t.Fatalf("overlapping: %v", err)
	}
	if err := ov.EditFile("a.go", "", "b"); err == nil {
		t.Fatal("empty oldText accepted")
	}
	if err := ov.EditFile("./a.go", "x := 1", "x := 2"); err != nil {
		t.Fatal(err)
	}
	if got, _ := ov.Read("a.go"); got != "x := 2\ny := 1\nz := aaa\n" {
		t.Fatalf("Read = %q", got)
	}
	if err := ov.EditFile("missing.go", "a", "b"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("edit of a missing file: %v", err)
	}
}

func TestOverlayCreateDeleteRead(t *testing.T) {
	t.Parallel()
	base := MapBase(map[string]MapFile{"a.txt": {Content: "a\n"}, "d/b.txt": {Content: "b\n"}})
	ov := newOverlay(t, base, PathPolicy{}, Limits{})
	if err := ov.CreateFile("a.txt", "x"); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("create over a base file: %v", err)
	}
	if err := ov.CreateFile("a.txt/x", "x"); violationRule(err) != RulePathConflict {
		t.Fatalf("create beneath a file: %v", err)
	}
	if err := ov.CreateFile("n/new.txt", "n\n"); err != nil {
		t.Fatal(err)
	}
	if err := ov.CreateFile("n", "x"); violationRule(err) != RulePathConflict {
		t.Fatalf("create a file where created files are: %v", err)
	}
	if err := ov.DeleteFile("a.txt"); err != nil {
		t.Fatal(err)
	}
	if _, err := ov.Read("a.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("read of a deleted file: %v", err)
	}
	if ov.Exists("a.txt") || !ov.Exists("n/new.txt") || !ov.Exists("d/b.txt") {
		t.Fatal("Exists disagrees with the overlay")
	}
	if err := ov.DeleteFile("a.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("second delete: %v", err)
	}
	// deleting a created file drops it
	if err := ov.DeleteFile("n/new.txt"); err != nil {
		t.Fatal(err)
	}
	// re-creating a deleted base file with its content is no change at all
	if err := ov.CreateFile("a.txt", "a\n"); err != nil {
		t.Fatal(err)
	}
	if cs := ov.Changes(); len(cs) != 0 {
		t.Fatalf("Changes = %+v, want none", cs)
	}
	if err := ov.EditFile("d/b.txt", "b", "c"); err != nil {
		t.Fatal(err)
	}
	cs := ov.Changes()
	if len(cs) != 1 || cs[0].Operation != OpModify || cs[0].BaseBlobSHA != BlobSHA([]byte("b\n")) || cs[0].NewContent != "c\n" || cs[0].Mode != ModeFile {
		t.Fatalf("Changes = %+v", cs)
	}
	if _, err := ov.Read("../etc/passwd"); violationRule(err) != RuleInvalidPath {
		t.Fatalf("read outside the root: %v", err)
	}
}

func TestOverlayPathRules(t *testing.T) {
	t.Parallel()
	base := MapBase(map[string]MapFile{".github/workflows/ci.yml": {Content: "on: push\n"}, "go.sum": {Content: "x\n"}})
	ov := newOverlay(t, base, PathPolicy{DeniedPaths: []string{"vendor/**"}}, Limits{})
	for p, rule := range map[string]Rule{
		".GitHub/Workflows/x.yml": RuleDeniedGitHub, "a/.git/b": RuleDeniedGit, "./.env": RuleDeniedSecretFile,
		"x/../.npmrc": RuleDeniedPackageMgr, "sub/AGENTS.md": RuleDeniedAgent, "vendor/x.go": RulePolicyDenied,
		"../x": RuleInvalidPath, "go.sum": RuleLockfile,
	} {
		if err := ov.CreateFile(p, "x\n"); violationRule(err) != rule {
			t.Errorf("CreateFile(%q) = %v, want %s", p, err, rule)
		}
	}
	if err := ov.EditFile(".github/workflows/ci.yml", "push", "pull_request"); violationRule(err) != RuleDeniedGitHub {
		t.Errorf("edit of a workflow: %v", err)
	}
	if err := ov.DeleteFile("go.sum"); violationRule(err) != RuleLockfile {
		t.Errorf("delete of a lockfile: %v", err)
	}
	// reading denied files is allowed (the agent may need context), .git is not
	if _, err := ov.Read(".github/workflows/ci.yml"); err != nil {
		t.Errorf("read: %v", err)
	}
	if _, err := ov.Read(".git/config"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read of .git: %v", err)
	}
}

func TestOverlayContentAndLimits(t *testing.T) {
	t.Parallel()
	base := MapBase(map[string]MapFile{
		"a.txt": {Content: "a\n"}, "link": {Mode: ModeSymlink, Content: "a.txt"}, "sub": {Mode: ModeGitlink},
		"run.sh": {Mode: ModeExecutable, Content: "#!/bin/sh\n"}, "bin.dat": {Content: "\x00\x01"},
	})
	ov := newOverlay(t, base, PathPolicy{}, Limits{MaxFiles: 2, MaxChangedLines: 10, MaxFileBytes: 100})
	cases := []struct {
		name string
		err  error
		rule Rule
	}{
		{"NUL", ov.CreateFile("n.txt", "a\x00b"), RuleBinary},
		{"invalid UTF-8", ov.CreateFile("n.txt", "\xff\xfe"), RuleNotUTF8},
		{"too big", ov.CreateFile("n.txt", strings.Repeat("x", 101)), RuleLimitFileSize},
		{"bidi", ov.CreateFile("n.txt", "if x { /* \u202e } */\n"), RuleBidi},
		{"zero width", ov.EditFile("a.txt", "a", "a\u200b"), RuleZeroWidth},
		{"BOM not at start", ov.CreateFile("n.txt", "x\n\ufeffy\n"), RuleZeroWidth},
		{"symlink", ov.EditFile("link", "a", "b"), RuleLink},
		{"beneath symlink", ov.CreateFile("link/x", "b"), RuleLink},
		{"gitlink", ov.DeleteFile("sub"), RuleLink},
		{"beneath gitlink", ov.CreateFile("sub/x", "b"), RuleLink},
		{"executable", ov.EditFile("run.sh", "sh", "bash"), RuleMode},
		{"binary base", ov.DeleteFile("bin.dat"), RuleBinary},
		{"lines", ov.CreateFile("n.txt", strings.Repeat("l\n", 11)), RuleLimitChangedLines},
	}
	for _, c := range cases {
		if violationRule(c.err) != c.rule {
			t.Errorf("%s: %v, want %s", c.name, c.err, c.rule)
		}
	}
	if len(ov.Changes()) != 0 {
		t.Fatalf("refused edits left changes: %+v", ov.Changes())
	}
	if err := ov.CreateFile("bom.txt", "\ufeffhello\n"); err != nil {
		t.Fatalf("leading BOM: %v", err)
	}
	if err := ov.CreateFile("b.txt", "1\n2\n3\n4\n5\n6\n7\n8\n"); err != nil {
		t.Fatal(err)
	}
	if err := ov.CreateFile("c.txt", "c\n"); violationRule(err) != RuleLimitFiles {
		t.Fatalf("third file: %v", err)
	}
	if err := ov.EditFile("b.txt", "8\n", "8\n9\n10\n"); violationRule(err) != RuleLimitChangedLines {
		t.Fatalf("edit: %v", err)
	}
	if err := ov.EditFile("b.txt", "8\n", "8\n9\n"); err != nil {
		t.Fatalf("edit within the limit: %v", err)
	}
	if n := ov.ChangedLines(); n != 10 {
		t.Fatalf("ChangedLines = %d, want 10", n)
	}
}

// The checkout under a DirBase is never modified: same files, same bytes,
// same modification times after every kind of edit.
func TestDirBaseNeverModified(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t, map[string]MapFile{"a.txt": {Content: "a\n"}, "d/b.txt": {Content: "b\n"},
		"link": {Mode: ModeSymlink, Content: "/etc/passwd"}, "x.sh": {Mode: ModeExecutable, Content: "#!/bin/sh\n"}})
	snapshot := func() map[string]string {
		out := map[string]string{}
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, _ := d.Info()
			b, _ := os.ReadFile(p)
			out[p] = fi.Mode().String() + fi.ModTime().String() + string(b)
			return nil
		})
		return out
	}
	before := snapshot()
	db, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if e, ok := db.Stat("a.txt"); !ok || e.Mode != ModeFile || e.BlobSHA != strings.TrimSpace(runGit(t, dir, nil, "rev-parse", ":a.txt")) {
		t.Fatalf("Stat(a.txt) = %+v", e)
	}
	if e, _ := db.Stat("link"); e.Mode != ModeSymlink {
		t.Fatalf("Stat(link) = %+v", e)
	}
	if e, _ := db.Stat("x.sh"); e.Mode != ModeExecutable {
		t.Fatalf("Stat(x.sh) = %+v", e)
	}
	if _, err := db.Read("link"); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("Read through a symlink: %v", err)
	}
	if _, ok := db.Stat(".git/config"); ok {
		t.Fatal(".git is part of the base")
	}
	ov := newOverlay(t, db, PathPolicy{}, Limits{})
	for _, err := range []error{
		ov.EditFile("a.txt", "a", "A"), ov.CreateFile("d/new.txt", "n\n"), ov.DeleteFile("d/b.txt"),
		ov.CreateFile("e/f/g.txt", "g\n"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := ov.EditFile("link", "x", "y"); violationRule(err) != RuleLink {
		t.Fatalf("edit of a symlink on disk: %v", err)
	}
	if err := ov.CreateFile("d", "x"); violationRule(err) != RulePathConflict {
		t.Fatalf("create over a directory on disk: %v", err)
	}
	if _, err := ov.Diff(); err != nil {
		t.Fatal(err)
	}
	if got, _ := ov.Read("a.txt"); got != "A\n" {
		t.Fatalf("overlay Read = %q", got)
	}
	if d := diffMaps(before, snapshot()); d != "" {
		t.Fatalf("the checkout changed:\n%s", d)
	}
	diff, _ := ov.Diff()
	gitApply(t, dir, diff) // and the diff applies to that checkout
}
