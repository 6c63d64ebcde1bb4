// Package gosec runs gosec's analysis in-process over the packages of one
// Go module, with one go/packages load for all of them, and writes the
// report `gosec -nosec [-tests] -fmt json` would write.
//
// Why: the gosec command loads every package on its own (one `go list
// -export -deps` per package), and under gVisor each such run costs most
// of a second; one load for the whole set does the same work once. What
// it checks is gosec's own default set: every rule and every analyzer
// gosec enables without a configuration, with #nosec ignored (spec SC1),
// so its findings are the gosec command's. Each directory is first read
// as gosec reads it (go/build's ImportDir: a directory without Go files
// for this build is skipped silently, any other error is recorded
// against the path), then loaded by its path ("./p", not its files),
// which gives the same files, the same test variants and the same types.
// With Options.StdExport the load compiles none of the packages (see
// driver.go).
package gosec

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"go/build"
	"io"
	"log"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"

	gosecpkg "github.com/securego/gosec/v2"
	"github.com/securego/gosec/v2/analyzers"
	"github.com/securego/gosec/v2/issue"
	jsonreport "github.com/securego/gosec/v2/report/json"
	"github.com/securego/gosec/v2/rules"
	"golang.org/x/tools/go/packages"
)

// Options is one run.
type Options struct {
	// Dir is the module root, "" for the working directory (then paths
	// in errors read as gosec's own, relative to it); Packages are
	// relative to it ("." or "./a/b").
	Dir      string
	Packages []string
	// Tests includes each package's test files (gosec -tests).
	Tests bool
	// Log receives gosec's progress lines; nil discards them.
	Log io.Writer
	// Files, when set, receives for each of Packages' directories the
	// files Go builds there and those it leaves out (the caller's notes on
	// files gosec did not scan): go/build's ImportDir of the directory, the
	// reading gosec's load starts from, written as the JSON stream of `go
	// list -e -json=Dir,GoFiles,CgoFiles,TestGoFiles,XTestGoFiles,IgnoredGoFiles,InvalidGoFiles,Error`.
	// It used to be that go list, run beside the load: a second go command
	// walking the same packages and their dependencies, about 0.5 s under
	// gVisor for what ImportDir has already read.
	Files string
	// StdExport, when set, is the map of the standard library's prebuilt
	// export data (the scanners image's /opt/quavon/gocache-std.txt): the
	// load then compiles none of Packages (see driver.go).
	StdExport string
	// CacheSeed, when set, is the image's prebuilt build cache, of which
	// the caller seeded GOCACHE only with what go list reads: the rest is
	// seeded before anything is compiled (gocache.Seed).
	CacheSeed string
}

// Version is the gosec module's version as gosec reports itself
// ("2.30.0"), or "" when the binary carries no build information.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, m := range bi.Deps {
		if m.Path == "github.com/securego/gosec/v2" {
			return strings.TrimPrefix(m.Version, "v")
		}
	}
	return ""
}

// Run analyses the packages and writes gosec's JSON report to w. It
// returns whether the report holds an issue or an error (gosec's exit code
// 1), or an error when no report could be made.
func Run(opt Options, w io.Writer) (bool, error) {
	logw := opt.Log
	if logw == nil {
		logw = io.Discard
	}
	logger := log.New(logw, "[gosec] ", log.LstdFlags)
	conf := gosecpkg.NewConfig()
	conf.SetGlobal(gosecpkg.Nosec, "true")
	ruleList := rules.Generate(false)
	analyzerList := analyzers.Generate(false)
	a := gosecpkg.NewAnalyzer(conf, opt.Tests, false, false, 1, logger)
	a.LoadRules(ruleList.RulesInfo())
	a.LoadAnalyzers(analyzerList.AnalyzersInfo())

	// As gosec's load: ImportDir first; a directory it cannot import is an
	// error against that path (AppendError drops "no buildable Go files").
	var patterns []string
	var files []dirFiles
	bctx := buildContext()
	for _, p := range opt.Packages {
		dir := filepath.FromSlash(p)
		if opt.Dir != "" {
			dir = filepath.Join(opt.Dir, dir)
		}
		if _, err := os.Stat(dir); err != nil {
			logger.Printf("Skipping: %s. Path doesn't exist.", dir)
			continue
		}
		bp, err := bctx.ImportDir(dir, build.ImportComment)
		files = append(files, filesOf(dir, bp, err))
		if err != nil {
			a.AppendError(p, fmt.Errorf("importing dir %q: %w", p, err))
			continue
		}
		patterns = append(patterns, p)
	}
	if opt.Files != "" {
		if err := writeFiles(opt.Files, files); err != nil {
			return false, err
		}
	}
	var parseErrs = map[string][]gosecpkg.Error{}
	if len(patterns) > 0 {
		cfg := &packages.Config{Mode: gosecpkg.LoadMode, Dir: opt.Dir, Tests: opt.Tests}
		if err := driverConfig(cfg, opt.StdExport, opt.CacheSeed); err != nil {
			return false, err
		}
		if opt.StdExport == "" && opt.CacheSeed != "" {
			// go/packages' own go list -export compiles every package.
			if err := seedCache(opt.CacheSeed, os.Environ()); err != nil {
				return false, err
			}
		}
		pkgs, err := packages.Load(cfg, patterns...)
		if err != nil {
			for _, p := range patterns {
				a.AppendError(p, fmt.Errorf("loading files from package %q: %w", p, err))
			}
		}
		pinGoVersion(pkgs)
		for _, pkg := range pkgs {
			if pkg.Name == "" {
				continue
			}
			errs, err := gosecpkg.ParseErrors(pkg)
			if err != nil {
				a.AppendError(pkg.PkgPath, fmt.Errorf("parsing errors in pkg %q: %w", pkg.Name, err))
				continue
			}
			for f, e := range errs {
				parseErrs[f] = append(parseErrs[f], e...)
			}
			a.CheckRules(pkg)
			a.CheckAnalyzers(pkg)
		}
	}
	issues, metrics, errs := a.Report()
	for f, e := range parseErrs {
		errs[f] = append(errs[f], e...)
	}
	for _, e := range errs {
		sort.Slice(e, func(i, j int) bool {
			if e[i].Line == e[j].Line {
				return e[i].Column <= e[j].Column
			}
			return e[i].Line < e[j].Line
		})
	}
	sortIssues(issues)
	found := 0
	for _, is := range issues {
		if len(is.Suppressions) == 0 {
			found++
		}
	}
	metrics.NumFound = found
	info := gosecpkg.NewReportInfo(issues, metrics, errs).WithVersion(Version())
	if err := jsonreport.WriteReport(w, info); err != nil {
		return false, fmt.Errorf("gosec report: %w", err)
	}
	return len(issues) > 0 || len(errs) > 0, nil
}

// goVersionEnv is where gosec looks for the module's Go version before it
// asks the go command (gosec.GoVersion).
const goVersionEnv = "GOSECGOVERSION"

// pinGoVersion hands gosec the main module's Go version as the load read it
// from go.mod. The rules that depend on it (G601 and the version checks of
// G304 and G402) otherwise ask `go list -m -json` once, in a process of its
// own after the load (0.1–0.15 s under gVisor), and in the working
// directory rather than Options.Dir. A version already in the environment
// is left alone, as is a load that found no module (gosec then asks, as
// before).
func pinGoVersion(pkgs []*packages.Package) {
	if _, ok := os.LookupEnv(goVersionEnv); ok {
		return
	}
	for _, p := range pkgs {
		if p.Module != nil && p.Module.Main && p.Module.GoVersion != "" {
			os.Setenv(goVersionEnv, p.Module.GoVersion)
			return
		}
	}
}

// buildContext is go/build's default context with cgo as the environment
// has it now (build.Default read CGO_ENABLED when the process started), so
// that ImportDir leaves out the files the go command leaves out. Build tags
// in GOFLAGS are not read: the driver's GOFLAGS holds none.
func buildContext() build.Context {
	ctx := build.Default
	switch os.Getenv("CGO_ENABLED") {
	case "0":
		ctx.CgoEnabled = false
	case "1":
		ctx.CgoEnabled = true
	}
	return ctx
}

// dirFiles is one directory's entry of Options.Files, in go list's
// field names.
type dirFiles struct {
	Dir                                                                          string
	GoFiles, CgoFiles, TestGoFiles, XTestGoFiles, IgnoredGoFiles, InvalidGoFiles []string              `json:",omitempty"`
	Error                                                                        *struct{ Err string } `json:",omitempty"`
}

// filesOf is dir's entry from its ImportDir: the package as far as it was
// read, and the error, if any (no buildable files, a file that does not
// parse, two package names).
func filesOf(dir string, bp *build.Package, err error) dirFiles {
	if abs, aerr := filepath.Abs(dir); aerr == nil {
		dir = abs
	}
	f := dirFiles{Dir: dir}
	if bp != nil {
		f.GoFiles, f.CgoFiles, f.TestGoFiles, f.XTestGoFiles = bp.GoFiles, bp.CgoFiles, bp.TestGoFiles, bp.XTestGoFiles
		f.IgnoredGoFiles, f.InvalidGoFiles = bp.IgnoredGoFiles, bp.InvalidGoFiles
	}
	if err != nil {
		f.Error = &struct{ Err string }{err.Error()}
	}
	return f
}

// writeFiles writes the entries as a JSON stream, one object per
// directory.
func writeFiles(path string, files []dirFiles) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "\t")
	for _, f := range files {
		if err := enc.Encode(f); err != nil {
			return err
		}
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("files: %w", err)
	}
	return nil
}

// sortIssues orders issues as the gosec command does (-sort, its
// default): by severity, rule text, file and line, descending.
func sortIssues(issues []*issue.Issue) {
	line := func(s string) int {
		n, _ := strconv.Atoi(strings.Split(s, "-")[0])
		return n
	}
	slices.SortFunc(issues, func(i, j *issue.Issue) int {
		return -cmp.Or(
			cmp.Compare(i.Severity, j.Severity),
			cmp.Compare(i.What, j.What),
			cmp.Compare(i.File, j.File),
			cmp.Compare(line(i.Line), line(j.Line)),
		)
	})
}
