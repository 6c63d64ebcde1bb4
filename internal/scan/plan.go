// Package scan is `quavon scan`: the deterministic scanners over the
// changes of a git repository's head commit against a base, run in the
// sandbox (image class "scanners") through the same signed job, encrypted
// snapshot and runner code a deployment uses.
//
// Plan reads the repository with the git binary (no work-tree content is
// used: everything comes from the head commit's objects), Tree writes the
// snapshot directory, Run sends it to the sandbox and normalises what comes
// back with package sast.
package scan

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/quavon/quavon/internal/sast"
	"github.com/quavon/quavon/internal/sast/driver"
)

// Limits bound what Plan reads from a repository.
type Limits struct {
	// MaxFiles caps the changed files scanned; more is an error.
	MaxFiles int
	// MaxFileBytes: larger changed files are skipped (and reported).
	MaxFileBytes int64
	// MaxContextFiles caps the files added for context (Go packages).
	MaxContextFiles int
	// MaxDiffBytes caps the unified diff read from git.
	MaxDiffBytes int64
}

// DefaultLimits suit a pull request.
var DefaultLimits = Limits{MaxFiles: 2000, MaxFileBytes: 1 << 20, MaxContextFiles: 5000, MaxDiffBytes: 64 << 20}

// Skipped is a changed file that is not scanned, and why.
type Skipped struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Plan is what one scan covers.
type Plan struct {
	Root      string   `json:"root"`
	Base      string   `json:"base"`
	MergeBase string   `json:"mergeBase"`
	Head      string   `json:"head"`
	Files     []string `json:"files"`
	Context   []string `json:"context,omitempty"`
	Skipped   []Skipped
	Changed   sast.ChangedLines `json:"-"`
	// blobs maps every path of Files and Context to its blob id at Head.
	blobs map[string]string
	// read holds what ReadFile read (nil: unreadable).
	read map[string][]byte
}

// Git runs git in a repository. Repository configuration that runs
// programs on a diff (external diff drivers, textconv, fsmonitor) is
// switched off on every call.
type Git struct {
	Dir string
}

func (g Git) cmd(ctx context.Context, args ...string) *exec.Cmd {
	full := append([]string{"-c", "core.fsmonitor=false", "-c", "core.quotePath=true", "-c", "diff.noprefix=false",
		"-c", "diff.mnemonicPrefix=false", "-c", "diff.relative=false"}, args...)
	c := exec.CommandContext(ctx, "git", full...)
	c.Dir = g.Dir
	c.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C")
	return c
}

// out runs git and returns stdout (at most max bytes; more is an error).
func (g Git) out(ctx context.Context, max int64, args ...string) ([]byte, error) {
	c := g.cmd(ctx, args...)
	var stderr bytes.Buffer
	c.Stderr = &limitedWriter{w: &stderr, n: 4096}
	stdout, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("git: %w", err)
	}
	data, rerr := io.ReadAll(io.LimitReader(stdout, max+1))
	if int64(len(data)) > max {
		c.Process.Kill()
		c.Wait()
		return nil, fmt.Errorf("git %s: output larger than %d bytes", args[0], max)
	}
	if err := c.Wait(); err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return data, rerr
}

type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}

// resolve returns the commit id of rev.
func (g Git) resolve(ctx context.Context, rev string) (string, error) {
	if strings.HasPrefix(rev, "-") {
		return "", fmt.Errorf("bad revision %q", rev)
	}
	out, err := g.out(ctx, 4096, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("unknown revision %q", rev)
	}
	return strings.TrimSpace(string(out)), nil
}

// defaultBase is the first of the branch's upstream, origin/HEAD, main and
// master that exists.
func (g Git) defaultBase(ctx context.Context) (string, error) {
	for _, rev := range []string{"@{upstream}", "origin/HEAD", "origin/main", "origin/master", "main", "master"} {
		if _, err := g.resolve(ctx, rev); err == nil {
			return rev, nil
		}
	}
	return "", errors.New("no base found (no upstream, origin/HEAD, main or master): pass --base REF")
}

// NewPlan finds the merge base of base and HEAD in the repository at dir
// and lists what changed on the head side.
func NewPlan(ctx context.Context, dir, base string, lim Limits) (*Plan, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, errors.New("git is not installed")
	}
	g := Git{Dir: dir}
	top, err := g.out(ctx, 8192, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("%s is not in a git work tree", dir)
	}
	p := &Plan{Root: strings.TrimSpace(string(top)), Base: base, blobs: map[string]string{}}
	g.Dir = p.Root
	if p.Head, err = g.resolve(ctx, "HEAD"); err != nil {
		return nil, errors.New("the repository has no commit yet")
	}
	if p.Base == "" {
		if p.Base, err = g.defaultBase(ctx); err != nil {
			return nil, err
		}
	}
	baseID, err := g.resolve(ctx, p.Base)
	if err != nil {
		return nil, err
	}
	mb, err := g.out(ctx, 4096, "merge-base", baseID, p.Head)
	if err != nil {
		return nil, fmt.Errorf("%s and HEAD have no merge base", p.Base)
	}
	p.MergeBase = strings.TrimSpace(string(mb))

	tree, err := g.lsTree(ctx)
	if err != nil {
		return nil, err
	}
	names, err := g.out(ctx, lim.MaxDiffBytes, "diff", "--name-only", "-z", "--no-renames", "--no-ext-diff",
		"--diff-filter=ACMT", p.MergeBase, p.Head, "--")
	if err != nil {
		return nil, err
	}
	for _, name := range strings.Split(strings.TrimSuffix(string(names), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		e, ok := tree[name]
		switch {
		case !ok:
			p.Skipped = append(p.Skipped, Skipped{name, "not in the head tree"})
		case e.mode == "120000":
			p.Skipped = append(p.Skipped, Skipped{name, "symbolic link"})
		case e.mode == "160000":
			p.Skipped = append(p.Skipped, Skipped{name, "submodule"})
		case e.typ != "blob":
			p.Skipped = append(p.Skipped, Skipped{name, "not a file"})
		case !driver.ValidPath(name):
			p.Skipped = append(p.Skipped, Skipped{name, "path the scanners cannot take"})
		case e.size > lim.MaxFileBytes:
			p.Skipped = append(p.Skipped, Skipped{name, fmt.Sprintf("larger than %d bytes", lim.MaxFileBytes)})
		default:
			p.Files = append(p.Files, name)
			p.blobs[name] = e.id
		}
	}
	if len(p.Files) > lim.MaxFiles {
		return nil, fmt.Errorf("%d changed files, at most %d are scanned at once", len(p.Files), lim.MaxFiles)
	}
	p.addGoContext(tree, lim)

	diff, err := g.out(ctx, lim.MaxDiffBytes, "diff", "-U0", "--no-color", "--no-ext-diff", "--no-textconv",
		"--no-renames", "--src-prefix=a/", "--dst-prefix=b/", p.MergeBase, p.Head, "--")
	if err != nil {
		return nil, err
	}
	if p.Changed, err = sast.ParseUnifiedDiff(bytes.NewReader(diff), sast.DiffLimits{}); err != nil {
		return nil, fmt.Errorf("diff: %w", err)
	}
	return p, nil
}

type treeEntry struct {
	mode, typ, id string
	size          int64
}

// lsTree lists the head tree recursively with sizes.
func (g Git) lsTree(ctx context.Context) (map[string]treeEntry, error) {
	out, err := g.out(ctx, 256<<20, "ls-tree", "-r", "-z", "--long", "--full-tree", "HEAD")
	if err != nil {
		return nil, err
	}
	tree := map[string]treeEntry{}
	for _, rec := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		meta, name, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 4 {
			continue
		}
		size, _ := strconv.ParseInt(f[3], 10, 64) // "-" for submodules
		tree[name] = treeEntry{mode: f[0], typ: f[1], id: f[2], size: size}
	}
	return tree, nil
}

// addGoContext adds, for every changed Go file, the other Go files of its
// package and the go.mod/go.sum of its module: gosec type-checks packages.
func (p *Plan) addGoContext(tree map[string]treeEntry, lim Limits) {
	dirs := map[string]bool{}
	for _, f := range p.Files {
		if strings.HasSuffix(f, ".go") {
			dirs[path.Dir(f)] = true
		}
	}
	if len(dirs) == 0 {
		return
	}
	want := map[string]bool{}
	for d := range dirs {
		for m := d; ; m = path.Dir(m) {
			prefix := m + "/"
			if m == "." {
				prefix = ""
			}
			if _, ok := tree[prefix+"go.mod"]; ok {
				want[prefix+"go.mod"] = true
				want[prefix+"go.sum"] = true
				break
			}
			if m == "." {
				break
			}
		}
	}
	for name := range tree {
		if strings.HasSuffix(name, ".go") && dirs[path.Dir(name)] {
			want[name] = true
		}
	}
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		e, ok := tree[n]
		if !ok || p.blobs[n] != "" || e.typ != "blob" || e.mode == "120000" || e.size > lim.MaxFileBytes ||
			!driver.ValidPath(n) || len(p.Context) >= lim.MaxContextFiles {
			continue
		}
		p.Context = append(p.Context, n)
		p.blobs[n] = e.id
	}
}

// Tree writes the snapshot directory: dir/src holds the files of Files and
// Context as they are in the head commit, dir/scan-request.json the request.
func (p *Plan) Tree(ctx context.Context, dir string, req sast.Request) error {
	src := filepath.Join(dir, sast.SourceDir)
	if err := os.MkdirAll(src, 0o700); err != nil {
		return err
	}
	root, err := os.OpenRoot(src)
	if err != nil {
		return err
	}
	defer root.Close()
	names := append(slices.Clone(p.Files), p.Context...)
	if len(names) > 0 {
		g := Git{Dir: p.Root}
		err := g.catBlobs(ctx, names, p.blobs, func(name string, data []byte) error {
			if err := root.MkdirAll(path.Dir(name), 0o700); err != nil {
				return err
			}
			return root.WriteFile(name, data, 0o600)
		})
		if err != nil {
			return err
		}
	}
	req.Version = 1
	req.Files = p.Files
	data, err := jsonMarshal(req)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, sast.RequestFile), data, 0o600)
}

// ReadFile returns a file of the plan as it is in the head commit.
// Contents are kept: normalisation and SARIF both read a finding's file.
func (p *Plan) ReadFile(ctx context.Context, name string) ([]byte, bool) {
	if data, ok := p.read[name]; ok {
		return data, data != nil
	}
	id, ok := p.blobs[name]
	if !ok {
		return nil, false
	}
	data, err := Git{Dir: p.Root}.out(ctx, 64<<20, "cat-file", "blob", id)
	if err != nil {
		data = nil
	}
	if p.read == nil {
		p.read = map[string][]byte{}
	}
	p.read[name] = data
	return data, data != nil
}

// catBlobs streams the blobs of names through one git cat-file --batch.
func (g Git) catBlobs(ctx context.Context, names []string, ids map[string]string, fn func(string, []byte) error) error {
	c := g.cmd(ctx, "cat-file", "--batch")
	in, err := c.StdinPipe()
	if err != nil {
		return err
	}
	out, err := c.StdoutPipe()
	if err != nil {
		return err
	}
	if err := c.Start(); err != nil {
		return err
	}
	defer c.Wait()
	go func() {
		w := bufio.NewWriter(in)
		for _, n := range names {
			fmt.Fprintln(w, ids[n])
		}
		w.Flush()
		in.Close()
	}()
	r := bufio.NewReader(out)
	for _, n := range names {
		header, err := r.ReadString('\n')
		if err != nil {
			return fmt.Errorf("git cat-file: %w", err)
		}
		f := strings.Fields(header)
		if len(f) != 3 || f[0] != ids[n] || f[1] != "blob" {
			return fmt.Errorf("git cat-file: unexpected %q for %s", strings.TrimSpace(header), n)
		}
		size, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || size < 0 || size > 64<<20 {
			return fmt.Errorf("git cat-file: bad size for %s", n)
		}
		data := make([]byte, size+1) // content and the trailing newline
		if _, err := io.ReadFull(r, data); err != nil {
			return fmt.Errorf("git cat-file: %w", err)
		}
		if err := fn(n, data[:size]); err != nil {
			return err
		}
	}
	return nil
}
