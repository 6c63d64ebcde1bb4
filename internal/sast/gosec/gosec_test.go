package gosec

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// One load for several packages gives gosec's findings for each of them,
// test files included with Tests, #nosec ignored; a directory without Go
// files for this build is skipped silently and a package that does not
// type-check is reported in "Golang errors" with its findings kept.
func TestRun(t *testing.T) {
	dir := fixtureModule(t)
	for _, tests := range []bool{false, true} {
		var buf bytes.Buffer
		found, err := Run(Options{Dir: dir, Packages: []string{"./a", "./b", "./ignored", "./broken", "./missing"}, Tests: tests}, &buf)
		if err != nil {
			t.Fatal(err)
		}
		var rep struct {
			Errors map[string][]struct{ Error string } `json:"Golang errors"`
			Issues []struct {
				RuleID string `json:"rule_id"`
				File   string `json:"file"`
			} `json:"Issues"`
			Version string `json:"GosecVersion"`
		}
		if err := json.Unmarshal(buf.Bytes(), &rep); err != nil {
			t.Fatalf("%v: %s", err, buf.Bytes())
		}
		var got []string
		for _, is := range rep.Issues {
			rel, _ := filepath.Rel(dir, is.File)
			if s := is.RuleID + " " + filepath.ToSlash(rel); !slices.Contains(got, s) {
				got = append(got, s)
			}
		}
		slices.Sort(got)
		want := []string{"G204 a/a.go", "G401 a/a.go", "G404 b/b.go", "G501 a/a.go"}
		if tests {
			want = []string{"G204 a/a.go", "G401 a/a.go", "G401 a/a_test.go", "G401 a/ax_test.go", "G404 b/b.go", "G501 a/a.go",
				"G501 a/ax_test.go", "G505 a/a_test.go"}
		}
		if !found || !slices.Equal(got, want) {
			t.Errorf("tests=%v: found %v, issues %v, want %v", tests, found, got, want)
		}
		// The go command's own compile error comes under "" (as from the
		// gosec command, which names the package command-line-arguments
		// where this names its import path); the type checker's under the
		// file.
		var errFiles []string
		for f, errs := range rep.Errors {
			if len(errs) == 0 || !strings.Contains(errs[0].Error, "undefined") {
				t.Errorf("error for %s: %+v", f, errs)
			}
			if f != "" {
				f, _ = filepath.Rel(dir, f)
			}
			errFiles = append(errFiles, filepath.ToSlash(f))
		}
		slices.Sort(errFiles)
		if !slices.Equal(errFiles, []string{"", "broken/x.go"}) {
			t.Errorf("tests=%v: errors for %q, want broken/x.go's only", tests, errFiles)
		}
	}
}

// fixtureModule is testdata/mod's absolute path, with the go command set
// up as in the scanners image (offline, no cgo).
func fixtureModule(t *testing.T) string {
	t.Helper()
	t.Setenv("GOFLAGS", "-mod=mod")
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOWORK", "off")
	t.Setenv("CGO_ENABLED", "0")
	dir, err := filepath.Abs("testdata/mod")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// runOnceEnv makes the test binary run Run once on the module it names
// and print the report: gosec asks for the Go version once per process.
const runOnceEnv = "QUAVON_GOSEC_TEST_RUN"

// gosec's version-dependent rules see the scanned module's Go version, read
// by the load, not what `go list -m` says in the working directory (this
// repository's module, Go 1.26): G601 applies to a go 1.21 module. Without
// pinGoVersion, gosec runs that go list itself and drops G601.
func TestGoVersionFromTheLoad(t *testing.T) {
	dir, err := filepath.Abs("testdata/go121")
	if err != nil {
		t.Fatal(err)
	}
	fixtureModule(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(withoutEnv(os.Environ(), goVersionEnv), runOnceEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, stderr.Bytes())
	}
	var rep struct {
		Issues []struct {
			RuleID string `json:"rule_id"`
		} `json:"Issues"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(rep.Issues) != 1 || rep.Issues[0].RuleID != "G601" {
		t.Errorf("issues %+v, want G601 alone (the module says go 1.21)", rep.Issues)
	}
}

// Options.Files says of each directory what `go list -e -json` says of
// its package (the fields the driver's notes read), for every way a file
// can be left out of the build or fail to be read, without running go list.
func TestFilesMatchGoList(t *testing.T) {
	fixtureModule(t)
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":               "module example.com/m\n\ngo 1.22\n",
		"p/p.go":               "package p\n",
		"p/p_windows.go":       "package p\n",
		"p/tagged.go":          "//go:build ignore\n\npackage p\n",
		"p/cgo.go":             "package p\n\nimport \"C\"\n",
		"p/_old.go":            "package p\n",
		"p/.hidden.go":         "package p\n",
		"p/p_test.go":          "package p\n",
		"p/x_test.go":          "package p_test\n",
		"syntax/a.go":          "package syntax\n",
		"syntax/b.go":          "package syntax\n\nfunc {\n",
		"two/a.go":             "package a\n",
		"two/b.go":             "package b\n",
		"none/only_windows.go": "package none\n",
		"none/README":          "not Go\n",
	}
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pkgs := []string{"./p", "./syntax", "./two", "./none"}
	out := filepath.Join(t.TempDir(), "files.json")
	if _, err := Run(Options{Dir: dir, Packages: pkgs, Tests: true, Files: out}, io.Discard); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", append([]string{"list", "-e", "-json=Dir,GoFiles,CgoFiles,TestGoFiles,XTestGoFiles,IgnoredGoFiles,InvalidGoFiles,Error", "--"}, pkgs...)...)
	cmd.Dir = dir
	listed, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	got, want := decodeDirs(t, data), decodeDirs(t, listed)
	if len(got) != len(pkgs) || len(want) != len(pkgs) {
		t.Fatalf("%d entries, go list %d, want %d:\n%s\n%s", len(got), len(want), len(pkgs), data, listed)
	}
	for i := range want {
		g, w := got[i], want[i]
		// go list words some errors its own way; whether there is one is
		// what the notes depend on.
		if (g.Error == nil) != (w.Error == nil) {
			t.Errorf("%s: error %v, go list %v", w.Dir, g.Error, w.Error)
		}
		g.Error, w.Error = nil, nil
		if !reflect.DeepEqual(g, w) {
			t.Errorf("files differ from go list's:\n got %+v\nwant %+v", g, w)
		}
	}
	if !bytes.Contains(data, []byte(`"IgnoredGoFiles": [`)) || !bytes.Contains(data, []byte("b.go")) {
		t.Errorf("the fixture covers less than it should: %s", data)
	}
}

func decodeDirs(t *testing.T, data []byte) []dirFiles {
	t.Helper()
	var out []dirFiles
	dec := json.NewDecoder(bytes.NewReader(data))
	for dec.More() {
		var d dirFiles
		if err := dec.Decode(&d); err != nil {
			t.Fatalf("%v: %s", err, data)
		}
		out = append(out, d)
	}
	return out
}
