package github_test

// Tests of internal/github/writer live here so that `go test
// ./internal/github/` covers the write side against the emulator.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/github/writer"
	"github.com/quavon/quavon/internal/githubfake"
	"github.com/quavon/quavon/internal/tokenbroker"
)

const botBranch = "quavon/fix-12-0a1b2c3d"

type fixerEnv struct {
	srv    *githubfake.Server
	repo   *githubfake.Repo
	inst   *githubfake.Installation
	conn   *github.Conn
	sleeps *sleeper
	fixer  *writer.Fixer
}

func newFixerEnv(t *testing.T) *fixerEnv {
	t.Helper()
	srv := githubfake.New(t)
	repo := srv.AddRepo("acme", "app", githubfake.RepoOptions{Private: true, Files: map[string]string{
		"README.md": "hello\n", "src/main.go": "package main\n", "old.txt": "bye\n",
	}})
	fa := srv.RegisterApp("quavon-fixer")
	in := srv.Install(fa, "acme", map[string]string{"contents": "write", "pull_requests": "write"}, "acme/app")
	conn, sl := newConn(t, srv, github.AppFixer, fa, tokenbroker.RolePublisher)
	f, err := writer.NewFixer(context.Background(), conn, in.ID, "acme/app")
	if err != nil {
		t.Fatal(err)
	}
	return &fixerEnv{srv: srv, repo: repo, inst: in, conn: conn, sleeps: sl, fixer: f}
}

// commitPatch runs blobs → tree on base_tree → commit with parent base.
func (e *fixerEnv) commitPatch(t *testing.T, base string) (commit, tree string) {
	t.Helper()
	ctx := context.Background()
	blob, err := e.fixer.CreateBlob(ctx, []byte("package main\n\nfunc main() {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	baseCommit, err := e.fixer.Commit(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	tree, err = e.fixer.CreateTree(ctx, baseCommit.Tree, []writer.TreeChange{
		{Path: "src/main.go", Mode: "100644", SHA: blob},
		{Path: "old.txt"}, // deletion
	})
	if err != nil {
		t.Fatal(err)
	}
	commit, err = e.fixer.CreateCommit(ctx, "Fix #12\n\nQuavon reference abc", tree, base)
	if err != nil {
		t.Fatal(err)
	}
	return commit, tree
}

func TestWriterFixFlow(t *testing.T) {
	t.Parallel()
	e := newFixerEnv(t)
	ctx := context.Background()
	base := e.repo.Ref("main")
	commit, tree := e.commitPatch(t, base)

	if err := e.fixer.CreateBranch(ctx, botBranch, commit); err != nil {
		t.Fatal(err)
	}
	files, err := e.repo.Files(botBranch)
	if err != nil {
		t.Fatal(err)
	}
	if files["src/main.go"] != "package main\n\nfunc main() {}\n" || files["README.md"] != "hello\n" {
		t.Fatalf("branch files %v", files)
	}
	if _, ok := files["old.txt"]; ok {
		t.Fatal("deleted file still present")
	}
	got, err := e.fixer.Commit(ctx, commit)
	if err != nil || got.Tree != tree || len(got.Parents) != 1 || got.Parents[0] != base || !strings.HasPrefix(got.Message, "Fix #12") {
		t.Fatalf("commit %+v %v", got, err)
	}

	pr, err := e.fixer.CreateDraftPullRequest(ctx, writer.DraftPullRequest{Title: "Fix #12", Body: "body <!-- quavon:abc -->", Head: botBranch, Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if !pr.Draft || pr.HeadRef != botBranch || pr.BaseRef != "main" {
		t.Fatalf("pull request %+v", pr)
	}
	stored, _ := e.repo.Issue(pr.Number)
	if stored.PullRequest == nil || !stored.PullRequest.Draft {
		t.Fatalf("emulator holds a non-draft pull request: %+v", stored)
	}
	prs, err := e.fixer.PullRequestsByHead(ctx, botBranch)
	if err != nil || len(prs) != 1 || prs[0].Number != pr.Number {
		t.Fatalf("by head %+v %v", prs, err)
	}
	if _, err := e.fixer.CreateIssueComment(ctx, pr.Number, "ready for review"); err != nil {
		t.Fatalf("comment on the fix PR: %v", err)
	}

	// Refs are never overwritten: creating it again is a conflict.
	if err := e.fixer.CreateBranch(ctx, botBranch, base); !errors.Is(err, github.ErrConflict) {
		t.Fatalf("second create: %v", err)
	}
	if e.repo.Ref(botBranch) != commit {
		t.Fatal("branch moved")
	}
	// Fast-forward only: moving back to the parent is refused.
	if err := e.fixer.FastForwardBranch(ctx, botBranch, base); !errors.Is(err, github.ErrConflict) {
		t.Fatalf("non-fast-forward: %v", err)
	}
	next, _ := e.commitPatch(t, commit)
	if err := e.fixer.FastForwardBranch(ctx, botBranch, next); err != nil {
		t.Fatalf("fast-forward: %v", err)
	}
	if e.repo.Ref(botBranch) != next {
		t.Fatal("fast-forward not applied")
	}
}

func TestWriterRefusesNonBotBranches(t *testing.T) {
	t.Parallel()
	e := newFixerEnv(t)
	ctx := context.Background()
	base := e.repo.Ref("main")
	e.srv.ResetRequests()
	for _, b := range []string{"main", "feature", "quavon/fix-12", "quavon/fix-12-0A1B2C3D", "quavon/fix-0-0a1b2c3d", "refs/heads/" + botBranch, "quavon/fix-12-0a1b2c3d/x"} {
		if err := e.fixer.CreateBranch(ctx, b, base); !errors.Is(err, writer.ErrNotBotBranch) {
			t.Errorf("CreateBranch %q: %v", b, err)
		}
		if err := e.fixer.FastForwardBranch(ctx, b, base); !errors.Is(err, writer.ErrNotBotBranch) {
			t.Errorf("FastForwardBranch %q: %v", b, err)
		}
		if _, err := e.fixer.CreateDraftPullRequest(ctx, writer.DraftPullRequest{Title: "t", Head: b, Base: "main"}); !errors.Is(err, writer.ErrNotBotBranch) {
			t.Errorf("CreateDraftPullRequest %q: %v", b, err)
		}
	}
	if n := len(e.srv.Requests()); n != 0 {
		t.Fatalf("%d requests reached GitHub", n)
	}
}

// TestWriterLostResponseAfterRefCreation: the ref is created but the
// response is lost. The write is not retried, the caller gets an error, and
// a later read shows the ref (the publisher's reconcile).
func TestWriterLostResponseAfterRefCreation(t *testing.T) {
	t.Parallel()
	e := newFixerEnv(t)
	ctx := context.Background()
	commit, _ := e.commitPatch(t, e.repo.Ref("main"))
	e.srv.InjectFault(githubfake.Fault{Method: "POST", Path: "/repos/{o}/{r}/git/refs", Kind: githubfake.FaultLoseResponse})
	e.srv.ResetRequests()
	if err := e.fixer.CreateBranch(ctx, botBranch, commit); err == nil {
		t.Fatal("lost response reported as success")
	}
	if n := countRequests(e.srv, "POST", "/repos/acme/app/git/refs"); n != 1 {
		t.Fatalf("ref creation sent %d times", n)
	}
	head, err := e.fixer.BranchHead(ctx, botBranch)
	if err != nil || head != commit {
		t.Fatalf("reconcile read: %q %v", head, err)
	}
	c, err := e.fixer.Commit(ctx, head)
	if err != nil || len(c.Parents) != 1 || c.Parents[0] != e.repo.Ref("main") {
		t.Fatalf("reconcile commit %+v %v", c, err)
	}
	if _, err := e.fixer.BranchHead(ctx, "quavon/fix-13-0a1b2c3d"); !errors.Is(err, github.ErrNotFound) {
		t.Fatalf("missing branch: %v", err)
	}
}

func TestWriterNoRetryOfWritesOn502(t *testing.T) {
	t.Parallel()
	e := newFixerEnv(t)
	ctx := context.Background()
	e.srv.InjectFault(githubfake.Fault{Method: "POST", Path: "/repos/{o}/{r}/git/blobs", Kind: githubfake.Fault5xx})
	e.srv.ResetRequests()
	if _, err := e.fixer.CreateBlob(ctx, []byte("x")); err == nil {
		t.Fatal("502 reported as success")
	}
	if n := countRequests(e.srv, "POST", "/repos/acme/app/git/blobs"); n != 1 || len(e.sleeps.Sleeps()) != 0 {
		t.Fatalf("POST retried: %d sends, sleeps %v", n, e.sleeps.Sleeps())
	}
	// A secondary rate limit means GitHub did not process the write, so it
	// is sent again after Retry-After.
	e.srv.InjectFault(githubfake.Fault{Method: "POST", Path: "/repos/{o}/{r}/git/blobs", Kind: githubfake.FaultSecondaryRateLimit})
	if _, err := e.fixer.CreateBlob(ctx, []byte("x")); err != nil {
		t.Fatalf("after secondary limit: %v", err)
	}
}

func TestWriterCommitOnBranch(t *testing.T) {
	t.Parallel()
	e := newFixerEnv(t)
	ctx := context.Background()
	head := e.repo.Commit("feature", map[string]string{"src/main.go": "package main // wip\n"}, "wip")
	in := writer.CommitOnBranch{
		Branch: "feature", ExpectedHeadOID: head, Headline: "Quavon: fix review findings", Body: "Quavon reference abc",
		Additions: []writer.FileAddition{{Path: "src/main.go", Contents: []byte("package main\n")}},
		Deletions: []string{"old.txt"},
	}
	oid, err := e.fixer.CommitOnBranch(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if e.repo.Ref("feature") != oid {
		t.Fatal("branch not advanced")
	}
	info, ok := e.repo.CommitInfo(oid)
	if !ok || len(info.Parents) != 1 || info.Parents[0] != head || !info.Verified {
		t.Fatalf("commit %+v", info)
	}
	// The head moved: compare-and-swap refused, nothing written.
	in.ExpectedHeadOID = head
	if _, err := e.fixer.CommitOnBranch(ctx, in); !errors.Is(err, github.ErrConflict) {
		t.Fatalf("stale expectedHeadOid: %v", err)
	}
	if e.repo.Ref("feature") != oid {
		t.Fatal("branch moved on a refused commit")
	}
	if _, err := e.fixer.CommitOnBranch(ctx, writer.CommitOnBranch{Branch: "feature", Headline: "x", Deletions: []string{"a"}}); err == nil {
		t.Fatal("commit without expectedHeadOid accepted")
	}
}

func TestWriterBranchChecks(t *testing.T) {
	t.Parallel()
	e := newFixerEnv(t)
	ctx := context.Background()
	e.repo.Protect("main")
	b, err := e.fixer.Branch(ctx, "main")
	if err != nil || !b.Protected || b.SHA != e.repo.Ref("main") {
		t.Fatalf("main %+v %v", b, err)
	}
	e.repo.Commit("quavon/fix-1-00000000", map[string]string{"x": "x"}, "x")
	b, err = e.fixer.Branch(ctx, "quavon/fix-1-00000000")
	if err != nil || b.Protected || b.Name != "quavon/fix-1-00000000" {
		t.Fatalf("bot branch %+v %v", b, err)
	}
	if _, err := e.fixer.Branch(ctx, "nope"); !errors.Is(err, github.ErrNotFound) {
		t.Fatalf("missing branch: %v", err)
	}
	e.srv.SetRules("acme", "app", "quavon/*", []githubfake.Rule{
		{Type: "non_fast_forward"},
		{Type: "required_signatures"},
		{Type: "some_future_rule", Parameters: map[string]any{"x": 1.0}},
	})
	rules, err := e.fixer.BranchRules(ctx, botBranch)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, r := range rules {
		types = append(types, r.Type)
	}
	if strings.Join(types, ",") != "non_fast_forward,required_signatures,some_future_rule" {
		t.Fatalf("rules %v (unknown types must reach the caller)", types)
	}
}

func TestReviewerPublishes(t *testing.T) {
	t.Parallel()
	srv := githubfake.New(t)
	repo := srv.AddRepo("acme", "app", githubfake.RepoOptions{Private: true, Files: map[string]string{"a.go": "package a\n"}})
	ra := srv.RegisterApp("quavon-review")
	in := srv.Install(ra, "acme", map[string]string{
		"contents": "read", "pull_requests": "write", "issues": "write", "checks": "write", "security_events": "write",
	})
	conn, _ := newConn(t, srv, github.AppReview, ra, tokenbroker.RolePublisher)
	ctx := context.Background()
	rv, err := writer.NewReviewer(ctx, conn, in.ID, "acme/app")
	if err != nil {
		t.Fatal(err)
	}
	head := repo.Ref("main")
	id, err := rv.CreateCheckRun(ctx, writer.CheckRun{Name: "Quavon", HeadSHA: head, Status: "in_progress", ExternalID: "run-1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := rv.UpdateCheckRun(ctx, id, writer.CheckRun{Name: "Quavon", Status: "completed", Conclusion: "neutral", Title: "2 findings", Summary: "s"}); err != nil {
		t.Fatal(err)
	}
	runs := repo.CheckRuns()
	if len(runs) != 1 || runs[0].Conclusion != "neutral" || runs[0].Title != "2 findings" || runs[0].App != "quavon-review" {
		t.Fatalf("check runs %+v", runs)
	}
	issue := repo.AddIssue(githubfake.IssueOptions{Title: "t", Author: "ada"})
	if _, err := rv.CreateIssueComment(ctx, issue, "hello"); err != nil {
		t.Fatal(err)
	}
	if is, _ := repo.Issue(issue); len(is.Comments) != 1 || is.Comments[0].Author != "quavon-review[bot]" {
		t.Fatalf("comments %+v", is.Comments)
	}

	sarif := []byte(`{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"quavon"}},"results":[]}]}`)
	uploadID, err := rv.UploadSARIF(ctx, head, "refs/heads/main", sarif)
	if err != nil || uploadID == "" {
		t.Fatalf("upload %q %v", uploadID, err)
	}
	ups := repo.SARIFUploads()
	if len(ups) != 1 || !bytes.Equal(ups[0].SARIF, sarif) || ups[0].CommitSHA != head {
		t.Fatalf("uploads %+v", ups)
	}
	// The SARIF token is its own, minimal set.
	var minted []string
	for _, r := range srv.Requests() {
		if r.Method == "POST" && strings.HasSuffix(r.Path, "/access_tokens") {
			minted = append(minted, r.Path)
		}
	}
	if len(minted) != 2 {
		t.Fatalf("mints %v, want review-write and code-scanning", minted)
	}
}

func TestReviewerSARIFSizeCheckedBeforeSending(t *testing.T) {
	t.Parallel()
	srv := githubfake.New(t)
	repo := srv.AddRepo("acme", "app", githubfake.RepoOptions{Private: true, Files: map[string]string{"a": "a"}})
	ra := srv.RegisterApp("quavon-review")
	in := srv.Install(ra, "acme", map[string]string{"pull_requests": "write", "issues": "write", "checks": "write", "security_events": "write"})
	conn, _ := newConn(t, srv, github.AppReview, ra, tokenbroker.RolePublisher)
	ctx := context.Background()
	rv, err := writer.NewReviewer(ctx, conn, in.ID, "acme/app")
	if err != nil {
		t.Fatal(err)
	}
	// Incompressible content: over 10 MB even after gzip.
	noise := make([]byte, writer.MaxSARIFBytes+1024)
	_, _ = rand.Read(noise)
	big, _ := json.Marshal(map[string]any{"version": "2.1.0", "noise": noise})
	srv.ResetRequests()
	if _, err := rv.UploadSARIF(ctx, repo.Ref("main"), "refs/heads/main", big); !errors.Is(err, github.ErrTooLarge) {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent for an oversize SARIF", n)
	}
}

// TestReviewerCreateReviewIsComment posts a review through the emulator's
// reviews endpoint and checks what GitHub would hold: a COMMENT review (never
// an approval or a change request) on the given commit, with its line
// comment on the right side.
func TestReviewerCreateReviewIsComment(t *testing.T) {
	t.Parallel()
	srv := githubfake.New(t)
	repo := srv.AddRepo("acme", "app", githubfake.RepoOptions{Private: true, Files: map[string]string{"a.go": "a"}})
	head := repo.Commit("feature", map[string]string{"a.go": "b\n"}, "change a.go")
	n := repo.AddPullRequest(githubfake.PullRequestOptions{Title: "change", Author: "alice", Head: "feature"})
	ra := srv.RegisterApp("quavon-review")
	in := srv.Install(ra, "acme", map[string]string{"pull_requests": "write", "issues": "write", "checks": "write"})
	conn, _ := newConn(t, srv, github.AppReview, ra, tokenbroker.RolePublisher)
	rv, err := writer.NewReviewer(context.Background(), conn, in.ID, "acme/app")
	if err != nil {
		t.Fatal(err)
	}
	id, err := rv.CreateReview(context.Background(), n, head, "summary", []writer.ReviewComment{{Path: "a.go", Line: 1, Body: "nit"}})
	if err != nil {
		t.Fatal(err)
	}
	got := repo.Reviews(n)
	if len(got) != 1 {
		t.Fatalf("reviews %+v", got)
	}
	r := got[0]
	if r.ID != id || r.State != githubfake.ReviewCommented || r.CommitID != head || r.Body != "summary" || r.Author != "quavon-review[bot]" {
		t.Fatalf("review %+v, want a COMMENT on %s", r, head)
	}
	if len(r.Comments) != 1 || r.Comments[0] != (githubfake.ReviewComment{Path: "a.go", Line: 1, Side: "RIGHT", Body: "nit"}) {
		t.Fatalf("comments %+v", r.Comments)
	}
}

// TestWriterCommitOnBranchRefusals: how CommitOnBranch reports GitHub's
// answers: a stale head is ErrHeadMoved (and ErrConflict), protection and
// rules are ErrConflict without ErrHeadMoved (nothing written, permanent),
// a 502 is neither (it may have written: the caller reconciles).
func TestWriterCommitOnBranchRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name               string
		setup              func(e *fixerEnv, head string) string // returns the expected head to send
		headMoved, refused bool
	}{
		{name: "stale head", headMoved: true, refused: true, setup: func(e *fixerEnv, head string) string {
			e.repo.Commit("feature", map[string]string{"x.txt": "x\n"}, "author push")
			return head
		}},
		{name: "protected", refused: true, setup: func(e *fixerEnv, head string) string { e.repo.Protect("feature"); return head }},
		{name: "pull_request rule", refused: true, setup: func(e *fixerEnv, head string) string {
			e.srv.SetRules("acme", "app", "feature", []githubfake.Rule{{Type: "pull_request"}})
			return head
		}},
		{name: "502", setup: func(e *fixerEnv, head string) string {
			e.srv.InjectFault(githubfake.Fault{Method: "POST", Path: "/graphql", Kind: githubfake.Fault5xx})
			return head
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newFixerEnv(t)
			head := e.repo.Commit("feature", map[string]string{"src/main.go": "package main // wip\n"}, "wip")
			expected := tc.setup(e, head)
			before := e.repo.Ref("feature")
			_, err := e.fixer.CommitOnBranch(ctx, writer.CommitOnBranch{Branch: "feature", ExpectedHeadOID: expected, Headline: "h",
				Additions: []writer.FileAddition{{Path: "src/main.go", Contents: []byte("package main\n")}}})
			if err == nil {
				t.Fatal("accepted")
			}
			if errors.Is(err, writer.ErrHeadMoved) != tc.headMoved || errors.Is(err, github.ErrConflict) != tc.refused {
				t.Fatalf("err %v: head moved %v, refused %v", err, errors.Is(err, writer.ErrHeadMoved), errors.Is(err, github.ErrConflict))
			}
			if e.repo.Ref("feature") != before {
				t.Fatal("the branch moved")
			}
		})
	}
}
