// Package driver is the program that runs the scanners inside the sandbox
// (/opt/quavon/bin/quavon-scan in the "scanners" image, the job's run
// command). It reads the host's sast.Request beside the source tree, runs
// every tool with Quavon's own configuration only (spec SC1), and writes
// each tool's raw report and the manifest (sast.Manifest) to the output
// directory, from where the entry program returns them as artefacts.
//
// It never decides what is a finding: the host parses the reports
// (package sast). How each tool is run is in that tool's file in package
// sast (tool_<name>.go); the driver only executes it. Every tool but
// gosec gets the changed files under neutral names (changed/<i>/f<ext>),
// gosec their repository layout (src/). What a tool is not given, or says
// it skipped, goes into its record as notes (ToolRun.NotCovered), from
// which the host lists the files not scanned. It decides each
// tool's status: missing (no binary),
// no_files (nothing of its language changed), timed_out, failed (an exit
// code the tool uses for errors, or no report) or ok.
//
// What a repository could use to steer a tool, and how it is defeated:
//   - config files (eslint.config.js, .gitleaks.toml, .bandit, ruff.toml,
//     pyproject.toml, sgconfig.yml): every tool gets Quavon's config
//     explicitly (-c, --config, --ini, --no-config-lookup; Ruff runs as
//     WebAssembly with inline settings and reads no file but its inputs);
//     all but gosec run where only neutral names are, so no repository
//     file name means anything to them, and gitleaks' copy has no
//     .gitleaksignore at its root (gitleaks reads that file from the
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
	// maxLogBytes caps a tool's whole stderr kept for its Finish (the
	// gitleaks debug log: one line per skipped file).
	maxLogBytes = 16 << 20
	maxTimeout  = 30 * time.Minute
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
	changed := filepath.Join(cfg.Work, sast.ChangedDir)
	files, err := checkFiles(changed, src, req.Files)
	if err != nil {
		return err
	}
	timeout := time.Duration(req.TimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = cfg.DefaultTimeout
	}
	timeout = min(timeout, maxTimeout)
	versions := readVersions(filepath.Join(cfg.Opt, "versions.json"))
	d := &driver{cfg: cfg, files: files, timeout: timeout,
		ws: &sast.Workspace{Src: src, Changed: changed, Out: cfg.Out, Opt: cfg.Opt, Home: cfg.Home, Path: cfg.Path}}
	tools := req.Tools
	if len(tools) == 0 {
		tools = sast.Tools
	}
	m := sast.Manifest{Version: sast.RequestVersion, Root: src}
	for _, t := range sast.Tools {
		if slices.Contains(tools, t) {
			m.Tools = append(m.Tools, sast.ToolRun{Tool: t})
		}
	}
	// Tools run Parallel at a time, the costliest first (longest
	// processing time first: the two lanes end close together); the
	// manifest keeps sast.Tools order.
	order := make([]int, len(m.Tools))
	for i := range order {
		order[i] = i
	}
	cost := func(i int) int { return sast.ScannerOf(m.Tools[i].Tool).Cost }
	slices.SortStableFunc(order, func(a, b int) int { return cost(b) - cost(a) })
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
	if req.Version != sast.RequestVersion {
		return nil, fmt.Errorf("request: version %d, want %d", req.Version, sast.RequestVersion)
	}
	for _, t := range req.Tools {
		if !t.Valid() {
			return nil, fmt.Errorf("request: unknown tool %q", t)
		}
	}
	return &req, nil
}

// checkFiles turns the request's files into targets: each one's neutral
// name must be a regular file in changed, and its Src, when it has one, a
// clean relative path of a regular file in src (the snapshot has no
// links). Anything else is an error, as the host built both.
func checkFiles(changed, src string, files []sast.ScanFile) ([]sast.Target, error) {
	if len(files) > maxFiles {
		return nil, fmt.Errorf("request: %d files, at most %d", len(files), maxFiles)
	}
	croot, err := os.OpenRoot(changed)
	if err != nil && len(files) > 0 {
		return nil, fmt.Errorf("changed files: %w", err)
	}
	if croot != nil {
		defer croot.Close()
	}
	sroot, err := os.OpenRoot(src)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	defer sroot.Close()
	regular := func(root *os.Root, n string) error {
		fi, err := root.Lstat(n)
		if err != nil {
			return fmt.Errorf("request: %w", err)
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("request: %q is not a regular file", n)
		}
		return nil
	}
	seen := map[string]bool{}
	out := make([]sast.Target, 0, len(files))
	for i, f := range files {
		if f.Ext != sast.NeutralExt("f"+f.Ext) {
			return nil, fmt.Errorf("request: bad extension %q", f.Ext)
		}
		t := sast.Target{Index: i, Neutral: sast.NeutralName(i, f.Ext), Src: f.Src}
		if err := regular(croot, t.Neutral); err != nil {
			return nil, err
		}
		if t.Src != "" {
			if !ValidPath(t.Src) || seen[t.Src] {
				return nil, fmt.Errorf("request: bad path %q", t.Src)
			}
			seen[t.Src] = true
			if err := regular(sroot, t.Src); err != nil {
				return nil, err
			}
		}
		out = append(out, t)
	}
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
	ws      *sast.Workspace
	files   []sast.Target
	timeout time.Duration
}

// run runs one tool and returns its record.
func (d *driver) run(ctx context.Context, t sast.Tool) (r sast.ToolRun) {
	r.Tool = t
	start := time.Now()
	defer func() { r.DurationMillis = time.Since(start).Milliseconds() }()
	s := sast.ScannerOf(t)
	var files []sast.Target
	for _, f := range d.files {
		if s.Covers(f.Neutral) {
			files = append(files, f)
		}
	}
	var inv *sast.Invocation
	err := s.Installed(d.ws)
	if err == nil && len(files) > 0 {
		inv, err = s.Invoke(d.ws, files)
	}
	switch {
	case errors.Is(err, sast.ErrMissing):
		r.Status, r.Error = sast.StatusMissing, err.Error()
		return r
	case err != nil:
		r.Status, r.Error = sast.StatusFailed, err.Error()
		return r
	case inv == nil:
		r.Status = sast.StatusNoFiles
		return r
	}
	r.Files = inv.Files
	r.NotCovered = inv.NotCovered
	for _, c := range inv.Cmds {
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
		case !slices.Contains(c.OKExit, res.exitCode):
			r.Status, r.Error = sast.StatusFailed, fmt.Sprintf("exit code %d", res.exitCode)
			return r
		}
	}
	if inv.Finish != nil {
		notes, err := inv.Finish()
		if err != nil {
			r.Status, r.Error = sast.StatusFailed, err.Error()
			return r
		}
		r.NotCovered = append(r.NotCovered, notes...)
	}
	if fi, err := os.Stat(d.ws.OutPath(t)); err != nil || !fi.Mode().IsRegular() {
		r.Status, r.Error = sast.StatusFailed, "the tool wrote no report"
		return r
	}
	sast.CompactReport(t, d.ws.OutPath(t))
	r.Status, r.Output = sast.StatusOK, sast.OutputArtefact(t)
	return r
}

type execResult struct {
	exitCode int
	timedOut bool
	stderr   string
	err      error
}

// exec runs c in its own process group with the tool timeout; the group is
// killed at the deadline (gosec's go list children included).
func (d *driver) exec(ctx context.Context, c sast.Command) execResult {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	if err := os.MkdirAll(filepath.Join(d.cfg.Home, "tmp"), 0o700); err != nil {
		return execResult{err: err}
	}
	cmd := exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
	cmd.Dir, cmd.Env = c.Dir, c.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	stderr := &tailBuffer{max: maxStderrBytes}
	cmd.Stderr = stderr
	if c.Stderr != "" {
		f, err := os.OpenFile(c.Stderr, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return execResult{err: err}
		}
		defer f.Close()
		cmd.Stderr = io.MultiWriter(stderr, &capWriter{w: f, n: maxLogBytes})
	}
	if c.Stdout != "" {
		f, err := os.OpenFile(c.Stdout, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
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

// capWriter writes the first n bytes to w and drops the rest.
type capWriter struct {
	w io.Writer
	n int
}

func (c *capWriter) Write(p []byte) (int, error) {
	if k := min(len(p), c.n); k > 0 {
		c.w.Write(p[:k])
		c.n -= k
	}
	return len(p), nil
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
