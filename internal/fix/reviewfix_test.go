package fix_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/review"
	"github.com/quavon/quavon/internal/testenv"
)

// A review fix names its review run and findings: the run must be of the
// same pull request and every finding one of that run's (FX13); the
// findings a fix may be asked for are the published or pending ones that
// are not dismissed (FixableFindings, FX14).
func TestReviewFixFindingsOfItsRun(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	s := cp.Seed(t, "acme", "app", "private")
	ctx := context.Background()
	// reviewRun records a run of pr with one finding per fingerprint
	// letter and returns the run and the finding ids.
	reviewRun := func(tx pgx.Tx, pr int, fps ...string) (string, []string) {
		t.Helper()
		r, _, err := review.Create(ctx, tx, review.NewRun{RepositoryID: s.Repository, PRNumber: pr, HeadSHA: baseSHA,
			HeadRef: "feature", BaseRef: "main", Trigger: review.TriggerOpened, Author: "bob"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := review.Start(ctx, tx, r.ID, review.Modes{Review: "on", SAST: "on", Acceptance: "shadow"}, strings.Repeat("9", 40), ""); err != nil {
			t.Fatal(err)
		}
		var fs []review.Finding
		for i, fp := range fps {
			fs = append(fs, review.Finding{Fingerprint: strings.Repeat(fp, 32), Source: review.SourceLLM,
				Path: "a.go", StartLine: i + 1, EndLine: i + 1, Severity: "high", Title: "t" + fp, Body: "b"})
		}
		if _, err := review.AddFindings(ctx, tx, r.ID, fs); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, fp := range fps {
			var id string
			if err := tx.QueryRow(ctx, `SELECT id::text FROM review_findings WHERE review_run_id = $1 AND fingerprint = $2`,
				r.ID, strings.Repeat(fp, 32)).Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		return r.ID, ids
	}
	posted := func(tx pgx.Tx, ids ...string) {
		t.Helper()
		for _, id := range ids {
			if err := review.SetFindingStatus(ctx, tx, id, review.FindingPosted, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	inTenant(t, cp, s, func(tx pgx.Tx) error {
		// Run 5: a posted finding, a new one (the run's review output is
		// stored only: shadow), a resolved one and a dismissed one.
		run5, f5 := reviewRun(tx, 5, "a", "c", "d", "e")
		own, unpublished, resolved, dismissed := f5[0], f5[1], f5[2], f5[3]
		posted(tx, own, dismissed)
		if err := review.SetFindingStatus(ctx, tx, resolved, review.FindingResolved, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := review.AddFeedback(ctx, tx, review.Feedback{RepositoryID: s.Repository, PRNumber: 5, Fingerprint: strings.Repeat("e", 32),
			Action: review.ActionDismiss, Reason: "wont_fix", Source: "github", ActorLogin: "ada"}); err != nil {
			t.Fatal(err)
		}
		if _, err := publish.CreateOutput(ctx, tx, publish.NewOutput{RepositoryID: s.Repository, Kind: publish.KindReview, ReviewRunID: run5,
			Status: publish.OutputStored, Payload: map[string]any{"shadow": true}}); err != nil {
			t.Fatal(err)
		}
		run6, f6 := reviewRun(tx, 6, "b")
		foreign := f6[0]
		posted(tx, foreign)
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
		// Only the posted finding may be fixed: not the one only stored
		// (shadow), the resolved one or the dismissed one.
		_, fixable, err := fix.FixableFindings(ctx, tx, run5)
		if err != nil || len(fixable) != 1 || fixable[0].ID != own {
			t.Errorf("fixable findings of run 5: %v %+v (not wanted: %s %s %s)", err, fixable, unpublished, resolved, dismissed)
		}

		// Run 7: its review is ready for the publisher, so its new finding
		// is pending publication and may be fixed.
		run7, f7 := reviewRun(tx, 7, "f")
		if _, err := publish.CreateOutput(ctx, tx, publish.NewOutput{RepositoryID: s.Repository, Kind: publish.KindReview, ReviewRunID: run7,
			Status: publish.OutputReady, Payload: map[string]any{"ready": true}}); err != nil {
			t.Fatal(err)
		}
		_, fixable, err = fix.FixableFindings(ctx, tx, run7)
		if err != nil || len(fixable) != 1 || fixable[0].ID != f7[0] {
			t.Errorf("a finding pending publication is not fixable: %v %+v", err, fixable)
		}
		return nil
	})
}
