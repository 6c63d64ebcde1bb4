package fix_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/testenv"
)

// fakeLive answers the live checks and counts them.
type fakeLive struct {
	perms  map[string]string
	issues map[int]github.Issue
	calls  atomic.Int64
}

var _ fix.Live = (*fakeLive)(nil)

func (f *fakeLive) CollaboratorPermission(_ context.Context, login string) (string, error) {
	f.calls.Add(1)
	p, ok := f.perms[login]
	if !ok {
		return "", fmt.Errorf("test: %w", github.ErrNotCollaborator)
	}
	return p, nil
}

func (f *fakeLive) Issue(_ context.Context, n int) (github.Issue, error) {
	f.calls.Add(1)
	is, ok := f.issues[n]
	if !ok {
		return github.Issue{}, fmt.Errorf("test: %w", github.ErrNotFound)
	}
	return is, nil
}

func newLive() *fakeLive {
	return &fakeLive{
		perms: map[string]string{"wanda": "write", "adam": "admin", "rita": "read", "tom": "triage", "nora": "none"},
		issues: map[int]github.Issue{
			1: {Number: 1, State: "open"}, 2: {Number: 2, State: "closed"}, 3: {Number: 3, State: "open", IsPullRequest: true},
			4: {Number: 4, State: "open"}, 5: {Number: 5, State: "open"}, 6: {Number: 6, State: "open"}, 7: {Number: 7, State: "open"},
		},
	}
}

var wideCaps = fix.CapLimits{PerIssue: 100, PerRepository: 100, PerTenant: 100}

func TestAdmitMatrix(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	s := cp.Seed(t, "acme", "app", "private")
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	pol := fix.TriggerPolicy{Mode: fix.ModeApproval, TriggerLabels: []string{"quavon:fix"}, Caps: wideCaps}
	label := func(login, typ string, n int, l string) fix.TriggerEvent {
		return fix.TriggerEvent{RepositoryID: s.Repository, Number: n, Trigger: fix.TriggerLabel, Label: l,
			Actor: fix.Actor{Login: login, ID: int64(len(login))}, ActorType: typ}
	}
	comment := func(login string, n int, onPR bool) fix.TriggerEvent {
		return fix.TriggerEvent{RepositoryID: s.Repository, Number: n, Trigger: fix.TriggerComment, CommentID: 99,
			Actor: fix.Actor{Login: login, ID: 5}, ActorType: "User", OnPullRequest: onPR}
	}
	off := pol
	off.Mode = ""
	for _, tc := range []struct {
		name      string
		ev        fix.TriggerEvent
		pol       fix.TriggerPolicy
		ignored   bool
		reason    string // "" = admitted (queued)
		liveCalls int64
	}{
		{"write user label", label("wanda", "User", 1, "quavon:fix"), pol, false, "", 2},
		{"admin label any case", label("adam", "User", 4, "Quavon:Fix"), pol, false, "", 2},
		{"write user comment", comment("wanda", 5, false), pol, false, "", 2},
		{"fix off", label("wanda", "User", 6, "quavon:fix"), off, true, "", 0},
		{"other label", label("wanda", "User", 6, "bug"), pol, true, "", 0},
		{"read user", label("rita", "User", 6, "quavon:fix"), pol, false, fix.ReasonActorNoWrite, 1},
		{"triage user (template label at creation)", label("tom", "User", 6, "quavon:fix"), pol, false, fix.ReasonActorNoWrite, 1},
		{"no permission", label("nora", "User", 6, "quavon:fix"), pol, false, fix.ReasonActorNoWrite, 1},
		{"outsider (issue author)", label("eve", "User", 6, "quavon:fix"), pol, false, fix.ReasonActorNoWrite, 1},
		{"bot", label("dependabot[bot]", "Bot", 6, "quavon:fix"), pol, false, fix.ReasonActorNotUser, 0},
		{"the Fixer app itself", label("quavon-fixer[bot]", "Bot", 6, "quavon:fix"), pol, false, fix.ReasonActorNotUser, 0},
		{"comment on a pull request", comment("wanda", 3, true), pol, false, fix.ReasonNotAnIssue, 0},
		{"pull request seen live", comment("wanda", 3, false), pol, false, fix.ReasonNotAnIssue, 2},
		{"closed issue", label("wanda", "User", 2, "quavon:fix"), pol, false, fix.ReasonIssueNotOpen, 2},
		{"deleted issue", label("wanda", "User", 40, "quavon:fix"), pol, false, fix.ReasonIssueNotFound, 2},
		{"second trigger on issue 1 (Start decides)", comment("adam", 1, false), pol, false, "", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := newLive()
			var a fix.Admission
			inTenant(t, cp, s, func(tx pgx.Tx) error {
				var err error
				a, err = fix.Admit(context.Background(), tx, tc.ev, tc.pol, live, now)
				return err
			})
			if got := live.calls.Load(); got != tc.liveCalls {
				t.Errorf("%d live calls, want %d", got, tc.liveCalls)
			}
			if tc.ignored {
				if a.Run != nil || a.Ignored == "" {
					t.Fatalf("want ignored, got %+v", a)
				}
				return
			}
			if a.Run == nil {
				t.Fatalf("no run: %+v", a)
			}
			if tc.reason == "" {
				if !a.Admitted() || a.Run.Status != fix.StatusQueued {
					t.Fatalf("want admitted, got %s %s %s", a.Run.Status, a.Run.Reason, a.Run.Detail)
				}
				return
			}
			if a.Admitted() || a.Run.Status != fix.StatusIneligible || a.Run.Reason != tc.reason {
				t.Fatalf("want ineligible %s, got %s %s (%s)", tc.reason, a.Run.Status, a.Run.Reason, a.Run.Detail)
			}
		})
	}
}

// Caps count every trigger, ineligible ones included, and refuse before any
// live call; concurrent triggers on one issue admit at most one run.
func TestAdmitCapsUnderConcurrency(t *testing.T) {
	cp := testenv.NewControlPlane(t, 24)
	s := cp.Seed(t, "acme", "app", "private")
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	pol := fix.TriggerPolicy{Mode: fix.ModeApproval, TriggerLabels: []string{"quavon:fix"},
		Caps: fix.CapLimits{PerIssue: 2, PerRepository: 5, PerTenant: 50}}
	live := newLive()
	ev := func(login string, n int) fix.TriggerEvent {
		return fix.TriggerEvent{RepositoryID: s.Repository, Number: n, Trigger: fix.TriggerLabel, Label: "quavon:fix",
			Actor: fix.Actor{Login: login, ID: 1}, ActorType: "User"}
	}
	// An outsider's two labels use up issue 7's cap.
	for range 2 {
		inTenant(t, cp, s, func(tx pgx.Tx) error {
			a, err := fix.Admit(context.Background(), tx, ev("eve", 7), pol, live, now)
			if err == nil && a.Run.Reason != fix.ReasonActorNoWrite {
				t.Errorf("eve: %s %s", a.Run.Status, a.Run.Reason)
			}
			return err
		})
	}
	before := live.calls.Load()
	inTenant(t, cp, s, func(tx pgx.Tx) error {
		a, err := fix.Admit(context.Background(), tx, ev("wanda", 7), pol, live, now)
		if err == nil && a.Run.Reason != fix.ReasonCapIssue {
			t.Errorf("third trigger: %s %s", a.Run.Status, a.Run.Reason)
		}
		return err
	})
	if live.calls.Load() != before {
		t.Error("a capped trigger asked GitHub")
	}
	// 20 concurrent triggers on issue 1 by a write user: the issue cap
	// admits exactly 2; the other 18 are capped. (Of the two, Start lets
	// one run at a time.)
	var wg sync.WaitGroup
	var mu sync.Mutex
	reasons := map[string]int{}
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := cp.App.InTenant(context.Background(), s.Tenant, func(tx pgx.Tx) error {
				a, err := fix.Admit(context.Background(), tx, ev("wanda", 1), pol, live, now)
				if err == nil {
					mu.Lock()
					reasons[string(a.Run.Status)+":"+a.Run.Reason]++
					mu.Unlock()
				}
				return err
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if reasons["queued:"] != 2 || reasons["ineligible:"+fix.ReasonCapIssue] != 18 {
		t.Errorf("outcomes %v", reasons)
	}
	// The repository cap (5) counts across issues: 3 on issue 7 and 20 on
	// issue 1 so far, so a trigger on issue 4 is capped by it.
	inTenant(t, cp, s, func(tx pgx.Tx) error {
		a, err := fix.Admit(context.Background(), tx, ev("wanda", 4), pol, live, now)
		if err == nil && a.Run.Reason != fix.ReasonCapRepository {
			t.Errorf("repository cap: %s %s", a.Run.Status, a.Run.Reason)
		}
		return err
	})
}
