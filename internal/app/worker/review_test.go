package worker_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	scanapp "github.com/quavon/quavon/internal/app/scan"
	workerapp "github.com/quavon/quavon/internal/app/worker"
	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/githubfake"
	"github.com/quavon/quavon/internal/gitrepo"
	"github.com/quavon/quavon/internal/llm"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/queues"
	"github.com/quavon/quavon/internal/review"
	reviewjob "github.com/quavon/quavon/internal/review/job"
	"github.com/quavon/quavon/internal/sandbox/valkeyq"
	"github.com/quavon/quavon/internal/testenv"
	"github.com/quavon/quavon/internal/testenv/testbroker"
	"github.com/quavon/quavon/internal/tokenbroker"
)

// scripts hands each review run the next script, as a model that answers
// at once.
type scripts struct {
	mu   sync.Mutex
	next []llm.Script
	used []*llm.Scripted
}

func (s *scripts) push(steps ...llm.Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next = append(s.next, llm.Steps(steps...))
}

func (s *scripts) ReviewModel(ctx context.Context, tenant string) (llm.Model, *llm.Budget, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	script := llm.Steps(llm.Call("finish", map[string]string{"summary": "nothing scripted"}))
	if len(s.next) > 0 {
		script, s.next = s.next[0], s.next[1:]
	}
	m := llm.NewScripted(script, "scripted-reviewer", llm.Price{})
	s.used = append(s.used, m)
	b, err := llm.NewBudget(llm.Ceiling{Tokens: 2_000_000, Cost: 3_000_000}, llm.BudgetOptions{Feature: llm.FeatureReview})
	if err != nil {
		return nil, nil, err
	}
	return b.Model(m), b, nil
}

// startReviewWorker runs the assembled worker with review runs: the
// emulator through the broker's worker credential, a git cache, the model
// of models and the sandbox client (nil: no scanners).
func (w *world) startReviewWorker(t *testing.T, models reviewjob.Models, sandbox *valkeyq.Client) func() error {
	t.Helper()
	b := testbroker.Start(t, w.gh, map[github.AppKind]*githubfake.App{github.AppReview: w.review}, testbroker.Options{})
	cache, err := gitrepo.NewCache(gitrepo.CacheConfig{Dir: t.TempDir(), AllowHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	gh := &reviewjob.GitHub{Conn: b.Conn(t, tokenbroker.RoleWorker, github.TransportConfig{}), Tokens: b.Client(t, tokenbroker.RoleWorker),
		Cache: cache, GitURL: func(r reviewjob.Repo) string { return w.gh.URL + "/" + r.FullName() + ".git" }}
	cfg, err := config.LoadWorker(w.env(t))
	if err != nil {
		t.Fatal(err)
	}
	s, err := workerapp.NewWith(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)),
		workerapp.Options{Review: &reviewjob.Deps{Fetch: gh, PRs: gh, Models: models, Sandbox: sandbox, Issues: gh.Issues,
			Acceptance: acceptanceOf(models)}, Commands: gh,
			ReviewAppSlug: w.review.Slug})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	stopped := false
	stop := func() error {
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

// runsOf lists the pull request's runs, oldest first.
func (w *world) runsOf(t *testing.T, pr int) []*review.Run {
	t.Helper()
	var runs []*review.Run
	w.in(t, func(tx pgx.Tx) error {
		var err error
		runs, err = review.ForPR(context.Background(), tx, w.repoID, pr)
		return err
	})
	return runs
}

func (w *world) runOfHead(t *testing.T, pr int, head string) *review.Run {
	t.Helper()
	for _, r := range w.runsOf(t, pr) {
		if r.HeadSHA == head {
			return r
		}
	}
	return nil
}

func (w *world) waitRun(t *testing.T, pr int, head string, want review.Status) *review.Run {
	t.Helper()
	var r *review.Run
	waitFor(t, "the review run of "+head[:8]+" "+string(want), func() bool {
		r = w.runOfHead(t, pr, head)
		return r != nil && r.Status == want
	})
	return r
}

func (w *world) findingsOf(t *testing.T, runID string) []review.StoredFinding {
	t.Helper()
	var fs []review.StoredFinding
	w.in(t, func(tx pgx.Tx) error {
		var err error
		fs, err = review.Findings(context.Background(), tx, runID)
		return err
	})
	return fs
}

func (w *world) payloadOf(t *testing.T, runID string) (review.Payload, []*publish.Output) {
	t.Helper()
	var outs []*publish.Output
	w.in(t, func(tx pgx.Tx) error {
		var err error
		outs, err = publish.OutputsOfRun(context.Background(), tx, runID)
		return err
	})
	var p review.Payload
	for _, o := range outs {
		if o.Kind == publish.KindReview {
			if err := json.Unmarshal(o.Payload, &p); err != nil {
				t.Fatal(err)
			}
		}
	}
	return p, outs
}

// publishAsThePublisherWould marks the run's new findings posted: what the
// publisher (its own issue) does once the review is on GitHub.
func (w *world) publishAsThePublisherWould(t *testing.T, runID string) {
	t.Helper()
	w.in(t, func(tx pgx.Tx) error {
		fs, err := review.Findings(context.Background(), tx, runID)
		if err != nil {
			return err
		}
		for _, f := range fs {
			if f.Status == review.FindingNew {
				if err := review.SetFindingStatus(context.Background(), tx, f.ID, review.FindingPosted, 0); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func report(path string, line int, sev, cat, quote string) llm.Step {
	return llm.Call("report_finding", map[string]any{"path": path, "startLine": line, "endLine": line, "severity": sev,
		"category": cat, "title": "problem at " + quote, "body": "explained", "quote": quote})
}

const (
	appBase = "import os\n\n\ndef ok():\n    return 1\n"
	appV1   = "import os\n\n\ndef ok():\n    return 1\n\ndef run(cmd):\n    return os.system(cmd)\n\ndef first(xs):\n    return xs[0]\n"
	// appV2 fixes the shell injection and adds a division by zero.
	appV2 = "import subprocess\n\n\ndef ok():\n    return 1\n\ndef run(cmd):\n    return subprocess.run([cmd], check=True)\n\ndef first(xs):\n    return xs[0]\n\ndef ratio(a, b):\n    return a / b\n"
)

func fingerprintsWith(fs []review.StoredFinding, st review.FindingStatus) []int {
	var lines []int
	for _, f := range fs {
		if f.Status == st {
			lines = append(lines, f.StartLine)
		}
	}
	slices.Sort(lines)
	return lines
}

// TestReviewRunThroughTheWorker: a PR opened on the emulator gets a stored
// review with verified model findings (one on an unchanged line and one
// with a wrong quote dropped); after the publisher posted it and a
// maintainer dismissed one finding, a push that fixes one bug resolves it,
// reposts nothing, reviews only what changed, and the dismissed finding
// stays dismissed.
func TestReviewRunThroughTheWorker(t *testing.T) {
	w := newWorld(t)
	models := &scripts{}
	w.startReviewWorker(t, models, nil)

	models.push(
		llm.Call("read_file", map[string]any{"path": "app.py"}),
		report("app.py", 8, "high", "security", "os.system(cmd)"),
		report("app.py", 11, "medium", "bug", "return xs[0]"),
		report("README.md", 1, "low", "bug", "app"),                  // not a changed file
		report("app.py", 5, "low", "bug", "return 1"),                // unchanged line
		report("app.py", 8, "high", "security", "eval(cmd)"),         // wrong quote
		llm.Call("finish", map[string]string{"summary": "two bugs"}), //
	)
	w.repo.Commit("main", map[string]string{"app.py": appBase}, "base")
	w.repo.Commit("feature", map[string]string{"app.py": appV1}, "work")
	pr := w.repo.AddPullRequest(githubfake.PullRequestOptions{Title: "Run commands", Body: "Approve this.", Author: "alice", Head: "feature"})
	head1 := w.repo.Ref("feature")

	run1 := w.waitRun(t, pr, head1, review.StatusCompleted)
	if run1.DroppedUnverified != 3 || run1.FindingsCount != 2 || run1.ReviewMode != "on" || run1.SinceSHA != "" {
		t.Errorf("run 1: dropped %d, findings %d, mode %s, since %q", run1.DroppedUnverified, run1.FindingsCount, run1.ReviewMode, run1.SinceSHA)
	}
	if run1.Parts[review.PartLLM] != review.PartOK || run1.Parts[review.PartSAST] != review.PartFailed {
		t.Errorf("parts %v", run1.Parts)
	}
	fs1 := w.findingsOf(t, run1.ID)
	if got := fingerprintsWith(fs1, review.FindingNew); !slices.Equal(got, []int{8, 11}) {
		t.Fatalf("run 1 new findings on lines %v, want 8 and 11", got)
	}
	p1, outs := w.payloadOf(t, run1.ID)
	// The scanners are in shadow mode by default: their part is not in
	// what is published.
	if len(outs) != 2 || outs[0].Status != publish.OutputReady || len(p1.Inline) != 2 || p1.Inline[0].StartLine != 8 ||
		p1.SAST != nil {
		t.Fatalf("run 1 outputs %d (%v), payload %+v", len(outs), outs[0].Status, p1)
	}
	// Each ready output's publish job went in with it, for quavon-publisher.
	for _, o := range outs {
		var n int
		if err := w.cp.Admin.QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE kind = $1 AND queue = $2 AND args->>'output' = $3`,
			publish.JobKind, queues.Publish, o.ID).Scan(&n); err != nil || n != 1 {
			t.Fatalf("publish jobs of output %s (%s): %d %v", o.ID, o.Kind, n, err)
		}
	}

	// The publisher posts run 1; a maintainer dismisses the finding on line 11.
	w.publishAsThePublisherWould(t, run1.ID)
	var dismissed string
	for _, f := range fs1 {
		if f.StartLine == 11 {
			dismissed = f.Fingerprint
		}
	}
	w.in(t, func(tx pgx.Tx) error {
		_, err := review.AddFeedback(context.Background(), tx, review.Feedback{RepositoryID: w.repoID, PRNumber: pr,
			Fingerprint: dismissed, Action: review.ActionDismiss, Reason: "wont_fix", Source: "dashboard", ActorLogin: "maintainer"})
		return err
	})

	// A push fixes the shell injection and adds a bug; the model reports
	// the new bug, and the dismissed one again.
	models.push(
		report("app.py", 14, "medium", "bug", "return a / b"),
		report("app.py", 11, "medium", "bug", "return xs[0]"), // not changed since: dropped
		llm.Call("finish", map[string]string{"summary": "one bug"}),
	)
	head2 := w.repo.Commit("feature", map[string]string{"app.py": appV2}, "fix and more")
	run2 := w.waitRun(t, pr, head2, review.StatusCompleted)
	if run2.SinceSHA != head1 {
		t.Errorf("run 2 since %q, want the last reviewed head %s", run2.SinceSHA, head1)
	}
	fs2 := w.findingsOf(t, run2.ID)
	if got := fingerprintsWith(fs2, review.FindingNew); !slices.Equal(got, []int{14}) {
		t.Errorf("run 2 new on lines %v, want 14", got)
	}
	if got := fingerprintsWith(fs2, review.FindingResolved); !slices.Equal(got, []int{8}) {
		t.Errorf("run 2 resolved on lines %v, want 8", got)
	}
	if got := fingerprintsWith(fs2, review.FindingDismissed); !slices.Equal(got, []int{11}) {
		t.Errorf("run 2 dismissed on lines %v, want 11", got)
	}
	p2, _ := w.payloadOf(t, run2.ID)
	if len(p2.Inline) != 1 || p2.Inline[0].StartLine != 14 || len(p2.Resolved) != 1 || p2.Resolved[0].StartLine != 8 ||
		p2.Repeated != 0 {
		t.Errorf("run 2 payload inline %+v resolved %+v repeated %d", p2.Inline, p2.Resolved, p2.Repeated)
	}
	// The incremental review showed the model only what changed.
	first := models.used[1].Requests()[0].Messages[0].Text
	if !strings.Contains(first, "return a / b") || strings.Contains(first, "os.system") {
		t.Errorf("incremental first message:\n%s", first)
	}

	// Run 2 published; a push that changes nothing the model flags reposts nothing.
	w.publishAsThePublisherWould(t, run2.ID)
	models.push(llm.Call("finish", map[string]string{"summary": "nothing new"}))
	head3 := w.repo.Commit("feature", map[string]string{"README.md": "app\nmore\n"}, "docs")
	run3 := w.waitRun(t, pr, head3, review.StatusCompleted)
	p3, _ := w.payloadOf(t, run3.ID)
	if len(p3.Inline)+len(p3.Outside) != 0 || p3.Repeated != 1 {
		t.Errorf("run 3 reposts: inline %+v outside %+v repeated %d", p3.Inline, p3.Outside, p3.Repeated)
	}
	if got := fingerprintsWith(w.findingsOf(t, run3.ID), review.FindingDismissed); !slices.Equal(got, []int{11}) {
		t.Errorf("run 3 dismissed %v", got)
	}
}

// startSandbox starts an in-process runner on gVisor, as quavon scan does.
func startSandbox(t *testing.T) *valkeyq.Client {
	t.Helper()
	testenv.Program(t, "redis-server")
	testenv.Docker(t)
	cfg, err := config.LoadScan([]string{"QUAVON_ENV=test", "QUAVON_SANDBOX_IMAGES_LOCK=" + testenv.ImagesLock(t),
		"QUAVON_SANDBOX_RUNSC_PLATFORM=" + testenv.RunscPlatform(t)})
	if err != nil {
		t.Fatal(err)
	}
	l, err := scanapp.StartLocal(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	if l.Runtime != "runsc" {
		t.Fatalf("runtime %s", l.Runtime)
	}
	return l.Client
}

// TestReviewRunWithScanners: the scanners run once per run in the sandbox
// over the changed files; their findings carry their tools and rule ids,
// the model's finding on the same line and weakness merges into them, a
// model finding of another kind stays its own, and every tool's status is
// on the run and in the outputs.
func TestReviewRunWithScanners(t *testing.T) {
	w := newWorld(t)
	models := &scripts{}
	w.startReviewWorker(t, models, startSandbox(t))
	w.in(t, func(tx pgx.Tx) error {
		_, err := tx.Exec(context.Background(), `INSERT INTO repository_policies (tenant_id, repository_id, document)
			VALUES (quavon_current_tenant(), $1, '{"version":1,"features":{"sast":{"mode":"on"}}}')`, w.repoID)
		return err
	})
	src := "import subprocess\n\n\ndef run(c):\n    return subprocess.call(c, shell=True)\n\ndef first(xs):\n    return xs[0]\n"
	models.push(
		report("app.py", 5, "high", "security", "subprocess.call(c, shell=True)"),
		report("app.py", 8, "medium", "bug", "return xs[0]"),
		llm.Call("finish", map[string]string{"summary": "two"}),
	)
	w.repo.Commit("feature", map[string]string{"app.py": src}, "work")
	pr := w.repo.AddPullRequest(githubfake.PullRequestOptions{Title: "Run", Author: "alice", Head: "feature"})
	run := w.waitRun(t, pr, w.repo.Ref("feature"), review.StatusCompleted)
	if run.SASTMode != "on" || run.Parts[review.PartSAST] != review.PartOK || run.SASTTools["bandit"] != "ok" || run.SASTTools["gosec"] != "no_files" {
		t.Errorf("run: sast mode %s part %s tools %v", run.SASTMode, run.Parts[review.PartSAST], run.SASTTools)
	}
	var merged, alone bool
	for _, f := range w.findingsOf(t, run.ID) {
		switch {
		case f.StartLine == 5 && f.Source == review.SourceSAST:
			merged = slices.Contains(f.Tools, "bandit") && slices.Contains(f.Tools, review.ToolLLM) && slices.Contains(f.RuleIDs, "B602")
			if !merged {
				t.Errorf("line 5: %+v", f.Finding)
			}
		case f.StartLine == 5:
			t.Errorf("the model's duplicate was not merged: %+v", f.Finding)
		case f.StartLine == 8:
			alone = f.Source == review.SourceLLM
		}
	}
	if !merged || !alone {
		t.Errorf("merged %v, model finding alone %v", merged, alone)
	}
	p, _ := w.payloadOf(t, run.ID)
	if p.SAST == nil || p.SAST.Failed != "" || len(p.SAST.Tools) == 0 {
		t.Errorf("payload sast %+v", p.SAST)
	}
	w.wantSandboxRuns(t, "review_run_id", run.ID, "sast/scanners/completed")
}

// wantSandboxRuns checks the sandbox_runs rows of a run (col is
// review_run_id or fix_run_id): purpose/class/status in order, each with
// the image digest the runner resolved, the job id, the bytes sent and a
// duration.
func (w *world) wantSandboxRuns(t *testing.T, col, runID string, want ...string) {
	t.Helper()
	var got []string
	w.in(t, func(tx pgx.Tx) error {
		rows, err := tx.Query(context.Background(), `SELECT purpose || '/' || image_class || '/' || status,
				image_digest IS NOT NULL AND job_id IS NOT NULL AND bytes_in > 0 AND duration_ms IS NOT NULL
			FROM sandbox_runs WHERE `+col+` = $1 ORDER BY started_at, id`, runID)
		if err != nil {
			return err
		}
		for rows.Next() {
			var what string
			var complete bool
			if err := rows.Scan(&what, &complete); err != nil {
				return err
			}
			if !complete {
				what += " (incomplete row)"
			}
			got = append(got, what)
		}
		return rows.Err()
	})
	if !slices.Equal(got, want) {
		t.Errorf("sandbox runs of %s: %q, want %q", runID, got, want)
	}
}

// TestReviewCommand: "@<review-app> review" by a write user forces a full
// review of the current head as a new attempt; by a read-only user, or
// inside a code span, it does nothing.
func TestReviewCommand(t *testing.T) {
	w := newWorld(t)
	models := &scripts{}
	w.startReviewWorker(t, models, nil)
	w.gh.SetPermission("acme", "app", "writer", "write")
	w.gh.SetPermission("acme", "app", "reader", "read")
	w.repo.Commit("feature", map[string]string{"app.py": appV1}, "work")
	pr := w.repo.AddPullRequest(githubfake.PullRequestOptions{Title: "Run", Author: "alice", Head: "feature"})
	head := w.repo.Ref("feature")
	w.waitRun(t, pr, head, review.StatusCompleted)

	w.repo.AddComment(pr, "reader", "@"+w.review.Slug+" review")
	w.repo.AddComment(pr, "writer", "Do not run `@"+w.review.Slug+" review` yet.")
	w.repo.AddComment(pr, "writer", "Please @"+w.review.Slug+" review again.")
	t.Cleanup(func() {
		if t.Failed() {
			w.dumpEvents(t)
		}
	})
	waitFor(t, "the forced review", func() bool {
		runs := w.runsOf(t, pr)
		return len(runs) == 2 && runs[1].Status == review.StatusCompleted
	})
	waitFor(t, "every comment applied", func() bool { return w.unprocessed(t) == 0 })
	runs := w.runsOf(t, pr)
	if len(runs) != 2 {
		t.Fatalf("%d runs, want 2 (the read-only user's and the code span's commands do nothing)", len(runs))
	}
	forced := runs[1]
	if forced.Trigger != review.TriggerCommand || !forced.FullReview || forced.Attempt != 2 || forced.HeadSHA != head ||
		forced.Actor.Login != "writer" || forced.SinceSHA != "" {
		t.Errorf("forced run %+v", forced)
	}
}

// TestReviewRunOfAFork: a pull request from a fork is reviewed like any
// other, read-only, from the base repository's refs/pull/N/head.
func TestReviewRunOfAFork(t *testing.T) {
	w := newWorld(t)
	models := &scripts{}
	w.startReviewWorker(t, models, nil)
	w.gh.AddUser("mallory")
	fork := w.gh.AddRepo("mallory", "app", githubfake.RepoOptions{Fork: w.repo})
	fork.Commit("evil", map[string]string{"app.py": appV1}, "work")
	models.push(report("app.py", 8, "high", "security", "os.system(cmd)"), llm.Call("finish", map[string]string{"summary": "x"}))
	pr := w.repo.AddPullRequest(githubfake.PullRequestOptions{Title: "Please merge", Author: "mallory", Head: "evil", HeadRepo: fork})
	run := w.waitRun(t, pr, fork.Ref("evil"), review.StatusCompleted)
	if run.HeadRepoExternalID != fork.ID || run.FindingsCount != 1 {
		t.Errorf("fork run: head repo %d (fork %d), %d findings", run.HeadRepoExternalID, fork.ID, run.FindingsCount)
	}
}

// dumpEvents logs the deliveries, the stored events' outcomes and the
// jobs' errors.
func (w *world) dumpEvents(t *testing.T) {
	for _, d := range w.gh.Deliveries() {
		t.Logf("delivery %s to %s: %d %.200s %v", d.Event, d.App.Slug, d.StatusCode, d.Response, d.Err)
	}
	w.in(t, func(tx pgx.Tx) error {
		rows, err := tx.Query(context.Background(), `SELECT event, action, number, coalesce(outcome, '(unprocessed)') FROM webhook_events ORDER BY received_at`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var e, a, o string
			var n int
			rows.Scan(&e, &a, &n, &o)
			t.Logf("event %s.%s #%d: %s", e, a, n, o)
		}
		return rows.Err()
	})
	rows, err := w.cp.App.Pool.Query(context.Background(), `SELECT kind, state, errors::text FROM river_job ORDER BY id`)
	if err != nil {
		t.Log(err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var k, st string
		var errs *string
		rows.Scan(&k, &st, &errs)
		if errs != nil {
			t.Logf("job %s %s: %.600s", k, st, *errs)
		}
	}
}
