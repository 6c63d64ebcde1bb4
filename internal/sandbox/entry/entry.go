package entry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/quavon/quavon/internal/snapshot"
)

// Paths inside a sandbox container.
const (
	DefaultWorkDir = "/work"
	DefaultOutDir  = "/out"
	DefaultTmpDir  = "/tmp"
	DefaultShell   = "/bin/sh"
	// HomeName is HOME's name inside the work directory.
	HomeName = ".home"
)

// Config is where the entry program finds things and how it treats
// processes. Tests point the directories at temporary ones.
type Config struct {
	WorkDir string // the snapshot is extracted here; steps run here
	OutDir  string // artefacts are read from here
	TmpDir  string // must exist; the program itself writes nothing there
	Shell   string // runs each step as Shell -c <command>
	// HomeDir is created before the setup step; it must lie inside
	// WorkDir. Empty means WorkDir/.home.
	HomeDir string
	// Env is the steps' environment: the program's own. The run step gets
	// it without proxy variables.
	Env []string
	// PID1 makes the program the container's init: it reaps every process
	// and kills every other process between steps with kill(-1). Set it
	// only when os.Getpid() == 1; Run refuses it otherwise.
	PID1 bool
}

// DefaultConfig is the configuration inside a sandbox container, without
// Env and PID1, which the caller reads from the process.
func DefaultConfig() Config {
	return Config{WorkDir: DefaultWorkDir, OutDir: DefaultOutDir, TmpDir: DefaultTmpDir, Shell: DefaultShell}
}

func (c *Config) validate() error {
	if c.HomeDir == "" && c.WorkDir != "" {
		c.HomeDir = filepath.Join(c.WorkDir, HomeName)
	}
	for _, p := range []struct{ name, path string }{
		{"WorkDir", c.WorkDir}, {"OutDir", c.OutDir}, {"TmpDir", c.TmpDir}, {"Shell", c.Shell}, {"HomeDir", c.HomeDir},
	} {
		if !filepath.IsAbs(p.path) || filepath.Clean(p.path) != p.path {
			return fmt.Errorf("entry config: %s %q: want a clean absolute path", p.name, p.path)
		}
	}
	if rel, err := filepath.Rel(c.WorkDir, c.HomeDir); err != nil || rel == "." || !filepath.IsLocal(rel) {
		return fmt.Errorf("entry config: HomeDir %q is not inside WorkDir %q", c.HomeDir, c.WorkDir)
	}
	for _, d := range []string{c.WorkDir, c.OutDir, c.TmpDir} {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return fmt.Errorf("entry config: %s is not a directory", d)
		}
	}
	if names, err := readNames(c.WorkDir, 1); err != nil || len(names) > 0 {
		// The base snapshot goes into an empty tree; this also keeps a
		// misplaced run on a host from writing into a real /work.
		return fmt.Errorf("entry config: %s is not an empty directory", c.WorkDir)
	}
	if c.PID1 && os.Getpid() != 1 {
		// kill(-1) outside a container would hit every process of the user.
		return errors.New("entry config: PID1 set but this process is not PID 1")
	}
	return nil
}

func readNames(dir string, n int) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(n)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return names, err
}

// Run does one job: it reads the framed input from in, runs the steps and
// writes the output tar to out (see the package doc). It returns nil when
// the entry program did its job, whatever the steps' exit codes, and an
// error when it failed itself; the output is then still a well-formed tar
// whose exit.json carries the error, as far as out can be written.
func Run(ctx context.Context, cfg Config, in io.Reader, out io.Writer) error {
	j := &job{cfg: cfg, out: newOutput(out)}
	exit := &Exit{Run: StepResult{Step: "run"}}
	err := j.cfg.validate()
	if err == nil {
		release := j.cfg.takeOver()
		err = j.do(ctx, in, exit)
		if j.cfg.PID1 {
			j.killAll(-1) // each step ended with this already; make sure
		}
		release()
	}
	// Logs and artefacts are written even after an error: they say what
	// the steps did before it.
	werr := j.finish(exit, err)
	return errors.Join(err, werr)
}

type job struct {
	cfg            Config
	out            *output
	req            *Request
	stdout, stderr streamLog
}

// do runs the job up to the logs. Every error it returns is the entry
// program's own; exit holds the steps' results so far.
func (j *job) do(ctx context.Context, in io.Reader, exit *Exit) error {
	req, base, rest, err := ReadInput(in)
	if err != nil {
		return err
	}
	j.req = req
	logMax := int(req.OutputBytes / 4)
	j.stdout, j.stderr = streamLog{max: logMax}, streamLog{max: logMax}

	// One snapshot at a time is capped as the request says; MaxBytes is the
	// exact size, as base and overlay are limited to it.
	lim := snapshot.Limits{MaxBytes: req.BaseBytes, MaxEntries: req.MaxEntries, MaxUnpackedBytes: req.MaxUnpackedBytes}
	if _, err := snapshot.Extract(base, j.cfg.WorkDir, lim); err != nil {
		return fmt.Errorf("base snapshot: %w", err)
	}
	if err := j.makeHome(); err != nil {
		return err
	}

	if req.SetupCommand != "" {
		res, err := j.runStep(ctx, "setup", req.SetupCommand, j.cfg.Env, time.Duration(req.SetupSeconds)*time.Second, logMax/2)
		exit.Setup = &res
		// Right away, even when the step could not start: the runner
		// revokes the setup step's egress on it.
		if werr := j.out.status(SetupName, res); err == nil {
			err = werr
		}
		if err != nil {
			return err
		}
		if res.ExitCode != 0 || res.TimedOut {
			return nil // the run step is skipped; see the package doc
		}
		// Nothing of the run step starts before the runner has revoked the
		// setup step's egress and said so.
		if err := rest.AwaitGoAhead(); err != nil {
			return err
		}
	}

	if req.OverlayBytes > 0 {
		lim.MaxBytes = req.OverlayBytes
		if _, err := snapshot.ExtractOverlay(rest.Overlay(), j.cfg.WorkDir, lim); err != nil {
			return fmt.Errorf("overlay snapshot: %w", err)
		}
	}
	res, err := j.runStep(ctx, "run", req.RunCommand, runEnv(j.cfg.Env), 0, logMax)
	exit.Run = res
	return err
}

// runStep runs one step with its output captured into the logs, share
// bytes of each log at most.
func (j *job) runStep(ctx context.Context, name, command string, env []string, timeout time.Duration, share int) (StepResult, error) {
	if err := ctx.Err(); err != nil {
		return StepResult{Step: name}, fmt.Errorf("%s step: %w", name, err)
	}
	out, errs := j.stdout.begin(name, share), j.stderr.begin(name, share)
	res, err := j.step(ctx, name, command, env, timeout, out, errs)
	if res.Ran {
		j.stdout.end(name, out)
		j.stderr.end(name, errs)
	}
	return res, err
}

// makeHome creates HOME inside the work directory, through an os.Root so
// that nothing the snapshot holds can point it elsewhere.
func (j *job) makeHome() error {
	root, err := os.OpenRoot(j.cfg.WorkDir)
	if err != nil {
		return fmt.Errorf("home: %w", err)
	}
	defer root.Close()
	rel, _ := filepath.Rel(j.cfg.WorkDir, j.cfg.HomeDir)
	if err := root.MkdirAll(rel, 0o755); err != nil {
		return fmt.Errorf("home: %w", err)
	}
	return nil
}

// finish writes the logs, the artefacts (only when the run step ran) and
// exit.json, and closes the output.
func (j *job) finish(exit *Exit, runErr error) error {
	if runErr != nil {
		exit.Error = clipError(runErr.Error())
	}
	exit.StdoutBytes, exit.StderrBytes = j.stdout.total, j.stderr.total
	exit.OutputTruncated = j.stdout.cut || j.stderr.cut
	j.out.file(StdoutName, j.stdout.buf)
	j.out.file(StderrName, j.stderr.buf)
	if j.req != nil && exit.Run.Ran {
		room := j.req.OutputBytes - int64(len(j.stdout.buf)+len(j.stderr.buf))
		if j.artefacts(room) {
			exit.OutputTruncated = true
		}
	}
	j.out.status(ExitName, exit)
	return j.out.close()
}

// clipError makes an error message fit exit.json: UTF-8, at most
// MaxErrorBytes.
func clipError(s string) string {
	s = strings.ToValidUTF8(s, replacement)
	if len(s) <= MaxErrorBytes {
		return s
	}
	s = s[:MaxErrorBytes-len("…")]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}
