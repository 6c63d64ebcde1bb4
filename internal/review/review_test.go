package review_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/quavon/quavon/internal/review"
	"github.com/quavon/quavon/internal/testenv"
)

var (
	headA = strings.Repeat("a", 40)
	headB = strings.Repeat("b", 40)
)

func inTenant(t *testing.T, cp *testenv.ControlPlane, s testenv.Seeded, fn func(tx pgx.Tx) error) {
	t.Helper()
	if err := cp.App.InTenant(context.Background(), s.Tenant, fn); err != nil {
		t.Fatal(err)
	}
}

func newRun(s testenv.Seeded, pr int, head string, trigger review.Trigger) review.NewRun {
	return review.NewRun{RepositoryID: s.Repository, PRNumber: pr, HeadSHA: head, HeadRef: "feature", BaseRef: "main",
		HeadRepoExternalID: 99, Author: "ada", Trigger: trigger, Actor: review.Actor{Login: "ada", ID: 7}}
}

var modes = review.Modes{Review: "on", SAST: "shadow", Acceptance: "shadow"}

// One run per head for automatic triggers, whatever arrives how often; a
// command and NewAttempt make further attempts of the same head.
func TestOneRunPerHead(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	s := cp.Seed(t, "acme", "app", "private")
	ctx := context.Background()
	inTenant(t, cp, s, func(tx pgx.Tx) error {
		first, created, err := review.Create(ctx, tx, newRun(s, 5, headA, review.TriggerOpened))
		if err != nil || !created || first.Attempt != 1 || first.Status != review.StatusQueued {
			t.Fatalf("first: %+v %v %v", first, created, err)
		}
		for _, trig := range []review.Trigger{review.TriggerOpened, review.TriggerReadyForReview, review.TriggerReopened, review.TriggerSynchronize} {
			again, created, err := review.Create(ctx, tx, newRun(s, 5, headA, trig))
			if err != nil || created || again.ID != first.ID {
				t.Errorf("%s on the same head: %v %v %v", trig, again.ID, created, err)
			}
		}
		cmd, created, err := review.Create(ctx, tx, newRun(s, 5, headA, review.TriggerCommand))
		if err != nil || !created || cmd.Attempt != 2 || cmd.ID == first.ID {
			t.Errorf("command: %+v %v %v", cmd, created, err)
		}
		third, err := review.NewAttempt(ctx, tx, newRun(s, 5, headA, review.TriggerSynchronize))
		if err != nil || third.Attempt != 3 {
			t.Errorf("new attempt: %+v %v", third, err)
		}
		other, created, err := review.Create(ctx, tx, newRun(s, 5, headB, review.TriggerSynchronize))
		if err != nil || !created || other.Attempt != 1 {
			t.Errorf("another head: %+v %v %v", other, created, err)
		}
		runs, err := review.ForPR(ctx, tx, s.Repository, 5)
		if err != nil || len(runs) != 4 {
			t.Errorf("ForPR: %d %v", len(runs), err)
		}
		for name, n := range map[string]review.NewRun{
			"short sha":   newRun(s, 5, "abc", review.TriggerOpened),
			"no pr":       newRun(s, 0, headA, review.TriggerOpened),
			"bad trigger": newRun(s, 5, headA, "push"),
		} {
			if _, _, err := review.Create(ctx, tx, n); !errors.Is(err, review.ErrInvalid) {
				t.Errorf("%s: %v", name, err)
			}
		}
		return nil
	})
}

func driveTo(ctx context.Context, tx pgx.Tx, id string, target review.Status) error {
	var err error
	switch target {
	case review.StatusQueued:
	case review.StatusRunning:
		_, err = review.Start(ctx, tx, id, modes, headB, "")
	case review.StatusCompleted:
		if _, err = review.Start(ctx, tx, id, modes, headB, ""); err == nil {
			_, err = review.Complete(ctx, tx, id, review.Result{})
		}
	default:
		_, err = review.Transition(ctx, tx, id, target, review.Why{Reason: "test"})
	}
	return err
}

// moveTo takes one edge the way callers do.
func moveTo(ctx context.Context, tx pgx.Tx, id string, to review.Status) error {
	var err error
	switch to {
	case review.StatusRunning:
		_, err = review.Start(ctx, tx, id, modes, headB, "")
	case review.StatusCompleted:
		_, err = review.Complete(ctx, tx, id, review.Result{})
	default:
		_, err = review.Transition(ctx, tx, id, to, review.Why{Reason: "test"})
	}
	return err
}

func TestTransitionsFollowTheMachine(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	s := cp.Seed(t, "acme", "app", "private")
	ctx := context.Background()
	pr := 0
	for _, from := range review.Statuses() {
		for _, to := range review.Statuses() {
			pr++
			inTenant(t, cp, s, func(tx pgx.Tx) error {
				r, _, err := review.Create(ctx, tx, newRun(s, pr, headA, review.TriggerOpened))
				if err != nil {
					return err
				}
				if err := driveTo(ctx, tx, r.ID, from); err != nil {
					return err
				}
				err = moveTo(ctx, tx, r.ID, to)
				allowed := review.CanMove(from, to)
				switch {
				case allowed && err != nil:
					t.Errorf("%s → %s refused: %v", from, to, err)
				case !allowed && err == nil:
					t.Errorf("%s → %s allowed", from, to)
				case !allowed && from.Terminal() && !errors.Is(err, review.ErrTerminal):
					t.Errorf("%s → %s: %v, want ErrTerminal", from, to, err)
				}
				got, err := review.Get(ctx, tx, r.ID)
				if err != nil {
					return err
				}
				if got.Status.Terminal() != (got.FinishedAt != nil) {
					t.Errorf("%s with finished_at %v", got.Status, got.FinishedAt)
				}
				return nil
			})
		}
	}
	// The database's own guard.
	var id string
	inTenant(t, cp, s, func(tx pgx.Tx) error {
		r, _, err := review.Create(ctx, tx, newRun(s, 999, headA, review.TriggerOpened))
		if err != nil {
			return err
		}
		id = r.ID
		_, err = review.Transition(ctx, tx, id, review.StatusCancelled, review.Why{Reason: review.ReasonSuperseded})
		return err
	})
	err := cp.App.InTenant(ctx, s.Tenant, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "UPDATE review_runs SET status = 'running', finished_at = NULL WHERE id = $1", id)
		return err
	})
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23514" {
		t.Fatalf("raw update of a cancelled run: %v", err)
	}
}

func TestCancel(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	s := cp.Seed(t, "acme", "app", "private")
	ctx := context.Background()
	inTenant(t, cp, s, func(tx pgx.Tx) error {
		a, _, _ := review.Create(ctx, tx, newRun(s, 5, headA, review.TriggerOpened))
		if _, err := review.Start(ctx, tx, a.ID, modes, "", ""); err != nil {
			return err
		}
		b, _, _ := review.Create(ctx, tx, newRun(s, 5, headB, review.TriggerSynchronize))
		done, _, _ := review.Create(ctx, tx, newRun(s, 5, strings.Repeat("c", 40), review.TriggerSynchronize))
		if err := driveTo(ctx, tx, done.ID, review.StatusCompleted); err != nil {
			return err
		}
		otherPR, _, _ := review.Create(ctx, tx, newRun(s, 6, headA, review.TriggerOpened))
		ids, err := review.CancelHead(ctx, tx, s.Repository, 5, headA, review.ReasonSuperseded, b.ID)
		if err != nil || len(ids) != 1 || ids[0] != a.ID {
			t.Fatalf("CancelHead: %v %v", ids, err)
		}
		got, _ := review.Get(ctx, tx, a.ID)
		if got.Status != review.StatusCancelled || got.Reason != review.ReasonSuperseded || got.SupersededBy != b.ID {
			t.Errorf("superseded run %+v", got)
		}
		ids, err = review.CancelActive(ctx, tx, s.Repository, 5, "", review.ReasonPRClosed, "")
		if err != nil || len(ids) != 1 || ids[0] != b.ID {
			t.Fatalf("CancelActive: %v %v", ids, err)
		}
		for id, want := range map[string]review.Status{done.ID: review.StatusCompleted, otherPR.ID: review.StatusQueued} {
			if got, _ := review.Get(ctx, tx, id); got.Status != want {
				t.Errorf("%s is %s, want %s", id, got.Status, want)
			}
		}
		return nil
	})
}

func finding(fp string) review.Finding {
	return review.Finding{Fingerprint: fp, Source: review.SourceLLM, Path: "a.go", StartLine: 3, EndLine: 4,
		Severity: "high", Category: "injection", Title: "SQL built from input", Body: "body"}
}

func TestFindingsAndFeedback(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	s := cp.Seed(t, "acme", "app", "private")
	ctx := context.Background()
	token := "ghp_" + testenv.RandomString(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 36)
	fpA, fpB, fpC := strings.Repeat("1", 32), strings.Repeat("2", 32), strings.Repeat("3", 32)
	inTenant(t, cp, s, func(tx pgx.Tx) error {
		r1, _, _ := review.Create(ctx, tx, newRun(s, 5, headA, review.TriggerOpened))
		if _, err := review.AddFindings(ctx, tx, r1.ID, []review.Finding{finding(fpA)}); !errors.Is(err, review.ErrTransition) {
			t.Errorf("findings of a queued run: %v", err)
		}
		if _, err := review.Start(ctx, tx, r1.ID, modes, headB, ""); err != nil {
			return err
		}
		leaky := finding(fpB)
		leaky.Quote = `token := "` + token + `"`
		leaky.Body = strings.Repeat("é", 10_000)
		leaky.Source, leaky.Tools, leaky.RuleIDs = review.SourceSAST, []string{"gitleaks", "ast-grep"}, []string{"generic-api-key", "go-hardcoded"}
		n, err := review.AddFindings(ctx, tx, r1.ID, []review.Finding{finding(fpA), leaky, finding(fpA)})
		if err != nil || n != 2 {
			t.Fatalf("AddFindings: %d %v", n, err)
		}
		bad := finding(fpC)
		bad.Severity = "apocalyptic"
		if _, err := review.AddFindings(ctx, tx, r1.ID, []review.Finding{bad}); !errors.Is(err, review.ErrInvalid) {
			t.Errorf("bad severity: %v", err)
		}
		fs, err := review.Findings(ctx, tx, r1.ID)
		if err != nil || len(fs) != 2 {
			t.Fatalf("Findings: %v %v", fs, err)
		}
		for _, f := range fs {
			if strings.Contains(f.Quote, token) || len(f.Body) > review.MaxBodyBytes || !strings.HasSuffix(f.Body, "é") && f.Body != "body" {
				t.Errorf("stored finding not redacted or capped: quote %q, body of %d bytes", f.Quote, len(f.Body))
			}
			if err := review.SetFindingStatus(ctx, tx, f.ID, review.FindingPosted, 4242); err != nil {
				return err
			}
		}
		if _, err := review.Complete(ctx, tx, r1.ID, review.Result{Summary: "two findings", DroppedUnverified: 1,
			SkippedFiles: []review.SkippedFile{{Path: "package-lock.json", Reason: "lockfile"}}}); err != nil {
			return err
		}
		got, _ := review.Get(ctx, tx, r1.ID)
		if got.FindingsCount != 2 || got.DroppedUnverified != 1 || len(got.SkippedFiles) != 1 || got.SkippedFilesCount != 1 {
			t.Errorf("completed run %+v", got)
		}
		// The next run of the PR sees what was shown, and a dismissal overrides.
		if _, err := review.AddFeedback(ctx, tx, review.Feedback{RepositoryID: s.Repository, PRNumber: 5, Fingerprint: fpB,
			Action: review.ActionDismiss, Reason: "false_positive", Source: "dashboard", UserID: s.User}); err != nil {
			return err
		}
		r2, _, _ := review.Create(ctx, tx, newRun(s, 5, headB, review.TriggerSynchronize))
		shown, err := review.Shown(ctx, tx, s.Repository, 5, r2.ID)
		if err != nil {
			return err
		}
		if len(shown) != 2 || shown[fpA] != review.FindingPosted || shown[fpB] != review.FindingDismissed {
			t.Errorf("Shown: %v", shown)
		}
		// Undismissed again: back to what it was.
		if _, err := review.AddFeedback(ctx, tx, review.Feedback{RepositoryID: s.Repository, PRNumber: 5, Fingerprint: fpB,
			Action: review.ActionUndismiss, Source: "github", ActorLogin: "ada"}); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "UPDATE finding_feedback SET created_at = created_at - interval '1 minute' WHERE action = 'dismiss'"); err != nil {
			return err
		}
		if d, _ := review.Dismissed(ctx, tx, s.Repository, 5); len(d) != 0 {
			t.Errorf("still dismissed after undismiss: %v", d)
		}
		if _, err := review.AddFeedback(ctx, tx, review.Feedback{RepositoryID: s.Repository, PRNumber: 5, Fingerprint: fpB,
			Action: review.ActionHelpful, Reason: "wont_fix", Source: "api", UserID: s.User}); !errors.Is(err, review.ErrInvalid) {
			t.Errorf("a reason on helpful: %v", err)
		}
		return nil
	})
}
