package patch

import (
	"flag"
	"os/exec"
	"strings"
	"testing"
)

func TestBlobSHAMatchesGit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []string{"", "hello\n", "no newline", "crlf\r\nline\r\n", "é\x01\xff"} {
		cmd := exec.Command(gitBin(t), "hash-object", "--stdin")
		cmd.Dir = dir
		cmd.Stdin = strings.NewReader(c)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := BlobSHA([]byte(c)), strings.TrimSpace(string(out)); got != want {
			t.Errorf("BlobSHA(%q) = %s, git hash-object = %s", c, got, want)
		}
	}
	if BlobSHA(nil) != EmptyBlobSHA {
		t.Error("EmptyBlobSHA")
	}
}

// roundTripBase has the awkward shapes: no final newline, CRLF, empty,
// a file to delete, a name with a space and one that git quotes.
var roundTripBase = map[string]MapFile{
	"README.md":         {Content: "# Title\n\nSome text.\n"},
	"src/main.go":       {Content: "package main\n\nfunc main() {\n\tprintln(1)\n}\n"},
	"nonl.txt":          {Content: "a\nb\nc"},
	"crlf.txt":          {Content: "one\r\ntwo\r\nthree\r\n"},
	"empty.txt":         {Content: ""},
	"gone.txt":          {Content: "bye\n"},
	"gone-nonl.txt":     {Content: "bye"},
	"gone-empty.txt":    {Content: ""},
	"dir with space/f":  {Content: "x\n"},
	"unicodé/naïve.txt": {Content: "1\n2\n3\n"},
	"long.txt":          {Content: strings.Repeat("line\n", 20) + "middle\n" + strings.Repeat("line\n", 20) + "end\n"},
}

func TestRoundTripWithGit(t *testing.T) {
	t.Parallel()
	base := MapBase(roundTripBase)
	ov, err := NewOverlay(base, PathPolicy{}, Limits{MaxFiles: 20})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(ov.EditFile("README.md", "Some text.", "Other text.\nMore."))
	must(ov.EditFile("src/main.go", "println(1)", "println(2)"))
	must(ov.EditFile("nonl.txt", "c", "c\n"))                 // adds the final newline
	must(ov.EditFile("crlf.txt", "two\r\n", "2\r\nzwei\r\n")) // CRLF kept
	must(ov.EditFile("long.txt", "middle", "MIDDLE"))
	must(ov.EditFile("long.txt", "end\n", "end")) // drops the final newline
	must(ov.CreateFile("new/empty.txt", ""))
	must(ov.CreateFile("new/nonl.txt", "no newline"))
	must(ov.CreateFile("new/crlf.txt", "a\r\nb\r\n"))
	must(ov.CreateFile("dir with space/g h.txt", "spaced\n"))
	must(ov.CreateFile("unicodé/new \"q\".txt", "quoted\n"))
	must(ov.DeleteFile("gone.txt"))
	must(ov.DeleteFile("gone-nonl.txt"))
	must(ov.DeleteFile("gone-empty.txt"))
	must(ov.CreateFile("empty.txt.d/x", "y\n"))
	// editing the empty file needs create semantics: delete and re-create
	must(ov.DeleteFile("empty.txt"))
	must(ov.CreateFile("empty.txt", "now full\n"))

	changes := ov.Changes()
	if err := ValidatePatch(changes, base, PathPolicy{}, Limits{MaxFiles: 20}, testScanner(t)); err != nil {
		t.Fatalf("ValidatePatch: %v", err)
	}
	diff, err := ov.Diff()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"new file mode 100644", "deleted file mode 100644", `\ No newline at end of file`,
		"--- /dev/null", "+++ /dev/null", "index " + zeroOID + ".." + EmptyBlobSHA, `"a/unicod\303\251/new \"q\".txt"`} {
		if !strings.Contains(diff, want) {
			t.Errorf("diff lacks %q", want)
		}
	}
	dir := gitRepo(t, roundTripBase)
	gitApply(t, dir, diff)

	want := mapContents(roundTripBase)
	for _, c := range changes {
		if c.Operation == OpDelete {
			delete(want, c.Path)
		} else {
			want[c.Path] = c.NewContent
		}
	}
	if d := diffMaps(want, treeFiles(t, dir)); d != "" {
		t.Fatalf("tree after git apply differs from the overlay:\n%s\ndiff:\n%s", d, diff)
	}
	for p, content := range want {
		got, err := ov.Read(p)
		if err != nil || got != content {
			t.Errorf("overlay Read(%s) = %q, %v; want %q", p, got, err, content)
		}
	}
	// git's own diff of the result has the same blob ids as our changes
	runGit(t, dir, nil, "add", "-A")
	for _, c := range changes {
		if c.Operation == OpDelete {
			continue
		}
		out := strings.TrimSpace(runGit(t, dir, nil, "rev-parse", ":"+c.Path))
		if out != BlobSHA([]byte(c.NewContent)) {
			t.Errorf("%s: git has %s, we have %s", c.Path, out, BlobSHA([]byte(c.NewContent)))
		}
	}
}

func TestRenderDiffRefusesMovedBase(t *testing.T) {
	t.Parallel()
	base := MapBase(map[string]MapFile{"a.txt": {Content: "1\n"}})
	_, err := RenderDiff([]FixFileChange{{Path: "a.txt", Operation: OpModify, BaseBlobSHA: BlobSHA([]byte("0\n")), NewContent: "2\n", Mode: ModeFile}}, base)
	if err == nil {
		t.Fatal("RenderDiff rendered against a base that does not match BaseBlobSHA")
	}
}

func TestHunkShapes(t *testing.T) {
	t.Parallel()
	var lines []string
	for i := range 40 {
		lines = append(lines, "l"+string(rune('a'+i%26))+"\n")
	}
	old := strings.Join(lines, "")
	edit := func(idx ...int) string {
		l := append([]string(nil), lines...)
		for _, i := range idx {
			l[i] = "X\n"
		}
		return strings.Join(l, "")
	}
	cases := []struct {
		name  string
		new   string
		hunks int
	}{
		{"one change", edit(10), 1},
		{"close changes merge", edit(10, 16), 1}, // 5 lines apart: contexts touch
		{"far changes split", edit(10, 18), 2},
		{"first and last", edit(0, 39), 2},
		{"all gone", "", 1},
	}
	for _, c := range cases {
		diff, err := RenderDiff([]FixFileChange{{Path: "f", Operation: OpModify, BaseBlobSHA: BlobSHA([]byte(old)), NewContent: c.new, Mode: ModeFile}},
			MapBase(map[string]MapFile{"f": {Content: old}}))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(diff, "\n@@ "); n != c.hunks {
			t.Errorf("%s: %d hunks, want %d\n%s", c.name, n, c.hunks, diff)
		}
		got, err := applyUnified(old, diff)
		if err != nil || got != c.new {
			t.Errorf("%s: re-applied = %q, %v", c.name, got, err)
		}
	}
}

// fuzzing reports whether this run is generating inputs (go test -fuzz);
// plain go test only replays the seed corpus, which also goes through git.
func fuzzing() bool {
	f := flag.Lookup("test.fuzz")
	return f != nil && f.Value.String() != ""
}

// FuzzRenderDiff: every rendered diff re-applies exactly (a strict Go-side
// applier, per input) and, for the seed corpus and testdata/fuzz (plain
// go test), `git apply --check` and `git apply` accept it and produce the
// new content. Calling git per generated input would cut fuzzing speed by
// about a thousand.
func FuzzRenderDiff(f *testing.F) {
	seeds := [][2]string{
		{"", "a\n"}, {"a\n", ""}, {"a", "a\n"}, {"a\n", "a"}, {"a\r\nb\r\n", "a\r\nc\r\n"}, {"x", "y"},
		{"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "1\n2\n3\nfour\n5\n6\n7\n8\n9\nten"},
		{"same\n", "same\n"}, {"\n\n\n", "\n"}, {"a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n", "k\nj\ni\nh\ng\nf\ne\nd\nc\nb\na\n"},
		{"- x\n+ y\n\\ z\n", "+ y\n- x\n@@ z\n"}, {"é\n", "è"},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, old, new string) {
		if strings.IndexByte(old, 0) >= 0 || strings.IndexByte(new, 0) >= 0 {
			return
		}
		base := MapBase(map[string]MapFile{"f.txt": {Content: old}})
		sha := BlobSHA([]byte(old))
		cases := []struct {
			c    FixFileChange
			want string
		}{
			{FixFileChange{Path: "f.txt", Operation: OpModify, BaseBlobSHA: sha, NewContent: new, Mode: ModeFile}, new},
			{FixFileChange{Path: "f.txt", Operation: OpDelete, BaseBlobSHA: sha, Mode: ModeFile}, ""},
			{FixFileChange{Path: "n.txt", Operation: OpCreate, NewContent: new, Mode: ModeFile}, new},
		}
		for _, c := range cases {
			diff, err := RenderDiff([]FixFileChange{c.c}, base)
			if err != nil {
				t.Fatalf("%s: %v", c.c.Operation, err)
			}
			from := old
			if c.c.Operation == OpCreate {
				from = ""
			}
			if c.c.Operation == OpModify && old == new {
				if diff != "" {
					t.Fatalf("no-op modify rendered %q", diff)
				}
				continue
			}
			got, err := applyUnified(from, diff)
			if err != nil || got != c.want {
				t.Fatalf("%s: re-applied %q, %v; want %q\n%s", c.c.Operation, got, err, c.want, diff)
			}
			if !fuzzing() {
				dir := gitRepo(t, map[string]MapFile{"f.txt": {Content: old}})
				gitApply(t, dir, diff)
				files := treeFiles(t, dir)
				gotGit, ok := files[c.c.Path]
				if c.c.Operation == OpDelete {
					if ok {
						t.Fatalf("git apply left %s", c.c.Path)
					}
				} else if gotGit != c.want {
					t.Fatalf("git apply produced %q, want %q", gotGit, c.want)
				}
			}
		}
	})
}
