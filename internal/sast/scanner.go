package sast

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
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
	// Cost is the tool's rough share of a scan's time (BenchmarkScan50Files'
	// per-tool breakdown): the driver starts the costliest first, so the
	// tools running side by side end close together.
	Cost int
	// Programs are what the tool needs on the workspace's Path, and
	// OptFiles what it needs in the image's Quavon directory.
	Programs []string
	OptFiles []string
	// Invoke builds what running the tool over files (the request's files
	// it scans, never empty) takes; it runs in the sandbox, in the driver.
	// An error wrapping ErrMissing means the tool is not in the image.
	Invoke func(w *Workspace, files []Target) (*Invocation, error)
	// Neutral says the tool is given the files' neutral names (and so
	// reports them); otherwise their repository paths (Target.Src).
	Neutral bool
	// Numbering is how the tool numbers the lines of text (a file as
	// Text returns it): the line ends it counts, and why its numbers
	// cannot be mapped onto Quavon's lines at all ("" when they can).
	// nil is LinesLF.
	Numbering func(text []byte) (Terminators, string)
	// parse reads the tool's raw report into c.
	parse func(c *collector, raw []byte) error
	// compact, when set, rewrites a raw report with only what parse reads
	// (CompactReport); false leaves it whole.
	compact func(raw []byte) ([]byte, bool)
}

// Target is one request file as an invocation gets it.
type Target struct {
	// Index is the file's index in the request.
	Index int
	// Neutral is its neutral name, relative to Workspace.Changed.
	Neutral string
	// Src is its repository path relative to Workspace.Src, or "".
	Src string
}

// numbering is s.Numbering with the default.
func (s *Scanner) numbering(text []byte) (Terminators, string) {
	if s.Numbering == nil {
		return LinesLF, ""
	}
	return s.Numbering(text)
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
func (s *Scanner) Covers(name string) bool { return s.CoversExt(NeutralExt(name)) }

// CoversExt reports whether the scanner scans a file whose NeutralExt is
// ext.
func (s *Scanner) CoversExt(ext string) bool {
	return s.Extensions == nil || slices.Contains(s.Extensions, ext)
}

// Pick returns the indexes of the extensions (NeutralExt) of files the
// scanner scans, in order.
func (s *Scanner) Pick(exts []string) []int {
	var out []int
	for i, e := range exts {
		if s.CoversExt(e) {
			out = append(out, i)
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
	// Changed holds every changed file under its neutral name.
	Changed string
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
// Finish (which may merge reports and say which files the tool skipped).
type Invocation struct {
	// Files is how many of the tool's files it was given or noted.
	Files int
	Cmds  []Command
	// NotCovered are the tool's files it is not given, and why.
	NotCovered []FileNote
	Finish     func() ([]FileNote, error)
}

// Command is one program run of an invocation.
type Command struct {
	Argv   []string
	Dir    string
	Env    []string
	OKExit []int
	// Stdout, when set, is the file that receives the tool's stdout;
	// Stderr, when set, one that receives its whole stderr as well.
	Stdout, Stderr string
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

// CopyTree copies files (name in Changed → name in dir) to a fresh
// directory dir, applying edit to each file's content.
func (w *Workspace) CopyTree(dir string, files map[string]string, edit func([]byte) []byte) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	from, err := os.OpenRoot(w.Changed)
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
	for _, f := range slices.Sorted(maps.Keys(files)) {
		data, err := from.ReadFile(f)
		if err != nil {
			return err
		}
		if edit != nil {
			data = edit(data)
		}
		dst := files[f]
		if err := to.MkdirAll(path.Dir(dst), 0o700); err != nil {
			return err
		}
		if err := to.WriteFile(dst, data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// neutralNames are the targets' neutral names.
func neutralNames(ts []Target) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Neutral
	}
	return out
}
