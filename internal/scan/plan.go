// Package scan is `quavon scan`: the deterministic scanners over the
// changes of a git repository's head commit against a base, run in the
// sandbox (image class "scanners") through the same signed job, encrypted
// snapshot and runner code a deployment uses.
//
// Plan reads the repository through internal/gitrepo's hardened readers,
// from objects only: the two trees (ls-tree) and the blobs (cat-file), never
// the work tree, and never git's diff, so no attribute (diff, binary, text, eol, filters,
// encodings), binary detection or diff configuration of the repository's
// has a say in what is scanned: the changed lines are computed from the
// blobs by sast.ChangedLineRanges. Tree writes the snapshot directory, Run
// sends it to the sandbox and normalises what comes back with package
// sast. Whatever a changed file did not get (a cap, a link, a tool that
// did not cover it) is listed in the report and makes the scan incomplete.
package scan

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/quavon/quavon/internal/gitrepo"
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
	repo *gitrepo.Repo
}

// defaultBase is the first of the branch's upstream, origin/HEAD, main and
// master that exists.
func defaultBase(ctx context.Context, r *gitrepo.Repo) (string, error) {
	for _, rev := range []string{"@{upstream}", "origin/HEAD", "origin/main", "origin/master", "main", "master"} {
		if _, err := r.ResolveCommit(ctx, rev); err == nil {
			return rev, nil
		}
	}
	return "", errors.New("no base found (no upstream, origin/HEAD, main or master): pass --base REF")
}

// maxBlobBytes bounds a blob the plan reads.
const maxBlobBytes = 64 << 20

// NewPlan finds the merge base of base and HEAD in the repository at dir
// and lists what changed on the head side.
func NewPlan(ctx context.Context, dir, base string, lim Limits) (*Plan, error) {
	r, err := gitrepo.OpenLocal(ctx, dir, gitrepo.Limits{MaxTreeEntries: gitrepo.DefaultLimits.MaxTreeEntries,
		MaxBlobBytes: maxBlobBytes, MaxChangedFiles: gitrepo.DefaultLimits.MaxChangedFiles})
	if errors.Is(err, gitrepo.ErrNoGit) {
		return nil, errors.New("git is not installed")
	}
	if err != nil {
		return nil, fmt.Errorf("%s is not in a git work tree", dir)
	}
	p := &Plan{Root: r.Root(), Base: base, blobs: map[string]string{}, repo: r}
	if p.Head, err = r.ResolveCommit(ctx, "HEAD"); err != nil {
		return nil, errors.New("the repository has no commit yet")
	}
	if p.Base == "" {
		if p.Base, err = defaultBase(ctx, r); err != nil {
			return nil, err
		}
	}
	baseID, err := r.ResolveCommit(ctx, p.Base)
	if err != nil {
		return nil, fmt.Errorf("unknown revision %q", p.Base)
	}
	if p.MergeBase, err = r.MergeBase(ctx, baseID, p.Head); err != nil {
		return nil, fmt.Errorf("%s and HEAD have no merge base", p.Base)
	}
	return p.fill(ctx, lim)
}

// NewPlanOf lists what changed from the commit mergeBase to the commit
// head of r (a worker's bare cache): the review's scan of a pull request.
func NewPlanOf(ctx context.Context, r *gitrepo.Repo, mergeBase, head string, lim Limits) (*Plan, error) {
	if !gitrepo.ValidOID(mergeBase) || !gitrepo.ValidOID(head) {
		return nil, errors.New("scan.NewPlanOf: want commit ids")
	}
	p := &Plan{Base: mergeBase, MergeBase: mergeBase, Head: head, blobs: map[string]string{}, repo: r}
	return p.fill(ctx, lim)
}

// fill lists the change from MergeBase to Head.
func (p *Plan) fill(ctx context.Context, lim Limits) (*Plan, error) {
	r := p.repo
	headTree, err := r.Tree(ctx, p.Head)
	if err != nil {
		return nil, err
	}
	baseListing, err := r.Tree(ctx, p.MergeBase)
	if err != nil {
		return nil, err
	}
	head, baseTree := headTree.Entries, baseListing.Entries
	var names []string
	for name, e := range head {
		if b, ok := baseTree[name]; !ok || b.BlobSHA != e.BlobSHA || b.Mode != e.Mode {
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
		case e.Mode == gitrepo.ModeSymlink:
			skip("a symbolic link: no scanner reads links")
		case e.Mode == gitrepo.ModeGitlink:
			skip("a submodule: the commits it points to are not scanned")
		case !e.Mode.Regular():
			skip("not a file")
		case e.Size > lim.MaxFileBytes:
			skip(fmt.Sprintf("%d bytes, over the per-file cap of %d bytes", e.Size, lim.MaxFileBytes))
		case len(p.Files) >= lim.MaxFiles:
			skip(fmt.Sprintf("more than %d changed files: over the cap on files per scan", lim.MaxFiles))
		case total+e.Size > lim.MaxTotalBytes:
			skip(fmt.Sprintf("over the cap of %d bytes of changed files per scan", lim.MaxTotalBytes))
		default:
			total += e.Size
			p.Files = append(p.Files, shown)
			p.exts = append(p.exts, sast.NeutralExt(name))
			p.blobs[shown] = e.BlobSHA
			if driver.ValidPath(name) && snapshotName(name) {
				p.src[shown] = name
			}
			want = append(want, e.BlobSHA)
			if b, ok := baseTree[name]; ok && b.Mode.Regular() && b.Size <= lim.MaxFileBytes {
				baseOf[shown] = b.BlobSHA
				want = append(want, b.BlobSHA)
			}
		}
	}
	p.addGoContext(head, lim)

	// The change, from the blobs alone.
	blobs, err := p.readBlobs(ctx, want)
	if err != nil {
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

// addGoContext adds, for every changed Go file laid out at its own path,
// the other Go files of its package and the go.mod/go.sum of its module:
// gosec type-checks packages.
func (p *Plan) addGoContext(tree map[string]gitrepo.Entry, lim Limits) {
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
		if !ok || p.blobs[shown] != "" || !e.Mode.Regular() || e.Size > lim.MaxFileBytes ||
			!driver.ValidPath(n) || !snapshotName(n) || len(p.Context) >= lim.MaxContextFiles {
			continue
		}
		p.Context = append(p.Context, shown)
		p.blobs[shown] = e.BlobSHA
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
		got, err := p.readBlobs(ctx, ids)
		if err != nil {
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
	if got, err := p.readBlobs(ctx, []string{id}); err == nil {
		data = got[id]
	}
	if p.read == nil {
		p.read = map[string][]byte{}
	}
	p.read[name] = data
	return data, data != nil
}

// readBlobs reads the blobs ids (each once) through one cat-file process.
func (p *Plan) readBlobs(ctx context.Context, ids []string) (map[string][]byte, error) {
	b, err := p.repo.Blobs(ctx)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	out := make(map[string][]byte, len(ids))
	for _, id := range slices.Compact(slices.Sorted(slices.Values(ids))) {
		data, err := b.Read(id, maxBlobBytes)
		if err != nil {
			return nil, err
		}
		out[id] = data
	}
	return out, nil
}
