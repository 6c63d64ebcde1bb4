// Package webtest builds the dashboard against real parts for tests and
// benchmarks: a migrated PostgreSQL, the GitHub emulator with the review
// app and its OAuth flow, a real token broker for the API's read token,
// and the dashboard on a TLS test server (so cookies are Secure and
// __Host- prefixed, as in production).
package webtest

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/githubfake"
	"github.com/quavon/quavon/internal/patch"
	"github.com/quavon/quavon/internal/policy"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/repos"
	"github.com/quavon/quavon/internal/review"
	"github.com/quavon/quavon/internal/testenv"
	"github.com/quavon/quavon/internal/testenv/testbroker"
	"github.com/quavon/quavon/internal/tokenbroker"
	"github.com/quavon/quavon/internal/web"
)

// Fixture is a running dashboard with one tenant and repository acme/app.
type Fixture struct {
	CP     *testenv.ControlPlane
	Seed   testenv.Seeded
	GH     *githubfake.Server
	App    *githubfake.App
	Inst   *githubfake.Installation
	Web    *web.Server
	Server *httptest.Server
	URL    string

	cfg   web.Config
	perms web.Permissions
	jobs  *river.Client[pgx.Tx]

	mu     sync.Mutex
	offset time.Duration
	users  map[string]string // login → users.id
}

// Now is the dashboard's clock (real time plus Advance).
func (f *Fixture) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return time.Now().Add(f.offset)
}

// Advance moves the dashboard's clock.
func (f *Fixture) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.offset += d
}

// Options adjust New.
type Options struct {
	SessionIdle, SessionAbsolute time.Duration
	// Admins are the instance admins' GitHub logins (emulator users made
	// by New; their ids go into the dashboard's configuration).
	Admins []string
}

// New starts everything; it fails (or skips without services) as the
// testenv helpers do.
func New(tb testing.TB, opt Options) *Fixture {
	tb.Helper()
	f := &Fixture{users: map[string]string{}}
	f.CP = testenv.NewControlPlane(tb, 16)
	f.Seed = f.CP.Seed(tb, "acme", "app", "private")
	f.GH = githubfake.New(tb)
	f.App = f.GH.RegisterApp("quavon-review")
	f.GH.AddOrg("acme")
	f.GH.AddRepo("acme", "app", githubfake.RepoOptions{Private: true, Files: map[string]string{"README.md": "hi\n"}})
	f.Inst = f.GH.Install(f.App, "acme", github.ReviewReadPermissions())
	broker := testbroker.Start(tb, f.GH, map[github.AppKind]*githubfake.App{github.AppReview: f.App}, testbroker.Options{})
	conn := broker.Conn(tb, tokenbroker.RoleAPI, github.TransportConfig{})
	f.exec(tb, `UPDATE repositories SET review_installation_id = $1 WHERE id = $2`, f.Inst.ID, f.Seed.Repository)
	f.exec(tb, `INSERT INTO installations (tenant_id, app_kind, external_id, account_login) VALUES (quavon_current_tenant(), 'review', $1, 'acme')`, f.Inst.ID)

	var handler http.Handler
	f.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	f.Server.StartTLS()
	tb.Cleanup(f.Server.Close)
	f.URL = f.Server.URL
	f.GH.SetCallbackURL(f.App, f.URL+"/auth/callback")
	f.cfg = web.Config{GitHubURL: f.GH.URL, GitHubAPIURL: f.GH.URL + "/", ClientID: f.App.ClientID,
		ClientSecret: f.App.ClientSecret, PublicURL: f.URL, SessionIdle: opt.SessionIdle, SessionAbsolute: opt.SessionAbsolute}
	for _, login := range opt.Admins {
		f.cfg.Admins = append(f.cfg.Admins, web.Admin{Host: "github.com", ID: f.GH.AddUser(login).ID, Login: login})
	}
	f.perms = web.GitHubPermissions{Conn: conn}
	// Insert-only, as quavon-api's client is.
	var err error
	if f.jobs, err = river.NewClient(riverpgxv5.New(f.CP.App.Pool), &river.Config{}); err != nil {
		tb.Fatal(err)
	}
	f.Web = f.NewServer(tb)
	handler = f.Web.Handler()
	return f
}

// NewServer builds another dashboard on the fixture's database, emulator
// and clock (the benchmark's uncached one, say).
func (f *Fixture) NewServer(tb testing.TB, opts ...web.Option) *web.Server {
	tb.Helper()
	w, err := web.New(f.cfg, f.CP.App, f.perms, f.jobs, nil, append([]web.Option{web.WithClock(f.Now)}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	return w
}

func (f *Fixture) exec(tb testing.TB, sql string, args ...any) {
	tb.Helper()
	err := f.CP.App.InTenant(context.Background(), f.Seed.Tenant, func(tx pgx.Tx) error {
		_, err := tx.Exec(context.Background(), sql, args...)
		return err
	})
	if err != nil {
		tb.Fatalf("%s: %v", sql, err)
	}
}

// InTenant runs fn in the fixture's tenant.
func (f *Fixture) InTenant(tb testing.TB, fn func(ctx context.Context, tx pgx.Tx) error) {
	tb.Helper()
	ctx := context.Background()
	if err := f.CP.App.InTenant(ctx, f.Seed.Tenant, func(tx pgx.Tx) error { return fn(ctx, tx) }); err != nil {
		tb.Fatal(err)
	}
}

// AddUser makes login a GitHub user with permission on acme/app ("write",
// "read", …) and a Quavon user of the tenant with roles on acme/app.
func (f *Fixture) AddUser(tb testing.TB, login, permission string, roles ...string) string {
	tb.Helper()
	acct := f.GH.AddUser(login)
	if permission != "" {
		f.GH.SetPermission("acme", "app", login, permission)
	}
	var id string
	f.InTenant(tb, func(ctx context.Context, tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `INSERT INTO users (tenant_id, display_name) VALUES (quavon_current_tenant(), $1) RETURNING id::text`, login).Scan(&id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO user_identities (tenant_id, user_id, host, login, external_id) VALUES (quavon_current_tenant(), $1, 'github.com', $2, $3)`, id, login, acct.ID); err != nil {
			return err
		}
		for _, r := range roles {
			if _, err := tx.Exec(ctx, `INSERT INTO role_grants (tenant_id, user_id, repository_id, role) VALUES (quavon_current_tenant(), $1, $2, $3)`, id, f.Seed.Repository, r); err != nil {
				return err
			}
		}
		return nil
	})
	f.mu.Lock()
	f.users[login] = id
	f.mu.Unlock()
	return id
}

// Client is an HTTPS client of the dashboard and the emulator with its own
// cookie jar; it follows redirects.
func (f *Fixture) Client(tb testing.TB) *http.Client {
	jar, _ := cookiejar.New(nil)
	tr := f.Server.Client().Transport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: f.Server.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	return &http.Client{Jar: jar, Transport: tr, Timeout: 30 * time.Second}
}

// SignIn runs the OAuth web flow as login in c and returns the final
// response (the page the flow returned to).
func (f *Fixture) SignIn(tb testing.TB, c *http.Client, login, ret string) *http.Response {
	tb.Helper()
	f.GH.SignInAs(login)
	resp, err := c.Get(f.URL + "/auth/login?return=" + ret)
	if err != nil {
		tb.Fatal(err)
	}
	return resp
}

// ExecutedFile is the build file every fixture patch changes.
const ExecutedFile = "Makefile"

// FixPatch is a patch of files×linesPerFile changed lines over the base
// it returns: a Makefile change (executed by builds) and Go files.
func FixPatch(files, linesPerFile int, title string) ([]patch.FixFileChange, *patch.Listing) {
	base := map[string]patch.MapFile{}
	var changes []patch.FixFileChange
	for i := 0; i < files; i++ {
		name := fmt.Sprintf("pkg/file%02d.go", i)
		if i == 0 {
			name = ExecutedFile
		}
		var old, cur strings.Builder
		old.WriteString("package pkg\n\n")
		cur.WriteString("package pkg\n\n")
		for l := 0; l < linesPerFile; l++ {
			fmt.Fprintf(&old, "func F%d() int { return %d }\n", l, l)
			fmt.Fprintf(&cur, "func F%d() int { return %d } // %s\n", l, l+1, title)
		}
		base[name] = patch.MapFile{Content: old.String()}
		changes = append(changes, patch.FixFileChange{Path: name, Operation: patch.OpModify,
			BaseBlobSHA: patch.BlobSHA([]byte(old.String())), NewContent: cur.String(), Mode: patch.ModeFile})
	}
	return changes, patch.MapBase(base)
}

// FixRun is a fix run awaiting approval and its output.
type FixRun struct {
	ID, OutputID, PatchSHA, BaseSHA, PolicySHA string
}

// NewFixRun records, through the stores, a fix run of issue number with
// changes awaiting approval until expires, bound to the current policy.
func (f *Fixture) NewFixRun(tb testing.TB, number int, changes []patch.FixFileChange, base *patch.Listing, expires time.Time) FixRun {
	tb.Helper()
	var fr FixRun
	fr.BaseSHA = strings.Repeat("ab", 20)
	f.InTenant(tb, func(ctx context.Context, tx pgx.Tx) error {
		run, err := fix.Create(ctx, tx, fix.NewRun{RepositoryID: f.Seed.Repository, Subject: fix.SubjectIssue, Number: number,
			Delivery: fix.DeliveryPR, Mode: fix.ModeApproval, Trigger: fix.TriggerLabel, Actor: fix.Actor{Login: "alice", ID: 4242}, Label: "quavon-fix"})
		if err != nil {
			return err
		}
		fr.ID = run.ID
		if _, err := fix.Start(ctx, tx, run.ID, fix.Base{SHA: fr.BaseSHA, Ref: "main"}); err != nil {
			return err
		}
		diff, err := patch.RenderDiff(changes, base)
		if err != nil {
			return err
		}
		if fr.PatchSHA, err = fix.RecordPatch(ctx, tx, run.ID, changes, diff, "Fixes the off-by-one."); err != nil {
			return err
		}
		if _, err := fix.Transition(ctx, tx, run.ID, fix.StatusAwaitingApproval, fix.Why{}); err != nil {
			return err
		}
		doc, _, err := repos.Policy(ctx, tx, f.Seed.Repository, false)
		if err != nil {
			return err
		}
		if fr.PolicySHA, err = policy.Resolve(doc, policy.RepoFacts{Private: true}).VerdictsSHA256(); err != nil {
			return err
		}
		out, err := publish.CreateOutput(ctx, tx, publish.NewOutput{RepositoryID: f.Seed.Repository, Kind: publish.KindFixPR, FixRunID: run.ID,
			Status: publish.OutputAwaitingApproval, Payload: map[string]any{"fixRunId": run.ID, "patchSha256": fr.PatchSHA},
			Bound: publish.Bound{PatchSHA256: fr.PatchSHA, BaseSHA: fr.BaseSHA, PolicySHA256: fr.PolicySHA}, ExpiresAt: expires})
		if err != nil {
			return err
		}
		fr.OutputID = out.ID
		return nil
	})
	return fr
}

// NewReviewRun records, through the store, a running review run of pull
// request pr with findings and returns its id.
func (f *Fixture) NewReviewRun(tb testing.TB, pr int, head string, findings []review.Finding) string {
	tb.Helper()
	var id string
	f.InTenant(tb, func(ctx context.Context, tx pgx.Tx) error {
		run, _, err := review.Create(ctx, tx, review.NewRun{RepositoryID: f.Seed.Repository, PRNumber: pr, HeadSHA: head,
			HeadRef: "feature", BaseRef: "main", Trigger: review.TriggerOpened, Author: "bob"})
		if err != nil {
			return err
		}
		id = run.ID
		if _, err := review.Start(ctx, tx, id, review.Modes{Review: "on", SAST: "on", Acceptance: "shadow"}, strings.Repeat("9", 40), ""); err != nil {
			return err
		}
		_, err = review.AddFindings(ctx, tx, id, findings)
		return err
	})
	return id
}
