package check

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/acceptance"
	"github.com/quavon/quavon/internal/acceptance/checkstore"
	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/llm"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/sast"
)

// Reader is what a check reads of its repository on GitHub, with the
// review app's read-only token (github.Reader).
type Reader interface {
	Repository(ctx context.Context) (github.Repository, error)
	Issue(ctx context.Context, number int) (github.Issue, error)
	ClosingIssueReferences(ctx context.Context, prNumber int) ([]int, error)
}

// Reasons a check ends without a verdict from the judge (see checkstore).
const (
	ReasonNoLink      = checkstore.ReasonNoLink
	ReasonNotUsable   = checkstore.ReasonNotUsable
	ReasonTransferred = checkstore.ReasonTransferred
	ReasonNoCriteria  = checkstore.ReasonNoCriteria
	ReasonNoModel     = checkstore.ReasonNoModel
	ReasonBudget      = checkstore.ReasonBudget
	ReasonModelError  = checkstore.ReasonModelError
	ReasonBadAnswer   = checkstore.ReasonBadAnswer
)

// Input is the acceptance check of one review run.
type Input struct {
	Tenant       postgres.TenantID
	RepositoryID string // the repositories row
	Owner, Name  string
	Host         string
	RunID        string
	PR           int
	HeadSHA      string
	HeadRef      string
	// Body is the pull request's body, read live (untrusted).
	Body string
	Mode string // shadow or on
	// Reader reads the repository with the review app's read token.
	Reader Reader
	// Models gives the judge its model inside the acceptance budget; nil
	// (or a nil model) ends a check with criteria as no_model.
	Models Models
	// Changed are the pull request's changed lines at head; DiffText is
	// the diff shown to the judge (called only when it is).
	Changed  sast.ChangedLines
	DiffText func() string
	Log      *slog.Logger
}

// Models gives the judge its model: the acceptance feature's, inside a
// budget of its own.
type Models interface {
	AcceptanceModel(ctx context.Context, tenant string) (llm.Model, *llm.Budget, error)
}

// Run is the check of in's head: the head's stored check when there is
// one (at most one per head, AC3); otherwise linked issues of the same
// repository (AC2), their text from the issues table or a read through the
// review app, criteria, and one judge call whose verdicts stand only on
// the diff (AC1). It stores and returns the check. An error means nothing
// was stored; it never says anything of the pull request.
func Run(ctx context.Context, db *postgres.DB, in Input) (*Stored, error) {
	log := in.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var existing *Stored
	if err := db.InTenant(ctx, in.Tenant, func(tx pgx.Tx) error {
		var err error
		existing, err = Get(ctx, tx, in.RepositoryID, in.PR, in.HeadSHA)
		return err
	}); err != nil {
		return nil, err
	}
	if existing != nil {
		return existing, nil
	}
	s, err := decide(ctx, db, in, log)
	if err != nil {
		return nil, err
	}
	var out *Stored
	err = db.InTenant(ctx, in.Tenant, func(tx pgx.Tx) error {
		var err error
		out, err = Insert(ctx, tx, *s)
		return err
	})
	return out, err
}

// decide works out the check, without storing it.
func decide(ctx context.Context, db *postgres.DB, in Input, log *slog.Logger) (*Stored, error) {
	s := &Stored{RepositoryID: in.RepositoryID, PRNumber: in.PR, HeadSHA: in.HeadSHA, ReviewRunID: in.RunID, Mode: in.Mode,
		Status: "skipped"}
	repo, err := in.Reader.Repository(ctx)
	if err != nil {
		return nil, fmt.Errorf("acceptance check: the repository: %w", err)
	}
	if repo.Visibility == "" {
		repo.Visibility = "public"
		if repo.Private {
			repo.Visibility = "private"
		}
	}
	closing, err := in.Reader.ClosingIssueReferences(ctx, in.PR)
	if err != nil {
		return nil, fmt.Errorf("acceptance check: closing references: %w", err)
	}
	refs := make([]acceptance.ClosingReference, 0, len(closing))
	for _, n := range closing {
		refs = append(refs, acceptance.ClosingReference{RepositoryID: repo.ID, Number: n})
	}
	arepo := acceptance.Repo{ID: repo.ID, Owner: in.Owner, Name: in.Name, Host: in.Host}
	links := acceptance.Resolve(acceptance.PullRequest{Body: in.Body, HeadBranch: in.HeadRef, Closing: refs}, arepo)
	if len(links.Issues) == 0 {
		s.Reason = ReasonNoLink
		return s, nil
	}

	issues, err := loadIssues(ctx, db, in, links.Numbers(), repo)
	if err != nil {
		return nil, err
	}
	rows := make([]acceptance.IssueRow, 0, len(issues))
	for _, i := range issues {
		rows = append(rows, i.Row(repo.ID))
	}
	decisions := acceptance.Admit(repo.ID, checkstore.Visibility(repo.Visibility), links.Issues, rows)
	transferred := false
	for k, d := range decisions {
		s.Links = append(s.Links, LinkRecord{Number: d.Number, Sources: links.Issues[k].Sources, Usable: d.Usable, Refusal: d.Refusal})
		transferred = transferred || d.Refusal == acceptance.RefusedTransferred
	}
	usable := acceptance.Usable(decisions)
	if len(usable) == 0 {
		s.Reason = ReasonNotUsable
		if transferred {
			s.Reason = ReasonTransferred
		}
		return s, nil
	}
	for _, n := range usable {
		ex := acceptance.Extract(issues[n].Body, acceptance.Limits{})
		if len(ex.Criteria) > 0 {
			s.Issue, s.Criteria = n, ex
			break
		}
	}
	if s.Issue == 0 {
		s.Issue, s.Reason = usable[0], ReasonNoCriteria
		return s, nil
	}

	// The judge: one call, its own budget.
	var m llm.Model
	var budget *llm.Budget
	if in.Models != nil {
		if m, budget, err = in.Models.AcceptanceModel(ctx, string(in.Tenant)); err != nil {
			return nil, fmt.Errorf("acceptance check: the model: %w", err)
		}
	}
	if m == nil {
		s.Reason = ReasonNoModel
		s.Verdicts = acceptance.Verify(s.Criteria.Criteria, acceptance.Answer{}, acceptance.Diff{}, acceptance.VerifyOptions{})
		return s, nil
	}
	s.Model = m.Info().Model
	ans, usage, decodeErr, err := judge(ctx, m, s.Criteria.Criteria, in.DiffText())
	if budget != nil {
		s.Calls, s.CostMicros = min(budget.Calls(), 1), max(int64(budget.Spent().Cost), 0)
	}
	if err == nil {
		s.Calls, s.InputTokens, s.OutputTokens = 1, usage.Prompt(), usage.OutputTokens
	}
	switch {
	case err != nil:
		if ctx.Err() != nil {
			return nil, err
		}
		var be *llm.BudgetExceededError
		s.Status, s.Reason, s.Detail = "failed", ReasonModelError, err.Error()
		if errors.As(err, &be) {
			s.Reason = ReasonBudget
		}
		log.Warn("acceptance judge failed", slog.String("reason", s.Reason), slog.Int("pr", in.PR))
		ans = acceptance.Answer{}
	case decodeErr != nil:
		s.Status, s.Reason, s.Detail = "completed", ReasonBadAnswer, decodeErr.Error()
	default:
		s.Status = "completed"
	}
	if s.Status == "skipped" {
		s.Status = "completed"
	}
	s.Verdicts = acceptance.Verify(s.Criteria.Criteria, ans, diffOf(in.Changed), acceptance.VerifyOptions{})
	return s, nil
}

// loadIssues returns the rows of numbers, reading through the review app
// those that have no text (never read, or stale after an edit). A read
// that GitHub answers with another repository's issue (a transfer it
// redirected), or with 404, leaves a row without text that is never
// used.
func loadIssues(ctx context.Context, db *postgres.DB, in Input, numbers []int, repo github.Repository) (map[int]Issue, error) {
	var have map[int]Issue
	if err := db.InTenant(ctx, in.Tenant, func(tx pgx.Tx) error {
		var err error
		have, err = Issues(ctx, tx, in.RepositoryID, numbers)
		return err
	}); err != nil {
		return nil, err
	}
	type read struct {
		issue Issue
		event Event
		gone  bool
	}
	var reads []read
	for _, n := range numbers {
		if i, ok := have[n]; ok && (i.Read || i.Transferred || i.Deleted) {
			continue
		}
		gi, err := in.Reader.Issue(ctx, n)
		switch {
		case errors.Is(err, github.ErrNotFound):
			reads = append(reads, read{issue: Issue{Number: n, State: "closed"}, event: EventDeleted, gone: true})
		case err != nil:
			return nil, fmt.Errorf("acceptance check: issue %d: %w", n, err)
		case gi.Number != n || !sameRepository(gi.RepositoryURL, in.Owner, in.Name):
			reads = append(reads, read{issue: Issue{Number: n, State: "closed"}, event: EventTransferred, gone: true})
		default:
			reads = append(reads, read{issue: Issue{Number: n, State: gi.State, IsPullRequest: gi.IsPullRequest,
				Visibility: repo.Visibility, Title: gi.Title, Body: gi.Body}})
		}
	}
	if len(reads) == 0 {
		return have, nil
	}
	err := db.InTenant(ctx, in.Tenant, func(tx pgx.Tx) error {
		for _, r := range reads {
			var err error
			if r.gone {
				err = Observe(ctx, tx, in.RepositoryID, r.issue.Number, r.issue.State, false, r.event)
			} else {
				err = StoreRead(ctx, tx, in.RepositoryID, r.issue)
			}
			if err != nil {
				return err
			}
		}
		var err error
		have, err = Issues(ctx, tx, in.RepositoryID, numbers)
		return err
	})
	return have, err
}

// sameRepository: the API URL of an issue's repository ends in
// /repos/OWNER/NAME (GitHub compares names case-insensitively).
func sameRepository(apiURL, owner, name string) bool {
	return owner != "" && name != "" && strings.HasSuffix(strings.ToLower(apiURL), strings.ToLower("/repos/"+owner+"/"+name))
}

// diffOf is the ground evidence may stand on: the changed lines at head.
func diffOf(changed sast.ChangedLines) acceptance.Diff {
	d := acceptance.Diff{Files: make(map[string]acceptance.FileChange, len(changed))}
	for p, ranges := range changed {
		fc := acceptance.FileChange{}
		for _, r := range ranges {
			fc.Lines = append(fc.Lines, acceptance.LineRange{Start: r.Start, End: r.End})
		}
		d.Files[p] = fc
	}
	return d
}
