package tokenbroker_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	gh "github.com/google/go-github/v75/github"

	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/githubfake"
	"github.com/quavon/quavon/internal/testenv/testbroker"
	"github.com/quavon/quavon/internal/tokenbroker"
)

type env struct {
	srv          *githubfake.Server
	broker       *testbroker.Broker
	review, fix  *githubfake.Installation
	evil         *githubfake.Installation
	secretTokens []string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	srv := githubfake.New(t)
	srv.AddRepo("acme", "a", githubfake.RepoOptions{Private: true, Files: map[string]string{"a.txt": "a\n"}})
	srv.AddRepo("acme", "b", githubfake.RepoOptions{Private: true, Files: map[string]string{"b.txt": "b\n"}})
	srv.AddRepo("evil", "a", githubfake.RepoOptions{Private: true, Files: map[string]string{"x": "x"}})
	ra := srv.RegisterApp("quavon-review")
	fa := srv.RegisterApp("quavon-fixer")
	e := &env{srv: srv}
	e.review = srv.Install(ra, "acme", map[string]string{"contents": "read", "pull_requests": "write", "issues": "write", "checks": "write"})
	e.fix = srv.Install(fa, "acme", map[string]string{"contents": "write", "pull_requests": "write"})
	e.evil = srv.Install(fa, "evil", map[string]string{"contents": "write", "pull_requests": "write"})
	e.broker = testbroker.Start(t, srv, map[github.AppKind]*githubfake.App{github.AppReview: ra, github.AppFixer: fa}, testbroker.Options{})
	return e
}

func (e *env) token(t *testing.T, role tokenbroker.Role, inst *githubfake.Installation, repo string, set github.TokenSet) (*github.InstallationToken, error) {
	t.Helper()
	tok, err := e.broker.Client(t, role).Token(context.Background(), github.TokenRequest{InstallationID: inst.ID, Repo: repo, Set: set})
	if tok != nil {
		e.secretTokens = append(e.secretTokens, tok.Secret())
	}
	return tok, err
}

// noTokenInLogs fails when any token the broker handed out appears in its
// log, and checks the log says what it must.
func (e *env) noTokenInLogs(t *testing.T, want ...string) {
	t.Helper()
	logs := e.broker.Logs.String()
	for _, s := range e.secretTokens {
		if strings.Contains(logs, s) {
			t.Fatalf("a token value is in the broker's log:\n%s", logs)
		}
	}
	for _, w := range want {
		if !strings.Contains(logs, w) {
			t.Errorf("log lacks %q:\n%s", w, logs)
		}
	}
}

func TestBrokerGrantsEachRoleItsSets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []struct {
		role tokenbroker.Role
		set  github.TokenSet
		inst *githubfake.Installation
	}{
		{tokenbroker.RoleWorker, github.SetReviewRead, e.review},
		{tokenbroker.RoleAPI, github.SetReviewRead, e.review},
		{tokenbroker.RolePublisher, github.SetReviewWrite, e.review},
		{tokenbroker.RolePublisher, github.SetFixer, e.fix},
	} {
		tok, err := e.token(t, c.role, c.inst, "acme/a", c.set)
		if err != nil {
			t.Fatalf("%s %s: %v", c.role, c.set, err)
		}
		if !tok.Permissions.Equal(c.set.Permissions()) || tok.Repo != "acme/a" || tok.InstallationID != c.inst.ID {
			t.Fatalf("%s %s: got %s", c.role, c.set, tok)
		}
	}
	e.noTokenInLogs(t, `"msg":"token broker: granted"`, `"caller":"worker"`, `"set":"fixer"`, `"repo":"acme/a"`)
}

func TestBrokerRefusesWriteSetsToReaders(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, role := range []tokenbroker.Role{tokenbroker.RoleWorker, tokenbroker.RoleAPI} {
		for _, set := range []github.TokenSet{github.SetReviewWrite, github.SetCodeScanning, github.SetFixer} {
			inst := e.review
			if set == github.SetFixer {
				inst = e.fix
			}
			_, err := e.token(t, role, inst, "acme/a", set)
			if !errors.Is(err, github.ErrBrokerRefused) || !strings.Contains(err.Error(), github.BrokerSetNotAllowed) {
				t.Fatalf("%s asking for %s: err = %v, want set_not_allowed", role, set, err)
			}
		}
	}
	for _, r := range e.srv.Requests() {
		if strings.HasSuffix(r.Path, "/access_tokens") {
			t.Fatalf("a refused request reached GitHub: %+v", r)
		}
	}
	e.noTokenInLogs(t, `"msg":"token broker: refused"`, `"caller":"worker"`, `"set":"fixer"`, `"reason":"set not allowed for this caller"`)
}

func TestBrokerRefusesUnknownCredentials(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, cred := range []string{strings.Repeat("x", 40), e.broker.Credential(tokenbroker.RoleWorker) + "x"} {
		c, err := github.NewBrokerClient(e.broker.Addr, []byte(cred))
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Token(context.Background(), github.TokenRequest{InstallationID: e.review.ID, Repo: "acme/a", Set: github.SetReviewRead})
		if !errors.Is(err, github.ErrBrokerRefused) || !strings.Contains(err.Error(), github.BrokerUnauthorized) {
			t.Fatalf("err = %v, want unauthorized", err)
		}
	}
	// Raw requests without or with a malformed Authorization header, and
	// anything but POST /v1/tokens.
	for _, c := range []struct{ method, path, auth string }{
		{"POST", "/v1/tokens", ""},
		{"POST", "/v1/tokens", "Basic " + e.broker.Credential(tokenbroker.RoleWorker)},
		{"GET", "/v1/tokens", "Bearer " + e.broker.Credential(tokenbroker.RoleWorker)},
		{"POST", "/v1/other", "Bearer " + e.broker.Credential(tokenbroker.RoleWorker)},
	} {
		if status := rawRequest(t, e.broker.Addr, c.method, c.path, c.auth); status == http.StatusOK {
			t.Errorf("%+v: 200", c)
		}
	}
	e.noTokenInLogs(t, `"reason":"unknown credential"`)
	if strings.Contains(e.broker.Logs.String(), e.broker.Credential(tokenbroker.RoleWorker)) {
		t.Fatal("a credential is in the log")
	}
}

// A token minted for repository A cannot read repository B of the same
// installation.
func TestBrokerTokenIsBoundToOneRepository(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tok, err := e.token(t, tokenbroker.RoleWorker, e.review, "acme/a", github.SetReviewRead)
	if err != nil {
		t.Fatal(err)
	}
	rest := gh.NewClient(nil).WithAuthToken(tok.Secret())
	u, _ := rest.BaseURL.Parse(e.srv.URL + "/")
	rest.BaseURL = u
	ctx := context.Background()
	if _, _, err := rest.Repositories.Get(ctx, "acme", "a"); err != nil {
		t.Fatalf("own repository: %v", err)
	}
	_, resp, err := rest.Repositories.Get(ctx, "acme", "b")
	if err == nil || resp == nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("token for acme/a read acme/b: %v", err)
	}
	// The same installation covers acme/b: with its own token it reads.
	if _, err := e.token(t, tokenbroker.RoleWorker, e.review, "acme/b", github.SetReviewRead); err != nil {
		t.Fatal(err)
	}
}

// GitHub's answer that differs from the request (another account's
// repository of the same name) is revoked and refused.
func TestBrokerRevokesMismatchedTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.token(t, tokenbroker.RolePublisher, e.evil, "acme/a", github.SetFixer)
	if !errors.Is(err, github.ErrTokenMismatch) {
		t.Fatalf("err = %v, want ErrTokenMismatch", err)
	}
	revoked := 0
	for _, r := range e.srv.Requests() {
		if r.Method == http.MethodDelete && r.Path == "/installation/token" && r.Status == http.StatusNoContent {
			revoked++
		}
	}
	if revoked != 1 {
		t.Fatalf("%d revocations, want 1", revoked)
	}
	e.noTokenInLogs(t, `"msg":"token broker: mint failed"`, `"code":"token_mismatch"`)
}

func TestBrokerStaleTokenIsReplacedOnlyByItsHolder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.broker.Client(t, tokenbroker.RoleWorker)
	ctx := context.Background()
	req := github.TokenRequest{InstallationID: e.review.ID, Repo: "acme/a", Set: github.SetReviewRead}
	first, err := c.Token(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := c.Token(ctx, req)
	if again.Secret() != first.Secret() {
		t.Fatal("the broker did not cache the token")
	}
	req.Stale = github.TokenDigest("not-the-token")
	if same, _ := c.Token(ctx, req); same.Secret() != first.Secret() {
		t.Fatal("a digest of another token replaced the cached one")
	}
	req.Stale = github.TokenDigest(first.Secret())
	fresh, err := c.Token(ctx, req)
	if err != nil || fresh.Secret() == first.Secret() {
		t.Fatalf("stale token not replaced: %v", err)
	}
}

func rawRequest(t *testing.T, addr, method, path, auth string) int {
	t.Helper()
	sock := strings.TrimPrefix(addr, "unix:")
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	req, _ := http.NewRequest(method, "http://broker"+path, strings.NewReader(`{"installationId":1,"repository":"acme/a","set":"review-read"}`))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// GET /v1/apps answers each held app's installations as GitHub reports
// them, to known callers only, and never a token.
func TestApps(t *testing.T) {
	e := newEnv(t)
	apps, err := e.broker.Client(t, tokenbroker.RoleWorker).Apps(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(apps) != 2 || apps[0].Kind != github.AppReview || apps[1].Kind != github.AppFixer {
		t.Fatalf("apps %+v", apps)
	}
	if len(apps[0].Installations) != 1 || apps[0].Installations[0].ID != e.review.ID || apps[0].Installations[0].Permissions["checks"] != "write" {
		t.Fatalf("review installations %+v", apps[0].Installations)
	}
	if len(apps[1].Installations) != 2 {
		t.Fatalf("fixer installations %+v", apps[1].Installations)
	}
	bad, err := github.NewBrokerClient(e.broker.Addr, []byte("qvb_not-a-credential-the-broker-knows-0000000000"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Apps(context.Background()); !errors.Is(err, github.ErrBrokerRefused) {
		t.Fatalf("unknown credential: %v", err)
	}
	e.noTokenInLogs(t, "apps listed")
}
