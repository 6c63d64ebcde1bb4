package fix

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/policy"
	"github.com/quavon/quavon/internal/review"
)

// Review fixes (spec §7b, FX13, FX14): which findings of a review run a fix
// may be asked for.

// FindingFixable reports whether a finding of a review run may be fixed:
// it was published (posted), or it is new and its run's review is on its
// way to the pull request (the review output ready for, or approved for,
// the publisher: pending publication); and its fingerprint is not
// dismissed on the pull request. Findings a shadow-mode run only stored,
// resolved findings and dismissed ones are not fixable.
func FindingFixable(f review.StoredFinding, reviewPending bool, dismissed map[string]bool) bool {
	if dismissed[f.Fingerprint] {
		return false
	}
	switch f.Status {
	case review.FindingPosted:
		return true
	case review.FindingNew:
		return reviewPending
	}
	return false
}

// FixableFindings lists the findings of review run runID that a review fix
// may be asked for (FindingFixable), most severe first, with the run. A
// review run that does not exist in the tenant is ErrNotFound.
func FixableFindings(ctx context.Context, tx pgx.Tx, runID string) (*review.Run, []review.StoredFinding, error) {
	run, err := review.Get(ctx, tx, runID)
	if err != nil {
		if err == review.ErrNotFound {
			return nil, nil, ErrNotFound
		}
		return nil, nil, fmt.Errorf("fix.FixableFindings: %w", err)
	}
	all, err := review.Findings(ctx, tx, runID)
	if err != nil {
		return nil, nil, fmt.Errorf("fix.FixableFindings: %w", err)
	}
	dismissedAt, err := review.Dismissed(ctx, tx, run.RepositoryID, run.PRNumber)
	if err != nil {
		return nil, nil, fmt.Errorf("fix.FixableFindings: %w", err)
	}
	dismissed := make(map[string]bool, len(dismissedAt))
	for fp := range dismissedAt {
		dismissed[fp] = true
	}
	var pending bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pending_outputs WHERE review_run_id = $1 AND kind = 'review'
			AND status IN ('ready', 'approved'))`, runID).Scan(&pending); err != nil {
		return nil, nil, fmt.Errorf("fix.FixableFindings: the review output: %w", err)
	}
	var out []review.StoredFinding
	for _, f := range all {
		if FindingFixable(f, pending, dismissed) {
			out = append(out, f)
		}
	}
	return run, out, nil
}

// ReviewFixesOffWhy says why review fixes are off in eff (its
// ReviewFixDelivery is off), for the dashboard and a refused run's detail.
func ReviewFixesOffWhy(eff policy.Effective) string {
	if eff.Invalid != nil {
		return "the repository's stored policy is invalid, so every feature is off"
	}
	for _, d := range eff.Downgrades {
		if d.Path != "/features/fix/reviewFixes" {
			continue
		}
		switch d.Reason {
		case policy.ReasonNotSignedOff:
			return "review fixes await their threat-analysis sign-off (REVIEW_FIX_SIGNED_OFF is false)"
		case policy.ReasonFixOff:
			return "fix.reviewFixes needs fix.mode approval or auto; fix is off for the repository"
		}
	}
	return "fix.reviewFixes is off in the repository's policy"
}
