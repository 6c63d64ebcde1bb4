package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
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
	workerapp "github.com/quavon/quavon/internal/app/worker"
	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/githubfake"
	"github.com/quavon/quavon/internal/intake"
	"github.com/quavon/quavon/internal/mention"
	"github.com/quavon/quavon/internal/patch"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/review"
	"github.com/quavon/quavon/internal/testenv"
)

// world is the real API (webhook intake) and the emulator delivering to it,
// on a fresh control plane; the worker is started by the tests.
type world struct {
	cp            *testenv.ControlPlane
	gh            *githubfake.Server
	review, fixer *githubfake.App
	repo          *githubfake.Repo
	tenant        postgres.TenantID
	repoID        string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	return newWorldWith(t, nil)
}

// newWorldWith is newWorld with the Fixer app granted fixerPerms (nil: the
// review app's grant).
func newWorldWith(t *testing.T, fixerPerms map[string]string) *world {
	t.Helper()
	w := &world{cp: testenv.NewControlPlane(t, 16), gh: githubfake.New(t)}
	w.review = w.gh.RegisterApp("quavon-review")
	w.fixer = w.gh.RegisterApp("quavon-fixer")
	jobs, err := river.NewClient(riverpgxv5.New(w.cp.App.Pool), &river.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer((&api.Server{DB: w.cp.App, Jobs: jobs, WebhookSecrets: map[github.AppKind][]byte{
		github.AppReview: []byte(w.review.WebhookSecret), github.AppFixer: []byte(w.fixer.WebhookSecret)},
		FixerCommands: mustMention(t, "quavon-fixer")}).Handler())
	t.Cleanup(srv.Close)
	w.gh.SetWebhookURL(w.review, srv.URL+"/webhooks/github/review")
	w.gh.SetWebhookURL(w.fixer, srv.URL+"/webhooks/github/fixer")
	w.gh.AddOrg("acme")
	w.repo = w.gh.AddRepo("acme", "app", githubfake.RepoOptions{Private: true, Files: map[string]string{"README.md": "app\n"}})
	for _, app := range []*githubfake.App{w.review, w.fixer} {
		perms := map[string]string{"contents": "read", "pull_requests": "write", "issues": "write"}
		if app == w.fixer && fixerPerms != nil {
			perms = fixerPerms
		}
		in := w.gh.Install(app, "acme", perms, "acme/app")
		d, err := w.gh.Deliver(app, "installation", w.gh.InstallationEvent("created", in, "alice"))
		if err != nil || d.StatusCode != 200 {
			t.Fatalf("install %s: %v %d %s", app.Slug, err, d.StatusCode, d.Response)
		}
		w.gh.AutoDeliver(app)
	}
	var tenant *string
	if err := w.cp.App.Pool.QueryRow(context.Background(), "SELECT quavon_route_account($1)::text", w.gh.AddOrg("acme").ID).Scan(&tenant); err != nil || tenant == nil {
		t.Fatalf("tenant: %v", err)
	}
	w.tenant = postgres.TenantID(*tenant)
	w.in(t, func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), "SELECT id::text FROM repositories WHERE external_id = $1", w.repo.ID).Scan(&w.repoID)
	})
	return w
}

func mustMention(t *testing.T, slug string) *mention.Parser {
	t.Helper()
	p, err := mention.New(slug)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (w *world) in(t *testing.T, fn func(tx pgx.Tx) error) {
	t.Helper()
	if err := w.cp.App.InTenant(context.Background(), w.tenant, fn); err != nil {
		t.Fatal(err)
	}
}

// env is the worker's environment: the service role's URL and password
// file, and the given settings.
func (w *world) env(t *testing.T, settings ...string) []string {
	t.Helper()
	u, _ := url.Parse(w.cp.AppURL)
	pw, _ := u.User.Password()
	u.User = url.User(u.User.Username())
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte(pw), 0o600); err != nil {
		t.Fatal(err)
	}
	// Tests never bind the default metrics port.
	return append([]string{"QUAVON_DATABASE_URL=" + u.String(), "QUAVON_DATABASE_PASSWORD_FILE=" + pwFile, "QUAVON_WORKER_METRICS_LISTEN="}, settings...)
}

// startWorker runs the assembled worker until the returned stop is called;
// stop returns Run's error.
func (w *world) startWorker(t *testing.T, settings ...string) (stop func() error) {
	t.Helper()
	cfg, err := config.LoadWorker(w.env(t, settings...))
	if err != nil {
		t.Fatal(err)
	}
	s, err := workerapp.New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		err := <-done
		s.Close()
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}

// waitFor polls cond until it holds or 30 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (w *world) reviewRun(t *testing.T, pr int, head string, start bool) string {
	t.Helper()
	var id string
	w.in(t, func(tx pgx.Tx) error {
		r, _, err := review.Create(context.Background(), tx, review.NewRun{RepositoryID: w.repoID, PRNumber: pr, HeadSHA: head,
			HeadRef: "feature", Trigger: review.TriggerOpened})
		if err != nil {
			return err
		}
		id = r.ID
		if start {
			_, err = review.Start(context.Background(), tx, id, review.Modes{Review: "on", SAST: "on", Acceptance: "shadow"}, "", "")
		}
		return err
	})
	return id
}

// fixAwaiting makes a fix run of subject number awaiting approval on base,
// with its pending output.
func (w *world) fixAwaiting(t *testing.T, n fix.NewRun, base string) (string, string) {
	t.Helper()
	ctx := context.Background()
	var runID, outID string
	w.in(t, func(tx pgx.Tx) error {
		n.RepositoryID = w.repoID
		r, err := fix.Create(ctx, tx, n)
		if err != nil {
			return err
		}
		if _, err := fix.Start(ctx, tx, r.ID, fix.Base{SHA: base, Ref: "main"}); err != nil {
			return err
		}
		sum, err := fix.RecordPatch(ctx, tx, r.ID, []patch.FixFileChange{{Path: "fix.go", Operation: patch.OpCreate,
			NewContent: "package a\n", Mode: patch.ModeFile}}, "diff", "summary")
		if err != nil {
			return err
		}
		if _, err := fix.Transition(ctx, tx, r.ID, fix.StatusAwaitingApproval, fix.Why{}); err != nil {
			return err
		}
		kind, bound := publish.KindFixPR, publish.Bound{PatchSHA256: sum, BaseSHA: base}
		if n.Delivery == fix.DeliveryCommit {
			kind, bound.HeadSHA = publish.KindFixCommit, base
		}
		o, err := publish.CreateOutput(ctx, tx, publish.NewOutput{RepositoryID: w.repoID, Kind: kind, FixRunID: r.ID,
			Status: publish.OutputAwaitingApproval, Payload: map[string]any{"number": n.Number}, Bound: bound,
			ExpiresAt: time.Now().Add(24 * time.Hour)})
		runID, outID = r.ID, o.ID
		return err
	})
	return runID, outID
}

func (w *world) reviewStatus(t *testing.T, id string) (review.Status, string) {
	t.Helper()
	var r *review.Run
	w.in(t, func(tx pgx.Tx) error {
		var err error
		r, err = review.Get(context.Background(), tx, id)
		return err
	})
	return r.Status, r.Reason
}

func (w *world) fixStatus(t *testing.T, id string) (fix.Status, string, publish.OutputStatus) {
	t.Helper()
	var r *fix.Run
	var outs []*publish.Output
	w.in(t, func(tx pgx.Tx) error {
		var err error
		if r, err = fix.Get(context.Background(), tx, id); err != nil {
			return err
		}
		outs, err = publish.OutputsOfRun(context.Background(), tx, id)
		return err
	})
	var out publish.OutputStatus
	if len(outs) > 0 {
		out = outs[0].Status
	}
	return r.Status, r.Reason, out
}

func (w *world) unprocessed(t *testing.T) int {
	t.Helper()
	var n int
	w.in(t, func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), "SELECT count(*) FROM webhook_events WHERE processed_at IS NULL").Scan(&n)
	})
	return n
}

// End to end: the emulator's own state changes reach the real API, which
// stores them with their jobs; the assembled worker applies them: a push to
// a pull request's head supersedes the review of the old head and ends a
// review fix that was to be committed on it; closing the pull request
// cancels its review runs; closing, transferring and deleting issues end
// their fix runs and the outputs waiting for approval.
func TestWorkerAppliesWebhooks(t *testing.T) {
	w := newWorld(t)
	other := w.gh.AddRepo("acme", "other", githubfake.RepoOptions{Files: map[string]string{"x": "y\n"}})
	stop := w.startWorker(t)

	w.repo.Commit("feature", map[string]string{"a.go": "package a\n"}, "work")
	pr := w.repo.AddPullRequest(githubfake.PullRequestOptions{Title: "Feature", Author: "alice", Head: "feature"})
	oldHead := w.repo.Ref("feature")
	oldRun := w.reviewRun(t, pr, oldHead, true)
	otherPR := w.reviewRun(t, pr+100, oldHead, false)
	commitFix, commitOut := w.fixAwaiting(t, fix.NewRun{Subject: fix.SubjectPullRequest, Number: pr, ReviewRunID: oldRun,
		Delivery: fix.DeliveryCommit, Mode: fix.ModeApproval, Trigger: fix.TriggerDashboard, Actor: fix.Actor{Login: "alice", ID: 9}}, oldHead)
	stackedFix, _ := w.fixAwaiting(t, fix.NewRun{Subject: fix.SubjectPullRequest, Number: pr, ReviewRunID: oldRun,
		Delivery: fix.DeliveryStackedPR, Mode: fix.ModeApproval, Trigger: fix.TriggerDashboard, Actor: fix.Actor{Login: "alice", ID: 9}}, oldHead)

	newHead := w.repo.Commit("feature", map[string]string{"b.go": "package a\n"}, "push")
	newRun := w.reviewRun(t, pr, newHead, false)
	waitFor(t, "the synchronize applied", func() bool { s, _ := w.reviewStatus(t, oldRun); return s == review.StatusCancelled })
	if s, r := w.reviewStatus(t, oldRun); s != review.StatusCancelled || r != review.ReasonSuperseded {
		t.Errorf("old head's run: %s %s", s, r)
	}
	if s, r, o := w.fixStatus(t, commitFix); s != fix.StatusExpired || r != fix.ReasonHeadMoved || o != publish.OutputCancelled {
		t.Errorf("commit on the old head: %s %s, output %s", s, r, o)
	}
	if s, _, o := w.fixStatus(t, stackedFix); s != fix.StatusAwaitingApproval || o != publish.OutputAwaitingApproval {
		t.Errorf("a stacked PR is still possible after a push: %s, output %s", s, o)
	}
	_ = commitOut

	w.repo.UpdateIssue(pr, func(i *githubfake.Issue) { i.State = "closed" })
	waitFor(t, "the close applied", func() bool { s, _ := w.reviewStatus(t, newRun); return s == review.StatusCancelled })
	if s, r := w.reviewStatus(t, newRun); r != review.ReasonPRClosed {
		t.Errorf("new head's run after the close: %s %s", s, r)
	}
	if s, r, _ := w.fixStatus(t, stackedFix); s != fix.StatusExpired || r != fix.ReasonPRClosed {
		t.Errorf("stacked fix after the close: %s %s", s, r)
	}
	if s, _ := w.reviewStatus(t, otherPR); s != review.StatusQueued {
		t.Errorf("another pull request's run: %s", s)
	}

	issueFix := func(n int) string {
		id, _ := w.fixAwaiting(t, fix.NewRun{Subject: fix.SubjectIssue, Number: n, Delivery: fix.DeliveryPR, Mode: fix.ModeApproval,
			Trigger: fix.TriggerLabel, Label: "quavon:fix", Actor: fix.Actor{Login: "alice", ID: 9}}, w.repo.Ref("main"))
		return id
	}
	closed := w.repo.AddIssue(githubfake.IssueOptions{Title: "Crash", Author: "alice"})
	moved := w.repo.AddIssue(githubfake.IssueOptions{Title: "Elsewhere", Author: "alice"})
	gone := w.repo.AddIssue(githubfake.IssueOptions{Title: "Spam", Author: "alice"})
	kept := w.repo.AddIssue(githubfake.IssueOptions{Title: "Still open", Author: "alice"})
	runs := map[int]string{closed: issueFix(closed), moved: issueFix(moved), gone: issueFix(gone), kept: issueFix(kept)}
	var queued string
	w.in(t, func(tx pgx.Tx) error {
		r, err := fix.Create(context.Background(), tx, fix.NewRun{RepositoryID: w.repoID, Subject: fix.SubjectIssue, Number: closed,
			Delivery: fix.DeliveryPR, Mode: fix.ModeAuto, Trigger: fix.TriggerComment, CommentID: 5, Actor: fix.Actor{Login: "bob", ID: 10}})
		if r != nil {
			queued = r.ID
		}
		return err
	})
	w.repo.UpdateIssue(closed, func(i *githubfake.Issue) { i.State = "closed" })
	w.repo.TransferIssue(moved, other)
	w.repo.DeleteIssue(gone)
	waitFor(t, "the issue events applied", func() bool { return w.unprocessed(t) == 0 && len(w.gh.Deliveries()) > 0 })
	for n, want := range map[int]string{closed: fix.ReasonIssueClosed, moved: fix.ReasonIssueTransferred, gone: fix.ReasonIssueDeleted} {
		waitFor(t, "fix run of #"+want, func() bool { s, _, _ := w.fixStatus(t, runs[n]); return s.Terminal() })
		if s, r, o := w.fixStatus(t, runs[n]); s != fix.StatusExpired || r != want || o != publish.OutputCancelled {
			t.Errorf("#%d: %s %s, output %s", n, s, r, o)
		}
	}
	if s, r, _ := w.fixStatus(t, queued); s != fix.StatusIneligible || r != fix.ReasonIssueClosed {
		t.Errorf("queued run of the closed issue: %s %s", s, r)
	}
	if s, _, o := w.fixStatus(t, runs[kept]); s != fix.StatusAwaitingApproval || o != publish.OutputAwaitingApproval {
		t.Errorf("open issue's run: %s, output %s", s, o)
	}
	// Every event was processed once, with an outcome, and every job completed.
	var outcomes []string
	w.in(t, func(tx pgx.Tx) error {
		rows, err := tx.Query(context.Background(), "SELECT event || '.' || action || ': ' || outcome FROM webhook_events ORDER BY received_at")
		if err != nil {
			return err
		}
		outcomes, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	// Either app's issues events also keep the acceptance check's issues
	// table in step (internal/acceptance/check): four issues opened for
	// two apps, and the review app's closed, transferred and deleted.
	synced := 0
	for _, o := range outcomes {
		if strings.HasSuffix(o, ": issue row in step") {
			synced++
		}
	}
	if len(outcomes)-synced != 6 || synced != 11 { // opened, synchronize, closed, and three issue events
		t.Errorf("outcomes %v", outcomes)
	}
	var states string
	waitFor(t, "every job completed", func() bool {
		w.cp.Admin.QueryRow(context.Background(), `SELECT string_agg(DISTINCT state::text, ',') FROM river_job
			WHERE kind IN ('pull_request_event', 'issue_event', 'issue_sync_event')`).Scan(&states)
		return states == "completed"
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// A job interrupted by shutdown half way rolls back whole and fails with
// the reason; the next worker applies it once.
func TestShutdownRollsBackAnInterruptedJob(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.repo.Commit("feature", map[string]string{"a.go": "package a\n"}, "work")
	pr := w.repo.AddPullRequest(githubfake.PullRequestOptions{Title: "Feature", Author: "alice", Head: "feature"})
	head := w.repo.Ref("feature")
	// The opened event is not what this test is about: applied already.
	w.in(t, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "UPDATE webhook_events SET processed_at = now(), outcome = 'test' WHERE action = 'opened'")
		return err
	})
	if _, err := w.cp.Admin.Exec(ctx, "DELETE FROM river_job WHERE kind = 'pull_request_event'"); err != nil {
		t.Fatal(err)
	}
	run := w.reviewRun(t, pr, head, true)
	reviewFix, _ := w.fixAwaiting(t, fix.NewRun{Subject: fix.SubjectPullRequest, Number: pr, ReviewRunID: run,
		Delivery: fix.DeliveryStackedPR, Mode: fix.ModeApproval, Trigger: fix.TriggerDashboard, Actor: fix.Actor{Login: "alice", ID: 9}}, head)
	w.repo.UpdateIssue(pr, func(i *githubfake.Issue) { i.State = "closed" })
	if w.unprocessed(t) != 1 {
		t.Fatal("the close was not stored")
	}
	// Hold the review fix's row: the handler cancels the review run first,
	// then blocks on this row, half way, until shutdown cancels it.
	lock, err := w.cp.Admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx)
	if _, err := lock.Exec(ctx, "SELECT 1 FROM fix_runs WHERE id = $1 FOR UPDATE", reviewFix); err != nil {
		t.Fatal(err)
	}
	stop := w.startWorker(t, "QUAVON_WORKER_SHUTDOWN_GRACE=300ms")
	waitFor(t, "the handler blocked half way", func() bool {
		var n int
		w.cp.Admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FROM fix_runs f%'`).Scan(&n)
		return n == 1
	})
	waitFor(t, "the job running", func() bool {
		var n int
		w.cp.Admin.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE kind = 'pull_request_event' AND state = 'running'").Scan(&n)
		return n == 1
	})
	began := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if d := time.Since(began); d > 10*time.Second {
		t.Errorf("the stop took %s", d)
	}
	var state, errs string
	if err := w.cp.Admin.QueryRow(ctx, `SELECT state::text, coalesce(to_json(errors)::text, '') FROM river_job WHERE kind = 'pull_request_event'`).Scan(&state, &errs); err != nil {
		t.Fatal(err)
	}
	var attempts []struct{ Error string }
	json.Unmarshal([]byte(errs), &attempts)
	if state != "retryable" && state != "available" || len(attempts) != 1 || !strings.Contains(attempts[0].Error, "interrupted") ||
		!strings.Contains(attempts[0].Error, "nothing of it was kept") {
		t.Fatalf("interrupted job: %s %s", state, errs)
	}
	if s, _ := w.reviewStatus(t, run); s != review.StatusRunning || w.unprocessed(t) != 1 {
		t.Fatalf("half applied: run %s, %d unprocessed", s, w.unprocessed(t))
	}
	if s, _, _ := w.fixStatus(t, reviewFix); s != fix.StatusAwaitingApproval {
		t.Fatalf("review fix %s", s)
	}
	lock.Rollback(ctx)
	// The retry (River's backoff: about a second) by a new worker applies it.
	if _, err := w.cp.Admin.Exec(ctx, "UPDATE river_job SET scheduled_at = now() WHERE kind = 'pull_request_event'"); err != nil {
		t.Fatal(err)
	}
	w.startWorker(t)
	waitFor(t, "the retry applied", func() bool { s, _ := w.reviewStatus(t, run); return s == review.StatusCancelled })
	if s, r, _ := w.fixStatus(t, reviewFix); s != fix.StatusExpired || r != fix.ReasonPRClosed {
		t.Fatalf("review fix after the retry: %s %s", s, r)
	}
	if w.unprocessed(t) != 0 {
		t.Fatal("the event is not marked processed")
	}
}

// Every job kind intake inserts has a worker (River refuses to insert a
// kind its client has no worker for).
func TestEveryInsertedJobKindHasAWorker(t *testing.T) {
	w := newWorld(t)
	cfg, err := config.LoadWorker(w.env(t))
	if err != nil {
		t.Fatal(err)
	}
	s, err := workerapp.New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	kinds := intake.JobKinds()
	if len(kinds) == 0 {
		t.Fatal("no job kinds")
	}
	for _, kind := range kinds {
		var args river.JobArgs
		switch kind {
		case intake.PullRequestEventArgs{}.Kind():
			args = intake.PullRequestEventArgs{}
		case intake.IssueEventArgs{}.Kind():
			args = intake.IssueEventArgs{}
		case intake.FixTriggerArgs{}.Kind():
			args = intake.FixTriggerArgs{}
		case intake.IssueSyncEventArgs{}.Kind():
			args = intake.IssueSyncEventArgs{}
		case intake.ReviewCommentEventArgs{}.Kind():
			args = intake.ReviewCommentEventArgs{}
		default:
			t.Fatalf("job kind %s has no case here", kind)
		}
		err := pgx.BeginFunc(context.Background(), w.cp.Admin, func(tx pgx.Tx) error {
			_, err := s.InsertTx(context.Background(), tx, args, nil)
			if err == nil {
				return errors.New("rollback")
			}
			return err
		})
		if err != nil && err.Error() != "rollback" {
			t.Errorf("%s: %v", kind, err)
		}
	}
}
