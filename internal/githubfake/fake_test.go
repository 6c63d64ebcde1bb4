package githubfake_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-github/v75/github"
	"github.com/shurcooL/githubv4"

	"github.com/quavon/quavon/internal/githubfake"
)

// world is the common scene: an org "acme" with a private repository "app"
// (main: README.md, src/a.go), a private "secret" repository, and the
// Fixer app installed on both with contents/pull_requests/issues write.
type world struct {
	s      *githubfake.Server
	app    *githubfake.App
	inst   *githubfake.Installation
	repo   *githubfake.Repo
	secret *githubfake.Repo
}

func newWorld(t *testing.T) *world {
	t.Helper()
	s := githubfake.New(t)
	s.AddOrg("acme")
	repo := s.AddRepo("acme", "app", githubfake.RepoOptions{Private: true, Files: map[string]string{
		"README.md": "hello\n",
		"src/a.go":  "package a\n",
	}})
	secret := s.AddRepo("acme", "secret", githubfake.RepoOptions{Private: true, Files: map[string]string{"k": "v"}})
	app := s.RegisterApp("quavon-fixer")
	inst := s.Install(app, "acme", map[string]string{
		"contents": "write", "pull_requests": "write", "issues": "write", "checks": "write",
		"security_events": "write", "administration": "read",
	})
	return &world{s: s, app: app, inst: inst, repo: repo, secret: secret}
}

func client(t testing.TB, s *githubfake.Server, token string) *github.Client {
	t.Helper()
	c := github.NewClient(nil)
	if token != "" {
		c = c.WithAuthToken(token)
	}
	u, err := url.Parse(s.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	c.BaseURL, c.UploadURL = u, u
	return c
}

func gql(s *githubfake.Server, token string) *githubv4.Client {
	hc := &http.Client{Transport: bearer{token}}
	return githubv4.NewEnterpriseClient(s.URL+"/graphql", hc)
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func status(err error) int {
	var er *github.ErrorResponse
	if errors.As(err, &er) {
		return er.Response.StatusCode
	}
	return 0
}

func message(err error) string {
	var er *github.ErrorResponse
	if errors.As(err, &er) {
		return er.Message
	}
	return ""
}

func signJWT(t *testing.T, key *rsa.PrivateKey, claims jwt.MapClaims) string {
	t.Helper()
	v, err := jwt.NewWithClaims(jwt.SigningMethodRS256, claims).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestTokenExchange(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	appClient := client(t, w.s, w.s.SignJWT(w.app))

	tok, _, err := appClient.Apps.CreateInstallationToken(ctx, w.inst.ID, &github.InstallationTokenOptions{
		Repositories: []string{"app"},
		Permissions:  &github.InstallationPermissions{Contents: github.Ptr("write"), PullRequests: github.Ptr("write"), Metadata: github.Ptr("read")},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	if p := tok.GetPermissions(); p != nil {
		got["contents"], got["pull_requests"], got["metadata"] = p.GetContents(), p.GetPullRequests(), p.GetMetadata()
		if p.Issues != nil || p.Checks != nil {
			t.Errorf("token has permissions it did not ask for: %+v", p)
		}
	}
	want := map[string]string{"contents": "write", "pull_requests": "write", "metadata": "read"}
	if !maps.Equal(got, want) {
		t.Errorf("permissions = %v, want %v", got, want)
	}
	if len(tok.Repositories) != 1 || tok.Repositories[0].GetFullName() != "acme/app" {
		t.Errorf("repositories = %v", tok.Repositories)
	}
	if d := time.Until(tok.GetExpiresAt().Time); d < 59*time.Minute || d > 61*time.Minute {
		t.Errorf("expires in %v, want 1h", d)
	}

	// The token works for what it was minted for.
	c := client(t, w.s, tok.GetToken())
	if _, _, err := c.Repositories.Get(ctx, "acme", "app"); err != nil {
		t.Errorf("GET repo with fresh token: %v", err)
	}

	for name, opts := range map[string]*github.InstallationTokenOptions{
		"more than granted":  {Permissions: &github.InstallationPermissions{Administration: github.Ptr("write")}},
		"not granted at all": {Permissions: &github.InstallationPermissions{Workflows: github.Ptr("write")}},
		"foreign repository": {Repositories: []string{"other/repo"}},
		"unknown repo id":    {RepositoryIDs: []int64{999999}},
	} {
		_, _, err := appClient.Apps.CreateInstallationToken(ctx, w.inst.ID, opts)
		if status(err) != http.StatusUnprocessableEntity {
			t.Errorf("%s: err = %v, want 422", name, err)
		}
	}

	// Repository lookup by JWT.
	in, _, err := appClient.Apps.FindRepositoryInstallation(ctx, "acme", "app")
	if err != nil || in.GetID() != w.inst.ID || in.GetAccount().GetLogin() != "acme" {
		t.Errorf("FindRepositoryInstallation = %v, %v", in, err)
	}
	got2, _, err := appClient.Apps.GetInstallation(ctx, w.inst.ID)
	if err != nil || got2.GetPermissions().GetContents() != "write" || got2.GetRepositorySelection() != "all" {
		t.Errorf("GetInstallation = %v, %v", got2, err)
	}
}

func TestTokenEnforcement(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	head := w.repo.Ref("main")

	readOnly := client(t, w.s, w.s.InstallationToken(w.inst, map[string]string{"contents": "read"}, "app"))
	_, _, err := readOnly.Git.CreateRef(ctx, "acme", "app", github.CreateRef{Ref: "refs/heads/x", SHA: head})
	if status(err) != http.StatusForbidden || message(err) != "Resource not accessible by integration" {
		t.Errorf("create ref with contents:read: %v, want 403 Resource not accessible by integration", err)
	}
	if w.repo.Ref("x") != "" {
		t.Error("ref was created despite the refusal")
	}
	if _, _, err := readOnly.Git.GetRef(ctx, "acme", "app", "heads/main"); err != nil {
		t.Errorf("read with contents:read: %v", err)
	}
	_, _, err = readOnly.Issues.Create(ctx, "acme", "app", &github.IssueRequest{Title: github.Ptr("t")})
	if status(err) != http.StatusForbidden {
		t.Errorf("create issue without issues permission: %v, want 403", err)
	}

	// A token for repository A cannot see private repository B.
	_, _, err = readOnly.Repositories.Get(ctx, "acme", "secret")
	if status(err) != http.StatusNotFound {
		t.Errorf("GET other repository: %v, want 404", err)
	}
	_, _, err = readOnly.Git.GetRef(ctx, "acme", "secret", "heads/main")
	if status(err) != http.StatusNotFound {
		t.Errorf("GET other repository's ref: %v, want 404", err)
	}

	// Expiry.
	w.s.Advance(61 * time.Minute)
	_, _, err = readOnly.Repositories.Get(ctx, "acme", "app")
	if status(err) != http.StatusUnauthorized || message(err) != "Bad credentials" {
		t.Errorf("expired token: %v, want 401 Bad credentials", err)
	}

	// Suspension refuses existing tokens and new ones.
	tok := w.s.InstallationToken(w.inst, nil)
	w.s.SetSuspended(w.inst, true)
	if _, _, err := client(t, w.s, tok).Repositories.Get(ctx, "acme", "app"); status(err) != http.StatusForbidden {
		t.Errorf("suspended installation's token: %v, want 403", err)
	}
	if _, _, err := client(t, w.s, w.s.SignJWT(w.app)).Apps.CreateInstallationToken(ctx, w.inst.ID, nil); status(err) != http.StatusForbidden {
		t.Errorf("token for suspended installation: %v, want 403", err)
	}
	w.s.SetSuspended(w.inst, false)

	// Uninstalling revokes.
	w.s.Uninstall(w.inst)
	if _, _, err := client(t, w.s, tok).Repositories.Get(ctx, "acme", "app"); status(err) != http.StatusUnauthorized {
		t.Errorf("token of removed installation: %v, want 401", err)
	}

	// Anonymous callers see no private repository and cannot write.
	if _, _, err := client(t, w.s, "").Repositories.Get(ctx, "acme", "app"); status(err) != http.StatusNotFound {
		t.Errorf("anonymous GET private repository: %v, want 404", err)
	}

	var kinds []githubfake.TokenKind
	for _, r := range w.s.Requests() {
		kinds = append(kinds, r.TokenKind)
	}
	if len(kinds) == 0 {
		t.Fatal("empty request log")
	}
}

func TestJWT(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	other := w.s.RegisterApp("someone-else")
	now := time.Now()
	strangerKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	id := strconv.FormatInt(w.app.ID, 10)
	for _, tc := range []struct {
		name string
		jwt  string
		want int
	}{
		{"valid, string iss", signJWT(t, w.app.PrivateKey, jwt.MapClaims{"iss": id, "iat": now.Add(-time.Minute).Unix(), "exp": now.Add(9 * time.Minute).Unix()}), http.StatusCreated},
		{"valid, numeric iss, GitHub's recipe", signJWT(t, w.app.PrivateKey, jwt.MapClaims{"iss": w.app.ID, "iat": now.Add(-60 * time.Second).Unix(), "exp": now.Add(10*time.Minute - 5*time.Second).Unix()}), http.StatusCreated},
		{"bad signature", signJWT(t, strangerKey, jwt.MapClaims{"iss": id, "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix()}), http.StatusUnauthorized},
		{"exp too far", signJWT(t, w.app.PrivateKey, jwt.MapClaims{"iss": id, "iat": now.Unix(), "exp": now.Add(11 * time.Minute).Unix()}), http.StatusUnauthorized},
		{"expired", signJWT(t, w.app.PrivateKey, jwt.MapClaims{"iss": id, "iat": now.Add(-20 * time.Minute).Unix(), "exp": now.Add(-10 * time.Minute).Unix()}), http.StatusUnauthorized},
		{"iat in the future", signJWT(t, w.app.PrivateKey, jwt.MapClaims{"iss": id, "iat": now.Add(5 * time.Minute).Unix(), "exp": now.Add(9 * time.Minute).Unix()}), http.StatusUnauthorized},
		{"no exp", signJWT(t, w.app.PrivateKey, jwt.MapClaims{"iss": id, "iat": now.Unix()}), http.StatusUnauthorized},
		{"unknown app", signJWT(t, w.app.PrivateKey, jwt.MapClaims{"iss": "424242", "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix()}), http.StatusUnauthorized},
		{"wrong app for installation", w.s.SignJWT(other), http.StatusNotFound},
		{"HS256", func() string {
			v, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"iss": id, "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix()}).SignedString([]byte("k"))
			return v
		}(), http.StatusUnauthorized},
	} {
		_, resp, err := client(t, w.s, tc.jwt).Apps.CreateInstallationToken(ctx, w.inst.ID, nil)
		got := 0
		if resp != nil {
			got = resp.StatusCode
		}
		if got != tc.want {
			t.Errorf("%s: status %d (%v), want %d", tc.name, got, err, tc.want)
		}
	}
	// An installation token is not an app JWT.
	tok := w.s.InstallationToken(w.inst, nil)
	if _, _, err := client(t, w.s, tok).Apps.CreateInstallationToken(ctx, w.inst.ID, nil); status(err) != http.StatusUnauthorized {
		t.Errorf("installation token on /app: %v, want 401", err)
	}
	// A JWT cannot read repository data.
	if _, _, err := client(t, w.s, w.s.SignJWT(w.app)).Repositories.Get(ctx, "acme", "app"); status(err) != http.StatusForbidden {
		t.Errorf("JWT on a repository endpoint: %v, want 403", err)
	}
}

// publish builds one commit on a fresh branch with the git data API, as
// the publisher does, and returns the branch name, commit and base.
func TestGitDataRoundTrip(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	c := client(t, w.s, w.s.InstallationToken(w.inst, map[string]string{"contents": "write", "metadata": "read"}, "app"))
	base := w.repo.Ref("main")

	baseCommit, _, err := c.Git.GetCommit(ctx, "acme", "app", base)
	if err != nil {
		t.Fatal(err)
	}
	blob, _, err := c.Git.CreateBlob(ctx, "acme", "app", github.Blob{Content: github.Ptr(base64.StdEncoding.EncodeToString([]byte("package b\n"))), Encoding: github.Ptr("base64")})
	if err != nil {
		t.Fatal(err)
	}
	tree, _, err := c.Git.CreateTree(ctx, "acme", "app", baseCommit.GetTree().GetSHA(), []*github.TreeEntry{
		{Path: github.Ptr("src/deep/b.go"), Mode: github.Ptr("100644"), Type: github.Ptr("blob"), SHA: blob.SHA},
		{Path: github.Ptr("README.md"), Mode: github.Ptr("100644"), Type: github.Ptr("blob"), Content: github.Ptr("changed\n")},
		{Path: github.Ptr("src/a.go"), Mode: github.Ptr("100644"), Type: github.Ptr("blob")}, // sha null: delete
	})
	if err != nil {
		t.Fatal(err)
	}
	commit, _, err := c.Git.CreateCommit(ctx, "acme", "app", github.Commit{
		Message: github.Ptr("fix: things"), Tree: &github.Tree{SHA: tree.SHA}, Parents: []*github.Commit{{SHA: github.Ptr(base)}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !commit.GetVerification().GetVerified() || commit.GetVerification().GetReason() != "valid" {
		t.Errorf("API commit by an app: verification %+v, want verified", commit.GetVerification())
	}
	ref, _, err := c.Git.CreateRef(ctx, "acme", "app", github.CreateRef{Ref: "refs/heads/quavon/fix-1-0123abcd", SHA: commit.GetSHA()})
	if err != nil {
		t.Fatal(err)
	}
	if ref.GetObject().GetSHA() != commit.GetSHA() || ref.GetRef() != "refs/heads/quavon/fix-1-0123abcd" {
		t.Errorf("ref = %+v", ref)
	}

	files, err := w.repo.Files("quavon/fix-1-0123abcd")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"README.md": "changed\n", "src/deep/b.go": "package b\n"}
	if !maps.Equal(files, want) {
		t.Errorf("branch files = %v, want %v", files, want)
	}
	info, _ := w.repo.CommitInfo(commit.GetSHA())
	if len(info.Parents) != 1 || info.Parents[0] != base || info.Tree != tree.GetSHA() {
		t.Errorf("commit info = %+v", info)
	}

	// Read back through the API.
	got, _, err := c.Git.GetTree(ctx, "acme", "app", tree.GetSHA(), true)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range got.Entries {
		if e.GetType() == "blob" {
			paths = append(paths, e.GetPath())
		}
	}
	if strings.Join(paths, ",") != "README.md,src/deep/b.go" {
		t.Errorf("recursive tree paths = %v", paths)
	}
	fc, _, _, err := c.Repositories.GetContents(ctx, "acme", "app", "src/deep/b.go", &github.RepositoryContentGetOptions{Ref: "quavon/fix-1-0123abcd"})
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := fc.GetContent(); s != "package b\n" {
		t.Errorf("contents = %q", s)
	}
	b, _, err := c.Git.GetBlob(ctx, "acme", "app", blob.GetSHA())
	if err != nil || b.GetSize() != len("package b\n") {
		t.Errorf("GetBlob = %+v, %v", b, err)
	}

	// Creating it again is refused.
	_, _, err = c.Git.CreateRef(ctx, "acme", "app", github.CreateRef{Ref: "refs/heads/quavon/fix-1-0123abcd", SHA: commit.GetSHA()})
	if status(err) != http.StatusUnprocessableEntity || message(err) != "Reference already exists" {
		t.Errorf("duplicate ref: %v", err)
	}

	// Moving main backwards... first move main forward as a human would.
	human := w.repo.Commit("main", map[string]string{"other.txt": "x"}, "human change")
	_, _, err = c.Git.UpdateRef(ctx, "acme", "app", "refs/heads/quavon/fix-1-0123abcd", github.UpdateRef{SHA: human})
	if status(err) != http.StatusUnprocessableEntity || message(err) != "Update is not a fast forward" {
		t.Errorf("non-fast-forward update: %v, want 422 Update is not a fast forward", err)
	}
	if w.repo.Ref("quavon/fix-1-0123abcd") != commit.GetSHA() {
		t.Error("refused update moved the ref")
	}
	if _, _, err := c.Git.UpdateRef(ctx, "acme", "app", "refs/heads/quavon/fix-1-0123abcd", github.UpdateRef{SHA: human, Force: github.Ptr(true)}); err != nil {
		t.Errorf("forced update: %v", err)
	}
	if w.repo.Ref("quavon/fix-1-0123abcd") != human {
		t.Error("forced update did not move the ref")
	}
	// Fast-forward from base to human is accepted without force.
	if _, err := c.Git.DeleteRef(ctx, "acme", "app", "refs/heads/quavon/fix-1-0123abcd"); err != nil {
		t.Fatal(err)
	}
	if w.repo.Ref("quavon/fix-1-0123abcd") != "" {
		t.Error("ref survived delete")
	}
	if _, _, err := c.Git.GetRef(ctx, "acme", "app", "heads/quavon/fix-1-0123abcd"); status(err) != http.StatusNotFound {
		t.Errorf("GET deleted ref: %v, want 404", err)
	}

	rc, _, err := c.Repositories.GetCommit(ctx, "acme", "app", commit.GetSHA(), nil)
	if err != nil || !rc.GetCommit().GetVerification().GetVerified() || rc.GetSHA() != commit.GetSHA() {
		t.Errorf("REST commit = %+v, %v", rc, err)
	}

	// Human commits are unsigned.
	hc, _, err := c.Git.GetCommit(ctx, "acme", "app", human)
	if err != nil || hc.GetVerification().GetVerified() || hc.GetVerification().GetReason() != "unsigned" {
		t.Errorf("human commit verification = %+v, %v", hc.GetVerification(), err)
	}
}

func TestRefWritesHonourRulesAndProtection(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	c := client(t, w.s, w.s.InstallationToken(w.inst, nil))
	head := w.repo.Ref("main")
	human := w.repo.Commit("feature", map[string]string{"f": "1"}, "human")

	w.s.SetRules("acme", "app", "feature", []githubfake.Rule{{Type: "non_fast_forward"}, {Type: "deletion"}})
	w.s.SetRules("acme", "app", "signed/**", []githubfake.Rule{{Type: "required_signatures"}})

	rules, _, err := c.Repositories.GetRulesForBranch(ctx, "acme", "app", "feature", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rules.NonFastForward) != 1 || len(rules.Deletion) != 1 || rules.NonFastForward[0].RulesetSource != "acme/app" {
		t.Errorf("rules = %+v", rules)
	}
	if r, _, err := c.Repositories.GetRulesForBranch(ctx, "acme", "app", "quavon/fix-1-00000000", nil); err != nil || len(r.NonFastForward)+len(r.RequiredSignatures) != 0 {
		t.Errorf("rules for unmatched branch = %+v, %v", r, err)
	}

	_, _, err = c.Git.UpdateRef(ctx, "acme", "app", "refs/heads/feature", github.UpdateRef{SHA: head, Force: github.Ptr(true)})
	if status(err) != http.StatusUnprocessableEntity || !strings.Contains(message(err), "Repository rule violations found") {
		t.Errorf("force-push against non_fast_forward rule: %v", err)
	}
	if _, err := c.Git.DeleteRef(ctx, "acme", "app", "refs/heads/feature"); status(err) != http.StatusUnprocessableEntity {
		t.Errorf("delete against deletion rule: %v", err)
	}
	if w.repo.Ref("feature") != human {
		t.Error("refused writes changed the branch")
	}
	// An unsigned (human) commit cannot land where signatures are required.
	if _, _, err := c.Git.CreateRef(ctx, "acme", "app", github.CreateRef{Ref: "refs/heads/signed/x", SHA: human}); status(err) != http.StatusUnprocessableEntity {
		t.Errorf("unsigned commit under required_signatures: %v", err)
	}

	// Classic protection.
	w.repo.Protect("main")
	if _, _, err := c.Repositories.GetBranchProtection(ctx, "acme", "app", "main"); err != nil {
		t.Errorf("GetBranchProtection on protected branch: %v", err)
	}
	_, _, err = c.Repositories.GetBranchProtection(ctx, "acme", "app", "feature")
	if !errors.Is(err, github.ErrBranchNotProtected) {
		t.Errorf("GetBranchProtection on unprotected branch: %v, want ErrBranchNotProtected", err)
	}
	br, _, err := c.Repositories.GetBranch(ctx, "acme", "app", "main", 0)
	if err != nil || !br.GetProtected() || br.GetCommit().GetSHA() != head {
		t.Errorf("GetBranch = %+v, %v", br, err)
	}
	next := w.repo.Commit("tmp", map[string]string{"g": "1"}, "x") // descends from main
	if _, _, err := c.Git.UpdateRef(ctx, "acme", "app", "refs/heads/main", github.UpdateRef{SHA: next}); status(err) != http.StatusUnprocessableEntity {
		t.Errorf("update of protected branch: %v", err)
	}
}

func TestCreateCommitOnBranchCAS(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	w.s.AddUser("alice")
	w.s.SetPermission("acme", "app", "alice", "write")
	w.repo.Commit("feature", map[string]string{"src/a.go": "package a // v2\n"}, "human work")
	head := w.repo.Ref("feature")
	v4 := gql(w.s, w.s.InstallationToken(w.inst, map[string]string{"contents": "write", "pull_requests": "write"}, "app"))

	var m struct {
		CreateCommitOnBranch struct {
			Commit struct {
				Oid githubv4.GitObjectID
				URL githubv4.URI
			}
		} `graphql:"createCommitOnBranch(input: $input)"`
	}
	input := func(expected string) githubv4.CreateCommitOnBranchInput {
		return githubv4.CreateCommitOnBranchInput{
			Branch:          githubv4.CommittableBranch{RepositoryNameWithOwner: githubv4.NewString("acme/app"), BranchName: githubv4.NewString("feature")},
			Message:         githubv4.CommitMessage{Headline: "Quavon: fix findings", Body: githubv4.NewString("CodeLotse reference x")},
			ExpectedHeadOid: githubv4.GitObjectID(expected),
			FileChanges: &githubv4.FileChanges{
				Additions: &[]githubv4.FileAddition{{Path: "src/a.go", Contents: githubv4.Base64String(base64.StdEncoding.EncodeToString([]byte("package a // fixed\n")))}},
				Deletions: &[]githubv4.FileDeletion{{Path: "README.md"}},
			},
		}
	}

	// Stale head: refused, nothing changes.
	stale := w.repo.Ref("main")
	err := v4.Mutate(ctx, &m, input(stale), nil)
	if err == nil || !strings.Contains(err.Error(), `Expected branch to point to "`+stale+`" but it did not.`) {
		t.Fatalf("stale expectedHeadOid: %v", err)
	}
	if w.repo.Ref("feature") != head {
		t.Fatal("refused mutation moved the branch")
	}

	if err := v4.Mutate(ctx, &m, input(head), nil); err != nil {
		t.Fatal(err)
	}
	oid := string(m.CreateCommitOnBranch.Commit.Oid)
	if w.repo.Ref("feature") != oid {
		t.Fatalf("branch = %s, want %s", w.repo.Ref("feature"), oid)
	}
	info, _ := w.repo.CommitInfo(oid)
	if len(info.Parents) != 1 || info.Parents[0] != head || !info.Verified || info.Message != "Quavon: fix findings\n\nCodeLotse reference x" {
		t.Errorf("commit = %+v", info)
	}
	files, _ := w.repo.Files("feature")
	if want := map[string]string{"src/a.go": "package a // fixed\n"}; !maps.Equal(files, want) {
		t.Errorf("files = %v, want %v", files, want)
	}

	// Without contents: write the mutation is refused.
	ro := gql(w.s, w.s.InstallationToken(w.inst, map[string]string{"contents": "read"}, "app"))
	if err := ro.Mutate(ctx, &m, input(oid), nil); err == nil || !strings.Contains(err.Error(), "Resource not accessible by integration") {
		t.Errorf("mutation with contents:read: %v", err)
	}
	if w.repo.Ref("feature") != oid {
		t.Error("refused mutation moved the branch")
	}
	// Raw error shape: GitHub's top-level "type".
	body := `{"query":"mutation($input:CreateCommitOnBranchInput!){createCommitOnBranch(input:$input){commit{oid}}}","variables":{"input":{"branch":{"repositoryNameWithOwner":"acme/app","branchName":"feature"},"message":{"headline":"h"},"expectedHeadOid":"` + head + `"}}}`
	req, _ := http.NewRequest("POST", w.s.URL+"/graphql", strings.NewReader(body))
	req.Header.Set("Authorization", "bearer "+w.s.InstallationToken(w.inst, nil))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(raw), `"type":"STALE_DATA"`) || !strings.Contains(string(raw), `"createCommitOnBranch":null`) {
		t.Errorf("raw STALE_DATA response = %s", raw)
	}
	if r := w.s.Requests(); r[len(r)-1].GraphQL != "createCommitOnBranch" {
		t.Errorf("request log GraphQL = %q", r[len(r)-1].GraphQL)
	}
}

func TestClosingIssuesReferences(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	issue := w.repo.AddIssue(githubfake.IssueOptions{Title: "bug", Author: "alice"})
	foreign := w.secret.AddIssue(githubfake.IssueOptions{Title: "secret bug", Author: "bob"})
	w.repo.Commit("fix", map[string]string{"x": "1"}, "fix")
	pr := w.repo.AddPullRequest(githubfake.PullRequestOptions{Title: "fix", Author: "alice", Head: "fix"})
	w.s.LinkIssue("acme", "app", pr, "acme/app", issue)
	w.s.LinkIssue("acme", "app", pr, "acme/secret", foreign)

	var q struct {
		Repository struct {
			PullRequest struct {
				HeadRefOid              githubv4.GitObjectID
				IsCrossRepository       bool
				ClosingIssuesReferences struct {
					Nodes []struct {
						Number     int
						Repository struct{ NameWithOwner string }
					}
				} `graphql:"closingIssuesReferences(first: $first)"`
			} `graphql:"pullRequest(number: $number)"`
		} `graphql:"repository(owner: $owner, name: $name)"`
	}
	vars := map[string]any{"owner": githubv4.String("acme"), "name": githubv4.String("app"), "number": githubv4.Int(pr), "first": githubv4.Int(10)}

	// A token for acme/app only does not see the issue in acme/secret.
	if err := gql(w.s, w.s.InstallationToken(w.inst, nil, "app")).Query(ctx, &q, vars); err != nil {
		t.Fatal(err)
	}
	nodes := q.Repository.PullRequest.ClosingIssuesReferences.Nodes
	if len(nodes) != 1 || nodes[0].Number != issue || nodes[0].Repository.NameWithOwner != "acme/app" {
		t.Errorf("nodes = %+v", nodes)
	}
	if string(q.Repository.PullRequest.HeadRefOid) != w.repo.Ref("fix") || q.Repository.PullRequest.IsCrossRepository {
		t.Errorf("pull request = %+v", q.Repository.PullRequest)
	}
	// A token covering both sees both: filtering is the client's job (AC2).
	if err := gql(w.s, w.s.InstallationToken(w.inst, nil)).Query(ctx, &q, vars); err != nil {
		t.Fatal(err)
	}
	if n := len(q.Repository.PullRequest.ClosingIssuesReferences.Nodes); n != 2 {
		t.Errorf("with a token for both repositories: %d nodes, want 2", n)
	}
	// A repository the token cannot see resolves to NOT_FOUND.
	vars["name"] = githubv4.String("secret")
	if err := gql(w.s, w.s.InstallationToken(w.inst, nil, "app")).Query(ctx, &q, vars); err == nil || !strings.Contains(err.Error(), "Could not resolve to a Repository") {
		t.Errorf("query on invisible repository: %v", err)
	}
}

func TestLostResponseIsObservable(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	c := client(t, w.s, w.s.InstallationToken(w.inst, nil))
	head := w.repo.Ref("main")
	w.s.InjectFault(githubfake.Fault{Method: "POST", Path: "/repos/{o}/{r}/git/refs", Kind: githubfake.FaultLoseResponse})

	_, _, err := c.Git.CreateRef(ctx, "acme", "app", github.CreateRef{Ref: "refs/heads/quavon/fix-2-aaaaaaaa", SHA: head})
	if err == nil {
		t.Fatal("lost response reported success")
	}
	ref, _, err := c.Git.GetRef(ctx, "acme", "app", "heads/quavon/fix-2-aaaaaaaa")
	if err != nil || ref.GetObject().GetSHA() != head {
		t.Fatalf("later read of the ref: %v, %v", ref, err)
	}
	log := w.s.Requests()
	var lost *githubfake.Request
	for i := range log {
		if log[i].Method == "POST" && strings.HasSuffix(log[i].Path, "/git/refs") {
			lost = &log[i]
		}
	}
	if lost == nil || lost.Status != 0 || lost.TokenKind != githubfake.TokenInstallation {
		t.Errorf("log entry of the lost write = %+v", lost)
	}
}

func TestFaults(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	c := client(t, w.s, w.s.InstallationToken(w.inst, nil))

	w.s.InjectFault(githubfake.Fault{Method: "GET", Path: "/repos/{o}/{r}", Kind: githubfake.Fault5xx, Times: 2})
	for i := 0; i < 2; i++ {
		if _, resp, err := c.Repositories.Get(ctx, "acme", "app"); err == nil || resp.StatusCode != http.StatusBadGateway {
			t.Errorf("5xx fault %d: %v", i, err)
		}
	}
	if _, _, err := c.Repositories.Get(ctx, "acme", "app"); err != nil {
		t.Errorf("after fault: %v", err)
	}

	w.s.InjectFault(githubfake.Fault{Path: "/repos/{o}/{r}/issues", Kind: githubfake.FaultSecondaryRateLimit, RetryAfter: 2 * time.Second})
	_, _, err := c.Issues.Create(ctx, "acme", "app", &github.IssueRequest{Title: github.Ptr("x")})
	var abuse *github.AbuseRateLimitError
	if !errors.As(err, &abuse) || abuse.GetRetryAfter() != 2*time.Second {
		t.Errorf("secondary rate limit: %v", err)
	}
	if len(w.repo.Issues()) != 0 {
		t.Error("rate-limited request was performed")
	}

	w.s.InjectFault(githubfake.Fault{Path: "/repos/{o}/{r}/pulls", Kind: githubfake.FaultRateLimit})
	c2 := client(t, w.s, w.s.InstallationToken(w.inst, nil))
	_, _, err = c2.PullRequests.List(ctx, "acme", "app", nil)
	var rl *github.RateLimitError
	if !errors.As(err, &rl) || rl.Rate.Remaining != 0 {
		t.Errorf("primary rate limit: %v", err)
	}
	if w.s.PendingFaults() != 0 {
		t.Errorf("%d faults left", w.s.PendingFaults())
	}
}

func TestSARIFUpload(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	c := client(t, w.s, w.s.InstallationToken(w.inst, map[string]string{"security_events": "write"}, "app"))
	head := w.repo.Ref("main")
	encode := func(data []byte) string {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(data)
		_ = zw.Close()
		return base64.StdEncoding.EncodeToString(b.Bytes())
	}
	sarif := []byte(`{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"quavon"}},"results":[]}]}`)
	id, _, err := c.CodeScanning.UploadSarif(ctx, "acme", "app", &github.SarifAnalysis{CommitSHA: github.Ptr(head), Ref: github.Ptr("refs/heads/main"), Sarif: github.Ptr(encode(sarif))})
	if err != nil || id.GetID() == "" {
		t.Fatalf("UploadSarif = %v, %v", id, err)
	}
	ups := w.repo.SARIFUploads()
	if len(ups) != 1 || !bytes.Equal(ups[0].SARIF, sarif) || ups[0].CommitSHA != head {
		t.Errorf("stored uploads = %+v", ups)
	}

	// > 10 MB after compression: incompressible random data.
	big := make([]byte, 11<<20)
	_, _ = rand.Read(big)
	_, resp, err := c.CodeScanning.UploadSarif(ctx, "acme", "app", &github.SarifAnalysis{CommitSHA: github.Ptr(head), Ref: github.Ptr("refs/heads/main"), Sarif: github.Ptr(encode(big))})
	if err == nil || resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("oversize SARIF: %v", err)
	}
	_, resp, err = c.CodeScanning.UploadSarif(ctx, "acme", "app", &github.SarifAnalysis{CommitSHA: github.Ptr(head), Ref: github.Ptr("refs/heads/main"), Sarif: github.Ptr("not base64 gzip")})
	if err == nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("undecodable SARIF: %v", err)
	}
	// Plain (not gzipped) base64 is refused too.
	_, resp, err = c.CodeScanning.UploadSarif(ctx, "acme", "app", &github.SarifAnalysis{CommitSHA: github.Ptr(head), Ref: github.Ptr("refs/heads/main"), Sarif: github.Ptr(base64.StdEncoding.EncodeToString(sarif))})
	if err == nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("uncompressed SARIF: %v", err)
	}
	noPerm := client(t, w.s, w.s.InstallationToken(w.inst, map[string]string{"contents": "read"}, "app"))
	if _, _, err := noPerm.CodeScanning.UploadSarif(ctx, "acme", "app", &github.SarifAnalysis{CommitSHA: github.Ptr(head), Ref: github.Ptr("refs/heads/main"), Sarif: github.Ptr(encode(sarif))}); status(err) != http.StatusForbidden {
		t.Errorf("upload without security_events: %v", err)
	}
	if len(w.repo.SARIFUploads()) != 1 {
		t.Error("refused uploads were stored")
	}
}

func TestWebhookSignature(t *testing.T) {
	t.Parallel()
	// GitHub's published test vector.
	if got := githubfake.Sign("It's a Secret to Everybody", []byte("Hello, World!")); got != "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17" {
		t.Fatalf("Sign = %s", got)
	}

	w := newWorld(t)
	var mu sync.Mutex
	var got []*http.Request
	var bodies [][]byte
	recv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, err := github.ValidatePayload(r, []byte(w.app.WebhookSecret))
		if err != nil {
			http.Error(rw, err.Error(), http.StatusUnauthorized)
			return
		}
		mu.Lock()
		got, bodies = append(got, r), append(bodies, body)
		mu.Unlock()
		rw.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(recv.Close)
	w.s.SetWebhookURL(w.app, recv.URL)

	n := w.repo.AddIssue(githubfake.IssueOptions{Title: "bug", Author: "alice", Labels: []string{"quavon:fix"}})
	d, err := w.s.Deliver(w.app, "issues", w.s.IssuesEvent("labeled", w.inst, w.repo, n, "alice", "quavon:fix"))
	if err != nil || d.StatusCode != http.StatusAccepted {
		t.Fatalf("Deliver = %+v, %v", d, err)
	}
	ev, err := github.ParseWebHook("issues", bodies[0])
	if err != nil {
		t.Fatal(err)
	}
	ie := ev.(*github.IssuesEvent)
	if ie.GetAction() != "labeled" || ie.GetLabel().GetName() != "quavon:fix" || ie.GetIssue().GetNumber() != n ||
		ie.GetInstallation().GetID() != w.inst.ID || ie.GetRepo().GetID() != w.repo.ID || ie.GetSender().GetLogin() != "alice" ||
		ie.GetIssue().IsPullRequest() {
		t.Errorf("issues event = %+v", ie)
	}
	r2, err := w.s.Redeliver(d)
	if err != nil || r2.StatusCode != http.StatusAccepted {
		t.Fatalf("Redeliver = %+v, %v", r2, err)
	}
	if got[1].Header.Get("X-GitHub-Delivery") != d.ID || !bytes.Equal(bodies[1], bodies[0]) {
		t.Error("redelivery changed id or body")
	}
	if ua := got[0].Header.Get("User-Agent"); !strings.HasPrefix(ua, "GitHub-Hookshot/") {
		t.Errorf("User-Agent = %q", ua)
	}

	// A receiver with the wrong secret refuses.
	other := w.s.RegisterApp("other")
	w.s.SetWebhookURL(other, recv.URL)
	if d, err := w.s.Deliver(other, "ping", map[string]any{"zen": "x"}); err != nil || d.StatusCode != http.StatusUnauthorized {
		t.Errorf("delivery signed with another secret = %+v, %v", d, err)
	}

	// The other builders decode with go-github.
	cid := w.repo.AddComment(n, "alice", "@quavon-fixer fix")
	w.repo.Commit("f", map[string]string{"z": "1"}, "z")
	pr := w.repo.AddPullRequest(githubfake.PullRequestOptions{Title: "p", Author: "alice", Head: "f", Draft: true})
	for _, tc := range []struct {
		event   string
		payload map[string]any
	}{
		{"installation", w.s.InstallationEvent("created", w.inst, "alice")},
		{"installation", w.s.InstallationEvent("suspend", w.inst, "alice")},
		{"installation_repositories", w.s.InstallationRepositoriesEvent("added", w.inst, "alice", "acme/app")},
		{"repository", w.s.RepositoryEvent("renamed", w.inst, w.repo, "alice", map[string]any{"repository": map[string]any{"name": map[string]any{"from": "old"}}})},
		{"issue_comment", w.s.IssueCommentEvent("created", w.inst, w.repo, n, cid, "alice")},
		{"pull_request", w.s.PullRequestEvent("opened", w.inst, w.repo, pr, "alice")},
	} {
		d, err := w.s.Deliver(w.app, tc.event, tc.payload)
		if err != nil || d.StatusCode != http.StatusAccepted {
			t.Errorf("%s: %+v, %v", tc.event, d, err)
			continue
		}
		if _, err := github.ParseWebHook(tc.event, d.Body); err != nil {
			t.Errorf("%s: go-github cannot parse: %v", tc.event, err)
		}
	}
}

func TestCollaboratorPermission(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	c := client(t, w.s, w.s.InstallationToken(w.inst, map[string]string{"metadata": "read"}, "app"))
	for _, tc := range []struct{ role, permission, roleName string }{
		{"admin", "admin", "admin"},
		{"maintain", "write", "maintain"},
		{"write", "write", "write"},
		{"triage", "read", "triage"},
		{"read", "read", "read"},
		{"none", "none", "none"},
	} {
		login := "user-" + tc.role
		w.s.AddUser(login)
		w.s.SetPermission("acme", "app", login, tc.role)
		p, _, err := c.Repositories.GetPermissionLevel(ctx, "acme", "app", login)
		if err != nil {
			t.Fatalf("%s: %v", tc.role, err)
		}
		if p.GetPermission() != tc.permission || p.GetRoleName() != tc.roleName || p.GetUser().GetLogin() != login {
			t.Errorf("%s: permission %q role_name %q, want %q %q", tc.role, p.GetPermission(), p.GetRoleName(), tc.permission, tc.roleName)
		}
	}
	if _, _, err := c.Repositories.GetPermissionLevel(ctx, "acme", "app", "nobody-at-all"); status(err) != http.StatusNotFound {
		t.Errorf("unknown user: %v, want 404", err)
	}
}

// TestDecodes drives the remaining endpoints through go-github.
func TestDecodes(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	c := client(t, w.s, w.s.InstallationToken(w.inst, nil))

	repo, resp, err := c.Repositories.Get(ctx, "acme", "app")
	if err != nil || repo.GetID() != w.repo.ID || !repo.GetPrivate() || repo.GetVisibility() != "private" || repo.GetDefaultBranch() != "main" || repo.GetOwner().GetType() != "Organization" {
		t.Fatalf("repo = %+v, %v", repo, err)
	}
	if resp.Rate.Limit != 5000 || resp.Rate.Remaining >= 5000 || resp.Rate.Reset.IsZero() {
		t.Errorf("rate = %+v", resp.Rate)
	}
	// Conditional request: 304 with the ETag, not counted.
	etag := resp.Header.Get("ETag")
	req, _ := c.NewRequest("GET", "repos/acme/app", nil)
	req.Header.Set("If-None-Match", etag)
	resp2, err := c.Do(ctx, req, nil)
	if resp2 == nil || resp2.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: %v, %v", resp2, err)
	}

	// Issues, labels, comments.
	w.s.AddUser("alice")
	n := w.repo.AddIssue(githubfake.IssueOptions{Title: "bug", Body: "it breaks", Author: "alice"})
	is, _, err := c.Issues.Get(ctx, "acme", "app", n)
	if err != nil || is.GetUser().GetLogin() != "alice" || is.IsPullRequest() || is.GetAuthorAssociation() != "NONE" || is.GetState() != "open" {
		t.Errorf("issue = %+v, %v", is, err)
	}
	if _, _, err := c.Issues.AddLabelsToIssue(ctx, "acme", "app", n, []string{"quavon:fix"}); err != nil {
		t.Error(err)
	}
	cm, _, err := c.Issues.CreateComment(ctx, "acme", "app", n, &github.IssueComment{Body: github.Ptr("on it")})
	if err != nil || cm.GetUser().GetLogin() != "quavon-fixer[bot]" || cm.GetUser().GetType() != "Bot" {
		t.Errorf("comment = %+v, %v", cm, err)
	}
	created, _, err := c.Issues.Create(ctx, "acme", "app", &github.IssueRequest{Title: github.Ptr("by app"), Labels: &[]string{"x"}})
	if err != nil || created.GetNumber() != n+1 {
		t.Errorf("create issue = %+v, %v", created, err)
	}
	closed, _, err := c.Issues.Edit(ctx, "acme", "app", n, &github.IssueRequest{State: github.Ptr("closed")})
	if err != nil || closed.GetState() != "closed" || closed.ClosedAt == nil {
		t.Errorf("close issue = %+v, %v", closed, err)
	}
	got, _ := w.repo.Issue(n)
	if got.State != "closed" || len(got.Labels) != 1 || len(got.Comments) != 1 {
		t.Errorf("stored issue = %+v", got)
	}

	// Pull requests, including one from a fork.
	w.repo.Commit("quavon/fix-1-00000000", map[string]string{"fix": "1"}, "fix")
	pr, _, err := c.PullRequests.Create(ctx, "acme", "app", &github.NewPullRequest{Title: github.Ptr("Fix"), Head: github.Ptr("quavon/fix-1-00000000"), Base: github.Ptr("main"), Body: github.Ptr("body"), Draft: github.Ptr(true)})
	if err != nil || !pr.GetDraft() || pr.GetHead().GetRepo().GetID() != w.repo.ID || pr.GetUser().GetLogin() != "quavon-fixer[bot]" {
		t.Fatalf("create PR = %+v, %v", pr, err)
	}
	if _, _, err := c.PullRequests.Create(ctx, "acme", "app", &github.NewPullRequest{Title: github.Ptr("Fix"), Head: github.Ptr("quavon/fix-1-00000000"), Base: github.Ptr("main")}); status(err) != http.StatusUnprocessableEntity {
		t.Errorf("duplicate PR: %v", err)
	}
	mallory := w.s.AddUser("mallory")
	fork := w.s.AddRepo(mallory.Login, "app", githubfake.RepoOptions{Fork: w.repo})
	fork.Commit("main", map[string]string{"evil": "1"}, "evil")
	fpr := w.repo.AddPullRequest(githubfake.PullRequestOptions{Title: "from fork", Author: "mallory", Head: "main", HeadRepo: fork})
	gp, _, err := c.PullRequests.Get(ctx, "acme", "app", fpr)
	if err != nil || gp.GetHead().GetRepo().GetFullName() != "mallory/app" || gp.GetHead().GetRepo().GetID() == w.repo.ID || gp.GetHead().GetSHA() != fork.Ref("main") || gp.GetBase().GetRef() != "main" {
		t.Errorf("fork PR = %+v, %v", gp, err)
	}
	list, _, err := c.PullRequests.List(ctx, "acme", "app", &github.PullRequestListOptions{Head: "acme:quavon/fix-1-00000000"})
	if err != nil || len(list) != 1 || list[0].GetNumber() != pr.GetNumber() {
		t.Errorf("list by head = %v, %v", list, err)
	}
	files, _, err := c.PullRequests.ListFiles(ctx, "acme", "app", pr.GetNumber(), nil)
	if err != nil || len(files) != 1 || files[0].GetFilename() != "fix" || files[0].GetStatus() != "added" {
		t.Errorf("files = %v, %v", files, err)
	}
	if _, _, err := c.PullRequests.Edit(ctx, "acme", "app", fpr, &github.PullRequest{State: github.Ptr("closed")}); err != nil {
		t.Error(err)
	}

	// Check runs.
	cr, _, err := c.Checks.CreateCheckRun(ctx, "acme", "app", github.CreateCheckRunOptions{Name: "Quavon", HeadSHA: w.repo.Ref("main"), Status: github.Ptr("in_progress")})
	if err != nil || cr.GetStatus() != "in_progress" || cr.GetApp().GetSlug() != "quavon-fixer" {
		t.Fatalf("check run = %+v, %v", cr, err)
	}
	cr, _, err = c.Checks.UpdateCheckRun(ctx, "acme", "app", cr.GetID(), github.UpdateCheckRunOptions{Name: "Quavon", Conclusion: github.Ptr("neutral"), Output: &github.CheckRunOutput{Title: github.Ptr("t"), Summary: github.Ptr("s")}})
	if err != nil || cr.GetStatus() != "completed" || cr.GetConclusion() != "neutral" || cr.GetOutput().GetTitle() != "t" {
		t.Errorf("updated check run = %+v, %v", cr, err)
	}
	if _, _, err := c.Checks.CreateCheckRun(ctx, "acme", "app", github.CreateCheckRunOptions{Name: "x", HeadSHA: strings.Repeat("0", 40)}); status(err) != http.StatusUnprocessableEntity {
		t.Errorf("check run on unknown sha: %v", err)
	}

	// Installation repositories.
	irs, _, err := c.Apps.ListRepos(ctx, nil)
	if err != nil || irs.GetTotalCount() != 2 {
		t.Errorf("installation repositories = %+v, %v", irs, err)
	}
	// Directory contents.
	_, dir, _, err := c.Repositories.GetContents(ctx, "acme", "app", "src", nil)
	if err != nil || len(dir) != 1 || dir[0].GetName() != "a.go" {
		t.Errorf("dir = %v, %v", dir, err)
	}
}

func TestPublicRepositoryReads(t *testing.T) {
	t.Parallel()
	s := githubfake.New(t)
	pub := s.AddRepo("octo", "pub", githubfake.RepoOptions{Files: map[string]string{"a": "1"}})
	app := s.RegisterApp("quavon")
	s.AddRepo("acme", "mine", githubfake.RepoOptions{Private: true})
	in := s.Install(app, "acme", map[string]string{"contents": "write"})
	ctx := context.Background()
	c := client(t, s, s.InstallationToken(in, nil))
	// Public data is readable by anyone, as on GitHub...
	if _, _, err := c.Repositories.Get(ctx, "octo", "pub"); err != nil {
		t.Errorf("read public repository: %v", err)
	}
	if _, _, err := client(t, s, "").Git.GetRef(ctx, "octo", "pub", "heads/main"); err != nil {
		t.Errorf("anonymous read of public ref: %v", err)
	}
	// ...but writes need the installation.
	if _, _, err := c.Git.CreateRef(ctx, "octo", "pub", github.CreateRef{Ref: "refs/heads/x", SHA: pub.Ref("main")}); status(err) != http.StatusForbidden {
		t.Errorf("write to foreign public repository: %v, want 403", err)
	}
	if _, _, err := client(t, s, "").Git.CreateRef(ctx, "octo", "pub", github.CreateRef{Ref: "refs/heads/x", SHA: pub.Ref("main")}); status(err) != http.StatusUnauthorized {
		t.Errorf("anonymous write: %v, want 401", err)
	}
}
