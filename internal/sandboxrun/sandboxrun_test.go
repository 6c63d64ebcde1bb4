package sandboxrun_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/review"
	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/sandboxrun"
	"github.com/quavon/quavon/internal/testenv"
)

const digest = "quavon/scanners@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func runs(t *testing.T, cp *testenv.ControlPlane, s testenv.Seeded) (reviewRun, fixRun string) {
	t.Helper()
	ctx := context.Background()
	err := cp.App.InTenant(ctx, s.Tenant, func(tx pgx.Tx) error {
		r, _, err := review.Create(ctx, tx, review.NewRun{RepositoryID: s.Repository, PRNumber: 1, HeadSHA: strings.Repeat("a", 40),
			Trigger: review.TriggerOpened})
		if err != nil {
			return err
		}
		f, err := fix.Create(ctx, tx, fix.NewRun{RepositoryID: s.Repository, Subject: fix.SubjectIssue, Number: 2,
			Delivery: fix.DeliveryPR, Mode: fix.ModeApproval, Trigger: fix.TriggerLabel, Actor: fix.Actor{Login: "ada", ID: 7}})
		reviewRun, fixRun = r.ID, f.ID
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return
}

func get(t *testing.T, cp *testenv.ControlPlane, s testenv.Seeded, id string) *sandboxrun.Row {
	t.Helper()
	var r *sandboxrun.Row
	err := cp.App.InTenant(context.Background(), s.Tenant, func(tx pgx.Tx) error {
		var err error
		r, err = sandboxrun.Get(context.Background(), tx, id)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRunRecordsEveryOutcome(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	s := cp.Seed(t, "acme", "app", "private")
	rr, fr := runs(t, cp, s)
	ctx := context.Background()
	token := "ghp_" + testenv.RandomString(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 36)

	// A completed fix test: steps, digest, bytes in and out.
	test := sandboxrun.Start{RepositoryID: s.Repository, FixRunID: fr, Purpose: sandbox.PurposeFixTest, ImageClass: "go"}
	id, res, err := sandboxrun.Run(ctx, cp.App, s.Tenant, test, func(context.Context) (*sandbox.SandboxResult, sandboxrun.Sizes, error) {
		return &sandbox.SandboxResult{JobID: "jobid-0001", RunnerID: "runner-1", Status: sandbox.StatusCompleted, ImageDigest: digest,
			ExitCode: 1, DurationMillis: 1500, OutputTruncated: true,
			Steps:     []sandbox.Step{{Name: "setup", Ran: true, ExitCode: 0, DurationMillis: 500}, {Name: "run", Ran: true, ExitCode: 1, DurationMillis: 1000}},
			Artefacts: map[string]string{"stdout.log": "12345", "stderr.log": "678"}}, sandboxrun.Sizes{In: 2048}, nil
	})
	if err != nil || res == nil {
		t.Fatal(err)
	}
	got := get(t, cp, s, id)
	if got.Status != sandboxrun.StatusCompleted || *got.ExitCode != 1 || *got.SetupExitCode != 0 || got.ImageDigest != digest ||
		got.BytesIn != 2048 || got.BytesOut != 8 || !got.OutputTruncated || *got.DurationMillis != 1500 || got.JobID != "jobid-0001" ||
		got.FinishedAt == nil || got.WallMillis == nil {
		t.Errorf("completed run %+v", got)
	}

	// Refused by the runner: the reason is the reject reason, nothing ran.
	sast := sandboxrun.Start{RepositoryID: s.Repository, ReviewRunID: rr, Purpose: sandbox.PurposeSAST, ImageClass: "scanners"}
	id, _, _ = sandboxrun.Run(ctx, cp.App, s.Tenant, sast, func(context.Context) (*sandbox.SandboxResult, sandboxrun.Sizes, error) {
		return &sandbox.SandboxResult{JobID: "jobid-0002", RunnerID: "runner-1", Status: sandbox.StatusRejected,
			RejectReason: sandbox.RejectReplayed}, sandboxrun.Sizes{In: 10}, nil
	})
	if got := get(t, cp, s, id); got.Status != sandboxrun.StatusRejected || got.Reason != "replayed" || got.ExitCode != nil {
		t.Errorf("rejected run %+v", got)
	}

	// No result: error, with the worker's error text redacted.
	id, _, err = sandboxrun.Run(ctx, cp.App, s.Tenant, test, func(context.Context) (*sandbox.SandboxResult, sandboxrun.Sizes, error) {
		return nil, sandboxrun.Sizes{In: 10}, errors.New("enqueue failed near " + token)
	})
	if err == nil {
		t.Fatal("the job's error was lost")
	}
	if got := get(t, cp, s, id); got.Status != sandboxrun.StatusError || got.Reason != sandboxrun.ReasonNoResult ||
		strings.Contains(got.Error, token) || !strings.Contains(got.Error, "[REDACTED:github-token]") {
		t.Errorf("failed run %+v", got)
	}

	// Interrupted by shutdown: recorded although the context is gone.
	cctx, cancel := context.WithCancel(ctx)
	id, _, _ = sandboxrun.Run(cctx, cp.App, s.Tenant, test, func(jctx context.Context) (*sandbox.SandboxResult, sandboxrun.Sizes, error) {
		cancel()
		<-jctx.Done()
		return nil, sandboxrun.Sizes{}, jctx.Err()
	})
	if got := get(t, cp, s, id); got.Status != sandboxrun.StatusError || got.Reason != sandboxrun.ReasonShutdown {
		t.Errorf("interrupted run %+v", got)
	}

	// Finished is final: the store refuses a second end, the database a raw move back.
	err = cp.App.InTenant(ctx, s.Tenant, func(tx pgx.Tx) error {
		return sandboxrun.Finish(ctx, tx, id, nil, errors.New("again"), sandboxrun.Sizes{}, time.Second)
	})
	if !errors.Is(err, sandboxrun.ErrFinished) {
		t.Errorf("second Finish: %v", err)
	}
	err = cp.App.InTenant(ctx, s.Tenant, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "UPDATE sandbox_runs SET status = 'running', finished_at = NULL WHERE id = $1", id)
		return err
	})
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23514" {
		t.Errorf("raw update of a finished run: %v", err)
	}
}

func TestBeginRefuses(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	s := cp.Seed(t, "acme", "app", "private")
	rr, fr := runs(t, cp, s)
	ctx := context.Background()
	for name, st := range map[string]sandboxrun.Start{
		"sast of a fix run":   {FixRunID: fr, Purpose: sandbox.PurposeSAST, ImageClass: "scanners"},
		"test of review run":  {ReviewRunID: rr, Purpose: sandbox.PurposeFixTest, ImageClass: "go"},
		"both runs":           {ReviewRunID: rr, FixRunID: fr, Purpose: sandbox.PurposeSAST, ImageClass: "scanners"},
		"unknown image class": {FixRunID: fr, Purpose: sandbox.PurposeFixTest, ImageClass: "ubuntu:latest"},
		"unknown purpose":     {FixRunID: fr, Purpose: "mining", ImageClass: "go"},
	} {
		st.RepositoryID = s.Repository
		err := cp.App.InTenant(ctx, s.Tenant, func(tx pgx.Tx) error {
			_, err := sandboxrun.Begin(ctx, tx, st)
			return err
		})
		if !errors.Is(err, sandboxrun.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
