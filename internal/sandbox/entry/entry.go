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

	"github.com/quavon/quavon/internal/sandbox/frame"
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

// Run does one job: it reads the hello and the authenticated input from
// in, runs the steps and sends the authenticated output frames to out (see
// the package doc and package frame). It returns nil when the entry
// program did its job, whatever the steps' exit codes, and an error when it
// failed itself; the output then still ends with an exit frame carrying the
// error, as far as out can be written. Without a valid hello nothing can be
// authenticated, so nothing is written at all.
func Run(ctx context.Context, cfg Config, in io.Reader, out io.Writer) error {
	key, err := frame.ReadHello(in)
	if err != nil {
		return err
	}
	j := &job{cfg: cfg, in: frame.NewReader(in, key, frame.In), out: &output{w: frame.NewWriter(out, key, frame.Out)}}
	exit := &frame.Exit{}
	err = j.cfg.validate()
	if err == nil {
		release := j.cfg.takeOver()
		err = j.do(ctx)
		if j.cfg.PID1 {
			j.killAll(-1) // each step ended with this already; make sure
		}
		release()
	}
	werr := j.finish(exit, err)
	return errors.Join(err, werr)
}

type job struct {
	cfg Config
	in  *frame.Reader
	out *output
	req *frame.Request
	// ran is set when the run step started.
	ran bool
	// logBound is an upper bound of what the runner's logs can hold of
	// the steps so far (both logs); the artefacts get the rest.
	logBound [2]int
}

// do runs the job up to the artefacts. Every error it returns is the entry
// program's own.
func (j *job) do(ctx context.Context) error {
	req, err := frame.ReadRequest(j.in)
	if err != nil {
		return err
	}
	j.req = req

	// One snapshot at a time is capped as the request says; MaxBytes is the
	// exact size, as base and overlay are limited to it.
	lim := snapshot.Limits{MaxBytes: req.BaseBytes, MaxEntries: req.MaxEntries, MaxUnpackedBytes: req.MaxUnpackedBytes}
	if err := extract(frame.SnapshotReader(j.in, frame.TypeBase, req.BaseBytes), j.cfg.WorkDir, lim, snapshot.Extract); err != nil {
		return fmt.Errorf("base snapshot: %w", err)
	}
	// Everything up to here was read before any step existed: the key, the
	// request and the base never sat in a pipe a step could reach.
	if err := j.makeHome(); err != nil {
		return err
	}

	if req.SetupCommand != "" {
		res, err := j.runStep(ctx, frame.StepSetup, req.SetupCommand, j.cfg.Env, time.Duration(req.SetupSeconds)*time.Second)
		// Right away, even when the step could not start: the runner
		// revokes the setup step's egress on it.
		if werr := j.out.json(frame.TypeResult, res); err == nil {
			err = werr
		}
		if err != nil {
			return err
		}
		if res.ExitCode != 0 || res.TimedOut {
			return nil // the run step is skipped; see the package doc
		}
		// Nothing of the run step starts before the runner has revoked the
		// setup step's egress and said so, authenticated.
		if err := frame.AwaitGoAhead(j.in); err != nil {
			return err
		}
	}

	if req.OverlayBytes > 0 {
		lim.MaxBytes = req.OverlayBytes
		if err := extract(frame.SnapshotReader(j.in, frame.TypeOverlay, req.OverlayBytes), j.cfg.WorkDir, lim, snapshot.ExtractOverlay); err != nil {
			return fmt.Errorf("overlay snapshot: %w", err)
		}
	}
	j.ran = true
	res, err := j.runStep(ctx, frame.StepRun, req.RunCommand, runEnv(j.cfg.Env), 0)
	if werr := j.out.json(frame.TypeResult, res); err == nil {
		err = werr
	}
	return err
}

// extract applies one snapshot and then reads it to its declared end, so a
// snapshot is consumed whole (its frames all verified) before anything
// runs.
func extract(r io.Reader, dir string, lim snapshot.Limits, apply func(io.Reader, string, snapshot.Limits) (snapshot.Stats, error)) error {
	if _, err := apply(r, dir, lim); err != nil {
		return err
	}
	_, err := io.Copy(io.Discard, r)
	return err
}

// runStep announces a step, runs it with its streams forwarded and returns
// its result (sent by the caller).
func (j *job) runStep(ctx context.Context, name, command string, env []string, timeout time.Duration) (frame.StepResult, error) {
	if err := ctx.Err(); err != nil {
		return frame.StepResult{Step: name}, fmt.Errorf("%s step: %w", name, err)
	}
	if err := j.out.send(frame.TypeStart, []byte(name)); err != nil {
		return frame.StepResult{Step: name}, err
	}
	budget := frame.StepBudget(j.req.OutputBytes, name)
	fw := [2]*forwarder{newForwarder(frame.TypeStdout, budget), newForwarder(frame.TypeStderr, budget)}
	res, err := j.step(ctx, name, command, env, timeout, fw)
	for i, f := range fw {
		j.logBound[i] = min(j.logBound[i]+len(frame.Header(name))+1+int(min(int64(budget), 3*f.total)), frame.LogMax(j.req.OutputBytes))
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

// finish sends the artefacts (only when the run step ran) and the exit
// frame.
func (j *job) finish(exit *frame.Exit, runErr error) error {
	if runErr != nil {
		exit.Error = clipError(runErr.Error())
		exit.InputTampered = errors.Is(runErr, frame.ErrTampered)
	}
	if j.req != nil && j.ran {
		room := j.req.OutputBytes - int64(j.logBound[0]+j.logBound[1])
		if j.artefacts(room) {
			exit.ArtefactsTruncated = true
		}
	}
	j.out.json(frame.TypeExit, exit)
	return j.out.err
}

// clipError makes an error message fit exit.json: UTF-8, at most
// MaxErrorBytes.
func clipError(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= frame.MaxErrorBytes {
		return s
	}
	s = s[:frame.MaxErrorBytes-len("…")]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}
