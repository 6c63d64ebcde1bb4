package publish_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/patch"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/review"
	"github.com/quavon/quavon/internal/testenv"
)

var head = strings.Repeat("a", 40)

type world struct {
	cp *testenv.ControlPlane
	s  testenv.Seeded
}

func newWorld(t *testing.T) *world {
	cp := testenv.NewControlPlane(t, 4)
	return &world{cp: cp, s: cp.Seed(t, "acme", "app", "private")}
}

func (w *world) in(t *testing.T, fn func(tx pgx.Tx) error) {
	t.Helper()
	if err := w.cp.App.InTenant(context.Background(), w.s.Tenant, fn); err != nil {
		t.Fatal(err)
	}
}

func (w *world) reviewRun(t *testing.T, tx pgx.Tx, pr int) string {
	t.Helper()
	r, _, err := review.Create(context.Background(), tx, review.NewRun{RepositoryID: w.s.Repository, PRNumber: pr, HeadSHA: head,
		Trigger: review.TriggerOpened})
	if err != nil {
		t.Fatal(err)
	}
	return r.ID
}

// fixRun returns a running fix run with a patch, and the patch's hash.
func (w *world) fixRun(t *testing.T, tx pgx.Tx, issue int) (string, string) {
	t.Helper()
	ctx := context.Background()
	r, err := fix.Create(ctx, tx, fix.NewRun{RepositoryID: w.s.Repository, Subject: fix.SubjectIssue, Number: issue,
		Delivery: fix.DeliveryPR, Mode: fix.ModeApproval, Trigger: fix.TriggerLabel, Actor: fix.Actor{Login: "ada", ID: 7}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fix.Start(ctx, tx, r.ID, fix.Base{SHA: head, Ref: "main"}); err != nil {
		t.Fatal(err)
	}
	sum, err := fix.RecordPatch(ctx, tx, r.ID, []patch.FixFileChange{{Path: "a.go", Operation: patch.OpCreate, NewContent: "x\n",
		Mode: patch.ModeFile}}, "diff", "")
	if err != nil {
		t.Fatal(err)
	}
	return r.ID, sum
}

func TestOutputsAndDecisions(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	now := time.Now()
	w.in(t, func(tx pgx.Tx) error {
		rr := w.reviewRun(t, tx, 5)
		// The payload's hash is over its canonical form: key order does not matter.
		a, err := publish.CreateOutput(ctx, tx, publish.NewOutput{RepositoryID: w.s.Repository, Kind: publish.KindReview,
			ReviewRunID: rr, Status: publish.OutputReady, Payload: map[string]any{"b": 1, "a": "x"}})
		if err != nil {
			return err
		}
		_, sum, _ := publish.Canonical(map[string]any{"a": "x", "b": 1.0})
		if a.PayloadSHA256 != sum {
			t.Errorf("payload hash %s, want %s", a.PayloadSHA256, sum)
		}
		if _, err := publish.CreateOutput(ctx, tx, publish.NewOutput{RepositoryID: w.s.Repository, Kind: publish.KindReview,
			ReviewRunID: rr, Status: publish.OutputReady, Payload: map[string]any{}}); !errors.Is(err, publish.ErrExists) {
			t.Errorf("a second review output of the run: %v", err)
		}
		for name, n := range map[string]publish.NewOutput{
			"review output of a fix run": {Kind: publish.KindReview, FixRunID: rr},
			"fix without patch":          {Kind: publish.KindFixPR, FixRunID: rr, Bound: publish.Bound{BaseSHA: head}},
			"review awaiting approval":   {Kind: publish.KindCheckRun, ReviewRunID: rr, Status: publish.OutputAwaitingApproval, ExpiresAt: now},
			"born published":             {Kind: publish.KindSARIF, ReviewRunID: rr, Status: publish.OutputPublished},
			"not an object":              {Kind: publish.KindSARIF, ReviewRunID: rr, Status: publish.OutputReady, Payload: []int{1}},
		} {
			n.RepositoryID = w.s.Repository
			if n.Status == "" {
				n.Status = publish.OutputReady
			}
			if n.Payload == nil {
				n.Payload = map[string]any{}
			}
			if _, err := publish.CreateOutput(ctx, tx, n); !errors.Is(err, publish.ErrInvalid) {
				t.Errorf("%s: %v", name, err)
			}
		}
		fr, patchSum := w.fixRun(t, tx, 9)
		bound := publish.Bound{PatchSHA256: patchSum, BaseSHA: head}
		o, err := publish.CreateOutput(ctx, tx, publish.NewOutput{RepositoryID: w.s.Repository, Kind: publish.KindFixPR, FixRunID: fr,
			Status: publish.OutputAwaitingApproval, Payload: map[string]any{"issue": 9}, Bound: bound, ExpiresAt: now.Add(time.Hour)})
		if err != nil {
			return err
		}
		d := publish.Decision{Approve: true, UserID: w.s.User, ShownPayloadSHA256: o.PayloadSHA256, Shown: bound, Now: now}
		stale := d
		stale.Shown.PatchSHA256 = strings.Repeat("f", 64)
		if _, err := publish.Decide(ctx, tx, o.ID, stale); !errors.Is(err, publish.ErrStale) {
			t.Errorf("approving another patch than stored: %v", err)
		}
		got, err := publish.Decide(ctx, tx, o.ID, d)
		if err != nil || got.Status != publish.OutputApproved || got.DecidedBy != w.s.User {
			t.Fatalf("approve: %+v %v", got, err)
		}
		if _, err := publish.Decide(ctx, tx, o.ID, d); !errors.Is(err, publish.ErrTransition) {
			t.Errorf("deciding twice: %v", err)
		}
		// An expired one cannot be approved, and is expired by the attempt.
		fr2, sum2 := w.fixRun(t, tx, 10)
		b2 := publish.Bound{PatchSHA256: sum2, BaseSHA: head}
		late, err := publish.CreateOutput(ctx, tx, publish.NewOutput{RepositoryID: w.s.Repository, Kind: publish.KindFixPR,
			FixRunID: fr2, Status: publish.OutputAwaitingApproval, Payload: map[string]any{}, Bound: b2, ExpiresAt: now.Add(-time.Second)})
		if err != nil {
			return err
		}
		if _, err := publish.Decide(ctx, tx, late.ID, publish.Decision{Approve: true, UserID: w.s.User,
			ShownPayloadSHA256: late.PayloadSHA256, Shown: b2, Now: now}); !errors.Is(err, publish.ErrExpired) {
			t.Errorf("approving after the expiry: %v", err)
		}
		if o, _ := publish.GetOutput(ctx, tx, late.ID); o.Status != publish.OutputExpired || o.Reason != publish.ReasonApprovalExpired {
			t.Errorf("late output %+v", o)
		}
		return nil
	})
}

func TestExpireDue(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	now := time.Now()
	w.in(t, func(tx pgx.Tx) error {
		var ids []string
		for i, exp := range []time.Duration{-time.Minute, time.Minute} {
			fr, sum := w.fixRun(t, tx, 20+i)
			o, err := publish.CreateOutput(ctx, tx, publish.NewOutput{RepositoryID: w.s.Repository, Kind: publish.KindFixPR,
				FixRunID: fr, Status: publish.OutputAwaitingApproval, Payload: map[string]any{},
				Bound: publish.Bound{PatchSHA256: sum, BaseSHA: head}, ExpiresAt: now.Add(exp)})
			if err != nil {
				return err
			}
			ids = append(ids, o.ID)
		}
		got, err := publish.ExpireDue(ctx, tx, now)
		if err != nil || len(got) != 1 || got[0].ID != ids[0] {
			t.Fatalf("ExpireDue: %v %v", got, err)
		}
		return nil
	})
}

func TestIntents(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.in(t, func(tx pgx.Tx) error {
		rr := w.reviewRun(t, tx, 5)
		o, err := publish.CreateOutput(ctx, tx, publish.NewOutput{RepositoryID: w.s.Repository, Kind: publish.KindCheckRun,
			ReviewRunID: rr, Status: publish.OutputReady, Payload: map[string]any{"conclusion": "neutral"}})
		if err != nil {
			return err
		}
		in, created, err := publish.EnsureIntent(ctx, tx, o.ID)
		if err != nil || !created {
			t.Fatalf("EnsureIntent: %v %v", created, err)
		}
		if in.Key != "check:"+w.s.Repository+":"+rr || !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(in.Marker) {
			t.Errorf("intent %+v", in)
		}
		again, created, err := publish.EnsureIntent(ctx, tx, o.ID)
		if err != nil || created || again.ID != in.ID || again.Marker != in.Marker {
			t.Errorf("EnsureIntent again: %+v %v %v", again, created, err)
		}
		if b := publish.FixBranch(12, in.Marker); !regexp.MustCompile(`^quavon/fix-12-[0-9a-f]{8}$`).MatchString(b) {
			t.Errorf("branch %s", b)
		}
		c1, reconcile, err := publish.Claim(ctx, tx, in.ID)
		if err != nil || reconcile || c1.Attempts != 1 || c1.Status != publish.IntentInFlight {
			t.Fatalf("first claim: %+v %v %v", c1, reconcile, err)
		}
		if _, err := publish.Cancel(ctx, tx, in.ID, "superseded"); !errors.Is(err, publish.ErrTransition) {
			t.Errorf("cancelling an intent in flight: %v", err)
		}
		if ids, err := publish.EndOutputsOfRun(ctx, tx, rr, "superseded"); err != nil || len(ids) != 0 {
			t.Errorf("ending the outputs of a run with a write in flight: %v %v", ids, err)
		}
		token := "ghp_" + testenv.RandomString(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 36)
		if err := publish.RecordAttemptError(ctx, tx, in.ID, "lost response; Authorization: token "+token); err != nil {
			return err
		}
		c2, reconcile, err := publish.Claim(ctx, tx, in.ID)
		if err != nil || !reconcile || c2.Attempts != 2 || strings.Contains(c2.LastError, token) {
			t.Fatalf("second claim: %+v %v %v", c2, reconcile, err)
		}
		done, err := publish.Published(ctx, tx, in.ID, publish.External{ID: "4711"})
		if err != nil || done.Status != publish.IntentPublished || done.External.ID != "4711" || done.PublishedAtTime == nil {
			t.Fatalf("Published: %+v %v", done, err)
		}
		if got, _ := publish.GetOutput(ctx, tx, o.ID); got.Status != publish.OutputPublished {
			t.Errorf("output %s after publishing", got.Status)
		}
		if _, _, err := publish.Claim(ctx, tx, in.ID); !errors.Is(err, publish.ErrTerminal) {
			t.Errorf("claiming a published intent: %v", err)
		}
		// A stored (shadow) output gets no intent.
		sr := w.reviewRun(t, tx, 6)
		shadow, err := publish.CreateOutput(ctx, tx, publish.NewOutput{RepositoryID: w.s.Repository, Kind: publish.KindReview,
			ReviewRunID: sr, Status: publish.OutputStored, Payload: map[string]any{}})
		if err != nil {
			return err
		}
		if _, _, err := publish.EnsureIntent(ctx, tx, shadow.ID); !errors.Is(err, publish.ErrTransition) {
			t.Errorf("an intent for a shadow output: %v", err)
		}
		// Ending a run's outputs takes its pending intents along.
		pr7 := w.reviewRun(t, tx, 7)
		o7, _ := publish.CreateOutput(ctx, tx, publish.NewOutput{RepositoryID: w.s.Repository, Kind: publish.KindReview,
			ReviewRunID: pr7, Status: publish.OutputReady, Payload: map[string]any{}})
		i7, _, err := publish.EnsureIntent(ctx, tx, o7.ID)
		if err != nil {
			return err
		}
		if ids, err := publish.EndOutputsOfRun(ctx, tx, pr7, "superseded"); err != nil || len(ids) != 1 {
			t.Fatalf("EndOutputsOfRun: %v %v", ids, err)
		}
		if got, _ := publish.GetIntent(ctx, tx, i7.ID); got.Status != publish.IntentCancelled {
			t.Errorf("intent of an ended output: %s", got.Status)
		}
		return nil
	})
	// The database refuses to move a published intent.
	err := w.cp.App.InTenant(ctx, w.s.Tenant, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "UPDATE publish_intents SET status = 'pending', published_at = NULL WHERE status = 'published'")
		return err
	})
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23514" {
		t.Fatalf("raw update of a published intent: %v", err)
	}
}
