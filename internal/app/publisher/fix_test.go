package publisher_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/quavon/quavon/internal/api"
	publisherapp "github.com/quavon/quavon/internal/app/publisher"
	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/githubfake"
	"github.com/quavon/quavon/internal/patch"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/testenv"
	"github.com/quavon/quavon/internal/testenv/testbroker"
	"github.com/quavon/quavon/internal/tokenbroker"
)

// TestAssembledPublisherFix: with QUAVON_GITHUB_FIXER_APP_SLUG the
// assembled quavon-publisher publishes an auto-mode fix_pr output as one
// draft pull request, also when the pull request's response is lost (River
// retries; the retry finds it by head branch, bot and marker).
func TestAssembledPublisherFix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cp := testenv.NewControlPlane(t, 16)
	gh := githubfake.New(t)
	review := gh.RegisterApp("quavon-review")
	fixer := gh.RegisterApp("quavon-fixer")
	jobs, err := river.NewClient(riverpgxv5.New(cp.App.Pool), &river.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer((&api.Server{DB: cp.App, Jobs: jobs, WebhookSecrets: map[github.AppKind][]byte{
		github.AppReview: []byte(review.WebhookSecret), github.AppFixer: []byte(fixer.WebhookSecret)}}).Handler())
	t.Cleanup(srv.Close)
	gh.SetWebhookURL(review, srv.URL+"/webhooks/github/review")
	gh.SetWebhookURL(fixer, srv.URL+"/webhooks/github/fixer")
	org := gh.AddOrg("acme")
	const old = "package a\n\nfunc A() int { return 0 }\n"
	repo := gh.AddRepo("acme", "app", githubfake.RepoOptions{Private: true, Files: map[string]string{"a.go": old}})
	gh.SetPermission("acme", "app", "alice", "admin")
	issue := repo.AddIssue(githubfake.IssueOptions{Title: "A returns 0", Author: "alice"})
	for _, app := range []*githubfake.App{review, fixer} {
		perms := map[string]string{"contents": "read", "pull_requests": "write", "issues": "write", "checks": "write"}
		if app == fixer {
			perms = map[string]string{"contents": "write", "pull_requests": "write"}
		}
		in := gh.Install(app, "acme", perms, "acme/app")
		if d, err := gh.Deliver(app, "installation", gh.InstallationEvent("created", in, "alice")); err != nil || d.StatusCode != 200 {
			t.Fatalf("install: %v", err)
		}
	}
	var tenant *string
	if err := cp.App.Pool.QueryRow(ctx, "SELECT quavon_route_account($1)::text", org.ID).Scan(&tenant); err != nil || tenant == nil {
		t.Fatalf("tenant: %v", err)
	}
	tid := postgres.TenantID(*tenant)

	b := testbroker.Start(t, gh, map[github.AppKind]*githubfake.App{github.AppReview: review, github.AppFixer: fixer}, testbroker.Options{})
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
		"QUAVON_GITHUB_REVIEW_APP_SLUG=" + review.Slug, "QUAVON_GITHUB_FIXER_APP_SLUG=" + fixer.Slug,
		"QUAVON_PUBLISHER_WRITE_SPACING=0s", "QUAVON_PUBLISHER_SHUTDOWN_GRACE=5s",
		"QUAVON_PUBLISHER_METRICS_LISTEN="})
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

	gh.InjectFault(githubfake.Fault{Method: "POST", Path: "/repos/{o}/{r}/pulls", Kind: githubfake.FaultLoseResponse})
	base := repo.Ref("main")
	changes := []patch.FixFileChange{{Path: "a.go", Operation: patch.OpModify, BaseBlobSHA: patch.BlobSHA([]byte(old)), Mode: patch.ModeFile,
		NewContent: "package a\n\nfunc A() int { return 1 }\n"}}
	var outID, runID string
	err = cp.App.InTenant(ctx, tid, func(tx pgx.Tx) error {
		var repoID string
		if err := tx.QueryRow(ctx, "SELECT id::text FROM repositories WHERE external_id = $1", repo.ID).Scan(&repoID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO repository_policies (tenant_id, repository_id, document)
			VALUES (quavon_current_tenant(), $1, '{"version":1,"features":{"fix":{"mode":"auto"}}}'::jsonb)`, repoID); err != nil {
			return err
		}
		r, err := fix.Create(ctx, tx, fix.NewRun{RepositoryID: repoID, Subject: fix.SubjectIssue, Number: issue, Delivery: fix.DeliveryPR,
			Mode: fix.ModeAuto, Trigger: fix.TriggerLabel, Label: "quavon:fix", Actor: fix.Actor{Login: "alice", ID: 1}})
		if err != nil {
			return err
		}
		runID = r.ID
		if _, err := fix.Start(ctx, tx, r.ID, fix.Base{SHA: base, Ref: "main"}); err != nil {
			return err
		}
		sum, err := fix.RecordPatch(ctx, tx, r.ID, changes, "", "A returns 1.")
		if err != nil {
			return err
		}
		if _, err := fix.Transition(ctx, tx, r.ID, fix.StatusPublishing, fix.Why{}); err != nil {
			return err
		}
		o, err := publish.CreateOutput(ctx, tx, publish.NewOutput{RepositoryID: repoID, Kind: publish.KindFixPR, FixRunID: r.ID,
			Status: publish.OutputReady, Payload: publish.FixPRPayload{Issue: issue, BaseRef: "main", BaseSHA: base, Files: 1},
			Bound: publish.Bound{PatchSHA256: sum, BaseSHA: base}})
		if err != nil {
			return err
		}
		outID = o.ID
		_, err = jobs.InsertTx(ctx, tx, publish.Job{Tenant: tid, OutputID: o.ID}, nil)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		var status publish.OutputStatus
		_ = cp.App.InTenant(ctx, tid, func(tx pgx.Tx) error {
			if o, err := publish.GetOutput(ctx, tx, outID); err == nil {
				status = o.Status
			}
			return nil
		})
		if status == publish.OutputPublished {
			break
		}
		if status.Terminal() || time.Now().After(deadline) {
			t.Fatalf("output %s; logs:\n%s", status, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	var prs []githubfake.Issue
	for _, i := range repo.Issues() {
		if i.PullRequest != nil {
			prs = append(prs, i)
		}
	}
	if len(prs) != 1 || !prs[0].PullRequest.Draft || !strings.HasPrefix(prs[0].PullRequest.Head, "quavon/fix-") ||
		prs[0].Author != fixer.Slug+"[bot]" {
		t.Fatalf("pull requests %+v", prs)
	}
	if got, _ := repo.ReadFile(prs[0].PullRequest.Head, "a.go"); string(got) != changes[0].NewContent {
		t.Fatalf("a.go on the bot branch: %q", got)
	}
	_ = cp.App.InTenant(ctx, tid, func(tx pgx.Tx) error {
		if r, err := fix.Get(ctx, tx, runID); err != nil || r.Status != fix.StatusPublished {
			t.Errorf("run %+v %v", r, err)
		}
		return nil
	})
	if gh.PendingFaults() != 0 {
		t.Fatal("the fault never fired")
	}
	if strings.Contains(logs.String(), "ghs_") {
		t.Fatal("a token reached the logs")
	}
}
