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
	"cmp"
	"fmt"
	"go/build"
	"io"
	"log"
	"os"
	"os/exec"
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
	// GoList, when set, receives `go list -e -json=GoListFields --
	// Packages` (the caller's notes on files outside the build), run
	// beside the load rather than before it.
	GoList       string
	GoListFields string
	// StdExport, when set, is the map of the standard library's prebuilt
	// export data (the scanners image's /opt/quavon/gocache-std.txt): the
	// load then compiles none of Packages (see driver.go).
	StdExport string
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
	for _, p := range opt.Packages {
		dir := filepath.FromSlash(p)
		if opt.Dir != "" {
			dir = filepath.Join(opt.Dir, dir)
		}
		if _, err := os.Stat(dir); err != nil {
			logger.Printf("Skipping: %s. Path doesn't exist.", dir)
			continue
		}
		if _, err := build.Default.ImportDir(dir, build.ImportComment); err != nil {
			a.AppendError(p, fmt.Errorf("importing dir %q: %w", p, err))
			continue
		}
		patterns = append(patterns, p)
	}
	listed := make(chan error, 1)
	if opt.GoList != "" {
		go func() { listed <- goList(opt) }()
	} else {
		listed <- nil
	}
	var parseErrs = map[string][]gosecpkg.Error{}
	if len(patterns) > 0 {
		cfg := &packages.Config{Mode: gosecpkg.LoadMode, Dir: opt.Dir, Tests: opt.Tests}
		if err := driverConfig(cfg, opt.StdExport); err != nil {
			return false, err
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
	if err := <-listed; err != nil {
		return false, err
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

// goList writes the go command's view of the packages to opt.GoList; an
// exit status of 1 (errors it reports in the packages) is not an error.
func goList(opt Options) error {
	f, err := os.Create(opt.GoList)
	if err != nil {
		return fmt.Errorf("go list: %w", err)
	}
	defer f.Close()
	cmd := exec.Command("go", append([]string{"list", "-e", "-json=" + opt.GoListFields, "--"}, opt.Packages...)...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = opt.Dir, f, opt.Log
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("go list: %w", err)
	}
	return f.Close()
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
