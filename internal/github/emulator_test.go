package github_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	gh "github.com/google/go-github/v75/github"

	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/githubfake"
	"github.com/quavon/quavon/internal/testenv/testbroker"
	"github.com/quavon/quavon/internal/tokenbroker"
)

// sleeper records the transport's waits and advances the emulator's clock
// instead of sleeping.
type sleeper struct {
	mu     sync.Mutex
	srv    *githubfake.Server
	sleeps []time.Duration
}

func (s *sleeper) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	s.sleeps = append(s.sleeps, d)
	s.mu.Unlock()
	s.srv.Advance(d)
	return nil
}

func (s *sleeper) Sleeps() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sleeps)
}

// reviewReader installs the review app on the account acme with read
// access to contents, pull requests and issues, and returns its
// installation, the client's sleeper and a Reader of acme/app whose tokens
// come from a real broker, as the worker's do.
func reviewReader(t testing.TB, srv *githubfake.Server) (*githubfake.Installation, *sleeper, github.Reader) {
	t.Helper()
	fa := srv.RegisterApp("quavon-review")
	in := srv.Install(fa, "acme", map[string]string{"contents": "read", "pull_requests": "read", "issues": "read"})
	conn, sl := newConn(t, srv, github.AppReview, fa, tokenbroker.RoleWorker)
	rd, err := github.NewReader(context.Background(), conn, in.ID, "acme/app")
	if err != nil {
		t.Fatal(err)
	}
	return in, sl, rd
}

// newConn starts a broker holding the key of the emulator's app fa (as
// kind) and returns a connection that gets its tokens from it as role, on
// the emulator's clock, with waits recorded instead of slept.
func newConn(t testing.TB, srv *githubfake.Server, kind github.AppKind, fa *githubfake.App, role tokenbroker.Role) (*github.Conn, *sleeper) {
	t.Helper()
	b, sl := newBroker(t, srv, kind, fa)
	return b.Conn(t, role, github.TransportConfig{Now: srv.Now, Sleep: sl.Sleep}), sl
}

func newBroker(t testing.TB, srv *githubfake.Server, kind github.AppKind, fa *githubfake.App) (*testbroker.Broker, *sleeper) {
	t.Helper()
	sl := &sleeper{srv: srv}
	return testbroker.Start(t, srv, map[github.AppKind]*githubfake.App{kind: fa}, testbroker.Options{
		HTTP: github.TransportConfig{Sleep: sl.Sleep}}), sl
}

func countRequests(srv *githubfake.Server, method, path string) int {
	n := 0
	for _, r := range srv.Requests() {
		if r.Method == method && r.Path == path {
			n++
		}
	}
	return n
}

func TestEmulatorTokenHasExactlyRequestedPermissions(t *testing.T) {
	t.Parallel()
	srv := githubfake.New(t)
	// Private: any token may read a public repository.
	srv.AddRepo("acme", "app", githubfake.RepoOptions{Private: true, Files: map[string]string{"README.md": "hi\n"}})
	srv.AddRepo("acme", "other", githubfake.RepoOptions{Private: true, Files: map[string]string{"README.md": "other\n"}})
	fa := srv.RegisterApp("quavon-fixer")
	// The installation grants more than the Fixer set (issues, checks) and
	// covers both repositories.
	in := srv.Install(fa, "acme", map[string]string{
		"contents": "write", "pull_requests": "write", "issues": "write", "checks": "write",
	})
	b, _ := newBroker(t, srv, github.AppFixer, fa)
	ctx := context.Background()

	tok, err := b.Client(t, tokenbroker.RolePublisher).Token(ctx, github.TokenRequest{InstallationID: in.ID, Repo: "acme/app", Set: github.SetFixer})
	if err != nil {
		t.Fatal(err)
	}
	if !tok.Permissions.Equal(github.FixerPermissions()) {
		t.Fatalf("minted %s, want exactly %s", tok.Permissions, github.FixerPermissions())
	}
	rest := gh.NewClient(nil).WithAuthToken(tok.Secret())
	rest.BaseURL = mustURL(t, srv.URL+"/")
	if _, _, err := rest.Repositories.Get(ctx, "acme", "app"); err != nil {
		t.Fatalf("token refused on its own repository: %v", err)
	}
	if _, _, err := rest.Repositories.Get(ctx, "acme", "other"); err == nil {
		t.Fatal("token for acme/app read acme/other")
	}
	// issues: write was not requested, so the installation's grant does not
	// leak into the token.
	if _, _, err := rest.Issues.Create(ctx, "acme", "app", &gh.IssueRequest{Title: gh.Ptr("x")}); err == nil {
		t.Fatal("Fixer token created an issue")
	}
}

func TestEmulatorReadTokenCannotWrite(t *testing.T) {
	t.Parallel()
	srv := githubfake.New(t)
	repo := srv.AddRepo("acme", "app", githubfake.RepoOptions{Files: map[string]string{"a.txt": "a\n"}})
	ra := srv.RegisterApp("quavon-review")
	in := srv.Install(ra, "acme", map[string]string{"contents": "write", "pull_requests": "write", "issues": "write"}, "acme/app")
	conn, _ := newConn(t, srv, github.AppReview, ra, tokenbroker.RoleWorker)
	ctx := context.Background()
	c, err := conn.Clients(ctx, in.ID, "acme/app", github.SetReviewRead)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.REST.Git.CreateRef(ctx, "acme", "app", gh.CreateRef{Ref: "refs/heads/quavon/fix-1-0123abcd", SHA: repo.Ref("main")})
	if err = github.WrapError("create ref", err); !errors.Is(err, github.ErrForbidden) {
		t.Fatalf("read token created a ref: %v", err)
	}
	if repo.Ref("quavon/fix-1-0123abcd") != "" {
		t.Fatal("ref exists")
	}
	// Reading works with the same token.
	rd, err := github.NewReader(ctx, conn, in.ID, "acme/app")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := rd.FileContent(ctx, "a.txt", "main"); err != nil || string(b) != "a\n" {
		t.Fatalf("read %q %v", b, err)
	}
}

func TestEmulatorMintRefusals(t *testing.T) {
	t.Parallel()
	srv := githubfake.New(t)
	srv.AddRepo("acme", "app", githubfake.RepoOptions{Files: map[string]string{"a": "a"}})
	srv.AddRepo("evil", "app", githubfake.RepoOptions{Files: map[string]string{"a": "a"}})
	srv.AddRepo("acme", "uncovered", githubfake.RepoOptions{Files: map[string]string{"a": "a"}})
	fa := srv.RegisterApp("quavon-fixer")
	readOnly := srv.Install(fa, "acme", map[string]string{"contents": "read", "pull_requests": "write"}, "acme/app")
	evil := srv.Install(fa, "evil", map[string]string{"contents": "write", "pull_requests": "write"})
	ra := srv.RegisterApp("quavon-review")
	narrow := srv.Install(ra, "acme", map[string]string{"contents": "read", "pull_requests": "read", "issues": "read"}, "acme/app")
	b := testbroker.Start(t, srv, map[github.AppKind]*githubfake.App{github.AppFixer: fa, github.AppReview: ra}, testbroker.Options{})
	bc := b.Client(t, tokenbroker.RolePublisher)
	ctx := context.Background()
	mint := func(id int64, repo string, set github.TokenSet) (*github.InstallationToken, error) {
		return bc.Token(ctx, github.TokenRequest{InstallationID: id, Repo: repo, Set: set})
	}

	if _, err := mint(readOnly.ID, "acme/app", github.SetFixer); err == nil {
		t.Error("minted contents: write from an installation with contents: read")
	}
	if _, err := mint(narrow.ID, "acme/app", github.SetReviewRead); err != nil {
		t.Fatalf("the read set of a covered repository: %v", err)
	}
	if _, err := mint(narrow.ID, "acme/uncovered", github.SetReviewRead); err == nil {
		t.Error("minted for a repository the installation does not cover")
	}
	// Only the name travels in the request; an installation on another
	// account answers with its own repository of that name.
	if _, err := mint(evil.ID, "acme/app", github.SetFixer); !errors.Is(err, github.ErrTokenMismatch) {
		t.Errorf("token for evil/app accepted as acme/app: %v", err)
	}
	// The refused token was revoked with itself: the emulator dropped it.
	var revoked []githubfake.Request
	for _, r := range srv.Requests() {
		if r.Method == http.MethodDelete && r.Path == "/installation/token" {
			revoked = append(revoked, r)
		}
	}
	if len(revoked) != 1 || revoked[0].TokenKind != githubfake.TokenInstallation || revoked[0].InstallationID != evil.ID || revoked[0].Status != http.StatusNoContent {
		t.Errorf("refused token not revoked: %+v", revoked)
	}
	srv.SetSuspended(evil, true)
	if _, err := mint(evil.ID, "evil/app", github.SetFixer); !errors.Is(err, github.ErrForbidden) {
		t.Errorf("suspended installation: %v", err)
	}
}

func TestEmulatorTokenCacheAndRefresh(t *testing.T) {
	t.Parallel()
	srv := githubfake.New(t)
	srv.AddRepo("acme", "app", githubfake.RepoOptions{Files: map[string]string{"a": "a"}})
	in, _, rd := reviewReader(t, srv)
	ctx := context.Background()
	mintPath := "/app/installations/" + itoa(in.ID) + "/access_tokens"
	for range 3 {
		if _, err := rd.Repository(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := countRequests(srv, "POST", mintPath); n != 1 {
		t.Fatalf("%d mints for 3 reads", n)
	}
	srv.Advance(54 * time.Minute)
	if _, err := rd.Repository(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countRequests(srv, "POST", mintPath); n != 1 {
		t.Fatalf("re-minted with 6 minutes left (%d mints)", n)
	}
	srv.Advance(2 * time.Minute)
	if _, err := rd.Repository(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countRequests(srv, "POST", mintPath); n != 2 {
		t.Fatalf("not refreshed with 4 minutes left (%d mints)", n)
	}
}

func TestEmulatorReader(t *testing.T) {
	t.Parallel()
	srv := githubfake.New(t)
	repo := srv.AddRepo("acme", "app", githubfake.RepoOptions{Private: true, Files: map[string]string{
		"README.md": "hello\n", "src/main.go": "package main\n",
	}})
	other := srv.AddRepo("acme", "other", githubfake.RepoOptions{Files: map[string]string{"x": "x"}})
	fork := srv.AddRepo("mallory", "app", githubfake.RepoOptions{Fork: repo, Files: map[string]string{"README.md": "hello\n"}})
	_, _, rd := reviewReader(t, srv)
	ctx := context.Background()

	r, err := rd.Repository(ctx)
	if err != nil || r.FullName != "acme/app" || r.DefaultBranch != "main" || !r.Private || r.ID != repo.ID {
		t.Fatalf("repository %+v %v", r, err)
	}

	issue := repo.AddIssue(githubfake.IssueOptions{Title: "Bug", Body: "it breaks", Author: "eve", Labels: []string{"quavon:fix"}})
	repo.AddComment(issue, "ada", "first")
	repo.AddComment(issue, "eve", "second")
	is, err := rd.Issue(ctx, issue)
	if err != nil || is.Title != "Bug" || is.Author != "eve" || is.IsPullRequest || is.State != "open" || !slices.Equal(is.Labels, []string{"quavon:fix"}) {
		t.Fatalf("issue %+v %v", is, err)
	}
	comments, err := rd.IssueComments(ctx, issue)
	if err != nil || len(comments) != 2 || comments[0].Body != "first" || comments[1].Author != "eve" {
		t.Fatalf("comments %+v %v", comments, err)
	}
	if _, err := rd.Issue(ctx, 999); !errors.Is(err, github.ErrNotFound) {
		t.Fatalf("missing issue: %v", err)
	}

	head := repo.Commit("feature", map[string]string{"src/main.go": "package main\n\nfunc main() {}\n"}, "feature")
	pr := repo.AddPullRequest(githubfake.PullRequestOptions{Title: "Feature", Author: "ada", Head: "feature"})
	p, err := rd.PullRequest(ctx, pr)
	if err != nil || p.HeadRef != "feature" || p.HeadSHA != head || p.BaseRef != "main" || p.HeadRepoID != repo.ID || p.State != "open" {
		t.Fatalf("pull request %+v %v", p, err)
	}
	fork.Commit("evil", map[string]string{"README.md": "pwn\n"}, "evil")
	forkPR := repo.AddPullRequest(githubfake.PullRequestOptions{Title: "From fork", Author: "mallory", Head: "evil", HeadRepo: fork})
	fp, err := rd.PullRequest(ctx, forkPR)
	if err != nil || fp.HeadRepoID == repo.ID || fp.HeadRepoID != fork.ID {
		t.Fatalf("fork pull request %+v %v", fp, err)
	}

	b, err := rd.FileContent(ctx, "src/main.go", "feature")
	if err != nil || string(b) != "package main\n\nfunc main() {}\n" {
		t.Fatalf("file %q %v", b, err)
	}
	if _, err := rd.FileContent(ctx, "src", "main"); err == nil {
		t.Fatal("directory read as a file")
	}
	if _, err := rd.FileContent(ctx, "../other/x", "main"); err == nil {
		t.Fatal("dot-dot path accepted")
	}
	if _, err := rd.FileContent(ctx, "missing.txt", "main"); !errors.Is(err, github.ErrNotFound) {
		t.Fatalf("missing file: %v", err)
	}
	tree, err := rd.Tree(ctx, repo.Ref("main"))
	if err != nil || tree.Truncated {
		t.Fatalf("tree %+v %v", tree, err)
	}
	var paths []string
	for _, e := range tree.Entries {
		if e.Type == "blob" {
			paths = append(paths, e.Path)
		}
	}
	if !slices.Equal(paths, []string{"README.md", "src/main.go"}) {
		t.Fatalf("tree paths %v", paths)
	}

	// AC2: closing references to other repositories are dropped.
	own := repo.AddIssue(githubfake.IssueOptions{Title: "own", Author: "ada"})
	foreign := other.AddIssue(githubfake.IssueOptions{Title: "foreign", Author: "eve"})
	srv.LinkIssue("acme", "app", pr, "acme/app", own)
	srv.LinkIssue("acme", "app", pr, "acme/other", foreign)
	refs, err := rd.ClosingIssueReferences(ctx, pr)
	if err != nil || !slices.Equal(refs, []int{own}) {
		t.Fatalf("closing references %v %v", refs, err)
	}
}

func TestEmulatorPermissionMatrix(t *testing.T) {
	t.Parallel()
	srv := githubfake.New(t)
	srv.AddOrg("acme")
	// Private: on a public repository GitHub reports "read" for everyone.
	srv.AddRepo("acme", "app", githubfake.RepoOptions{Private: true, Files: map[string]string{"a": "a"}})
	_, _, rd := reviewReader(t, srv)
	ctx := context.Background()
	cases := []struct {
		role, permission string
		allowed          bool
	}{
		{"admin", "admin", true},
		{"write", "write", true},
		{"maintain", "write", true}, // GitHub reports maintain as write
		{"triage", "read", false},   // and triage as read
		{"read", "read", false},
		{"none", "none", false},
	}
	for _, c := range cases {
		login := "user-" + c.role
		srv.AddUser(login)
		srv.SetPermission("acme", "app", login, c.role)
		perm, err := rd.CollaboratorPermission(ctx, login)
		if err != nil {
			t.Fatalf("%s: %v", c.role, err)
		}
		if perm != c.permission || github.CanTrigger(perm) != c.allowed {
			t.Errorf("role %s: permission %q allowed %v, want %q %v", c.role, perm, github.CanTrigger(perm), c.permission, c.allowed)
		}
	}
	perm, err := rd.CollaboratorPermission(ctx, "nobody-here")
	if github.CanTrigger(perm) || !errors.Is(err, github.ErrNotCollaborator) {
		t.Fatalf("unknown user: %q %v", perm, err)
	}
}

func TestEmulatorBackoff(t *testing.T) {
	t.Parallel()
	srv := githubfake.New(t)
	srv.AddRepo("acme", "app", githubfake.RepoOptions{Files: map[string]string{"a": "a"}})
	_, sl, rd := reviewReader(t, srv)
	ctx := context.Background()
	repoPath := "/repos/acme/app"

	srv.InjectFault(githubfake.Fault{Method: "GET", Path: repoPath, Kind: githubfake.Fault5xx, Times: 2})
	if _, err := rd.Repository(ctx); err != nil {
		t.Fatalf("GET not retried through 502s: %v", err)
	}
	if len(sl.Sleeps()) != 2 {
		t.Fatalf("sleeps %v", sl.Sleeps())
	}

	srv.InjectFault(githubfake.Fault{Method: "GET", Path: repoPath, Kind: githubfake.FaultSecondaryRateLimit, RetryAfter: 7 * time.Second})
	if _, err := rd.Repository(ctx); err != nil {
		t.Fatalf("secondary limit: %v", err)
	}
	// Retry-After is turned into a deadline on the (running) clock.
	if s := sl.Sleeps(); s[len(s)-1] > 7*time.Second || s[len(s)-1] < 6*time.Second {
		t.Fatalf("secondary wait %v, want Retry-After 7s", s[len(s)-1])
	}

	srv.InjectFault(githubfake.Fault{Method: "GET", Path: repoPath, Kind: githubfake.FaultRateLimit, RetryAfter: 20 * time.Second})
	if _, err := rd.Repository(ctx); err != nil {
		t.Fatalf("primary limit: %v", err)
	}
	if s := sl.Sleeps(); s[len(s)-1] < 19*time.Second || s[len(s)-1] > 22*time.Second {
		t.Fatalf("primary wait %v, want until x-ratelimit-reset (~20s)", s[len(s)-1])
	}
	if srv.PendingFaults() != 0 {
		t.Fatal("faults left")
	}
}

func TestEmulatorETag(t *testing.T) {
	t.Parallel()
	srv := githubfake.New(t)
	srv.AddRepo("acme", "app", githubfake.RepoOptions{Files: map[string]string{"a": "a"}})
	_, _, rd := reviewReader(t, srv)
	ctx := context.Background()
	first, err := rd.Repository(ctx)
	if err != nil {
		t.Fatal(err)
	}
	second, err := rd.Repository(ctx)
	if err != nil || second != first {
		t.Fatalf("second read %+v %v", second, err)
	}
	var statuses []int
	for _, r := range srv.Requests() {
		if r.Method == "GET" && r.Path == "/repos/acme/app" {
			statuses = append(statuses, r.Status)
		}
	}
	if !slices.Equal(statuses, []int{http.StatusOK, http.StatusNotModified}) {
		t.Fatalf("statuses %v, want [200 304]", statuses)
	}
}
