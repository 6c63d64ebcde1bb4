package snapshot

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func dirEntry(n string) entry {
	return entry{h: tar.Header{Typeflag: tar.TypeDir, Name: n + "/", Mode: 0o755}}
}

func fileEntry(n, body string) entry {
	return entry{h: tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: 0o644}, body: body}
}

// listTree describes everything under root, symlinks included, as
// "name kind mode content".
func listTree(t testing.TB, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		line := filepath.ToSlash(rel) + " " + fi.Mode().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			line += " " + string(b)
		}
		out = append(out, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func TestExtract(t *testing.T) {
	t.Parallel()
	exe := fileEntry("bin/run.sh", "#!/bin/sh\n")
	exe.h.Mode = 0o755
	gz := makeTar(t, []entry{dirEntry("bin"), exe, dirEntry("src"), dirEntry("src/deep"), fileEntry("src/deep/a.go", "package a"), fileEntry("README.md", "hi")}, nil)
	dest := t.TempDir()
	st, err := Extract(bytes.NewReader(gz), dest, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Entries != 6 || st.UnpackedBytes != int64(len("#!/bin/sh\npackage ahi")) {
		t.Errorf("stats %+v", st)
	}
	want := []string{
		"README.md -rw-r--r-- hi",
		"bin drwxr-xr-x",
		"bin/run.sh -rwxr-xr-x #!/bin/sh\n",
		"src drwxr-xr-x",
		"src/deep drwxr-xr-x",
		"src/deep/a.go -rw-r--r-- package a",
	}
	got := listTree(t, dest)[1:] // [0] is dest itself
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("tree:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The base extract refuses to write over anything.
	if _, err := Extract(bytes.NewReader(gz), dest, Limits{}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second Extract = %v, want ErrExist", err)
	}
}

func TestExtractOverlay(t *testing.T) {
	t.Parallel()
	dest := t.TempDir()
	base := makeTar(t, []entry{dirEntry("src"), fileEntry("src/a.go", "old"), fileEntry("src/b.go", "keep")}, nil)
	if _, err := Extract(bytes.NewReader(base), dest, Limits{}); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "target"), []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	// What a setup step may leave behind: a link where the overlay has a file.
	if err := os.Symlink(filepath.Join(outside, "target"), filepath.Join(dest, "src/link")); err != nil {
		t.Fatal(err)
	}
	ov := makeTar(t, []entry{dirEntry("src"), fileEntry("src/a.go", "new"), fileEntry("src/link", "replaced"), dirEntry("src/new"), fileEntry("src/new/c.go", "c")}, nil)
	if _, err := ExtractOverlay(bytes.NewReader(ov), dest, Limits{}); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(listTree(t, dest)[1:], "\n")
	want := strings.Join([]string{
		"src drwxr-xr-x",
		"src/a.go -rw-r--r-- new",
		"src/b.go -rw-r--r-- keep",
		"src/link -rw-r--r-- replaced",
		"src/new drwxr-xr-x",
		"src/new/c.go -rw-r--r-- c",
	}, "\n")
	if got != want {
		t.Errorf("tree:\n%s\nwant:\n%s", got, want)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "target")); string(b) != "outside" {
		t.Errorf("wrote through the link: %q", b)
	}

	// Kinds that differ between the tree and the overlay are refused.
	for _, c := range []struct {
		name string
		es   []entry
	}{
		{"file over directory", []entry{fileEntry("src", "x")}},
		{"directory over file", []entry{dirEntry("src"), dirEntry("src/a.go")}},
	} {
		if _, err := ExtractOverlay(bytes.NewReader(makeTar(t, c.es, nil)), dest, Limits{}); !errors.Is(err, ErrForbidden) {
			t.Errorf("%s: %v, want ErrForbidden", c.name, err)
		}
	}
}

// TestExtractRefusesHostileArchives checks that every archive Check refuses
// is refused by both extracts too, and that nothing appears outside dest,
// even where dest holds links that point out of it.
func TestExtractRefusesHostileArchives(t *testing.T) {
	t.Parallel()
	with := func(e entry, f func(h *tar.Header)) entry { f(&e.h); return e }
	cases := []struct {
		name    string
		entries []entry
		want    error
	}{
		{"symlink", []entry{{h: tar.Header{Typeflag: tar.TypeSymlink, Name: "l", Linkname: "/etc/passwd"}}}, ErrForbidden},
		{"hard link", []entry{fileEntry("a", "x"), {h: tar.Header{Typeflag: tar.TypeLink, Name: "b", Linkname: "a"}}}, ErrForbidden},
		{"device", []entry{{h: tar.Header{Typeflag: tar.TypeChar, Name: "null", Devmajor: 1, Devminor: 3}}}, ErrForbidden},
		{"absolute", []entry{fileEntry("/tmp/x", "x")}, ErrForbidden},
		{"dot dot", []entry{fileEntry("../escaped", "x")}, ErrForbidden},
		{"inner dot dot", []entry{dirEntry("a"), fileEntry("a/../../escaped", "x")}, ErrForbidden},
		{".git", []entry{dirEntry(".git"), fileEntry(".git/config", "x")}, ErrForbidden},
		{"duplicate", []entry{fileEntry("a", "x"), fileEntry("a", "y")}, ErrForbidden},
		{"file as parent", []entry{fileEntry("a", "x"), fileEntry("a/b", "y")}, ErrForbidden},
		{"setuid", []entry{with(fileEntry("a", "x"), func(h *tar.Header) { h.Mode = 0o4755 })}, ErrForbidden},
		// dest holds out -> outside and outfile -> outside/file (set up below).
		{"through a link in dest", []entry{dirEntry("out"), fileEntry("out/escaped", "x")}, nil},
		{"onto a link in dest", []entry{fileEntry("outfile", "x")}, nil},
		// dest also holds inner -> sub, a real directory inside dest: the
		// link is not followed either.
		{"through a link inside dest", []entry{dirEntry("inner"), fileEntry("inner/x", "x")}, nil},
	}
	for _, c := range cases {
		for _, overlay := range []bool{false, true} {
			name := c.name
			if overlay {
				name += "/overlay"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				top := t.TempDir()
				dest, outside := filepath.Join(top, "dest", "work"), filepath.Join(top, "outside")
				for _, d := range []string{dest, outside} {
					if err := os.MkdirAll(d, 0o755); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.WriteFile(filepath.Join(outside, "file"), []byte("outside"), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(outside, filepath.Join(dest, "out")); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.Join(outside, "file"), filepath.Join(dest, "outfile")); err != nil {
					t.Fatal(err)
				}
				if err := os.Mkdir(filepath.Join(dest, "sub"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink("sub", filepath.Join(dest, "inner")); err != nil {
					t.Fatal(err)
				}
				before := listTree(t, top)
				gz := makeTar(t, c.entries, nil)
				extract := Extract
				if overlay {
					extract = ExtractOverlay
				}
				_, err := extract(bytes.NewReader(gz), dest, Limits{})
				switch {
				case c.want != nil && !errors.Is(err, c.want):
					t.Fatalf("err = %v, want %v", err, c.want)
				case c.name == "onto a link in dest" && overlay:
					// Replacing the link itself is the overlay's job.
					if err != nil {
						t.Fatal(err)
					}
				case err == nil:
					t.Fatal("accepted")
				}
				assertOnlyInside(t, top, before, "dest/work/")
				if sub, _ := os.ReadDir(filepath.Join(dest, "sub")); len(sub) != 0 {
					t.Fatalf("wrote through the link inner -> sub: %v", sub)
				}
			})
		}
	}
}

// assertOnlyInside fails when anything under top changed other than below
// one of the prefixes.
func assertOnlyInside(t testing.TB, top string, before []string, prefixes ...string) {
	t.Helper()
	outside := func(list []string) []string {
		var out []string
	next:
		for _, l := range list {
			for _, p := range prefixes {
				if strings.HasPrefix(l, p) {
					continue next
				}
			}
			out = append(out, l)
		}
		return out
	}
	b, a := outside(before), outside(listTree(t, top))
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Fatalf("changed outside dest:\nbefore:\n%s\nafter:\n%s", strings.Join(b, "\n"), strings.Join(a, "\n"))
	}
}

// FuzzExtract feeds tar streams (gzipped here, so the fuzzer works on the
// tar layer) to both extracts: the base extract into an empty directory
// succeeds exactly when Check accepts, and neither extract ever changes
// anything outside dest, whose links point out of it. Each exec touches the
// file system, so minimizing an interesting input the default 60 s stalls
// fuzzing: run it with -fuzzminimizetime=200x.
func FuzzExtract(f *testing.F) {
	rawTar := func(es []entry) []byte {
		gz := makeTar(f, es, nil)
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			f.Fatal(err)
		}
		var b bytes.Buffer
		b.ReadFrom(zr)
		// The end-of-archive blocks are optional; small seeds fuzz faster.
		return bytes.TrimSuffix(b.Bytes(), make([]byte, 1024))
	}
	f.Add(rawTar([]entry{dirEntry("a"), fileEntry("a/b", "x"), fileEntry("c", "y")}))
	f.Add(rawTar([]entry{dirEntry("out"), fileEntry("out/escaped", "x")}))
	f.Add(rawTar([]entry{fileEntry("outfile", "x")}))
	f.Add(rawTar([]entry{{h: tar.Header{Typeflag: tar.TypeSymlink, Name: "out/l", Linkname: "/"}}}))
	f.Add(rawTar([]entry{fileEntry("../x", "x")}))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > 64<<10 {
			return // the limits below would refuse it anyway; keep execs fast
		}
		var gz bytes.Buffer
		// Stored, not compressed: far cheaper per exec, and just as valid.
		zw, _ := gzip.NewWriterLevel(&gz, gzip.NoCompression)
		zw.Write(raw)
		zw.Close()
		checkExtract(t, gz.Bytes())
	})
}

// FuzzExtractEntries builds well-formed tars from a line per entry, type
// letter then name (d directory, f file, w empty file (a whiteout when
// named .wh.*), x setuid file, l symlink to /, h hard link to the previous
// name), so the fuzzer explores names, order and kinds rather than tar
// framing.
func FuzzExtractEntries(f *testing.F) {
	f.Add("dout\nfout/escaped")
	f.Add("foutfile\nda\nfa/b")
	f.Add("dinner\nfinner/x\nfsub/y")
	f.Add("lx\nfx/y")
	f.Add("fa\nha\nd.git\nf../x")
	f.Add("w.wh.outfile\nw.wh.out\nw.wh.rel\nw.wh.inner")
	f.Add("dout\nwout/.wh.file")
	f.Add("w.wh..wh..opq\nw.wh.\nf.wh.x")
	f.Fuzz(func(t *testing.T, spec string) {
		var gz bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&gz, gzip.NoCompression)
		tw := tar.NewWriter(zw)
		prev := ""
		for _, line := range strings.Split(spec, "\n") {
			if line == "" {
				continue
			}
			name := line[1:]
			h := &tar.Header{Name: name, Mode: 0o644}
			switch line[0] {
			case 'd':
				h.Typeflag, h.Name, h.Mode = tar.TypeDir, name+"/", 0o755
			case 'w':
				h.Typeflag = tar.TypeReg
			case 'f', 'x':
				h.Typeflag, h.Size = tar.TypeReg, 1
				if line[0] == 'x' {
					h.Mode = 0o4755
				}
			case 'l':
				h.Typeflag, h.Linkname = tar.TypeSymlink, "/"
			case 'h':
				h.Typeflag, h.Linkname = tar.TypeLink, prev
			default:
				continue
			}
			if tw.WriteHeader(h) != nil {
				return
			}
			if h.Size == 1 {
				tw.Write([]byte("x"))
			}
			prev = name
		}
		tw.Close()
		zw.Close()
		checkExtract(t, gz.Bytes())
	})
}

// checkExtract runs Check and both extracts on gz: the base extract into an
// empty directory succeeds exactly when Check does and never makes a
// symlink, and nothing outside the destinations changes, though dest holds
// links out of it and one within it, to a directory no snapshot can name.
func checkExtract(t *testing.T, gz []byte) {
	lim := Limits{MaxBytes: 1 << 20, MaxEntries: 64, MaxUnpackedBytes: 1 << 20}
	top := t.TempDir()
	empty, dest, outside := filepath.Join(top, "empty"), filepath.Join(top, "dest"), filepath.Join(top, "outside")
	hidden := filepath.Join(dest, `t\`) // a backslash: checkName refuses it
	for _, d := range []string{empty, dest, outside, hidden} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(outside, "file"), []byte("outside"), 0o644)
	os.Symlink(outside, filepath.Join(dest, "out"))
	os.Symlink(filepath.Join(outside, "file"), filepath.Join(dest, "outfile"))
	os.Symlink("../outside", filepath.Join(dest, "rel"))
	os.Symlink(`t\`, filepath.Join(dest, "inner"))
	before := listTree(t, top)

	_, cerr := Check(bytes.NewReader(gz), lim)
	_, eerr := Extract(bytes.NewReader(gz), empty, lim)
	if (cerr == nil) != (eerr == nil) {
		t.Fatalf("Check = %v, Extract into an empty dir = %v", cerr, eerr)
	}
	Extract(bytes.NewReader(gz), dest, lim)
	ExtractOverlay(bytes.NewReader(gz), dest, lim)
	assertOnlyInside(t, top, before, "dest/", "empty/")
	filepath.WalkDir(empty, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type()&fs.ModeSymlink != 0 {
			t.Fatalf("extract made a symlink: %s", p)
		}
		return nil
	})
	if names, _ := os.ReadDir(hidden); len(names) > 0 {
		t.Fatalf("extract wrote through the link inner -> t\\: %v", names)
	}
}

func data(s string) func() ([]byte, error) { return func() ([]byte, error) { return []byte(s), nil } }

// Files and Overlay build what Check accepts, deterministically; whiteouts
// delete files (and links, never their targets) when the overlay is
// extracted, and nothing else.
func TestOverlayWhiteouts(t *testing.T) {
	t.Parallel()
	base, _, err := Files{{Name: "src/a.go", Read: data("a")}, {Name: "src/b.go", Read: data("b")}, {Name: "run.sh", Executable: true, Read: data("#!")},
		{Name: "keep/.wh.note", Read: data("a repository file named like a whiteout")}}.Build(Limits{})
	if err != nil {
		t.Fatal(err)
	}
	again, _, _ := Files{{Name: "run.sh", Executable: true, Read: data("#!")}, {Name: "keep/.wh.note", Read: data("a repository file named like a whiteout")},
		{Name: "src/b.go", Read: data("b")}, {Name: "src/a.go", Read: data("a")}}.Build(Limits{})
	if !bytes.Equal(base, again) {
		t.Fatal("Files.Build depends on the order of the files")
	}
	if _, err := Check(bytes.NewReader(base), Limits{}); err != nil {
		t.Fatal(err)
	}
	dest := t.TempDir()
	if _, err := Extract(bytes.NewReader(base), dest, Limits{}); err != nil {
		t.Fatal(err)
	}
	// The base keeps a .wh. name as a file: only overlays delete.
	if b, err := os.ReadFile(filepath.Join(dest, "keep/.wh.note")); err != nil || len(b) == 0 {
		t.Fatalf("base .wh. file: %q %v", b, err)
	}
	outside := filepath.Join(t.TempDir(), "target")
	os.WriteFile(outside, []byte("outside"), 0o644)
	os.Symlink(outside, filepath.Join(dest, "src/link")) // left by a setup step
	ov, _, err := Overlay{Files: []File{{Name: "src/c.go", Read: data("c")}}, Deletions: []string{"src/a.go", "src/link", "src/never.go"}}.Build(Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ExtractOverlay(bytes.NewReader(ov), dest, Limits{}); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(listTree(t, dest)[1:], "\n")
	want := strings.Join([]string{
		"keep drwxr-xr-x",
		"keep/.wh.note -rw-r--r-- a repository file named like a whiteout",
		"run.sh -rwxr-xr-x #!",
		"src drwxr-xr-x",
		"src/b.go -rw-r--r-- b",
		"src/c.go -rw-r--r-- c",
	}, "\n")
	if got != want {
		t.Errorf("tree:\n%s\nwant:\n%s", got, want)
	}
	if b, _ := os.ReadFile(outside); string(b) != "outside" {
		t.Fatal("a whiteout of a link touched its target")
	}
	for name, o := range map[string]Overlay{
		"write a .wh. name":    {Files: []File{{Name: "src/.wh.b.go", Read: data("")}}},
		"written and deleted":  {Files: []File{{Name: "src/b.go", Read: data("")}}, Deletions: []string{"src/b.go"}},
		"deletion outside":     {Deletions: []string{"../etc/passwd"}},
		"deletion of .git":     {Deletions: []string{".git/config"}},
		"absolute deletion":    {Deletions: []string{"/etc/passwd"}},
		"dir and file at once": {Files: []File{{Name: "x", Read: data("")}, {Name: "x/y", Read: data("")}}},
	} {
		if _, _, err := o.Build(Limits{}); !errors.Is(err, ErrForbidden) {
			t.Errorf("%s: %v, want ErrForbidden", name, err)
		}
	}
	// Hand-made overlays the builder never writes are refused on extract.
	for name, es := range map[string][]entry{
		"opaque whiteout":         {dirEntry("src"), fileEntry("src/.wh..wh..opq", "")},
		"whiteout with content":   {dirEntry("src"), fileEntry("src/.wh.b.go", "x")},
		"whiteout of a directory": {fileEntry(".wh.src", "")},
		"bare prefix":             {dirEntry("src"), fileEntry("src/.wh.", "")},
	} {
		if _, err := ExtractOverlay(bytes.NewReader(makeTar(t, es, nil)), dest, Limits{}); !errors.Is(err, ErrForbidden) {
			t.Errorf("%s: %v, want ErrForbidden", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dest, "src/b.go")); err != nil {
		t.Fatal("a refused overlay deleted a file")
	}
}
