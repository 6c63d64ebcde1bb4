package fix_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/review"
	"github.com/quavon/quavon/internal/testenv"
)

// A review fix names its review run and findings: the run must be of the
// same pull request and every finding one of that run's (FX13).
func TestReviewFixFindingsOfItsRun(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	s := cp.Seed(t, "acme", "app", "private")
	ctx := context.Background()
	reviewRun := func(tx pgx.Tx, pr int, fp string) (string, string) {
		t.Helper()
		r, _, err := review.Create(ctx, tx, review.NewRun{RepositoryID: s.Repository, PRNumber: pr, HeadSHA: baseSHA,
			HeadRef: "feature", BaseRef: "main", Trigger: review.TriggerOpened, Author: "bob"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := review.Start(ctx, tx, r.ID, review.Modes{Review: "on", SAST: "on", Acceptance: "shadow"}, strings.Repeat("9", 40), ""); err != nil {
			t.Fatal(err)
		}
		if _, err := review.AddFindings(ctx, tx, r.ID, []review.Finding{{Fingerprint: strings.Repeat(fp, 32), Source: review.SourceLLM,
			Path: "a.go", StartLine: 1, EndLine: 1, Severity: "high", Title: "t", Body: "b"}}); err != nil {
			t.Fatal(err)
		}
		var fid string
		if err := tx.QueryRow(ctx, `SELECT id::text FROM review_findings WHERE review_run_id = $1`, r.ID).Scan(&fid); err != nil {
			t.Fatal(err)
		}
		return r.ID, fid
	}
	inTenant(t, cp, s, func(tx pgx.Tx) error {
		run5, own := reviewRun(tx, 5, "a")
		run6, foreign := reviewRun(tx, 6, "b")
		n := func(runID string, ids ...string) fix.NewRun {
			return fix.NewRun{RepositoryID: s.Repository, Subject: fix.SubjectPullRequest, Number: 5, ReviewRunID: runID, FindingIDs: ids,
				Delivery: fix.DeliveryStackedPR, Mode: fix.ModeApproval, Trigger: fix.TriggerDashboard, Actor: fix.Actor{Login: "ada", ID: 7}}
		}
		for name, nr := range map[string]fix.NewRun{
			"a finding of another run":        n(run5, own, foreign),
			"the review run of another pr":    n(run6, foreign),
			"a finding named twice":           n(run5, own, own),
			"not a uuid":                      n(run5, "x'; DROP TABLE fix_runs; --"),
			"an unknown review run":           n("00000000-0000-0000-0000-000000000000"),
			"a review run id that is no uuid": n("nope"),
		} {
			if _, err := fix.Create(ctx, tx, nr); !errors.Is(err, fix.ErrInvalid) {
				t.Errorf("%s: %v, want ErrInvalid", name, err)
			}
		}
		r, err := fix.Create(ctx, tx, n(run5, own))
		if err != nil {
			t.Fatalf("own finding: %v", err)
		}
		if len(r.FindingIDs) != 1 || r.FindingIDs[0] != own || r.ReviewRunID != run5 {
			t.Errorf("run %+v", r)
		}
		return nil
	})
}
