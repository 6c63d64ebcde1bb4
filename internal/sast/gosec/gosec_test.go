package gosec

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
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
		list := filepath.Join(t.TempDir(), "list.json")
		found, err := Run(Options{Dir: dir, Packages: []string{"./a", "./b", "./ignored", "./broken", "./missing"}, Tests: tests,
			GoList: list, GoListFields: "Dir,IgnoredGoFiles"}, &buf)
		if err != nil {
			t.Fatal(err)
		}
		// go list ran beside the load, with the fields asked for.
		if data, err := os.ReadFile(list); err != nil || !bytes.Contains(data, []byte(`"IgnoredGoFiles": [`)) ||
			!bytes.Contains(data, []byte(filepath.Join(dir, "b"))) || bytes.Contains(data, []byte(`"Name"`)) {
			t.Errorf("go list output: %v %s", err, data)
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
