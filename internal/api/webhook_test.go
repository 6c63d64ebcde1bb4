package api_test

import (
	"github.com/quavon/quavon/internal/github"

	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/quavon/quavon/internal/api"
	"github.com/quavon/quavon/internal/githubfake"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/testenv"
)

type hookWorld struct {
	cp            *testenv.ControlPlane
	gh            *githubfake.Server
	review, fixer *githubfake.App
	srv           *httptest.Server
	app, lib      *githubfake.Repo
	reviewInstall *githubfake.Installation
	reviewPerms   map[string]string
}

func newHookWorld(t *testing.T) *hookWorld {
	t.Helper()
	w := &hookWorld{cp: testenv.NewControlPlane(t, 8), gh: githubfake.New(t)}
	w.review = w.gh.RegisterApp("quavon-review")
	w.fixer = w.gh.RegisterApp("quavon-fixer")
	jobs, err := river.NewClient(riverpgxv5.New(w.cp.App.Pool), &river.Config{})
	if err != nil {
		t.Fatal(err)
	}
	w.srv = httptest.NewServer((&api.Server{DB: w.cp.App, Jobs: jobs, WebhookSecrets: map[github.AppKind][]byte{
		github.AppReview: []byte(w.review.WebhookSecret), github.AppFixer: []byte(w.fixer.WebhookSecret),
	}}).Handler())
	t.Cleanup(w.srv.Close)
	w.gh.SetWebhookURL(w.review, w.srv.URL+"/webhooks/github/review")
	w.gh.SetWebhookURL(w.fixer, w.srv.URL+"/webhooks/github/fixer")
	w.gh.AddOrg("acme")
	w.app = w.gh.AddRepo("acme", "app", githubfake.RepoOptions{Private: true, Files: map[string]string{"README.md": "app\n"}})
	w.lib = w.gh.AddRepo("acme", "lib", githubfake.RepoOptions{Files: map[string]string{"README.md": "lib\n"}})
	w.reviewPerms = map[string]string{"contents": "read", "pull_requests": "write", "metadata": "read"}
	w.reviewInstall = w.gh.Install(w.review, "acme", w.reviewPerms, "acme/app", "acme/lib")
	return w
}

func (w *hookWorld) deliver(t *testing.T, app *githubfake.App, event string, payload any) (githubfake.Delivery, string) {
	t.Helper()
	d, err := w.gh.Deliver(app, event, payload)
	if err != nil {
		t.Fatal(err)
	}
	var res struct{ Status string }
	json.Unmarshal(d.Response, &res)
	return d, res.Status
}

// tenantOf routes an installation as the intake does.
func (w *hookWorld) tenantOf(t *testing.T, kind string, id int64) postgres.TenantID {
	t.Helper()
	var tenant *string
	if err := w.cp.App.Pool.QueryRow(context.Background(), "SELECT quavon_route_installation($1, $2)::text", kind, id).Scan(&tenant); err != nil {
		t.Fatal(err)
	}
	if tenant == nil {
		t.Fatalf("installation %s/%d is not routed", kind, id)
	}
	return postgres.TenantID(*tenant)
}

type repoRow struct {
	Visibility    string
	Review, Fixer *int64
	Owner, Name   string
	Archived      bool
}

func (w *hookWorld) repos(t *testing.T, tenant postgres.TenantID) map[int64]repoRow {
	t.Helper()
	out := map[int64]repoRow{}
	ctx := context.Background()
	err := w.cp.App.InTenant(ctx, tenant, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, "SELECT external_id, owner, name, visibility, review_installation_id, fixer_installation_id, archived FROM repositories")
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			var r repoRow
			if err := rows.Scan(&id, &r.Owner, &r.Name, &r.Visibility, &r.Review, &r.Fixer, &r.Archived); err != nil {
				return err
			}
			out[id] = r
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (w *hookWorld) scalar(t *testing.T, tenant postgres.TenantID, q string, args ...any) int {
	t.Helper()
	var n int
	ctx := context.Background()
	if err := w.cp.App.InTenant(ctx, tenant, func(tx pgx.Tx) error { return tx.QueryRow(ctx, q, args...).Scan(&n) }); err != nil {
		t.Fatal(err)
	}
	return n
}

// Signed webhooks from the emulator keep installations and repositories in
// sync, for both apps, and a redelivery is not applied twice.
func TestWebhooksSyncInstallationsAndRepositories(t *testing.T) {
	w := newHookWorld(t)
	d, status := w.deliver(t, w.review, "installation", w.gh.InstallationEvent("created", w.reviewInstall, "alice"))
	if d.StatusCode != 200 || status != "processed" {
		t.Fatalf("installation created: %d %s", d.StatusCode, d.Response)
	}
	tenant := w.tenantOf(t, "review", w.reviewInstall.ID)
	repos := w.repos(t, tenant)
	if len(repos) != 2 || repos[w.app.ID].Visibility != "private" || repos[w.lib.ID].Visibility != "public" ||
		repos[w.app.ID].Review == nil || *repos[w.app.ID].Review != w.reviewInstall.ID || repos[w.app.ID].Fixer != nil {
		t.Fatalf("repositories after install: %+v", repos)
	}
	// The same delivery again: acknowledged, not applied.
	d2, err := w.gh.Redeliver(d)
	if err != nil || d2.StatusCode != 200 || !strings.Contains(string(d2.Response), "duplicate") {
		t.Fatalf("redelivery: %v %d %s", err, d2.StatusCode, d2.Response)
	}
	if n := w.scalar(t, tenant, "SELECT count(*) FROM webhook_deliveries"); n != 1 {
		t.Fatalf("%d deliveries stored", n)
	}

	// The Fixer app on the same account joins the same tenant, for one repository.
	fixerInstall := w.gh.Install(w.fixer, "acme", map[string]string{"contents": "write", "pull_requests": "write", "metadata": "read"}, "acme/app")
	if d, _ := w.deliver(t, w.fixer, "installation", w.gh.InstallationEvent("created", fixerInstall, "alice")); d.StatusCode != 200 {
		t.Fatalf("fixer install: %d %s", d.StatusCode, d.Response)
	}
	if w.tenantOf(t, "fixer", fixerInstall.ID) != tenant {
		t.Fatal("the Fixer installation of the same account got another tenant")
	}
	if r := w.repos(t, tenant)[w.app.ID]; r.Fixer == nil || *r.Fixer != fixerInstall.ID {
		t.Fatalf("acme/app after the Fixer install: %+v", r)
	}

	// Suspension and its end.
	w.deliver(t, w.review, "installation", w.gh.InstallationEvent("suspend", w.reviewInstall, "alice"))
	if n := w.scalar(t, tenant, "SELECT count(*) FROM installations WHERE app_kind = 'review' AND suspended_at IS NOT NULL"); n != 1 {
		t.Fatal("suspend not recorded")
	}
	w.deliver(t, w.review, "installation", w.gh.InstallationEvent("unsuspend", w.reviewInstall, "alice"))
	if n := w.scalar(t, tenant, "SELECT count(*) FROM installations WHERE suspended_at IS NOT NULL"); n != 0 {
		t.Fatal("unsuspend not recorded")
	}

	// A repository removed from the review installation, covered by no app: gone.
	w.gh.SetInstallationRepos(w.reviewInstall, []string{"acme/app"})
	w.deliver(t, w.review, "installation_repositories", w.gh.InstallationRepositoriesEvent("removed", w.reviewInstall, "alice", "acme/lib"))
	if _, ok := w.repos(t, tenant)[w.lib.ID]; ok {
		t.Fatal("acme/lib still there after its removal")
	}
	// … and added back.
	w.gh.SetInstallationRepos(w.reviewInstall, []string{"acme/app", "acme/lib"})
	w.deliver(t, w.review, "installation_repositories", w.gh.InstallationRepositoriesEvent("added", w.reviewInstall, "alice", "acme/lib"))
	if _, ok := w.repos(t, tenant)[w.lib.ID]; !ok {
		t.Fatal("acme/lib not added back")
	}

	// Renamed and made public.
	ev := w.gh.RepositoryEvent("renamed", w.reviewInstall, w.app, "alice", map[string]any{"repository": map[string]any{"name": map[string]any{"from": "app"}}})
	repo := ev["repository"].(map[string]any)
	repo["name"], repo["full_name"] = "app2", "acme/app2"
	w.deliver(t, w.review, "repository", ev)
	ev = w.gh.RepositoryEvent("publicized", w.reviewInstall, w.app, "alice", nil)
	repo = ev["repository"].(map[string]any)
	repo["name"], repo["full_name"], repo["private"], repo["visibility"] = "app2", "acme/app2", false, "public"
	w.deliver(t, w.review, "repository", ev)
	if r := w.repos(t, tenant)[w.app.ID]; r.Name != "app2" || r.Visibility != "public" {
		t.Fatalf("after rename and publicize: %+v", r)
	}

	// The review app uninstalled: its installation goes; acme/app stays for the Fixer.
	w.deliver(t, w.review, "installation", w.gh.InstallationEvent("deleted", w.reviewInstall, "alice"))
	if n := w.scalar(t, tenant, "SELECT count(*) FROM installations WHERE app_kind = 'review'"); n != 0 {
		t.Fatal("review installation not removed")
	}
	repos = w.repos(t, tenant)
	if _, ok := repos[w.lib.ID]; ok || repos[w.app.ID].Fixer == nil || repos[w.app.ID].Review != nil {
		t.Fatalf("after uninstall: %+v", repos)
	}
	// Events of an unknown installation, and events Quavon does not process: 202.
	if d, _ := w.deliver(t, w.review, "installation", w.gh.InstallationEvent("suspend", w.reviewInstall, "alice")); d.StatusCode != 202 {
		t.Fatalf("event of a removed installation: %d", d.StatusCode)
	}
	if d, _ := w.deliver(t, w.review, "star", map[string]any{"action": "created"}); d.StatusCode != 202 {
		t.Fatalf("unknown event: %d", d.StatusCode)
	}
}

func countAllDeliveries(t *testing.T, w *hookWorld) int {
	t.Helper()
	var n int
	// The superuser sees every tenant's rows.
	if err := w.cp.Admin.QueryRow(context.Background(), "SELECT count(*) FROM webhook_deliveries").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestWebhookRefusals(t *testing.T) {
	w := newHookWorld(t)
	body, _ := json.Marshal(w.gh.InstallationEvent("created", w.reviewInstall, "alice"))
	post := func(path string, body []byte, sig, event, delivery string) int {
		req, _ := http.NewRequest("POST", w.srv.URL+path, bytes.NewReader(body))
		req.Header.Set("X-Hub-Signature-256", sig)
		req.Header.Set("X-GitHub-Event", event)
		req.Header.Set("X-GitHub-Delivery", delivery)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	good := githubfake.Sign(w.review.WebhookSecret, body)
	cases := []struct {
		name, path, sig, event, delivery string
		body                             []byte
		want                             int
	}{
		{"bad signature", "/webhooks/github/review", githubfake.Sign("another secret", body), "installation", "d1", body, 401},
		{"signature of the other app", "/webhooks/github/fixer", good, "installation", "d2", body, 401},
		{"no signature", "/webhooks/github/review", "", "installation", "d3", body, 401},
		{"sha1 form", "/webhooks/github/review", "sha1=" + strings.Repeat("0", 40), "installation", "d4", body, 401},
		{"no delivery id", "/webhooks/github/review", good, "installation", "", body, 400},
		{"unknown app", "/webhooks/github/other", good, "installation", "d5", body, 404},
	}
	for _, c := range cases {
		if got := post(c.path, c.body, c.sig, c.event, c.delivery); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	// Oversize: refused before the signature is even computed.
	big := bytes.Repeat([]byte(" "), 25<<20+1)
	if got := post("/webhooks/github/review", big, githubfake.Sign(w.review.WebhookSecret, big), "installation", "d6"); got != 413 {
		t.Errorf("oversize: %d", got)
	}
	if got := post("/webhooks/github/review", body, "sha256=zz", "installation", "d7"); got != 401 {
		t.Errorf("malformed hex: %d", got)
	}
	if n := countAllDeliveries(t, w); n != 0 {
		t.Fatalf("%d deliveries stored by refused requests", n)
	}
	if got := post("/webhooks/github/review", body, good, "installation", "d8"); got != 200 {
		t.Fatalf("the good one: %d", got)
	}
	if n := countAllDeliveries(t, w); n != 1 {
		t.Fatalf("%d deliveries stored", n)
	}
}
