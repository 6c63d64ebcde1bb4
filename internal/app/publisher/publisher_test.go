package publisher_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/quavon/quavon/internal/api"
	publisherapp "github.com/quavon/quavon/internal/app/publisher"
	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/githubfake"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/review"
	"github.com/quavon/quavon/internal/testenv"
	"github.com/quavon/quavon/internal/testenv/testbroker"
	"github.com/quavon/quavon/internal/tokenbroker"
)

// TestAssembledPublisher runs quavon-publisher's assembly against the
// emulator and the broker: a review run's outputs, inserted with their
// publish jobs in one transaction (as a review run does), appear on the
// pull request exactly once, also when the first review write loses its
// response (River retries; the retry reconciles).
func TestAssembledPublisher(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cp := testenv.NewControlPlane(t, 16)
	gh := githubfake.New(t)
	app := gh.RegisterApp("quavon-review")
	jobs, err := river.NewClient(riverpgxv5.New(cp.App.Pool), &river.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer((&api.Server{DB: cp.App, Jobs: jobs, WebhookSecrets: map[github.AppKind][]byte{
		github.AppReview: []byte(app.WebhookSecret)}}).Handler())
	t.Cleanup(srv.Close)
	gh.SetWebhookURL(app, srv.URL+"/webhooks/github/review")
	org := gh.AddOrg("acme")
	repo := gh.AddRepo("acme", "app", githubfake.RepoOptions{Private: true, Files: map[string]string{"a.go": "package a\n"}})
	head := repo.Commit("feature", map[string]string{"a.go": "package a\n\nfunc A() {}\n"}, "add A")
	pr := repo.AddPullRequest(githubfake.PullRequestOptions{Title: "A", Author: "alice", Head: "feature"})
	inst := gh.Install(app, "acme", map[string]string{"contents": "read", "pull_requests": "write", "issues": "write", "checks": "write"}, "acme/app")
	if d, err := gh.Deliver(app, "installation", gh.InstallationEvent("created", inst, "alice")); err != nil || d.StatusCode != 200 {
		t.Fatalf("install: %v", err)
	}
	var tenant *string
	if err := cp.App.Pool.QueryRow(ctx, "SELECT quavon_route_account($1)::text", org.ID).Scan(&tenant); err != nil || tenant == nil {
		t.Fatalf("tenant: %v", err)
	}
	tid := postgres.TenantID(*tenant)

	b := testbroker.Start(t, gh, map[github.AppKind]*githubfake.App{github.AppReview: app}, testbroker.Options{})
	dir := t.TempDir()
	credFile := filepath.Join(dir, "broker")
	if err := os.WriteFile(credFile, []byte(b.Credential(tokenbroker.RolePublisher)), 0o600); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(cp.AppURL)
	pw, _ := u.User.Password()
	u.User = url.User(u.User.Username())
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte(pw), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadPublisher([]string{"QUAVON_ENV=test", "QUAVON_DATABASE_URL=" + u.String(), "QUAVON_DATABASE_PASSWORD_FILE=" + pwFile,
		"QUAVON_GITHUB_API_URL=" + gh.URL + "/", "QUAVON_GITHUB_GRAPHQL_URL=" + gh.URL + "/graphql",
		"QUAVON_BROKER_ADDR=" + b.Addr, "QUAVON_BROKER_CREDENTIAL_FILE=" + credFile,
		"QUAVON_GITHUB_REVIEW_APP_SLUG=" + app.Slug, "QUAVON_PUBLISHER_WRITE_SPACING=0s", "QUAVON_PUBLISHER_SHUTDOWN_GRACE=5s",
		"QUAVON_PUBLISHER_METRICS_LISTEN=127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	logs := &testenv.LogBuffer{}
	s, err := publisherapp.New(ctx, cfg, slog.New(slog.NewJSONHandler(logs, nil)), publisherapp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		s.Close()
	})

	gh.InjectFault(githubfake.Fault{Method: "POST", Path: "/repos/{o}/{r}/pulls/{n}/reviews", Kind: githubfake.FaultLoseResponse})
	var ids []string
	err = cp.App.InTenant(ctx, tid, func(tx pgx.Tx) error {
		var repoID string
		if err := tx.QueryRow(ctx, "SELECT id::text FROM repositories WHERE external_id = $1", repo.ID).Scan(&repoID); err != nil {
			return err
		}
		r, _, err := review.Create(ctx, tx, review.NewRun{RepositoryID: repoID, PRNumber: pr, HeadSHA: head, Trigger: review.TriggerOpened})
		if err != nil {
			return err
		}
		if _, err := review.Start(ctx, tx, r.ID, review.Modes{Review: "on", SAST: "off", Acceptance: "off"}, repo.Ref("main"), ""); err != nil {
			return err
		}
		if _, err := review.Complete(ctx, tx, r.ID, review.Result{}); err != nil {
			return err
		}
		pl := review.Payload{Version: review.PayloadVersion, RunID: r.ID, PR: pr, HeadSHA: head, Model: "scripted"}
		for _, k := range []publish.Kind{publish.KindReview, publish.KindCheckRun} {
			o, err := publish.CreateOutput(ctx, tx, publish.NewOutput{RepositoryID: repoID, Kind: k, ReviewRunID: r.ID,
				Status: publish.OutputReady, Payload: pl})
			if err != nil {
				return err
			}
			ids = append(ids, o.ID)
			if _, err := jobs.InsertTx(ctx, tx, publish.Job{Tenant: tid, OutputID: o.ID}, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		published := 0
		_ = cp.App.InTenant(ctx, tid, func(tx pgx.Tx) error {
			for _, id := range ids {
				if o, err := publish.GetOutput(ctx, tx, id); err == nil && o.Status == publish.OutputPublished {
					published++
				}
			}
			return nil
		})
		if published == len(ids) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not published within 60 s; logs:\n%s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := len(repo.Reviews(pr)); n != 1 {
		t.Fatalf("%d reviews", n)
	}
	if runs := repo.CheckRuns(); len(runs) != 1 || runs[0].Conclusion != "success" {
		t.Fatalf("check runs %+v", runs)
	}
	if gh.PendingFaults() != 0 {
		t.Fatal("the fault never fired")
	}
	if strings.Contains(logs.String(), "ghs_") {
		t.Fatal("a token reached the logs")
	}

	// /metrics: both publish jobs completed (the attempt that lost its
	// response counts as failed), the queue's depth read from River's
	// table, no repository or tenant in any label.
	addr := <-s.MetricsReady()
	completed := regexp.MustCompile(`(?m)^quavon_jobs_total\{kind="publish_output",outcome="completed",queue="publish"\} 2$`)
	depth := regexp.MustCompile(`(?m)^quavon_queue_jobs\{queue="publish",state="completed"\} [1-9]`)
	var body string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		res, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if body = string(b); completed.MatchString(body) && depth.MatchString(body) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("publish outcomes not in /metrics:\n%s", body)
		}
	}
	if strings.Contains(body, "acme") || strings.Contains(body, string(tid)) {
		t.Fatal("a repository or tenant reached /metrics")
	}
	if res, err := http.Get("http://" + addr + "/healthz"); err != nil || res.StatusCode != http.StatusNoContent {
		t.Fatalf("/healthz: %v %v", res, err)
	}
}
