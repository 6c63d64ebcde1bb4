package publisher_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/githubfake"
	"github.com/quavon/quavon/internal/patch"
	"github.com/quavon/quavon/internal/policy"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/publish/publisher"
	"github.com/quavon/quavon/internal/review"
)

// reviewFixRun stores an approved review fix of pull request pr (what the
// worker and the dashboard would leave once review fixes are signed off):
// delivery stacked_pr with a fix_pr output, or commit with a fix_commit
// output bound to the reviewed head.
func (w *fixWorld) reviewFixRun(t *testing.T, pr int, head string, delivery fix.Delivery) (runID, outID string) {
	t.Helper()
	ctx := context.Background()
	changes := fixCalc()
	w.in(t, func(tx pgx.Tx) error {
		rr, _, err := review.Create(ctx, tx, review.NewRun{RepositoryID: w.repoID, PRNumber: pr, HeadSHA: head,
			HeadRef: "feature", BaseRef: "main", Trigger: review.TriggerOpened, Author: "alice"})
		if err != nil {
			return err
		}
		r, err := fix.Create(ctx, tx, fix.NewRun{RepositoryID: w.repoID, Subject: fix.SubjectPullRequest, Number: pr,
			ReviewRunID: rr.ID, Delivery: delivery, Mode: fix.ModeApproval, Trigger: fix.TriggerDashboard,
			Actor: fix.Actor{Login: "alice", ID: 1}})
		if err != nil {
			return err
		}
		runID = r.ID
		if _, err := fix.Start(ctx, tx, r.ID, fix.Base{SHA: head, Ref: "feature"}); err != nil {
			return err
		}
		diff, err := patch.RenderDiff(changes, patch.MapBase(map[string]patch.MapFile{"calc.go": {Content: calcGo}}))
		if err != nil {
			return err
		}
		sum, err := fix.RecordPatch(ctx, tx, r.ID, changes, diff, "Add adds.")
		if err != nil {
			return err
		}
		if _, err := fix.Transition(ctx, tx, r.ID, fix.StatusAwaitingApproval, fix.Why{}); err != nil {
			return err
		}
		out := publish.NewOutput{RepositoryID: w.repoID, Kind: publish.KindFixPR, FixRunID: r.ID,
			Payload: publish.FixPRPayload{Issue: pr, BaseRef: "feature", BaseSHA: head, Files: len(changes), Summary: "Add adds."},
			Bound:   publish.Bound{PatchSHA256: sum, BaseSHA: head}, Status: publish.OutputAwaitingApproval,
			ExpiresAt: time.Now().Add(time.Hour)}
		if delivery == fix.DeliveryCommit {
			out.Kind, out.Bound.HeadSHA = publish.KindFixCommit, head
		}
		po, err := publish.CreateOutput(ctx, tx, out)
		if err != nil {
			return err
		}
		outID = po.ID
		if _, err := publish.Decide(ctx, tx, po.ID, publish.Decision{Approve: true, UserID: w.approverID,
			ShownPayloadSHA256: po.PayloadSHA256, Shown: po.Bound, Now: time.Now()}); err != nil {
			return err
		}
		_, err = fix.Transition(ctx, tx, r.ID, fix.StatusApproved, fix.Why{})
		return err
	})
	return runID, outID
}

// TestPublishReviewFixNotSignedOff: with the gate as shipped, the
// publisher treats review fixes as off: an approved review fix, stacked
// (fix_pr) or commit (fix_commit), under a policy that asks for review
// fixes, ends failed with not_signed_off, and nothing is written to
// GitHub: no bot branch, no pull request, the head branch untouched.
func TestPublishReviewFixNotSignedOff(t *testing.T) {
	if policy.ReviewFixesSignedOff() {
		t.Fatal("this test is of the gate as shipped: policy.ReviewFixesSignedOff() must be false")
	}
	w := newFixWorld(t, true, fixerPerms)
	w.policy(t, `{"version":1,"features":{"fix":{"mode":"approval","reviewFixes":"commit"}}}`)
	head := w.repo.Commit("feature", map[string]string{"calc.go": calcGo, "feature.txt": "f\n"}, "feature")
	pr := w.repo.AddPullRequest(githubfake.PullRequestOptions{Title: "Feature", Author: "alice", Head: "feature"})
	for _, d := range []fix.Delivery{fix.DeliveryStackedPR, fix.DeliveryCommit} {
		t.Run(string(d), func(t *testing.T) {
			runID, outID := w.reviewFixRun(t, pr, head, d)
			res, err := w.publish(t, outID)
			if err != nil || res.Outcome != publisher.OutcomeFailed || res.Reason != publisher.ReasonNotSignedOff {
				t.Fatalf("publish: %+v %v; want failed %s", res, err, publisher.ReasonNotSignedOff)
			}
			if r := w.run(t, runID); r.Status != fix.StatusFailed || r.Reason != publisher.ReasonNotSignedOff {
				t.Fatalf("run %s %s", r.Status, r.Reason)
			}
			var out *publish.Output
			w.in(t, func(tx pgx.Tx) error {
				var err error
				out, err = publish.GetOutput(context.Background(), tx, outID)
				return err
			})
			if out.Status != publish.OutputFailed || out.Reason != publisher.ReasonNotSignedOff {
				t.Fatalf("output %s %s", out.Status, out.Reason)
			}
			// A second delivery of the job changes nothing.
			if res, err := w.publish(t, outID); err != nil || res.Outcome != publisher.OutcomeAlready {
				t.Fatalf("again: %+v %v", res, err)
			}
		})
	}
	if b := w.botBranches(t); len(b) != 0 {
		t.Errorf("bot branches %v", b)
	}
	if prs := w.fixPRs(t); len(prs) != 0 {
		t.Errorf("fix pull requests %v", prs)
	}
	if got := w.repo.Ref("feature"); got != head {
		t.Errorf("the head branch moved: %s, want %s", got, head)
	}
}
