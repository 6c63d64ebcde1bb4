package snapshot

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func entries(t *testing.T, gz []byte) map[string]string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		var b bytes.Buffer
		b.ReadFrom(tr)
		out[h.Name] = b.String()
	}
	return out
}

func TestBuildLeavesOutWhatMustNotTravel(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{
		"README.md":          "hello",
		"readme.md":          "both may exist",
		"src/main.go":        "package main",
		".git/config":        "[credential] helper = store",
		"sub/.GIT/HEAD":      "ref",
		"vendor/x/.git":      "gitdir: ../../.git/modules/x",
		"scripts/run.sh":     "#!/bin/sh",
		"weird\nname/f.txt":  "control character",
		"docs/a\\b.md":       "backslash",
		"deep/er/file.txt":   "x",
		".github/workflows/": "",
	})
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Chmod(filepath.Join(root, "scripts/run.sh"), 0o700))
	must(os.Symlink("/etc/passwd", filepath.Join(root, "passwd")))
	must(os.Symlink("../..", filepath.Join(root, "src/up")))
	must(os.Link(filepath.Join(root, "README.md"), filepath.Join(root, "hardlink.md")))
	must(syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644))

	gz, st, err := Build(root, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got := entries(t, gz)
	for _, want := range []string{"README.md", "readme.md", "src/", "src/main.go", "scripts/run.sh", "deep/er/file.txt", "hardlink.md"} {
		if _, ok := got[want]; !ok {
			t.Errorf("missing %s", want)
		}
	}
	for name := range got {
		if strings.Contains(strings.ToLower(name), ".git/") || strings.HasSuffix(strings.ToLower(name), ".git") ||
			strings.Contains(name, "passwd") || name == "src/up" || name == "fifo" || strings.ContainsAny(name, "\n\\") {
			t.Errorf("snapshot contains %q", name)
		}
	}
	if got["hardlink.md"] != "hello" {
		t.Errorf("hard link not copied as a regular file: %q", got["hardlink.md"])
	}
	if st.Skipped["symlink"] != 2 || st.Skipped["special file"] != 1 || st.Skipped[".git segment"] != 3 {
		t.Errorf("skipped %v", st.Skipped)
	}
	if _, err := Check(bytes.NewReader(gz), Limits{}); err != nil {
		t.Fatalf("Check(Build()) = %v", err)
	}
}

func TestBuildIsDeterministic(t *testing.T) {
	t.Parallel()
	files := map[string]string{"a/b.txt": "1", "c.txt": "2", "z/y/x": "3"}
	a, _, err := Build(writeTree(t, files), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := Build(writeTree(t, files), Limits{})
	if !bytes.Equal(a, b) {
		t.Fatal("the same tree gave different snapshots")
	}
}

func TestBuildLimits(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{"a": strings.Repeat("x", 1000), "b": "y", "c": "z"})
	cases := []Limits{{MaxEntries: 2}, {MaxUnpackedBytes: 1000}, {MaxBytes: 50}}
	for _, lim := range cases {
		if _, _, err := Build(root, lim); !errors.Is(err, ErrTooLarge) {
			t.Errorf("Build with %+v = %v, want ErrTooLarge", lim, err)
		}
	}
}

type entry struct {
	h    tar.Header
	body string
}

func makeTar(t testing.TB, es []entry, trailing []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range es {
		h := e.h
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(e.body))
	}
	tw.Close()
	zw.Close()
	return append(buf.Bytes(), trailing...)
}

func TestCheckRefusesHostileArchives(t *testing.T) {
	t.Parallel()
	dir := func(n string) entry { return entry{h: tar.Header{Typeflag: tar.TypeDir, Name: n + "/", Mode: 0o755}} }
	file := func(n string) entry {
		return entry{h: tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: 0o644}, body: "x"}
	}
	with := func(e entry, f func(h *tar.Header)) entry { f(&e.h); return e }
	cases := []struct {
		name     string
		entries  []entry
		trailing []byte
		want     error
	}{
		{"symlink", []entry{{h: tar.Header{Typeflag: tar.TypeSymlink, Name: "l", Linkname: "/etc/passwd"}}}, nil, ErrForbidden},
		{"hard link", []entry{file("a"), {h: tar.Header{Typeflag: tar.TypeLink, Name: "b", Linkname: "a"}}}, nil, ErrForbidden},
		{"device", []entry{{h: tar.Header{Typeflag: tar.TypeChar, Name: "null", Devmajor: 1, Devminor: 3}}}, nil, ErrForbidden},
		{"fifo", []entry{{h: tar.Header{Typeflag: tar.TypeFifo, Name: "p"}}}, nil, ErrForbidden},
		{"absolute", []entry{file("/etc/cron.d/x")}, nil, ErrForbidden},
		{"dot dot", []entry{file("../x")}, nil, ErrForbidden},
		{"inner dot dot", []entry{dir("a"), file("a/../../x")}, nil, ErrForbidden},
		{".git", []entry{dir(".git"), file(".git/config")}, nil, ErrForbidden},
		{".GiT nested", []entry{dir("a"), dir("a/.GiT")}, nil, ErrForbidden},
		{"duplicate", []entry{file("a"), file("a")}, nil, ErrForbidden},
		{"file as parent", []entry{file("a"), file("a/b")}, nil, ErrForbidden},
		{"missing parent", []entry{file("a/b")}, nil, ErrForbidden},
		{"setuid", []entry{with(file("a"), func(h *tar.Header) { h.Mode = 0o4755 })}, nil, ErrForbidden},
		{"world-writable", []entry{with(file("a"), func(h *tar.Header) { h.Mode = 0o666 })}, nil, ErrForbidden},
		{"control char", []entry{file("a\x1bb")}, nil, ErrForbidden},
		{"trailing data", []entry{file("a")}, []byte("more"), ErrMalformed},
		{"second gzip member", []entry{file("a")}, makeTar(t, []entry{file("b")}, nil), ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := Check(bytes.NewReader(makeTar(t, c.entries, c.trailing)), Limits{})
			if !errors.Is(err, c.want) {
				t.Fatalf("Check = %v, want %v", err, c.want)
			}
		})
	}
	if _, err := Check(strings.NewReader("not gzip"), Limits{}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("not gzip: %v", err)
	}
	ok := makeTar(t, []entry{dir("a"), file("a/b"), file("c")}, nil)
	if st, err := Check(bytes.NewReader(ok), Limits{}); err != nil || st.Entries != 3 {
		t.Fatalf("valid archive: %+v %v", st, err)
	}
	for _, lim := range []Limits{{MaxEntries: 2}, {MaxUnpackedBytes: 1}, {MaxBytes: int64(len(ok) - 1)}, {MaxBytes: 30}} {
		if _, err := Check(bytes.NewReader(ok), lim); !errors.Is(err, ErrTooLarge) {
			t.Errorf("Check with %+v = %v, want ErrTooLarge", lim, err)
		}
	}
}

func FuzzCheck(f *testing.F) {
	f.Add(makeTar(f, []entry{{h: tar.Header{Typeflag: tar.TypeDir, Name: "a/", Mode: 0o755}}, {h: tar.Header{Typeflag: tar.TypeReg, Name: "a/b", Mode: 0o644}, body: "x"}}, nil))
	f.Add(makeTar(f, []entry{{h: tar.Header{Typeflag: tar.TypeSymlink, Name: "l", Linkname: "/"}}}, nil))
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, data []byte) {
		lim := Limits{MaxBytes: 1 << 20, MaxEntries: 100, MaxUnpackedBytes: 1 << 20}
		st, err := Check(bytes.NewReader(data), lim)
		if err != nil {
			return
		}
		if st.Entries > lim.MaxEntries || st.UnpackedBytes > lim.MaxUnpackedBytes {
			t.Fatalf("accepted beyond limits: %+v", st)
		}
		// Whatever passes has only clean directories and regular files.
		zr, _ := gzip.NewReader(bytes.NewReader(data))
		tr := tar.NewReader(zr)
		for {
			h, err := tr.Next()
			if err != nil {
				break
			}
			if h.Typeflag != tar.TypeDir && h.Typeflag != tar.TypeReg {
				t.Fatalf("accepted type %q", h.Typeflag)
			}
			if why := checkName(strings.TrimSuffix(h.Name, "/")); why != "" {
				t.Fatalf("accepted name %q: %s", h.Name, why)
			}
		}
	})
}
