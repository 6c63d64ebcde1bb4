package handle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/fix/fixjob"
	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/intake"
	"github.com/quavon/quavon/internal/policy"
	"github.com/quavon/quavon/internal/postgres"
)

// Repo is what the fix trigger reads of a repository to reach it on GitHub.
type Repo struct {
	Owner, Name string
	// ReviewInstallationID is the review app's installation, whose read
	// token the worker reads issues and permissions with (0: none).
	ReviewInstallationID int64
}

// LiveSource returns the live checks of one repository (a github.Reader in
// production).
type LiveSource func(ctx context.Context, r Repo) (fix.Live, error)

// ReaderSource is the LiveSource of a GitHub connection: the review app's
// read-only Reader of the repository.
func ReaderSource(conn *github.Conn) LiveSource {
	return func(ctx context.Context, r Repo) (fix.Live, error) {
		if r.ReviewInstallationID == 0 {
			return nil, errors.New("the review app is not installed on the repository: permissions cannot be read")
		}
		return github.NewReader(ctx, conn, r.ReviewInstallationID, r.Owner+"/"+r.Name)
	}
}

// FixTriggerWorker decides fix triggers (issues labeled, "@<fixer> fix"
// comments; queue fix) with fix.Admit: the run is recorded queued
// (admitted) or ineligible with its reason, in the transaction that marks
// the event processed.
type FixTriggerWorker struct {
	river.WorkerDefaults[intake.FixTriggerArgs]
	DB   *postgres.DB
	Live LiveSource
	// PerTenant is QUAVON_MAX_FIX_RUNS_PER_TENANT_PER_DAY.
	PerTenant int
	// Runs: this worker runs fix runs (fix_run jobs): an admitted run's
	// job is inserted with the admission.
	Runs bool
	Now  func() time.Time
}

// Work applies one trigger.
func (w *FixTriggerWorker) Work(ctx context.Context, job *river.Job[intake.FixTriggerArgs]) error {
	return handle(ctx, w.DB, intake.EventArgs(job.Args), job, w.apply)
}

func (w *FixTriggerWorker) apply(ctx context.Context, tx pgx.Tx, ev *storedEvent) (string, error) {
	t := fix.TriggerEvent{RepositoryID: ev.RepositoryID, Number: ev.Number, EventID: ev.ID,
		Actor: fix.Actor{Login: ev.ActorLogin, ID: ev.ActorID}, ActorType: ev.ActorType, OnPullRequest: ev.Data.IsPullRequest}
	switch {
	case ev.Event == "issues" && ev.Action == "labeled":
		t.Trigger, t.Label = fix.TriggerLabel, ev.Data.Label
	case ev.Event == "issue_comment" && ev.Action == "created" && ev.Data.Command == intake.FixCommand:
		t.Trigger, t.CommentID = fix.TriggerComment, ev.Data.CommentID
	default:
		return "", fmt.Errorf("no fix trigger in %s %s", ev.Event, ev.Action)
	}
	var repo Repo
	var visibility string
	var doc []byte
	err := tx.QueryRow(ctx, `SELECT r.owner, r.name, r.visibility, coalesce(r.review_installation_id, 0), p.document::text
		FROM repositories r LEFT JOIN repository_policies p ON p.repository_id = r.id WHERE r.id = $1`, ev.RepositoryID).
		Scan(&repo.Owner, &repo.Name, &visibility, &repo.ReviewInstallationID, &doc)
	if err != nil {
		return "", fmt.Errorf("repository: %w", err)
	}
	eff := policy.Resolve(doc, policy.RepoFacts{Private: visibility != "public"})
	f := eff.Policy.Features.Fix
	pol := fix.TriggerPolicy{TriggerLabels: f.TriggerLabels, Caps: fix.CapLimits{PerIssue: f.MaxRunsPerIssuePerDay,
		PerRepository: f.MaxRunsPerDay, PerTenant: w.PerTenant}}
	switch eff.FixMode() {
	case policy.FixApproval:
		pol.Mode = fix.ModeApproval
	case policy.FixAuto:
		pol.Mode = fix.ModeAuto
	}
	live := &lazyLive{src: w.Live, repo: repo}
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	a, err := fix.Admit(ctx, tx, t, pol, live, now())
	if err != nil {
		return "", err
	}
	switch {
	case a.Run == nil:
		return "ignored: " + a.Ignored, nil
	case a.Admitted() && w.Runs:
		if err := insertFixRun(ctx, tx, a.Run.ID); err != nil {
			return "", err
		}
		return "fix run " + a.Run.ID + " admitted and queued", nil
	case a.Admitted():
		return "fix run " + a.Run.ID + " admitted", nil
	}
	return "fix run " + a.Run.ID + " ineligible: " + a.Run.Reason, nil
}

// lazyLive connects to GitHub only when Admit asks (a capped or a bot's
// trigger asks nothing).
type lazyLive struct {
	src  LiveSource
	repo Repo
	l    fix.Live
}

func (l *lazyLive) get(ctx context.Context) (fix.Live, error) {
	if l.l != nil {
		return l.l, nil
	}
	if l.src == nil {
		return nil, errors.New("no GitHub connection configured for the worker")
	}
	live, err := l.src(ctx, l.repo)
	if err != nil {
		return nil, err
	}
	l.l = live
	return live, nil
}

func (l *lazyLive) CollaboratorPermission(ctx context.Context, login string) (string, error) {
	live, err := l.get(ctx)
	if err != nil {
		return "", err
	}
	return live.CollaboratorPermission(ctx, login)
}

func (l *lazyLive) Issue(ctx context.Context, number int) (github.Issue, error) {
	live, err := l.get(ctx)
	if err != nil {
		return github.Issue{}, err
	}
	return live.Issue(ctx, number)
}

// insertFixRun inserts the admitted run's fix_run job in tx.
func insertFixRun(ctx context.Context, tx pgx.Tx, runID string) error {
	client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
	if err != nil {
		return err
	}
	var tenant string
	if err := tx.QueryRow(ctx, `SELECT quavon_current_tenant()::text`).Scan(&tenant); err != nil {
		return err
	}
	if _, err := client.InsertTx(ctx, tx, fixjob.RunArgs{TenantID: tenant, RunID: runID}, nil); err != nil {
		return fmt.Errorf("the fix run's job: %w", err)
	}
	return nil
}
