// Package scan is `quavon scan`: the deterministic scanners over the
// changes of a git repository's head commit against a base, run in the
// sandbox (image class "scanners") through the same signed job, encrypted
// snapshot and runner code a deployment uses.
//
// Plan reads the repository with the git binary, from objects only: the
// two trees (ls-tree) and the blobs (cat-file), never the work tree, and
// never git's diff, so no attribute (diff, binary, text, eol, filters,
// encodings), binary detection or diff configuration of the repository's
// has a say in what is scanned: the changed lines are computed from the
// blobs by sast.ChangedLineRanges. Tree writes the snapshot directory, Run
// sends it to the sandbox and normalises what comes back with package
// sast. Whatever a changed file did not get (a cap, a link, a tool that
// did not cover it) is listed in the report and makes the scan incomplete.
package scan

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
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

// Limits bound what Plan reads from a repository. A changed file left out
// by a cap is listed as not scanned (the scan is then incomplete).
type Limits struct {
	// MaxFiles caps the changed files scanned; the rest are listed.
	MaxFiles int
	// MaxFileBytes: larger changed files are listed, not scanned.
	MaxFileBytes int64
	// MaxTotalBytes caps the changed files' bytes together.
	MaxTotalBytes int64
	// MaxContextFiles caps the files added for context (Go packages).
	MaxContextFiles int
}

// DefaultLimits suit a pull request and, within MaxFiles, a whole
// repository; see the README ("quavon scan") for the measurements behind
// them: MaxFileBytes is above the largest source file (821,757 bytes, a
// minified JavaScript file; 467 KB hand-written) of 13 public repositories
// (20,824 source files of Go, Python, JavaScript and TypeScript), and is
// the Ruff wrapper's own cap; MaxTotalBytes is above the size of each of
// those repositories whole (at most 41 MB).
var DefaultLimits = Limits{MaxFiles: 2000, MaxFileBytes: 1 << 20, MaxTotalBytes: 64 << 20, MaxContextFiles: 5000}

// Plan is what one scan covers.
type Plan struct {
	Root      string `json:"root"`
	Base      string `json:"base"`
	MergeBase string `json:"mergeBase"`
	Head      string `json:"head"`
	// Files are the changed files to scan, in request order, by their
	// display paths (sast.DisplayPath).
	Files   []string `json:"files"`
	Context []string `json:"context,omitempty"`
	// NotScanned are the changed files left out before the sandbox.
	NotScanned []sast.NotScanned `json:"-"`
	Changed    sast.ChangedLines `json:"-"`
	// blobs maps every path of Files and Context to its blob id at Head.
	blobs map[string]string
	// src is the repository path of each file of Files and Context that
	// the snapshot's source tree can hold at its own path.
	src map[string]string
	// inSrc are the changed files also written to the source tree.
	inSrc map[string]bool
	// exts are the NeutralExt of each file of Files' repository path.
	exts []string
	// read holds what ReadFile read (nil: unreadable).
	read map[string][]byte
}

// Git runs git in a repository. Repository configuration that runs
// programs on a diff (external diff drivers, textconv, fsmonitor) is
// switched off on every call.
type Git struct {
	Dir string
}

// Only plumbing that reads objects is used (rev-parse, merge-base,
// ls-tree, cat-file without --textconv or --filters), which attributes do
// not touch; replace refs are ignored, so the objects are the commits'.
func (g Git) cmd(ctx context.Context, args ...string) *exec.Cmd {
	full := append([]string{"--no-replace-objects", "-c", "core.fsmonitor=false"}, args...)
	c := exec.CommandContext(ctx, "git", full...)
	c.Dir = g.Dir
	c.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "GIT_NO_REPLACE_OBJECTS=1", "LC_ALL=C")
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

	head, err := g.lsTree(ctx, p.Head)
	if err != nil {
		return nil, err
	}
	baseTree, err := g.lsTree(ctx, p.MergeBase)
	if err != nil {
		return nil, err
	}
	var names []string
	for name, e := range head {
		if b, ok := baseTree[name]; !ok || b.id != e.id || b.mode != e.mode {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	p.src, p.inSrc = map[string]string{}, map[string]bool{}
	var total int64
	var want []string // blob ids to read: head versions, then base versions
	baseOf := map[string]string{}
	for _, name := range names {
		e := head[name]
		shown := sast.DisplayPath(name)
		skip := func(why string) { p.NotScanned = append(p.NotScanned, sast.NotScanned{Path: shown, Reason: why}) }
		switch {
		case e.mode == "120000":
			skip("a symbolic link: no scanner reads links")
		case e.mode == "160000":
			skip("a submodule: the commits it points to are not scanned")
		case e.typ != "blob":
			skip("not a file")
		case e.size > lim.MaxFileBytes:
			skip(fmt.Sprintf("%d bytes, over the per-file cap of %d bytes", e.size, lim.MaxFileBytes))
		case len(p.Files) >= lim.MaxFiles:
			skip(fmt.Sprintf("more than %d changed files: over the cap on files per scan", lim.MaxFiles))
		case total+e.size > lim.MaxTotalBytes:
			skip(fmt.Sprintf("over the cap of %d bytes of changed files per scan", lim.MaxTotalBytes))
		default:
			total += e.size
			p.Files = append(p.Files, shown)
			p.exts = append(p.exts, sast.NeutralExt(name))
			p.blobs[shown] = e.id
			if driver.ValidPath(name) && snapshotName(name) {
				p.src[shown] = name
			}
			want = append(want, e.id)
			if b, ok := baseTree[name]; ok && b.typ == "blob" && b.mode != "120000" && b.mode != "160000" && b.size <= lim.MaxFileBytes {
				baseOf[shown] = b.id
				want = append(want, b.id)
			}
		}
	}
	p.addGoContext(head, lim)

	// The change, from the blobs alone.
	blobs := map[string][]byte{}
	if err := g.catBlobs(ctx, want, func(id string, data []byte) error {
		blobs[id] = data
		return nil
	}); err != nil {
		return nil, err
	}
	p.read = map[string][]byte{}
	p.Changed = sast.ChangedLines{}
	for _, f := range p.Files {
		h := blobs[p.blobs[f]]
		p.read[f] = h
		var b []byte
		if id, ok := baseOf[f]; ok {
			b = blobs[id]
		}
		if rs := sast.ChangedLineRanges(b, h); len(rs) > 0 {
			p.Changed[f] = rs
		}
	}
	return p, nil
}

// snapshotName reports whether the snapshot can hold a file at its own
// repository path (internal/snapshot's rules: no control characters or
// backslashes, no .git segment).
func snapshotName(name string) bool {
	for _, seg := range strings.Split(name, "/") {
		if strings.EqualFold(seg, ".git") {
			return false
		}
	}
	return true
}

type treeEntry struct {
	mode, typ, id string
	size          int64
}

// lsTree lists the tree of commit rev recursively with sizes.
func (g Git) lsTree(ctx context.Context, rev string) (map[string]treeEntry, error) {
	out, err := g.out(ctx, 256<<20, "ls-tree", "-r", "-z", "--long", "--full-tree", rev)
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

// addGoContext adds, for every changed Go file laid out at its own path,
// the other Go files of its package and the go.mod/go.sum of its module:
// gosec type-checks packages.
func (p *Plan) addGoContext(tree map[string]treeEntry, lim Limits) {
	dirs := map[string]bool{}
	for _, f := range p.Files {
		if name, ok := p.src[f]; ok && strings.HasSuffix(name, ".go") {
			dirs[path.Dir(name)] = true
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
	for _, n := range slices.Sorted(maps.Keys(want)) {
		e, ok := tree[n]
		shown := sast.DisplayPath(n)
		if _, changed := p.src[shown]; changed && p.blobs[shown] != "" {
			p.inSrc[shown] = true // a changed go.mod or file of the package
			continue
		}
		if !ok || p.blobs[shown] != "" || e.typ != "blob" || e.mode == "120000" || e.size > lim.MaxFileBytes ||
			!driver.ValidPath(n) || !snapshotName(n) || len(p.Context) >= lim.MaxContextFiles {
			continue
		}
		p.Context = append(p.Context, shown)
		p.blobs[shown] = e.id
		p.src[shown] = n
	}
}

// Tree writes the snapshot directory: dir/changed holds every file of Files
// under its neutral name (as sast.Text returns it), dir/src the Go files
// among them and Context at their repository paths, and
// dir/scan-request.json the request.
func (p *Plan) Tree(ctx context.Context, dir string, req sast.Request) error {
	roots := map[string]*os.Root{}
	for _, d := range []string{sast.SourceDir, sast.ChangedDir} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return err
		}
		r, err := os.OpenRoot(filepath.Join(dir, d))
		if err != nil {
			return err
		}
		defer r.Close()
		roots[d] = r
	}
	write := func(root *os.Root, name string, data []byte) error {
		if err := root.MkdirAll(path.Dir(name), 0o700); err != nil {
			return err
		}
		return root.WriteFile(name, data, 0o600)
	}
	req.Version = sast.RequestVersion
	req.Files = make([]sast.ScanFile, len(p.Files))
	for i, f := range p.Files {
		data, ok := p.ReadFile(ctx, f)
		if !ok {
			return fmt.Errorf("reading %s", f)
		}
		text, _ := sast.Text(data)
		req.Files[i].Ext = p.exts[i]
		if err := write(roots[sast.ChangedDir], sast.NeutralName(i, req.Files[i].Ext), text); err != nil {
			return err
		}
		name, laidOut := p.src[f]
		if laidOut && sast.ScannerOf(sast.ToolGosec).Covers(name) {
			req.Files[i].Src = name
		}
		if laidOut && (req.Files[i].Src != "" || p.inSrc[f]) {
			if err := write(roots[sast.SourceDir], name, text); err != nil {
				return err
			}
		}
	}
	var ids []string
	for _, c := range p.Context {
		ids = append(ids, p.blobs[c])
	}
	if len(ids) > 0 {
		got := map[string][]byte{}
		if err := (Git{Dir: p.Root}).catBlobs(ctx, ids, func(id string, data []byte) error {
			got[id] = data
			return nil
		}); err != nil {
			return err
		}
		for _, c := range p.Context {
			if err := write(roots[sast.SourceDir], p.src[c], got[p.blobs[c]]); err != nil {
				return err
			}
		}
	}
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
	var data []byte
	err := Git{Dir: p.Root}.catBlobs(ctx, []string{id}, func(_ string, d []byte) error {
		data = d
		return nil
	})
	if err != nil {
		data = nil
	}
	if p.read == nil {
		p.read = map[string][]byte{}
	}
	p.read[name] = data
	return data, data != nil
}

// maxBlobBytes bounds a blob catBlobs reads.
const maxBlobBytes = 64 << 20

// catBlobs streams the blobs ids (each once) through one git cat-file
// --batch, never with --textconv or --filters.
func (g Git) catBlobs(ctx context.Context, ids []string, fn func(string, []byte) error) error {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
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
		for _, id := range ids {
			fmt.Fprintln(w, id)
		}
		w.Flush()
		in.Close()
	}()
	r := bufio.NewReader(out)
	for _, id := range ids {
		header, err := r.ReadString('\n')
		if err != nil {
			return fmt.Errorf("git cat-file: %w", err)
		}
		f := strings.Fields(header)
		if len(f) != 3 || f[0] != id || f[1] != "blob" {
			return fmt.Errorf("git cat-file: unexpected %q for %s", strings.TrimSpace(header), id)
		}
		size, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || size < 0 || size > maxBlobBytes {
			return fmt.Errorf("git cat-file: bad size for %s", id)
		}
		data := make([]byte, size+1) // content and the trailing newline
		if _, err := io.ReadFull(r, data); err != nil {
			return fmt.Errorf("git cat-file: %w", err)
		}
		if err := fn(id, data[:size]); err != nil {
			return err
		}
	}
	return nil
}
