package fix

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// CapLimits are the daily caps of fix runs. Zero values are invalid.
type CapLimits struct {
	PerIssue      int // features.fix.maxRunsPerIssuePerDay (default 2)
	PerRepository int // features.fix.maxRunsPerDay (default 5)
	PerTenant     int // QUAVON_MAX_FIX_RUNS_PER_TENANT_PER_DAY (default 50)
}

// CapDecision is the outcome of one admission.
type CapDecision struct {
	Admitted bool
	// Counts after this attempt (it is counted whether admitted or not).
	Issue, Repository, Tenant int
	// Exceeded names the first cap over its limit: "issue", "repository",
	// "tenant"; empty when admitted.
	Exceeded string
}

// AdmitRun counts one fix-run attempt for the issue of a repository
// against the caps of its UTC day and decides, in one statement: the
// three counters are incremented together (ON CONFLICT … DO UPDATE takes
// each row's lock, always in the same order, so concurrent callers
// serialise per counter and never deadlock), and the attempt is admitted
// only if no counter exceeds its limit after it. Every attempt counts,
// ineligible and failed ones included (FX10). tx must be tenant-scoped.
func AdmitRun(ctx context.Context, tx pgx.Tx, repositoryID string, issue int, lim CapLimits, now time.Time) (CapDecision, error) {
	if lim.PerIssue < 1 || lim.PerRepository < 1 || lim.PerTenant < 1 {
		return CapDecision{}, errors.New("fix.AdmitRun: every cap must be at least 1")
	}
	if repositoryID == "" || issue < 1 {
		return CapDecision{}, errors.New("fix.AdmitRun: repository and issue are required")
	}
	day := now.UTC().Format(time.DateOnly)
	var d CapDecision
	err := tx.QueryRow(ctx, `
		WITH counted AS (
			INSERT INTO fix_run_caps AS c (tenant_id, scope, key, day, count) VALUES
				(quavon_current_tenant(), 'issue', $1 || '#' || $2, $3::date, 1),
				(quavon_current_tenant(), 'repository', $1, $3::date, 1),
				(quavon_current_tenant(), 'tenant', '', $3::date, 1)
			ON CONFLICT (tenant_id, scope, key, day) DO UPDATE SET count = c.count + 1
			RETURNING scope, count)
		SELECT
			(SELECT count FROM counted WHERE scope = 'issue'),
			(SELECT count FROM counted WHERE scope = 'repository'),
			(SELECT count FROM counted WHERE scope = 'tenant')`,
		repositoryID, fmt.Sprint(issue), day).Scan(&d.Issue, &d.Repository, &d.Tenant)
	if err != nil {
		return CapDecision{}, fmt.Errorf("fix.AdmitRun: %w", err)
	}
	switch {
	case d.Issue > lim.PerIssue:
		d.Exceeded = "issue"
	case d.Repository > lim.PerRepository:
		d.Exceeded = "repository"
	case d.Tenant > lim.PerTenant:
		d.Exceeded = "tenant"
	default:
		d.Admitted = true
	}
	return d, nil
}
