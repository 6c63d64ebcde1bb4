package githubfake

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Merge state of pull requests, from real git state: the base repository
// keeps refs/pull/<n>/head (objects of a fork's head are copied in, as
// GitHub does) and, while the pull request is open and merges cleanly,
// refs/pull/<n>/merge, the test merge whose SHA GitHub reports as
// merge_commit_sha. The merge is decided per path (a path changed on both
// sides in different ways is a conflict; git would also try the lines),
// which is enough to script "dirty" and "clean" pull requests.

// mergeState is what GitHub reports as mergeable / mergeable_state.
type mergeState struct {
	mergeable any // true, false or nil (not computed: closed or merged)
	state     string
}

func (pr *PullRequest) headOwner() string {
	owner, _, _ := strings.Cut(pr.HeadRepo, "/")
	return owner
}

func (r *Repo) prBaseSHA(pr *PullRequest) string {
	if pr.Merged && pr.baseSHA != "" {
		return pr.baseSHA
	}
	if h, ok := r.refHash("refs/heads/" + pr.Base); ok {
		return h.String()
	}
	return pr.baseSHA
}

// syncPullRef points refs/pull/<n>/head at the pull request's head commit,
// copying the commit's objects from a fork first.
func (r *Repo) syncPullRef(in *Issue) {
	pr := in.PullRequest
	sha := r.prHeadSHA(pr)
	if !plumbing.IsHash(sha) {
		return
	}
	h := plumbing.NewHash(sha)
	if hr := r.prHeadRepo(pr); hr != nil && hr != r {
		if err := copyReachable(hr, r, h); err != nil {
			return
		}
	}
	if _, err := object.GetCommit(r.st, h); err != nil {
		return
	}
	_ = r.st.SetReference(plumbing.NewHashReference(plumbing.ReferenceName(fmt.Sprintf("refs/pull/%d/head", in.Number)), h))
}

// copyReachable copies commit h and everything it reaches from src to dst,
// stopping at commits dst already has.
func copyReachable(src, dst *Repo, h plumbing.Hash) error {
	stack := []plumbing.Hash{h}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if dst.hasObject(plumbing.CommitObject, c) {
			continue
		}
		cm, err := object.GetCommit(src.st, c)
		if err != nil {
			return err
		}
		if err := copyTree(src, dst, cm.TreeHash); err != nil {
			return err
		}
		o, err := src.st.EncodedObject(plumbing.CommitObject, c)
		if err != nil {
			return err
		}
		if _, err := dst.st.SetEncodedObject(o); err != nil {
			return err
		}
		stack = append(stack, cm.ParentHashes...)
	}
	return nil
}

func copyTree(src, dst *Repo, h plumbing.Hash) error {
	if dst.hasObject(plumbing.TreeObject, h) {
		return nil
	}
	t, err := object.GetTree(src.st, h)
	if err != nil {
		return err
	}
	for _, e := range t.Entries {
		switch e.Mode {
		case filemode.Dir:
			if err := copyTree(src, dst, e.Hash); err != nil {
				return err
			}
		case filemode.Submodule:
		default:
			if !dst.hasObject(plumbing.BlobObject, e.Hash) {
				o, err := src.st.EncodedObject(plumbing.BlobObject, e.Hash)
				if err != nil {
					return err
				}
				if _, err := dst.st.SetEncodedObject(o); err != nil {
					return err
				}
			}
		}
	}
	o, err := src.st.EncodedObject(plumbing.TreeObject, h)
	if err != nil {
		return err
	}
	_, err = dst.st.SetEncodedObject(o)
	return err
}

var errConflict = errors.New("merge conflict")

// mergeBase returns the first common ancestor of a and b in r (breadth
// first from b), or the zero hash.
func (r *Repo) mergeBase(a, b plumbing.Hash) plumbing.Hash {
	ancestors := map[plumbing.Hash]bool{}
	queue := []plumbing.Hash{a}
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if ancestors[h] {
			continue
		}
		ancestors[h] = true
		if c, err := object.GetCommit(r.st, h); err == nil {
			queue = append(queue, c.ParentHashes...)
		}
	}
	seen := map[plumbing.Hash]bool{}
	queue = []plumbing.Hash{b}
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if seen[h] {
			continue
		}
		seen[h] = true
		if ancestors[h] {
			return h
		}
		if c, err := object.GetCommit(r.st, h); err == nil {
			queue = append(queue, c.ParentHashes...)
		}
	}
	return plumbing.ZeroHash
}

// merge3 merges the trees of ours and theirs over their merge base, path
// by path.
func (r *Repo) merge3(ours, theirs plumbing.Hash) (plumbing.Hash, error) {
	baseFiles := map[string]leaf{}
	if mb := r.mergeBase(ours, theirs); !mb.IsZero() {
		var err error
		if baseFiles, err = r.flatTree(mb); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	o, err := r.flatTree(ours)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	t, err := r.flatTree(theirs)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	out := map[string]leaf{}
	paths := map[string]bool{}
	for _, m := range []map[string]leaf{baseFiles, o, t} {
		for p := range m {
			paths[p] = true
		}
	}
	for p := range paths {
		b, inB := baseFiles[p]
		x, inO := o[p]
		y, inT := t[p]
		switch {
		case inO == inT && x == y:
			if inO {
				out[p] = x
			}
		case inO == inB && x == b:
			if inT {
				out[p] = y
			}
		case inT == inB && y == b:
			if inO {
				out[p] = x
			}
		default:
			return plumbing.ZeroHash, fmt.Errorf("%w in %s", errConflict, p)
		}
	}
	return r.buildTree(out)
}

// testMerge computes the merge of an open pull request into its base and
// keeps it at refs/pull/<n>/merge; errConflict when it does not merge.
func (r *Repo) testMerge(in *Issue) (plumbing.Hash, error) {
	pr := in.PullRequest
	r.syncPullRef(in)
	base, ok := r.refHash("refs/heads/" + pr.Base)
	head, ok2 := r.refHash(fmt.Sprintf("refs/pull/%d/head", in.Number))
	if !ok || !ok2 {
		return plumbing.ZeroHash, errConflict
	}
	tree, err := r.merge3(base, head)
	mergeRef := plumbing.ReferenceName(fmt.Sprintf("refs/pull/%d/merge", in.Number))
	if err != nil {
		_ = r.st.RemoveReference(mergeRef)
		return plumbing.ZeroHash, err
	}
	if old, ok := r.refHash(mergeRef.String()); ok {
		if c, err := object.GetCommit(r.st, old); err == nil && c.TreeHash == tree &&
			len(c.ParentHashes) == 2 && c.ParentHashes[0] == base && c.ParentHashes[1] == head {
			return old, nil
		}
	}
	sig := signature(r.s.account("web-flow", "User"), r.s.now())
	h, err := r.storeCommit(&object.Commit{
		Author: sig, Committer: sig, TreeHash: tree, ParentHashes: []plumbing.Hash{base, head},
		Message: fmt.Sprintf("Merge %s into %s", head, base),
	})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return h, r.st.SetReference(plumbing.NewHashReference(mergeRef, h))
}

func (r *Repo) mergeState(in *Issue) mergeState {
	pr := in.PullRequest
	if in.State != "open" || pr.Merged {
		return mergeState{nil, "unknown"}
	}
	if _, err := r.testMerge(in); err != nil {
		return mergeState{false, "dirty"}
	}
	switch {
	case pr.Draft:
		return mergeState{true, "draft"}
	case r.protected[pr.Base]:
		return mergeState{true, "blocked"}
	}
	return mergeState{true, "clean"}
}

// mergeCommitSHA is merge_commit_sha: the merge commit once merged, the
// test merge while open and mergeable, else empty.
func (r *Repo) mergeCommitSHA(in *Issue) string {
	pr := in.PullRequest
	if pr.Merged {
		return pr.mergeSHA
	}
	if in.State != "open" {
		return ""
	}
	if h, err := r.testMerge(in); err == nil {
		return h.String()
	}
	return ""
}

type prStats struct{ commits, additions, deletions, files int }

// prStats counts what GitHub counts: commits on the head not on the base,
// changed files and their added and deleted lines.
func (r *Repo) prStats(pr *PullRequest) prStats {
	var st prStats
	head := plumbing.NewHash(r.prHeadSHA(pr))
	hr := r.prHeadRepo(pr)
	if hr == nil {
		hr = r
	}
	inBase := map[plumbing.Hash]bool{}
	if b := r.prBaseSHA(pr); plumbing.IsHash(b) {
		walkCommits(r, plumbing.NewHash(b), func(h plumbing.Hash) { inBase[h] = true })
	}
	walkCommits(hr, head, func(h plumbing.Hash) {
		if !inBase[h] {
			st.commits++
		}
	})
	changes, hr2 := r.prChanges(pr, head)
	for _, ch := range changes {
		a, d := r.lineCounts(hr2, ch)
		st.files++
		st.additions += a
		st.deletions += d
	}
	return st
}

func walkCommits(r *Repo, from plumbing.Hash, f func(plumbing.Hash)) {
	seen := map[plumbing.Hash]bool{}
	stack := []plumbing.Hash{from}
	for len(stack) > 0 && len(seen) < 100000 {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[h] {
			continue
		}
		c, err := object.GetCommit(r.st, h)
		if err != nil {
			continue
		}
		seen[h] = true
		f(h)
		stack = append(stack, c.ParentHashes...)
	}
}

// lineCounts returns the lines a change adds and deletes.
func (r *Repo) lineCounts(hr *Repo, ch prChange) (add, del int) {
	var a, b []string
	if ch.status != "added" {
		data, _ := r.blob(ch.base.hash)
		a = splitLines(string(data))
	}
	if ch.status != "removed" {
		data, _ := hr.blob(ch.head.hash)
		b = splitLines(string(data))
	}
	if len(a)*len(b) > maxDiffCells {
		return len(b), len(a)
	}
	for _, op := range lineDiff(a, b) {
		switch op.kind {
		case '+':
			add++
		case '-':
			del++
		}
	}
	return add, del
}

// MergePullRequest merges open pull request n as login would with the
// merge button ("Create a merge commit"): a merge commit on the base
// branch, the pull request closed and merged by login. A conflict, a
// draft or a closed pull request is an error.
func (r *Repo) MergePullRequest(n int, login string) (string, error) {
	defer r.s.flush()
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	in := r.issues[n]
	if in == nil || in.PullRequest == nil {
		return "", fmt.Errorf("githubfake.MergePullRequest: no pull request #%d", n)
	}
	pr := in.PullRequest
	if in.State != "open" || pr.Draft {
		return "", fmt.Errorf("githubfake.MergePullRequest #%d: not open or a draft", n)
	}
	test, err := r.testMerge(in)
	if err != nil {
		return "", fmt.Errorf("githubfake.MergePullRequest #%d: %w", n, err)
	}
	tc, _ := object.GetCommit(r.st, test)
	by := r.s.account(login, "User")
	sig := signature(by, r.s.now())
	h, err := r.storeCommit(&object.Commit{
		Author: sig, Committer: sig, TreeHash: tc.TreeHash, ParentHashes: tc.ParentHashes,
		Message: fmt.Sprintf("Merge pull request #%d from %s\n\n%s", n, pr.headOwner()+"/"+pr.Head, in.Title),
	})
	if err != nil {
		return "", err
	}
	if err := r.st.SetReference(plumbing.NewHashReference(plumbing.ReferenceName("refs/heads/"+pr.Base), h)); err != nil {
		return "", err
	}
	_ = r.st.RemoveReference(plumbing.ReferenceName(fmt.Sprintf("refs/pull/%d/merge", n)))
	r.pushed = r.s.now()
	pr.HeadSHA = r.prHeadSHA(pr)
	pr.baseSHA = tc.ParentHashes[0].String()
	pr.Merged, pr.mergedAt, pr.mergedBy, pr.mergeSHA = true, r.s.now(), by, h.String()
	r.setState(in, "closed", "", by)
	r.s.emit(r, "pull_request", func(inst *Installation) map[string]any {
		return r.s.pullRequestEvent("closed", inst, r, n, login, "")
	})
	r.afterPush(pr.Base, login)
	return h.String(), nil
}
