package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/quavon/quavon/internal/api"
	scanapp "github.com/quavon/quavon/internal/app/scan"
	workerapp "github.com/quavon/quavon/internal/app/worker"
	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/githubfake"
	"github.com/quavon/quavon/internal/gitrepo"
	"github.com/quavon/quavon/internal/llm"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/publish"
	reviewjob "github.com/quavon/quavon/internal/review/job"
	"github.com/quavon/quavon/internal/testenv"
	"github.com/quavon/quavon/internal/testenv/testbroker"
	"github.com/quavon/quavon/internal/tokenbroker"
)

// instantModel answers every review at once: one finding on the first
// file's changed line, then finish.
type instantModel struct{}

func (instantModel) ReviewModel(context.Context, string) (llm.Model, *llm.Budget, error) {
	m := llm.NewScripted(llm.Steps(
		llm.Call("report_finding", map[string]any{"path": "pkg/f00.py", "startLine": 2, "endLine": 2, "severity": "high",
			"category": "security", "title": "shell", "body": "b", "quote": "subprocess.call(c, shell=True)"}),
		llm.Call("finish", map[string]string{"summary": "done"})), "scripted", llm.Price{})
	b, err := llm.NewBudget(llm.Ceiling{Tokens: 2_000_000, Cost: 3_000_000}, llm.BudgetOptions{Feature: llm.FeatureReview})
	return b.Model(m), b, err
}

// BenchmarkReviewRun: a pull request of 20 changed Python files opened on
// the emulator → the real API stores the webhook with its job → the
// assembled worker queues the review run, fetches through the broker's
// token, runs the scripted model (answering at once) and the scanners in
// the sandbox (gVisor), and stores findings and outputs. Per run it
// reports the total, the sandbox job and model time, and Quavon's own
// share (the rest). Goal: own share ≤ 10% of the total and ≤ 1 s.
func BenchmarkReviewRun(b *testing.B) {
	cp := testenv.NewControlPlane(b, 16)
	ctx := context.Background()
	gh := githubfake.New(b)
	app := gh.RegisterApp("quavon-review")
	jobs, err := river.NewClient(riverpgxv5.New(cp.App.Pool), &river.Config{})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer((&api.Server{DB: cp.App, Jobs: jobs, WebhookSecrets: map[github.AppKind][]byte{
		github.AppReview: []byte(app.WebhookSecret)}}).Handler())
	defer srv.Close()
	gh.SetWebhookURL(app, srv.URL+"/webhooks/github/review")
	gh.AddOrg("acme")
	repo := gh.AddRepo("acme", "app", githubfake.RepoOptions{Private: true, Files: map[string]string{"README.md": "x\n"}})
	inst := gh.Install(app, "acme", map[string]string{"contents": "read", "pull_requests": "write", "issues": "write"}, "acme/app")
	if d, err := gh.Deliver(app, "installation", gh.InstallationEvent("created", inst, "alice")); err != nil || d.StatusCode != 200 {
		b.Fatalf("install: %v", err)
	}
	gh.AutoDeliver(app)
	var tenant *string
	if err := cp.App.Pool.QueryRow(ctx, "SELECT quavon_route_account($1)::text", gh.AddOrg("acme").ID).Scan(&tenant); err != nil || tenant == nil {
		b.Fatalf("tenant: %v", err)
	}
	var repoID string
	if err := cp.App.InTenant(ctx, postgres.TenantID(*tenant), func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, "SELECT id::text FROM repositories WHERE external_id = $1", repo.ID).Scan(&repoID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO repository_policies (tenant_id, repository_id, document)
			VALUES (quavon_current_tenant(), $1, '{"version":1,"features":{"sast":{"mode":"on"}}}')`, repoID)
		return err
	}); err != nil {
		b.Fatal(err)
	}

	broker := testbroker.Start(b, gh, map[github.AppKind]*githubfake.App{github.AppReview: app}, testbroker.Options{})
	cache, err := gitrepo.NewCache(gitrepo.CacheConfig{Dir: b.TempDir(), AllowHTTP: true})
	if err != nil {
		b.Fatal(err)
	}
	scanCfg, err := config.LoadScan([]string{"QUAVON_ENV=test", "QUAVON_SANDBOX_IMAGES_LOCK=" + testenv.ImagesLock(b),
		"QUAVON_SANDBOX_RUNSC_PLATFORM=" + testenv.RunscPlatform(b)})
	if err != nil {
		b.Fatal(err)
	}
	local, err := scanapp.StartLocal(ctx, scanCfg, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	defer local.Close()
	ghDeps := &reviewjob.GitHub{Conn: broker.Conn(b, tokenbroker.RoleWorker, github.TransportConfig{}), Tokens: broker.Client(b, tokenbroker.RoleWorker),
		Cache: cache, GitURL: func(r reviewjob.Repo) string { return gh.URL + "/" + r.FullName() + ".git" }}
	var mu sync.Mutex
	var timings []reviewjob.Timings
	u, _ := url.Parse(cp.AppURL)
	pw, _ := u.User.Password()
	u.User = url.User(u.User.Username())
	pwFile := filepath.Join(b.TempDir(), "pw")
	os.WriteFile(pwFile, []byte(pw), 0o600)
	cfg, err := config.LoadWorker([]string{"QUAVON_DATABASE_URL=" + u.String(), "QUAVON_DATABASE_PASSWORD_FILE=" + pwFile})
	if err != nil {
		b.Fatal(err)
	}
	w, err := workerapp.NewWith(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), workerapp.Options{Review: &reviewjob.Deps{
		Fetch: ghDeps, PRs: ghDeps, Models: instantModel{}, Sandbox: local.Client,
		OnTimings: func(t reviewjob.Timings) { mu.Lock(); timings = append(timings, t); mu.Unlock() }}})
	if err != nil {
		b.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() { cancel(); <-done; w.Close() }()

	files := func(n int) map[string]string {
		m := map[string]string{}
		for i := range 20 {
			m[fmt.Sprintf("pkg/f%02d.py", i)] = fmt.Sprintf("import subprocess\ndef run%d(c):\n    return subprocess.call(c, shell=True)  # v%d\n", i, n)
		}
		m["pkg/f00.py"] = fmt.Sprintf("import subprocess\nsubprocess.call(c, shell=True)\n# v%d\n", n)
		return m
	}
	outputs := func(pr int) int {
		var n int
		cp.App.InTenant(ctx, postgres.TenantID(*tenant), func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, `SELECT count(*) FROM pending_outputs o JOIN review_runs r ON r.id = o.review_run_id
				WHERE r.pr_number = $1 AND o.kind = $2`, pr, string(publish.KindReview)).Scan(&n)
		})
		return n
	}
	b.ResetTimer()
	var total time.Duration
	for i := range b.N {
		branch := fmt.Sprintf("feature-%d", i)
		repo.Commit(branch, files(i), "change")
		t0 := time.Now()
		pr := repo.AddPullRequest(githubfake.PullRequestOptions{Title: "Change", Author: "alice", Head: branch})
		deadline := time.Now().Add(10 * time.Minute)
		for outputs(pr) == 0 {
			if time.Now().After(deadline) {
				b.Fatalf("no review output for PR %d", pr)
			}
			time.Sleep(20 * time.Millisecond)
		}
		total += time.Since(t0)
	}
	b.StopTimer()
	mu.Lock()
	defer mu.Unlock()
	var run, sandbox, model, fetch time.Duration
	for _, t := range timings {
		run, sandbox, model, fetch = run+t.Total, sandbox+t.Sandbox, model+t.Model, fetch+t.Fetch
	}
	n := time.Duration(max(len(timings), 1))
	own := total/time.Duration(b.N) - (sandbox+model)/n
	b.ReportMetric(float64((total / time.Duration(b.N)).Milliseconds()), "webhook-to-outputs-ms")
	b.ReportMetric(float64((run / n).Milliseconds()), "review-job-ms")
	b.ReportMetric(float64((fetch / n).Milliseconds()), "fetch-ms")
	b.ReportMetric(float64((sandbox / n).Milliseconds()), "sandbox-ms")
	b.ReportMetric(float64((model / n).Milliseconds()), "model-ms")
	b.ReportMetric(float64(own.Milliseconds()), "own-ms")
	b.ReportMetric(float64(own)/float64(total/time.Duration(b.N)), "own/total")
}
