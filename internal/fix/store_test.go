package fix_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/patch"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/testenv"
)

const baseSHA = "0123456789abcdef0123456789abcdef01234567"

func newIssueRun(number int) fix.NewRun {
	return fix.NewRun{Subject: fix.SubjectIssue, Number: number, Delivery: fix.DeliveryPR, Mode: fix.ModeApproval,
		Trigger: fix.TriggerLabel, Label: "quavon:fix", Actor: fix.Actor{Login: "ada", ID: 7}}
}

func inTenant(t *testing.T, cp *testenv.ControlPlane, s testenv.Seeded, fn func(tx pgx.Tx) error) {
	t.Helper()
	if err := cp.App.InTenant(context.Background(), s.Tenant, fn); err != nil {
		t.Fatal(err)
	}
}

func aPatch() []patch.FixFileChange {
	return []patch.FixFileChange{{Path: "a.go", Operation: patch.OpModify, BaseBlobSHA: strings.Repeat("e", 40),
		NewContent: "package a\n", Mode: patch.ModeFile}}
}

// driveTo moves a fresh run along the shortest path of the machine to
// target.
func driveTo(ctx context.Context, tx pgx.Tx, id string, target fix.Status) error {
	why := fix.Why{Reason: "test"}
	path := map[fix.Status][]fix.Status{
		fix.StatusQueued:           {},
		fix.StatusIneligible:       {fix.StatusIneligible},
		fix.StatusRunning:          {fix.StatusRunning},
		fix.StatusFailed:           {fix.StatusFailed},
		fix.StatusAwaitingApproval: {fix.StatusRunning, fix.StatusAwaitingApproval},
		fix.StatusApproved:         {fix.StatusRunning, fix.StatusAwaitingApproval, fix.StatusApproved},
		fix.StatusRejected:         {fix.StatusRunning, fix.StatusAwaitingApproval, fix.StatusRejected},
		fix.StatusExpired:          {fix.StatusRunning, fix.StatusAwaitingApproval, fix.StatusExpired},
		fix.StatusPublishing:       {fix.StatusRunning, fix.StatusPublishing},
		fix.StatusPublished:        {fix.StatusRunning, fix.StatusPublishing, fix.StatusPublished},
	}[target]
	for _, s := range path {
		if err := move(ctx, tx, id, s, why); err != nil {
			return fmt.Errorf("driving to %s, at %s: %w", target, s, err)
		}
	}
	return nil
}

// move takes the edge to s the way callers do: Start for running, the
// patch recorded before a patch is needed.
func move(ctx context.Context, tx pgx.Tx, id string, s fix.Status, why fix.Why) error {
	if s == fix.StatusRunning {
		_, err := fix.Start(ctx, tx, id, fix.Base{SHA: baseSHA, Ref: "main"})
		return err
	}
	if s == fix.StatusAwaitingApproval || s == fix.StatusPublishing {
		if r, err := fix.Get(ctx, tx, id); err == nil && r.Status == fix.StatusRunning && r.PatchSHA256 == "" {
			if _, err := fix.RecordPatch(ctx, tx, id, aPatch(), "diff", "summary"); err != nil {
				return err
			}
		}
	}
	_, err := fix.Transition(ctx, tx, id, s, why)
	return err
}

// Every pair of states: the move succeeds exactly when the machine has the
// edge, a terminal state is never left, and the row keeps its state when a
// move is refused.
func TestTransitionsFollowTheMachine(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	s := cp.Seed(t, "acme", "app", "private")
	ctx := context.Background()
	number := 0
	for _, from := range fix.Statuses() {
		for _, to := range fix.Statuses() {
			number++
			inTenant(t, cp, s, func(tx pgx.Tx) error {
				n := newIssueRun(number)
				n.RepositoryID = s.Repository
				r, err := fix.Create(ctx, tx, n)
				if err != nil {
					return err
				}
				if err := driveTo(ctx, tx, r.ID, from); err != nil {
					return err
				}
				err = move(ctx, tx, r.ID, to, fix.Why{Reason: "test", Detail: "why"})
				allowed := fix.CanMove(from, to)
				switch {
				case allowed && err != nil:
					t.Errorf("%s → %s: refused: %v", from, to, err)
				case !allowed && err == nil:
					t.Errorf("%s → %s: allowed, but the machine has no such edge", from, to)
				case !allowed && from.Terminal() && !errors.Is(err, fix.ErrTerminal):
					t.Errorf("%s → %s: %v, want ErrTerminal", from, to, err)
				case !allowed && !from.Terminal() && !errors.Is(err, fix.ErrTransition):
					t.Errorf("%s → %s: %v, want ErrTransition", from, to, err)
				}
				got, err := fix.Get(ctx, tx, r.ID)
				if err != nil {
					return err
				}
				if want := map[bool]fix.Status{true: to, false: from}[allowed]; got.Status != want {
					t.Errorf("%s → %s: the run is %s, want %s", from, to, got.Status, want)
				}
				if got.Status.Terminal() != (got.FinishedAt != nil) {
					t.Errorf("%s: finished_at %v", got.Status, got.FinishedAt)
				}
				return nil
			})
		}
	}
}

func TestTheMachine(t *testing.T) {
	t.Parallel()
	var terminal []fix.Status
	for _, s := range fix.Statuses() {
		if s.Terminal() {
			terminal = append(terminal, s)
		}
	}
	want := []fix.Status{fix.StatusIneligible, fix.StatusFailed, fix.StatusRejected, fix.StatusExpired, fix.StatusPublished}
	if !slices.Equal(terminal, want) {
		t.Fatalf("terminal states %v, want %v", terminal, want)
	}
	// Every state is reachable from queued.
	seen := map[fix.Status]bool{fix.StatusQueued: true}
	for changed := true; changed; {
		changed = false
		for _, from := range fix.Statuses() {
			for _, to := range fix.Statuses() {
				if seen[from] && fix.CanMove(from, to) && !seen[to] {
					seen[to], changed = true, true
				}
			}
		}
	}
	if len(seen) != len(fix.Statuses()) {
		t.Fatalf("reachable from queued: %v", seen)
	}
	if !fix.CanMove(fix.StatusRunning, fix.StatusPublishing) || fix.CanMove(fix.StatusQueued, fix.StatusPublishing) {
		t.Fatal("auto goes running → publishing, never from queued")
	}
}

func TestTerminalNeedsAReason(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	s := cp.Seed(t, "acme", "app", "private")
	ctx := context.Background()
	inTenant(t, cp, s, func(tx pgx.Tx) error {
		n := newIssueRun(1)
		n.RepositoryID = s.Repository
		r, err := fix.Create(ctx, tx, n)
		if err != nil {
			return err
		}
		for _, why := range []fix.Why{{}, {Reason: "Not A Code"}, {Reason: "x; drop table"}} {
			if _, err := fix.Transition(ctx, tx, r.ID, fix.StatusIneligible, why); !errors.Is(err, fix.ErrInvalid) {
				t.Errorf("ineligible with %+v: %v", why, err)
			}
		}
		secretish := "ghp_" + testenv.RandomString(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 36)
		got, err := fix.Transition(ctx, tx, r.ID, fix.StatusIneligible, fix.Why{Reason: "cap_issue", Detail: "token " + secretish + " " + strings.Repeat("x", 5000)})
		if err != nil {
			return err
		}
		if got.Reason != "cap_issue" || strings.Contains(got.Detail, secretish) || len(got.Detail) > 2048 {
			t.Errorf("reason %q, detail of %d bytes: %.80q", got.Reason, len(got.Detail), got.Detail)
		}
		return nil
	})
}

// The database refuses to move a terminal run too, whoever asks.
func TestTerminalGuardInTheDatabase(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	s := cp.Seed(t, "acme", "app", "private")
	ctx := context.Background()
	var id string
	inTenant(t, cp, s, func(tx pgx.Tx) error {
		n := newIssueRun(1)
		n.RepositoryID = s.Repository
		r, err := fix.Create(ctx, tx, n)
		if err != nil {
			return err
		}
		id = r.ID
		_, err = fix.Transition(ctx, tx, id, fix.StatusIneligible, fix.Why{Reason: "cap_tenant"})
		return err
	})
	err := cp.App.InTenant(ctx, s.Tenant, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "UPDATE fix_runs SET status = 'queued', finished_at = NULL WHERE id = $1", id)
		return err
	})
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23514" || !strings.Contains(pe.Message, "terminal") {
		t.Fatalf("raw update of a terminal run: %v", err)
	}
}

// At most one running run per issue: the unique index decides, also under
// concurrency, and the refused Start leaves the transaction usable.
func TestOneRunningPerIssue(t *testing.T) {
	cp := testenv.NewControlPlane(t, 12)
	s := cp.Seed(t, "acme", "app", "private")
	ctx := context.Background()
	var ids []string
	inTenant(t, cp, s, func(tx pgx.Tx) error {
		for range 10 {
			n := newIssueRun(42)
			n.RepositoryID = s.Repository
			r, err := fix.Create(ctx, tx, n)
			if err != nil {
				return err
			}
			ids = append(ids, r.ID)
		}
		other := newIssueRun(43)
		other.RepositoryID = s.Repository
		r, err := fix.Create(ctx, tx, other)
		if err != nil {
			return err
		}
		ids = append(ids, r.ID)
		return nil
	})
	var mu sync.Mutex
	var started, refused int
	var wg sync.WaitGroup
	for _, id := range ids[:10] {
		wg.Go(func() {
			err := cp.App.InTenant(ctx, s.Tenant, func(tx pgx.Tx) error {
				_, err := fix.Start(ctx, tx, id, fix.Base{SHA: baseSHA, Ref: "main"})
				if errors.Is(err, fix.ErrAlreadyRunning) {
					mu.Lock()
					refused++
					mu.Unlock()
					// The transaction is still usable: record why.
					_, err = fix.Transition(ctx, tx, id, fix.StatusIneligible, fix.Why{Reason: fix.ReasonAlreadyRunning})
					return err
				}
				if err == nil {
					mu.Lock()
					started++
					mu.Unlock()
				}
				return err
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if started != 1 || refused != 9 {
		t.Fatalf("%d started, %d refused; want 1 and 9", started, refused)
	}
	// Another issue is not affected.
	inTenant(t, cp, s, func(tx pgx.Tx) error {
		_, err := fix.Start(ctx, tx, ids[10], fix.Base{SHA: baseSHA, Ref: "main"})
		return err
	})
}

func TestRecordPatch(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	s := cp.Seed(t, "acme", "app", "private")
	ctx := context.Background()
	inTenant(t, cp, s, func(tx pgx.Tx) error {
		n := newIssueRun(1)
		n.RepositoryID = s.Repository
		r, err := fix.Create(ctx, tx, n)
		if err != nil {
			return err
		}
		if _, err := fix.RecordPatch(ctx, tx, r.ID, aPatch(), "d", "s"); !errors.Is(err, fix.ErrTransition) {
			t.Errorf("a patch on a queued run: %v", err)
		}
		if _, err := fix.Start(ctx, tx, r.ID, fix.Base{SHA: baseSHA, Ref: "main"}); err != nil {
			return err
		}
		// No patch, no approval.
		if _, err := fix.Transition(ctx, tx, r.ID, fix.StatusAwaitingApproval, fix.Why{}); !errors.Is(err, fix.ErrInvalid) {
			t.Errorf("awaiting approval without a patch: %v", err)
		}
		return nil
	})
	inTenant(t, cp, s, func(tx pgx.Tx) error {
		n := newIssueRun(2)
		n.RepositoryID = s.Repository
		r, err := fix.Create(ctx, tx, n)
		if err != nil {
			return err
		}
		if _, err := fix.Start(ctx, tx, r.ID, fix.Base{SHA: baseSHA, Ref: "main"}); err != nil {
			return err
		}
		sum, err := fix.RecordPatch(ctx, tx, r.ID, aPatch(), "--- a/a.go\n", "fixed it")
		if err != nil {
			return err
		}
		if sum != patch.PatchSHA256(aPatch()) {
			t.Errorf("hash %s, want PatchSHA256 of the changes", sum)
		}
		if _, err := fix.RecordPatch(ctx, tx, r.ID, aPatch(), "x", "again"); !errors.Is(err, fix.ErrInvalid) {
			t.Errorf("second patch: %v", err)
		}
		changes, diff, got, err := fix.Patch(ctx, tx, r.ID)
		if err != nil {
			return err
		}
		if got != sum || diff != "--- a/a.go\n" || len(changes) != 1 || changes[0].NewContent != "package a\n" {
			t.Errorf("Patch: %v %q %s", changes, diff, got)
		}
		run, err := fix.Transition(ctx, tx, r.ID, fix.StatusAwaitingApproval, fix.Why{})
		if err != nil {
			return err
		}
		if run.PatchSHA256 != sum || run.Summary != "fixed it" {
			t.Errorf("run %+v", run)
		}
		return nil
	})
}

func TestCreateRefuses(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	s := cp.Seed(t, "acme", "app", "private")
	ctx := context.Background()
	inTenant(t, cp, s, func(tx pgx.Tx) error {
		for name, edit := range map[string]func(*fix.NewRun){
			"no number":            func(n *fix.NewRun) { n.Number = 0 },
			"no actor":             func(n *fix.NewRun) { n.Actor = fix.Actor{} },
			"issue as stacked pr":  func(n *fix.NewRun) { n.Delivery = fix.DeliveryStackedPR },
			"review fix, no run":   func(n *fix.NewRun) { n.Subject, n.Delivery = fix.SubjectPullRequest, fix.DeliveryCommit },
			"unknown mode":         func(n *fix.NewRun) { n.Mode = "yolo" },
			"issue with findings":  func(n *fix.NewRun) { n.FindingIDs = []string{"x"} },
			"twenty-one findings":  func(n *fix.NewRun) { n.FindingIDs = make([]string, 21) },
			"unknown trigger kind": func(n *fix.NewRun) { n.Trigger = "psychic" },
		} {
			n := newIssueRun(1)
			n.RepositoryID = s.Repository
			edit(&n)
			if _, err := fix.Create(ctx, tx, n); !errors.Is(err, fix.ErrInvalid) {
				t.Errorf("%s: %v", name, err)
			}
		}
		return nil
	})
}

func TestSteps(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	s := cp.Seed(t, "acme", "app", "private")
	ctx := context.Background()
	inTenant(t, cp, s, func(tx pgx.Tx) error {
		n := newIssueRun(1)
		n.RepositoryID = s.Repository
		r, err := fix.Create(ctx, tx, n)
		if err != nil {
			return err
		}
		if _, err := fix.AddStep(ctx, tx, r.ID, fix.Step{Tool: fix.ToolReadFile, Outcome: fix.OutcomeOK}); !errors.Is(err, fix.ErrTransition) {
			t.Errorf("a step of a queued run: %v", err)
		}
		if _, err := fix.Start(ctx, tx, r.ID, fix.Base{SHA: baseSHA, Ref: "main"}); err != nil {
			return err
		}
		args := []byte(`{"path":"secret.txt","content":"the file's whole content"}`)
		n1, err := fix.AddStep(ctx, tx, r.ID, fix.Step{Tool: fix.ToolCreateFile, Arguments: args, Outcome: fix.OutcomeRefused, Detail: "off-limits"})
		if err != nil {
			return err
		}
		if _, err := fix.AddStep(ctx, tx, r.ID, fix.Step{Tool: "rm_rf", Outcome: fix.OutcomeRefused}); !errors.Is(err, fix.ErrInvalid) {
			t.Errorf("an unlisted tool name: %v", err)
		}
		n2, err := fix.AddStep(ctx, tx, r.ID, fix.Step{Tool: fix.ToolUnknown, Arguments: []byte(`{}`), Outcome: fix.OutcomeRefused})
		if err != nil {
			return err
		}
		steps, err := fix.Steps(ctx, tx, r.ID)
		if err != nil {
			return err
		}
		if n1 != 1 || n2 != 2 || len(steps) != 2 || steps[0].Tool != fix.ToolCreateFile || len(steps[0].ArgumentsSHA256) != 64 {
			t.Fatalf("steps %d %d %+v", n1, n2, steps)
		}
		var stored string
		if err := tx.QueryRow(ctx, "SELECT row_to_json(s)::text FROM fix_run_steps s WHERE step = 1").Scan(&stored); err != nil {
			return err
		}
		if strings.Contains(stored, "whole content") {
			t.Errorf("a step stored its arguments: %s", stored)
		}
		// The cap on logged steps.
		if _, err := tx.Exec(ctx, "UPDATE fix_runs SET steps = $2 WHERE id = $1", r.ID, fix.MaxStepRows); err != nil {
			return err
		}
		if _, err := fix.AddStep(ctx, tx, r.ID, fix.Step{Tool: fix.ToolSearch, Outcome: fix.OutcomeOK}); !errors.Is(err, fix.ErrInvalid) {
			t.Errorf("a step past the cap: %v", err)
		}
		return nil
	})
}

// Test output is stored redacted and capped, whatever the caller passes.
func TestTestResultsAreRedactedAndCapped(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	s := cp.Seed(t, "acme", "app", "private")
	ctx := context.Background()
	token := "ghp_" + testenv.RandomString(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 36)
	inTenant(t, cp, s, func(tx pgx.Tx) error {
		n := newIssueRun(1)
		n.RepositoryID = s.Repository
		r, err := fix.Create(ctx, tx, n)
		if err != nil {
			return err
		}
		if _, err := fix.Start(ctx, tx, r.ID, fix.Base{SHA: baseSHA, Ref: "main"}); err != nil {
			return err
		}
		var tr fix.TestResult
		tr.Status, tr.ExitCode = "completed", 1
		tr.SetTails(strings.Repeat("ok line\n", 5000)+"FAIL: leaked "+token+"\n", "stderr "+token, false)
		if err := fix.SetTestResult(ctx, tx, r.ID, fix.KindTest, tr); err != nil {
			return err
		}
		var lint fix.TestResult
		lint.SetTails(strings.Repeat("w", 100_000), strings.Repeat("e\n", 100_000), true)
		if err := fix.SetTestResult(ctx, tx, r.ID, fix.KindLint, lint); err != nil {
			return err
		}
		// A caller that skips SetTails is refused by the cap.
		raw := fix.TestResult{StdoutTail: strings.Repeat("x", 5000)}
		if err := fix.SetTestResult(ctx, tx, r.ID, fix.KindTest, raw); !errors.Is(err, fix.ErrInvalid) {
			t.Errorf("oversized tails: %v", err)
		}
		got, err := fix.Get(ctx, tx, r.ID)
		if err != nil {
			return err
		}
		res := got.TestResults
		if res.Test == nil || res.Lint == nil {
			t.Fatalf("results %+v", res)
		}
		total := 0
		for _, tail := range []string{res.Test.StdoutTail, res.Test.StderrTail, res.Lint.StdoutTail, res.Lint.StderrTail} {
			total += len(tail)
			if strings.Contains(tail, token) || strings.Contains(tail, token[10:]) {
				t.Errorf("a tail holds the token: %.200q", tail)
			}
		}
		if total > fix.MaxTailBytes {
			t.Errorf("tails of %d bytes, cap %d", total, fix.MaxTailBytes)
		}
		if !strings.Contains(res.Test.StdoutTail, "FAIL: leaked [REDACTED:github-token]") || res.Test.Redacted != 2 || !res.Test.Truncated {
			t.Errorf("test result %+v", res.Test)
		}
		if !res.Lint.Truncated || res.Lint.StdoutTail != "[…]\n" {
			t.Errorf("a tail without line breaks or spaces must be dropped: %.100q", res.Lint.StdoutTail)
		}
		return nil
	})
	// The database holds the cap too.
	err := cp.App.InTenant(ctx, s.Tenant, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE fix_runs SET test_results = jsonb_build_object('test', jsonb_build_object('stdoutTail', repeat('x', 9000)))`)
		return err
	})
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23514" {
		t.Fatalf("9000 bytes of tail in the database: %v", err)
	}
}

// The tail starts at a line boundary after redaction, so a secret cut by
// the window leaves no fragment.
func TestTailNeverStartsMidSecret(t *testing.T) {
	t.Parallel()
	token := "ghp_" + testenv.RandomString(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 36)
	for cut := 1; cut < len(token)+10; cut++ {
		// The window (4 KiB for stdout alone) starts cut bytes before the token's end.
		tailLen := 4096 - len("[…]\n")
		out := strings.Repeat("a", 5000) + "\n" + token + "\n" + strings.Repeat("b", tailLen-cut-1)
		var r fix.TestResult
		r.SetTails(out, "", false)
		if strings.Contains(r.StdoutTail, token[len(token)-min(cut, len(token)):]) && cut > 4 {
			t.Fatalf("cut %d: the tail holds the end of the token: %.60q", cut, r.StdoutTail)
		}
	}
	var r fix.TestResult
	r.SetTails("short\n"+token, "", false)
	if r.Truncated || r.StdoutTail != "short\n[REDACTED:github-token]" {
		t.Fatalf("short output %+v", r)
	}
}

var _ = postgres.TenantID("")
