package writer

import (
	"context"
	"fmt"
	"strings"

	gh "github.com/google/go-github/v75/github"

	"github.com/quavon/quavon/internal/github"
)

// MaxReconcilePages bounds the pages a reconcile read walks (100 items a
// page): a pull request with more reviews, or a commit with more check
// runs, than that is an error rather than an unbounded walk.
const MaxReconcilePages = 20

// PostedReview is a review as the reconcile read needs it.
type PostedReview struct {
	ID       int64
	Author   string
	State    string
	CommitID string
	Body     string
}

// Reviews lists pull request number's reviews, all pages (the reconcile
// read after a lost CreateReview response).
func (w *Reviewer) Reviews(ctx context.Context, number int) ([]PostedReview, error) {
	op := fmt.Sprintf("writer.Reviews %d", number)
	if number <= 0 {
		return nil, fmt.Errorf("%s: number required", op)
	}
	var out []PostedReview
	opts := &gh.ListOptions{PerPage: 100}
	for page := 1; ; page++ {
		if page > MaxReconcilePages {
			return nil, fmt.Errorf("%s: %w: more than %d pages", op, github.ErrTooLarge, MaxReconcilePages)
		}
		rs, resp, err := w.c.REST.PullRequests.ListReviews(ctx, w.c.Owner, w.c.Name, number, opts)
		if err != nil {
			return nil, github.WrapError(op, err)
		}
		for _, r := range rs {
			out = append(out, PostedReview{ID: r.GetID(), Author: r.GetUser().GetLogin(), State: r.GetState(),
				CommitID: r.GetCommitID(), Body: r.GetBody()})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// PostedCheckRun is a check run as the reconcile read needs it.
type PostedCheckRun struct {
	ID         int64
	Name       string
	ExternalID string
	AppSlug    string
	Status     string
	Conclusion string
}

// CheckRuns lists the check runs on commit headSHA, all pages (the
// reconcile read after a lost CreateCheckRun response).
func (w *Reviewer) CheckRuns(ctx context.Context, headSHA string) ([]PostedCheckRun, error) {
	op := "writer.CheckRuns " + headSHA
	if !sha1Hex.MatchString(headSHA) {
		return nil, fmt.Errorf("%s: not a SHA", op)
	}
	var out []PostedCheckRun
	opts := &gh.ListCheckRunsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	for page := 1; ; page++ {
		if page > MaxReconcilePages {
			return nil, fmt.Errorf("%s: %w: more than %d pages", op, github.ErrTooLarge, MaxReconcilePages)
		}
		res, resp, err := w.c.REST.Checks.ListCheckRunsForRef(ctx, w.c.Owner, w.c.Name, headSHA, opts)
		if err != nil {
			return nil, github.WrapError(op, err)
		}
		for _, cr := range res.CheckRuns {
			out = append(out, PostedCheckRun{ID: cr.GetID(), Name: cr.GetName(), ExternalID: cr.GetExternalID(),
				AppSlug: cr.GetApp().GetSlug(), Status: cr.GetStatus(), Conclusion: cr.GetConclusion()})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// BotLogin is the login GitHub shows for an app's bot: "<slug>[bot]".
func BotLogin(appSlug string) string { return appSlug + "[bot]" }

// SameLogin compares logins as GitHub does (case-insensitively).
func SameLogin(a, b string) bool { return strings.EqualFold(a, b) }

// Analysis is a code scanning analysis as the SARIF reconcile needs it.
type Analysis struct {
	ID        int64
	SARIFID   string
	CommitSHA string
	Ref       string
	Category  string
	Tool      string
}

// Analyses lists the code scanning analyses of ref, all pages (the
// reconcile read after a lost UploadSARIF response), with the SARIF token.
func (w *Reviewer) Analyses(ctx context.Context, ref string) ([]Analysis, error) {
	op := "writer.Analyses " + ref
	if !strings.HasPrefix(ref, "refs/") {
		return nil, fmt.Errorf("%s: full ref required", op)
	}
	c, err := w.sarifClients(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	var out []Analysis
	opts := &gh.AnalysesListOptions{Ref: gh.Ptr(ref), ListOptions: gh.ListOptions{PerPage: 100}}
	for page := 1; ; page++ {
		if page > MaxReconcilePages {
			return nil, fmt.Errorf("%s: %w: more than %d pages", op, github.ErrTooLarge, MaxReconcilePages)
		}
		as, resp, err := c.REST.CodeScanning.ListAnalysesForRepo(ctx, c.Owner, c.Name, opts)
		if err != nil {
			return nil, github.WrapError(op, err)
		}
		for _, a := range as {
			out = append(out, Analysis{ID: a.GetID(), SARIFID: a.GetSarifID(), CommitSHA: a.GetCommitSHA(), Ref: a.GetRef(),
				Category: a.GetCategory(), Tool: a.GetTool().GetName()})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.ListOptions.Page = resp.NextPage
	}
}
