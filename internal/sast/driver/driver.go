// Package driver is the program that runs the scanners inside the sandbox
// (/opt/quavon/bin/quavon-scan in the "scanners" image, the job's run
// command). It reads the host's sast.Request beside the source tree, runs
// every tool with Quavon's own configuration only (spec SC1), and writes
// each tool's raw report and the manifest (sast.Manifest) to the output
// directory, from where the entry program returns them as artefacts.
//
// It never decides what is a finding: the host parses the reports
// (package sast). It decides each tool's status: missing (no binary),
// no_files (nothing of its language changed), timed_out, failed (an exit
// code the tool uses for errors, or no report) or ok.
//
// What a repository could use to steer a tool, and how it is defeated:
//   - config files (eslint.config.js, .gitleaks.toml, .bandit, ruff.toml,
//     pyproject.toml, sgconfig.yml): every tool gets Quavon's config
//     explicitly (-c, --config, --ini, --no-config-lookup; Ruff runs as
//     WebAssembly with inline settings and reads no file but its inputs);
//     ast-grep and gitleaks run on a copy of the changed files alone, so
//     no repository file sits in their working directory, and the copy has
//     no .gitleaksignore at its root (gitleaks reads that file from the
//     scanned directory whatever --gitleaks-ignore-path says);
//   - inline suppressions: --no-inline-config, --ignore-nosec, -nosec,
//     --ignore-gitleaks-allow; `noqa` is blanked by the Ruff wrapper and
//     `ast-grep-ignore` here, in the copy, keeping every line and column;
//   - the environment: each tool gets an environment built from scratch
//     (GITLEAKS_CONFIG, NODE_OPTIONS, GOFLAGS … cannot come in), and Go
//     runs with GOTOOLCHAIN=local, GOPROXY=off, GOFLAGS=-mod=mod, no
//     go.work and no go.env.
package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/quavon/quavon/internal/sast"
)

// Config says where things are; DefaultConfig is the image's layout.
type Config struct {
	// Work holds the snapshot: Work/src and Work/scan-request.json.
	Work string
	// Out is where reports and the manifest go.
	Out string
	// Opt is Quavon's directory in the image (configs, wrappers,
	// versions.json).
	Opt string
	// Home is HOME and the root of every cache a tool writes.
	Home string
	// Path is PATH for every tool.
	Path string
	// DefaultTimeout bounds a tool when the request names no timeout.
	DefaultTimeout time.Duration
	// Parallel is how many tools run at once.
	Parallel int
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// DefaultConfig is the layout of the scanners image.
func DefaultConfig() Config {
	return Config{
		Work: "/work", Out: "/out", Opt: "/opt/quavon", Home: "/work/.home",
		Path:           "/opt/quavon/tools/bin:/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin",
		DefaultTimeout: 120 * time.Second,
		Parallel:       2,
	}
}

const (
	maxRequestBytes = 1 << 20
	maxFiles        = 10000
	maxStderrBytes  = 4096
	maxTimeout      = 30 * time.Minute
)

// Run scans and writes the manifest. It returns an error only when no
// manifest could be written or the request is unusable; a tool's failure
// is its status.
func Run(ctx context.Context, cfg Config) error {
	req, err := readRequest(filepath.Join(cfg.Work, sast.RequestFile))
	if err != nil {
		return err
	}
	src := filepath.Join(cfg.Work, sast.SourceDir)
	files, err := checkFiles(src, req.Files)
	if err != nil {
		return err
	}
	timeout := time.Duration(req.TimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = cfg.DefaultTimeout
	}
	timeout = min(timeout, maxTimeout)
	versions := readVersions(filepath.Join(cfg.Opt, "versions.json"))
	d := &driver{cfg: cfg, src: src, files: files, timeout: timeout}
	tools := req.Tools
	if len(tools) == 0 {
		tools = sast.Tools
	}
	m := sast.Manifest{Version: 1, Root: src}
	for _, t := range sast.Tools {
		if slices.Contains(tools, t) {
			m.Tools = append(m.Tools, sast.ToolRun{Tool: t})
		}
	}
	// Tools run Parallel at a time, the slowest (gosec: it type-checks
	// whole packages) first; the manifest keeps sast.Tools order.
	order := make([]int, len(m.Tools))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmpBool(m.Tools[b].Tool == sast.ToolGosec, m.Tools[a].Tool == sast.ToolGosec)
	})
	sem := make(chan struct{}, max(1, cfg.Parallel))
	var wg sync.WaitGroup
	for _, i := range order {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r := d.run(ctx, m.Tools[i].Tool)
			r.Version = versions[string(r.Tool)]
			m.Tools[i] = r
		})
	}
	wg.Wait()
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(cfg.Out, sast.ManifestArtefact), data, 0o644)
}

func readRequest(name string) (*sast.Request, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRequestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	if len(data) > maxRequestBytes {
		return nil, fmt.Errorf("request: larger than %d bytes", maxRequestBytes)
	}
	var req sast.Request
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	if req.Version != 1 {
		return nil, fmt.Errorf("request: version %d, want 1", req.Version)
	}
	for _, t := range req.Tools {
		if !t.Valid() {
			return nil, fmt.Errorf("request: unknown tool %q", t)
		}
	}
	return &req, nil
}

// checkFiles keeps the request's files that are clean relative paths of
// regular files in src (the snapshot has no links); anything else is an
// error, as the host built both.
func checkFiles(src string, names []string) ([]string, error) {
	if len(names) > maxFiles {
		return nil, fmt.Errorf("request: %d files, at most %d", len(names), maxFiles)
	}
	root, err := os.OpenRoot(src)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	defer root.Close()
	seen := make(map[string]bool, len(names))
	out := make([]string, 0, len(names))
	for _, n := range names {
		if !ValidPath(n) {
			return nil, fmt.Errorf("request: bad path %q", n)
		}
		if seen[n] {
			continue
		}
		seen[n] = true
		fi, err := root.Lstat(n)
		if err != nil {
			return nil, fmt.Errorf("request: %w", err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("request: %q is not a regular file", n)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

// ValidPath reports whether p is a clean, relative, slash-separated path
// of printable UTF-8 that no tool can take for a flag.
func ValidPath(p string) bool {
	if p == "" || len(p) > 4096 || !utf8.ValidString(p) || path.Clean(p) != p || path.IsAbs(p) ||
		p == "." || p == ".." || strings.HasPrefix(p, "../") || strings.HasPrefix(p, "-") {
		return false
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return false
		}
	}
	return true
}

func readVersions(name string) map[string]string {
	v := map[string]string{}
	data, err := os.ReadFile(name)
	if err == nil && len(data) < 64<<10 {
		json.Unmarshal(data, &v) // a broken file only loses the versions
	}
	return v
}

type driver struct {
	cfg     Config
	src     string
	files   []string
	timeout time.Duration
}

// Extensions each tool scans.
var (
	pyExt     = []string{".py", ".pyi"}
	goExt     = []string{".go"}
	jsExt     = []string{".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx"}
	astGrepEx = []string{".go", ".py", ".pyi", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx",
		".java", ".rb"}
)

func (d *driver) pick(exts []string) []string {
	var out []string
	for _, f := range d.files {
		if slices.Contains(exts, strings.ToLower(path.Ext(f))) {
			out = append(out, f)
		}
	}
	return out
}

func (d *driver) outPath(t sast.Tool) string {
	return filepath.Join(d.cfg.Out, sast.OutputArtefact(t))
}

// run runs one tool and returns its record.
func (d *driver) run(ctx context.Context, t sast.Tool) (r sast.ToolRun) {
	r.Tool = t
	start := time.Now()
	defer func() { r.DurationMillis = time.Since(start).Milliseconds() }()
	var inv *invocation
	var err error
	switch t {
	case sast.ToolASTGrep:
		inv, err = d.astGrep()
	case sast.ToolGitleaks:
		inv, err = d.gitleaks()
	case sast.ToolBandit:
		inv, err = d.bandit()
	case sast.ToolGosec:
		inv, err = d.gosec()
	case sast.ToolESLint:
		inv, err = d.eslint()
	case sast.ToolRuff:
		inv, err = d.ruff()
	}
	switch {
	case errors.Is(err, errMissing):
		r.Status, r.Error = sast.StatusMissing, err.Error()
		return r
	case err != nil:
		r.Status, r.Error = sast.StatusFailed, err.Error()
		return r
	case inv == nil:
		r.Status = sast.StatusNoFiles
		return r
	}
	r.Files = inv.files
	for _, c := range inv.cmds {
		res := d.exec(ctx, c)
		r.ExitCode = res.exitCode
		r.Stderr = res.stderr
		switch {
		case res.timedOut:
			r.Status, r.Error = sast.StatusTimedOut, fmt.Sprintf("killed after %s", d.timeout)
			return r
		case res.err != nil:
			r.Status, r.Error = sast.StatusFailed, res.err.Error()
			return r
		case !slices.Contains(c.okExit, res.exitCode):
			r.Status, r.Error = sast.StatusFailed, fmt.Sprintf("exit code %d", res.exitCode)
			return r
		}
	}
	if inv.finish != nil {
		if err := inv.finish(); err != nil {
			r.Status, r.Error = sast.StatusFailed, err.Error()
			return r
		}
	}
	if fi, err := os.Stat(d.outPath(t)); err != nil || !fi.Mode().IsRegular() {
		r.Status, r.Error = sast.StatusFailed, "the tool wrote no report"
		return r
	}
	r.Status, r.Output = sast.StatusOK, sast.OutputArtefact(t)
	return r
}

var errMissing = errors.New("not installed in this image")

// invocation is what running one tool takes: commands in order, then
// finish (which may merge reports).
type invocation struct {
	files  int
	cmds   []command
	finish func() error
}

type command struct {
	argv   []string
	dir    string
	env    []string
	okExit []int
	// stdout, when set, is the file that receives the tool's stdout.
	stdout string
}

// lookPath finds name on the driver's PATH only.
func (d *driver) lookPath(name string) (string, error) {
	for _, dir := range filepath.SplitList(d.cfg.Path) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, errMissing)
}

// env is the whole environment of every tool: nothing is inherited.
func (d *driver) env(extra ...string) []string {
	return append([]string{
		"PATH=" + d.cfg.Path, "HOME=" + d.cfg.Home, "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "TZ=UTC",
		"TMPDIR=" + filepath.Join(d.cfg.Home, "tmp"), "NO_COLOR=1", "CI=true",
	}, extra...)
}

// copyTree copies files from src to a fresh directory dir, applying edit
// to each file's content.
func (d *driver) copyTree(dir string, files []string, edit func([]byte) []byte) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	from, err := os.OpenRoot(d.src)
	if err != nil {
		return err
	}
	defer from.Close()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	to, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer to.Close()
	for _, f := range files {
		data, err := from.ReadFile(f)
		if err != nil {
			return err
		}
		if edit != nil {
			data = edit(data)
		}
		if err := to.MkdirAll(path.Dir(f), 0o700); err != nil {
			return err
		}
		if err := to.WriteFile(f, data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// BlankASTGrepIgnore replaces every ast-grep-ignore suppression marker with
// spaces of the same length, so Quavon's rules report what a repository
// tried to suppress and every line and column stays where it was.
func BlankASTGrepIgnore(data []byte) []byte {
	const marker = "ast-grep-ignore"
	if !bytes.Contains(data, []byte(marker)) {
		return data
	}
	return bytes.ReplaceAll(data, []byte(marker), bytes.Repeat([]byte(" "), len(marker)))
}

func (d *driver) astGrep() (*invocation, error) {
	bin, err := d.lookPath("ast-grep")
	if err != nil {
		return nil, err
	}
	files := d.pick(astGrepEx)
	if len(files) == 0 {
		return nil, nil
	}
	dir := filepath.Join(d.cfg.Home, "scan-ast-grep")
	if err := d.copyTree(dir, files, BlankASTGrepIgnore); err != nil {
		return nil, fmt.Errorf("copy: %w", err)
	}
	argv := append([]string{bin, "scan", "-c", filepath.Join(d.cfg.Opt, "ast-grep", "sgconfig.yml"),
		"--json=stream", "--include-metadata", "--"}, files...)
	// ast-grep writes its report to stdout.
	return &invocation{files: len(files), cmds: []command{{argv: argv, dir: dir, env: d.env(), okExit: []int{0, 1},
		stdout: d.outPath(sast.ToolASTGrep)}}}, nil
}

func (d *driver) gitleaks() (*invocation, error) {
	bin, err := d.lookPath("gitleaks")
	if err != nil {
		return nil, err
	}
	files := slices.Clone(d.files)
	if len(files) == 0 {
		return nil, nil
	}
	dir := filepath.Join(d.cfg.Home, "scan-gitleaks")
	if err := d.copyTree(dir, files, nil); err != nil {
		return nil, fmt.Errorf("copy: %w", err)
	}
	// gitleaks loads <source>/.gitleaksignore whatever the flags say.
	if err := os.Remove(filepath.Join(dir, ".gitleaksignore")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	argv := []string{bin, "dir", "--config", filepath.Join(d.cfg.Opt, "gitleaks.toml"),
		"--gitleaks-ignore-path", filepath.Join(d.cfg.Opt, "empty"), "--ignore-gitleaks-allow",
		"--no-banner", "--no-color", "--redact", "--report-format", "json", "--report-path", d.outPath(sast.ToolGitleaks),
		"--exit-code", "0", "--log-level", "error", "."}
	return &invocation{files: len(files), cmds: []command{{argv: argv, dir: dir, env: d.env(), okExit: []int{0}}}}, nil
}

func (d *driver) bandit() (*invocation, error) {
	bin, err := d.lookPath("bandit")
	if err != nil {
		return nil, err
	}
	files := d.pick(pyExt)
	if len(files) == 0 {
		return nil, nil
	}
	argv := append([]string{bin, "--ini", filepath.Join(d.cfg.Opt, "bandit.ini"),
		"-c", filepath.Join(d.cfg.Opt, "bandit.yaml"), "--ignore-nosec", "-q",
		"-f", "json", "-o", d.outPath(sast.ToolBandit), "--"}, files...)
	return &invocation{files: len(files), cmds: []command{{argv: argv, dir: d.src, env: d.env("PYTHONDONTWRITEBYTECODE=1", "PYTHONNOUSERSITE=1"), okExit: []int{0, 1}}}}, nil
}

func (d *driver) eslint() (*invocation, error) {
	bin, err := d.lookPath("eslint")
	if err != nil {
		return nil, err
	}
	files := d.pick(jsExt)
	if len(files) == 0 {
		return nil, nil
	}
	argv := append([]string{bin, "--no-config-lookup", "--no-inline-config",
		"-c", filepath.Join(d.cfg.Opt, "eslint", "security.config.js"),
		"--no-warn-ignored", "-f", "json", "-o", d.outPath(sast.ToolESLint), "--"}, files...)
	return &invocation{files: len(files), cmds: []command{{argv: argv, dir: d.src, env: d.env(), okExit: []int{0, 1}}}}, nil
}

func (d *driver) ruff() (*invocation, error) {
	node, err := d.lookPath("node")
	if err != nil {
		return nil, err
	}
	script := filepath.Join(d.cfg.Opt, "ruff", "check.mjs")
	if _, err := os.Stat(script); err != nil {
		return nil, fmt.Errorf("ruff wrapper: %w", errMissing)
	}
	files := d.pick([]string{".py", ".pyi"})
	if len(files) == 0 {
		return nil, nil
	}
	argv := append([]string{node, script, "--output", d.outPath(sast.ToolRuff), "--"}, files...)
	return &invocation{files: len(files), cmds: []command{{argv: argv, dir: d.src, env: d.env(), okExit: []int{0}}}}, nil
}

// goEnv pins the Go command to the image's toolchain and module cache:
// nothing from the network, the repository's go.work or a go.env.
func (d *driver) goEnv() []string {
	return d.env("GOTOOLCHAIN=local", "GOFLAGS=-mod=mod", "GOPROXY=off", "GOSUMDB=off", "GONOSUMCHECK=1",
		"GOWORK=off", "GOENV=off", "GOTELEMETRY=off", "CGO_ENABLED=0",
		"GOCACHE="+filepath.Join(d.cfg.Home, "go-build"), "GOMODCACHE="+filepath.Join(d.cfg.Home, "gomod"),
		"GOPATH="+filepath.Join(d.cfg.Home, "go"), "GOTMPDIR="+filepath.Join(d.cfg.Home, "tmp"))
}

// gosec runs once per Go module that holds a changed file, on the changed
// files' packages, and merges the reports into one.
func (d *driver) gosec() (*invocation, error) {
	bin, err := d.lookPath("gosec")
	if err != nil {
		return nil, err
	}
	if _, err := d.lookPath("go"); err != nil {
		return nil, err
	}
	files := d.pick(goExt)
	if len(files) == 0 {
		return nil, nil
	}
	// module root → package directories (relative to the root)
	mods := map[string][]string{}
	var order []string
	for _, f := range files {
		dir := path.Dir(f)
		mod := d.moduleRoot(dir)
		pkg := "."
		if dir != mod {
			pkg = "./" + strings.TrimPrefix(dir, mod+"/")
			if mod == "." {
				pkg = "./" + dir
			}
		}
		if _, ok := mods[mod]; !ok {
			order = append(order, mod)
		}
		if !slices.Contains(mods[mod], pkg) {
			mods[mod] = append(mods[mod], pkg)
		}
	}
	if err := seedGoCache(filepath.Join(d.cfg.Opt, "gocache"), filepath.Join(d.cfg.Home, "go-build")); err != nil {
		return nil, fmt.Errorf("go build cache: %w", err)
	}
	inv := &invocation{files: len(files)}
	var parts []string
	for i, mod := range order {
		part := filepath.Join(d.cfg.Home, fmt.Sprintf("gosec-%d.json", i))
		parts = append(parts, part)
		argv := append([]string{bin, "-nosec", "-fmt", "json", "-out", part}, mods[mod]...)
		inv.cmds = append(inv.cmds, command{argv: argv, dir: filepath.Join(d.src, filepath.FromSlash(mod)),
			env: d.goEnv(), okExit: []int{0, 1}})
	}
	inv.finish = func() error { return mergeGosec(parts, d.outPath(sast.ToolGosec)) }
	return inv, nil
}

// seedGoCache makes cache a Go build cache that holds the image's
// prebuilt standard library (seed, read-only): every file is a symlink into
// seed, so nothing is copied, and the go command adds its own entries
// beside them. Without it gosec's `go list -export` compiles the standard
// library on every scan (half a minute under gVisor). trim.txt is written
// fresh: from an old one the go command would trim the seeded entries as
// unused. No seed (an image without one) is not an error.
func seedGoCache(seed, cache string) error {
	if _, err := os.Stat(seed); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	err := filepath.WalkDir(seed, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(seed, p)
		dst := filepath.Join(cache, rel)
		switch {
		case e.IsDir():
			return os.MkdirAll(dst, 0o700)
		case e.Type().IsRegular() && rel != "trim.txt":
			if err := os.Symlink(p, dst); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(cache, "trim.txt"), []byte(fmt.Sprintf("%d\n", time.Now().Unix())), 0o600)
}

// moduleRoot is the nearest directory at or above dir (within the source)
// that holds a go.mod; "." when none does (gosec then runs from the root).
func (d *driver) moduleRoot(dir string) string {
	for {
		if fi, err := os.Lstat(filepath.Join(d.src, filepath.FromSlash(dir), "go.mod")); err == nil && fi.Mode().IsRegular() {
			return dir
		}
		if dir == "." || dir == "/" || dir == "" {
			return "."
		}
		dir = path.Dir(dir)
	}
}

// mergeGosec joins gosec's per-module reports: Issues concatenated,
// "Golang errors" merged. A missing part (gosec wrote nothing) is an error.
func mergeGosec(parts []string, out string) error {
	if len(parts) == 1 {
		data, err := os.ReadFile(parts[0])
		if err != nil {
			return fmt.Errorf("gosec report: %w", err)
		}
		return os.WriteFile(out, data, 0o644)
	}
	merged := struct {
		Errors  map[string]json.RawMessage `json:"Golang errors"`
		Issues  []json.RawMessage          `json:"Issues"`
		Version string                     `json:"GosecVersion,omitempty"`
	}{Errors: map[string]json.RawMessage{}, Issues: []json.RawMessage{}}
	for _, p := range parts {
		data, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("gosec report: %w", err)
		}
		var one struct {
			Errors  map[string]json.RawMessage `json:"Golang errors"`
			Issues  []json.RawMessage          `json:"Issues"`
			Version string                     `json:"GosecVersion"`
		}
		if err := json.Unmarshal(data, &one); err != nil {
			return fmt.Errorf("gosec report %s: %w", filepath.Base(p), err)
		}
		for k, v := range one.Errors {
			merged.Errors[k] = v
		}
		merged.Issues = append(merged.Issues, one.Issues...)
		merged.Version = one.Version
	}
	data, err := json.Marshal(merged)
	if err != nil {
		return err
	}
	return os.WriteFile(out, data, 0o644)
}

type execResult struct {
	exitCode int
	timedOut bool
	stderr   string
	err      error
}

// exec runs c in its own process group with the tool timeout; the group is
// killed at the deadline (gosec's go list children included).
func (d *driver) exec(ctx context.Context, c command) execResult {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	if err := os.MkdirAll(filepath.Join(d.cfg.Home, "tmp"), 0o700); err != nil {
		return execResult{err: err}
	}
	cmd := exec.CommandContext(ctx, c.argv[0], c.argv[1:]...)
	cmd.Dir, cmd.Env = c.dir, c.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	stderr := &tailBuffer{max: maxStderrBytes}
	cmd.Stderr = stderr
	if c.stdout != "" {
		f, err := os.OpenFile(c.stdout, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return execResult{err: err}
		}
		defer f.Close()
		cmd.Stdout = f
	}
	err := cmd.Run()
	res := execResult{stderr: strings.ToValidUTF8(stderr.String(), "\uFFFD")}
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		res.timedOut = true
		return res
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.exitCode = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.err = fmt.Errorf("killed by %s", ws.Signal())
		}
	case err != nil:
		res.err = err
	}
	return res
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	if len(t.buf) > t.max {
		return string(t.buf[len(t.buf)-t.max:])
	}
	return string(t.buf)
}
