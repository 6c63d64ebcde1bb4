package sast

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Scanner is everything Quavon knows about one tool. Each one is defined in
// its own file (tool_<name>.go) and registered in scanners; adding a
// scanner touches that file and this table.
type Scanner struct {
	Tool Tool
	// Extensions are the file name extensions the tool scans (lower case,
	// with the dot); nil means every changed file.
	Extensions []string
	// InfoURI is SARIF's tool.driver.informationUri.
	InfoURI string
	// Slow tools are started first when the driver runs tools in parallel.
	Slow bool
	// Programs are what the tool needs on the workspace's Path, and
	// OptFiles what it needs in the image's Quavon directory.
	Programs []string
	OptFiles []string
	// Invoke builds what running the tool over files (the request's files
	// it scans, never empty) takes; it runs in the sandbox, in the driver.
	// An error wrapping ErrMissing means the tool is not in the image.
	Invoke func(w *Workspace, files []string) (*Invocation, error)
	// parse reads the tool's raw report into c.
	parse func(c *collector, raw []byte) error
}

// scanners is the table of every scanner of the default image, in the
// order the driver lists them.
var scanners = []*Scanner{astGrep, gitleaks, bandit, gosec, eslint, ruff}

// ScannerOf returns t's scanner, or nil for an unknown tool.
func ScannerOf(t Tool) *Scanner {
	for _, s := range scanners {
		if s.Tool == t {
			return s
		}
	}
	return nil
}

// Covers reports whether the scanner scans a file named name.
func (s *Scanner) Covers(name string) bool {
	return s.Extensions == nil || slices.Contains(s.Extensions, strings.ToLower(path.Ext(name)))
}

// Pick returns the names the scanner scans, in order.
func (s *Scanner) Pick(names []string) []string {
	var out []string
	for _, n := range names {
		if s.Covers(n) {
			out = append(out, n)
		}
	}
	return out
}

// Installed reports, wrapping ErrMissing, what of the tool the image lacks.
func (s *Scanner) Installed(w *Workspace) error {
	for _, p := range s.Programs {
		if _, err := w.LookPath(p); err != nil {
			return err
		}
	}
	for _, f := range s.OptFiles {
		if _, err := os.Stat(filepath.Join(w.Opt, f)); err != nil {
			return fmt.Errorf("%s: %w", f, ErrMissing)
		}
	}
	return nil
}

// ErrMissing is wrapped by Installed and Invoke when the tool is not in
// the image.
var ErrMissing = errors.New("not installed in this image")

// Workspace is the driver's layout, as an invocation sees it.
type Workspace struct {
	// Src is the source tree (the snapshot's src directory).
	Src string
	// Out is where reports go (returned as artefacts).
	Out string
	// Opt is Quavon's directory in the image (configs, wrappers).
	Opt string
	// Home is HOME and the root of every cache a tool writes.
	Home string
	// Path is PATH for every tool; nothing else is searched.
	Path string
}

// Invocation is what running one tool takes: commands in order, then
// Finish (which may merge reports).
type Invocation struct {
	Files  int
	Cmds   []Command
	Finish func() error
}

// Command is one program run of an invocation.
type Command struct {
	Argv   []string
	Dir    string
	Env    []string
	OKExit []int
	// Stdout, when set, is the file that receives the tool's stdout.
	Stdout string
}

// OutPath is where tool t's raw report goes.
func (w *Workspace) OutPath(t Tool) string { return filepath.Join(w.Out, OutputArtefact(t)) }

// LookPath finds name on the workspace's Path only.
func (w *Workspace) LookPath(name string) (string, error) {
	for _, dir := range filepath.SplitList(w.Path) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, ErrMissing)
}

// Env is the whole environment of a tool: nothing is inherited.
func (w *Workspace) Env(extra ...string) []string {
	return append([]string{
		"PATH=" + w.Path, "HOME=" + w.Home, "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "TZ=UTC",
		"TMPDIR=" + filepath.Join(w.Home, "tmp"), "NO_COLOR=1", "CI=true",
	}, extra...)
}

// CopyTree copies files from Src to a fresh directory dir, applying edit
// to each file's content.
func (w *Workspace) CopyTree(dir string, files []string, edit func([]byte) []byte) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	from, err := os.OpenRoot(w.Src)
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
