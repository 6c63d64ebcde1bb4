package gosec

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"go/build"
	"go/version"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/quavon/quavon/internal/sast/gocache"
	"golang.org/x/tools/go/packages"
)

// The load without compiling the scanned packages.
//
// go/packages asks `go list -export` for every package it lists when it
// needs types, so the go command compiles each scanned package (and its
// test variants) although go/packages type-checks those from source and
// reads export data only for their dependencies. Under gVisor those
// compiler runs were most of gosec's time (15 packages: 1.5 s under runsc,
// 0.6 s under runc). With Options.StdExport, go/packages is given this
// same program as its driver (GOPACKAGESDRIVER, the protocol go/packages
// documents), which lists the packages with go/packages' own go list
// driver but without -export, and names the export data of each
// dependency: a standard package's from the image's prebuilt cache (the
// map the image build writes), any other's from one `go list -export` of
// just those packages. go/packages then type-checks the scanned packages
// from source as before, so gosec sees the same syntax and types.
//
// What differs: the go command's own compile errors of a scanned package
// are no longer reported (its type errors still are, under their files),
// as nothing compiles it. A request the driver cannot serve exactly (an
// overlay, a dependency that is itself a test variant, a module asking
// for a newer Go than this one, no readable map) is handed back
// (NotHandled) and go/packages runs go list as before.

// driverEnv names, in the driver's environment, the map of the standard
// library's export data; it is what tells this program it runs as the
// driver.
const driverEnv = "QUAVON_GOSEC_STD_EXPORT"

// seedEnv names, in the driver's environment, the image's prebuilt build
// cache (Options.CacheSeed) to seed GOCACHE with before anything compiles.
const seedEnv = "QUAVON_GOSEC_CACHE_SEED"

// maxStdExportBytes bounds the map (the standard library is ~350 lines).
const maxStdExportBytes = 1 << 20

// IsDriver reports whether this process was started by go/packages as the
// driver of a load with Options.StdExport.
func IsDriver() bool { return os.Getenv(driverEnv) != "" }

// ServeDriver answers one go/packages driver request: patterns are the
// program's arguments, the request arrives on in, the response goes to
// out.
func ServeDriver(patterns []string, in io.Reader, out io.Writer) error {
	var req packages.DriverRequest
	if err := json.NewDecoder(io.LimitReader(in, 64<<20)).Decode(&req); err != nil {
		return fmt.Errorf("driver request: %w", err)
	}
	dir, err := os.Getwd()
	if err != nil {
		return err
	}
	resp := drive(req, dir, patterns)
	if resp.NotHandled {
		// go/packages runs go list -export itself now.
		if err := seedCache(envValue(req.Env, seedEnv), req.Env); err != nil {
			return err
		}
	}
	return json.NewEncoder(out).Encode(resp)
}

// seedCache seeds the GOCACHE of env with all of seed ("" for none), for a
// go command about to compile.
func seedCache(seed string, env []string) error {
	cache := envValue(env, "GOCACHE")
	if seed == "" || cache == "" || cache == "off" {
		return nil
	}
	if err := gocache.Seed(seed, cache); err != nil {
		return fmt.Errorf("go build cache: %w", err)
	}
	return nil
}

// driverConfig is the load's configuration: with stdExport, this program
// is go/packages' driver.
func driverConfig(cfg *packages.Config, stdExport, cacheSeed string) error {
	if stdExport == "" {
		return nil
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("gosec driver: %w", err)
	}
	cfg.Env = append(withoutEnv(os.Environ(), "GOPACKAGESDRIVER", driverEnv, seedEnv),
		"GOPACKAGESDRIVER="+self, driverEnv+"="+stdExport)
	if cacheSeed != "" {
		cfg.Env = append(cfg.Env, seedEnv+"="+cacheSeed)
	}
	return nil
}

func drive(req packages.DriverRequest, dir string, patterns []string) *packages.DriverResponse {
	notHandled := &packages.DriverResponse{NotHandled: true}
	std, err := readStdExport(envValue(req.Env, driverEnv))
	if err != nil || len(req.Overlay) > 0 {
		return notHandled
	}
	env := append(withoutEnv(req.Env, "GOPACKAGESDRIVER", driverEnv, seedEnv), "GOPACKAGESDRIVER=off")
	// The same go list as go/packages' (files, compiled files, imports,
	// tests, modules) less -export: nothing is compiled.
	mode := req.Mode&^(packages.NeedTypes|packages.NeedTypesInfo|packages.NeedSyntax|packages.NeedTypesSizes|packages.NeedExportFile) |
		packages.NeedName | packages.NeedImports | packages.NeedDeps | packages.NeedModule
	// With cgo off, a package's compiled Go files are its Go files: what
	// go list -compiled adds is cgo's output. -compiled costs the go command
	// a hash of every source file of every dependency (the build's action
	// IDs): 2.2 s against 0.9 s of go list under runsc, 0.3 against 0.1
	// under runc. So the files are listed without it and copied, which is
	// what go/packages' own go list driver does for a package go list
	// reports no compiled files for; unsafe's stay empty, as there.
	// TestDriverMatchesGoList holds the outcome to go list -compiled's.
	compiledFromFiles := req.Mode&packages.NeedCompiledGoFiles != 0 && envValue(env, "CGO_ENABLED") == "0"
	if compiledFromFiles {
		mode = mode&^packages.NeedCompiledGoFiles | packages.NeedFiles
	}
	roots, err := packages.Load(&packages.Config{Mode: mode, Dir: dir, Env: env, BuildFlags: req.BuildFlags, Tests: req.Tests}, patterns...)
	if err != nil {
		return notHandled
	}
	if compiledFromFiles {
		packages.Visit(roots, nil, func(p *packages.Package) {
			if p.PkgPath != "unsafe" {
				p.CompiledGoFiles = p.GoFiles
			}
		})
	}
	resp := &packages.DriverResponse{Compiler: "gc", Arch: goarch(env)}
	isRoot := map[string]bool{}
	goVersion := ""
	for i, p := range roots {
		resp.Roots = append(resp.Roots, p.ID)
		isRoot[p.ID] = true
		v := ""
		if p.Module != nil {
			v = p.Module.GoVersion
		}
		if i > 0 && v != goVersion {
			return notHandled // one module per load; go/packages would check each against its own
		}
		goVersion = v
	}
	if goVersion != "" {
		// go/packages checks the scanned packages at the module's language
		// version; an external driver's response carries it here.
		minor, ok := goMinor(goVersion)
		if !ok || minor > toolchainMinor() {
			return notHandled
		}
		resp.GoVersion = minor
	}
	var missing []*packages.Package
	packages.Visit(roots, nil, func(p *packages.Package) {
		resp.Packages = append(resp.Packages, p)
		switch {
		case isRoot[p.ID] || p.ID == "unsafe":
		case std[p.ID] != "":
			p.ExportFile = std[p.ID]
		default:
			missing = append(missing, p)
		}
	})
	if len(missing) > 0 {
		var paths []string
		for _, p := range missing {
			if p.ID != p.PkgPath { // a test variant below the roots
				return notHandled
			}
			paths = append(paths, p.PkgPath)
		}
		// The rest (packages of the module the change left alone, modules
		// in the module cache): compiled as go/packages would have, on
		// the standard library's export data from the image.
		if err := seedCache(envValue(req.Env, seedEnv), req.Env); err != nil {
			return notHandled
		}
		listed, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedExportFile, Dir: dir, Env: env,
			BuildFlags: req.BuildFlags}, paths...)
		if err != nil {
			return notHandled
		}
		export := map[string]string{}
		for _, p := range listed {
			export[p.ID] = p.ExportFile
		}
		for _, p := range missing {
			p.ExportFile = export[p.ID]
		}
	}
	return resp
}

// readStdExport reads the map of the standard library's export data:
// lines "IMPORTPATH FILE" (`go list -export -deps -f '{{.ImportPath}}
// {{.Export}}' std` at image build; a package without export data, as
// unsafe, has no file and is left out).
func readStdExport(path string) (map[string]string, error) {
	if path == "" {
		return nil, errors.New("no map")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(io.LimitReader(f, maxStdExportBytes))
	for sc.Scan() {
		pkg, file, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if !ok || pkg == "" || file == "" {
			continue
		}
		m[pkg] = file
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(m) == 0 {
		return nil, errors.New("empty map")
	}
	return m, nil
}

// goMinor is the minor version of a go.mod go line ("1.22", "1.22.3",
// "1.23rc1"), as the go command reads it (go/version).
func goMinor(v string) (int, bool) {
	minor, ok := strings.CutPrefix(version.Lang("go"+v), "go1.")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(minor)
	return n, err == nil
}

// toolchainMinor is the minor version of the Go this program was built
// with: the scanners image builds it with the toolchain it ships.
func toolchainMinor() int {
	tags := build.Default.ReleaseTags
	n, _ := goMinor(strings.TrimPrefix(tags[len(tags)-1], "go"))
	return n
}

func goarch(env []string) string {
	if v := envValue(env, "GOARCH"); v != "" {
		return v
	}
	return runtime.GOARCH
}

func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val // the last one wins, as for exec
		}
	}
	return v
}

func withoutEnv(env []string, keys ...string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(keys, k) {
			out = append(out, kv)
		}
	}
	return out
}
