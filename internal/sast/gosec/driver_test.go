package gosec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// The test binary is also the driver its loads start (os.Executable).
func TestMain(m *testing.M) {
	if IsDriver() {
		if err := ServeDriver(os.Args[1:], os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if dir := os.Getenv(runOnceEnv); dir != "" { // TestGoVersionFromTheLoad's process
		if _, err := Run(Options{Dir: dir, Packages: []string{"./loop"}}, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type packagesDriverRequest = packages.DriverRequest

type report struct {
	Errors map[string]json.RawMessage `json:"Golang errors"`
	Issues json.RawMessage            `json:"Issues"`
}

// With the standard library's export data named by the map, the load
// compiles none of the scanned packages, and gosec reports the same issues
// and the same type errors as with go list -export: with tests and
// without, with an external test package, a package of the module that is
// imported but not scanned, one that does not type-check and one without
// Go files for this build. The go command's compile error of the broken
// package (under "") is the one thing missing: nothing compiled it.
func TestDriverMatchesGoList(t *testing.T) {
	dir := fixtureModule(t)
	// One entry left out, so that the driver lists that one itself.
	std := stdMap(t, dir, "crypto/sha1")
	pkgs := []string{"./a", "./b", "./ignored", "./broken", "./missing"}
	// CGO_ENABLED=0 is the image's (the driver then lists without
	// -compiled); 1 keeps go list -compiled.
	for _, c := range []struct {
		cgo   string
		tests bool
	}{{"0", false}, {"0", true}, {"1", false}, {"1", true}} {
		t.Setenv("CGO_ENABLED", c.cgo)
		tests := c.tests
		run := func(stdExport string) report {
			var buf bytes.Buffer
			if _, err := Run(Options{Dir: dir, Packages: pkgs, Tests: tests, StdExport: stdExport}, &buf); err != nil {
				t.Fatal(err)
			}
			var r report
			if err := json.Unmarshal(buf.Bytes(), &r); err != nil {
				t.Fatalf("%v: %s", err, buf.Bytes())
			}
			return r
		}
		golist, driven := run(""), run(std)
		if !bytes.Equal(golist.Issues, driven.Issues) {
			t.Errorf("CGO_ENABLED=%s tests=%v: issues differ\ngo list: %s\ndriver:  %s", c.cgo, tests, golist.Issues, driven.Issues)
		}
		if _, ok := golist.Errors[""]; !ok {
			t.Errorf("tests=%v: go list -export reported no compile error: %v", tests, golist.Errors)
		}
		if _, ok := driven.Errors[""]; ok {
			t.Errorf("tests=%v: a compile error with the driver: the scanned packages were compiled (or the driver was not used)", tests)
		}
		delete(golist.Errors, "")
		g, _ := json.Marshal(golist.Errors)
		d, _ := json.Marshal(driven.Errors)
		if !bytes.Equal(g, d) || len(driven.Errors) == 0 {
			t.Errorf("tests=%v: errors differ\ngo list: %s\ndriver:  %s", tests, g, d)
		}
	}
}

// stdMap writes the map the image build writes (standard package → export
// data) for what the module in dir imports, less the package except.
func stdMap(t *testing.T, dir, except string) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-export", "-deps", "-test", "-f", "{{if .Standard}}{{.ImportPath}} {{.Export}}{{end}}", "./...")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if l != "" && !strings.HasPrefix(l, except+" ") && strings.Contains(l, " ") {
			lines = append(lines, l)
		}
	}
	if len(lines) < 20 {
		t.Fatalf("the map holds %d packages", len(lines))
	}
	std := filepath.Join(t.TempDir(), "std.txt")
	if err := os.WriteFile(std, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return std
}

// The image's build cache (Options.CacheSeed) is linked into GOCACHE only
// when the load has something to compile: a dependency the map lacks. A
// load the map serves whole leaves GOCACHE with what go list wrote.
func TestCacheSeededOnlyToCompile(t *testing.T) {
	dir := fixtureModule(t)
	t.Setenv("CGO_ENABLED", "0")
	// A stand-in for the image's cache: one entry no go command would
	// write, so that its link shows the seed happened.
	seed := t.TempDir()
	entry := filepath.Join("ee", "ee00quavontest-d")
	if err := os.MkdirAll(filepath.Join(seed, "ee"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(seed, entry), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// One fresh GOCACHE (go list indexes the standard library once), not
	// seeded by the first load, seeded by the second.
	cache := t.TempDir()
	// The maps first, with the real GOCACHE (they need export data).
	cases := []struct {
		except string // left out of the map: compiled
		seeded bool
		std    string
	}{{"", false, ""}, {"unicode/utf8", true, ""}}
	for i := range cases {
		cases[i].std = stdMap(t, dir, cases[i].except)
	}
	t.Setenv("GOCACHE", cache)
	// b imports c, so c is scanned too: otherwise it would be compiled.
	for _, c := range cases {
		if _, err := Run(Options{Dir: dir, Packages: []string{"./a", "./b", "./c"}, StdExport: c.std, CacheSeed: seed}, io.Discard); err != nil {
			t.Fatal(err)
		}
		_, err := os.Lstat(filepath.Join(cache, entry))
		if seeded := err == nil; seeded != c.seeded {
			t.Errorf("map without %q: seeded %v, want %v (%v)", c.except, seeded, c.seeded, err)
		}
	}
}

// A request the driver cannot serve exactly goes back to go list.
func TestDriverHandsBack(t *testing.T) {
	std := filepath.Join(t.TempDir(), "std.txt")
	os.WriteFile(std, []byte("fmt /nonexistent\n"), 0o644)
	for name, c := range map[string]struct {
		env     string
		overlay map[string][]byte
	}{
		"no map":     {"", nil},
		"empty map":  {filepath.Join(t.TempDir(), "missing.txt"), nil},
		"an overlay": {std, map[string][]byte{"a.go": []byte("package a")}},
	} {
		req := drive(packagesRequest(c.env, c.overlay), ".", []string{"."})
		if !req.NotHandled {
			t.Errorf("%s: handled", name)
		}
	}
	for v, want := range map[string]int{"1.22": 22, "1.22.3": 22, "1.23rc1": 23, "1": -1, "go1.2": -1} {
		got, ok := goMinor(v)
		if !ok {
			got = -1
		}
		if got != want {
			t.Errorf("goMinor(%q) = %d, want %d", v, got, want)
		}
	}
}

func packagesRequest(std string, overlay map[string][]byte) packagesDriverRequest {
	env := []string{"PATH=" + os.Getenv("PATH")}
	if std != "" {
		env = append(env, driverEnv+"="+std)
	}
	return packagesDriverRequest{Env: env, Overlay: overlay}
}
