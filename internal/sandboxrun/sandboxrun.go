// Package sandboxrun records every sandbox job the worker sends
// (sandbox_runs, spec §3 and SB10): why it ran (purpose), which image
// (class, and the digest the runner resolved), how it ended (status, the
// setup and run steps' exit codes), how long (the runner's durations and
// the worker's wall time), how many bytes went in (compressed snapshots)
// and came out (artefacts), and whether output was cut. Never a command,
// an environment value or output: those stay out of the database except
// for the capped, redacted tails a fix run keeps (internal/fix).
//
// The worker calls Run around every job: a row is written in its own short
// transaction before the job is sent, and finished in another when the
// result (or the lack of one) is known, so a job the worker lost to a crash
// stays visible as running with its start time.
//
//	running → completed | timed_out | failed | rejected | error
//
// Every end is terminal. error means the worker got no valid result
// (enqueue failed, the deadline passed, shutdown).
package sandboxrun

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/secret"
)

// Status is how a sandbox run ended (or running).
type Status string

// States: the runner's result statuses, running and error.
const (
	StatusRunning   Status = "running"
	StatusCompleted Status = Status(sandbox.StatusCompleted)
	StatusTimedOut  Status = Status(sandbox.StatusTimedOut)
	StatusFailed    Status = Status(sandbox.StatusFailed)
	StatusRejected  Status = Status(sandbox.StatusRejected)
	StatusError     Status = "error"
)

// Reasons of error runs.
const (
	ReasonNoResult = "no_result" // the job was sent; no valid result came
	ReasonShutdown = "shutdown"  // the worker stopped while waiting
)

// Outcomes callers branch on.
var (
	ErrInvalid  = errors.New("sandboxrun: invalid request")
	ErrFinished = errors.New("sandboxrun: the run is finished already")
)

var imageClassRE = regexp.MustCompile(`^(scanners|node|python|go|byo:[a-z0-9][a-z0-9._-]{0,62})$`)

// Start is what is known before a job is sent.
type Start struct {
	RepositoryID string
	// Exactly one: ReviewRunID for sast, FixRunID for fix_test and fix_lint.
	ReviewRunID string
	FixRunID    string
	Purpose     sandbox.Purpose
	ImageClass  string
}

func (s Start) validate() error {
	switch {
	case s.RepositoryID == "":
		return fmt.Errorf("%w: no repository", ErrInvalid)
	case !imageClassRE.MatchString(s.ImageClass):
		return fmt.Errorf("%w: image class %q", ErrInvalid, s.ImageClass)
	case s.Purpose == sandbox.PurposeSAST && (s.ReviewRunID == "" || s.FixRunID != ""):
		return fmt.Errorf("%w: a sast job belongs to a review run", ErrInvalid)
	case (s.Purpose == sandbox.PurposeFixTest || s.Purpose == sandbox.PurposeFixLint) && (s.FixRunID == "" || s.ReviewRunID != ""):
		return fmt.Errorf("%w: a %s job belongs to a fix run", ErrInvalid, s.Purpose)
	case s.Purpose != sandbox.PurposeSAST && s.Purpose != sandbox.PurposeFixTest && s.Purpose != sandbox.PurposeFixLint:
		return fmt.Errorf("%w: purpose %q", ErrInvalid, s.Purpose)
	}
	return nil
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Begin records a job about to be sent and returns the row's id.
func Begin(ctx context.Context, tx pgx.Tx, s Start) (string, error) {
	if err := s.validate(); err != nil {
		return "", fmt.Errorf("sandboxrun.Begin: %w", err)
	}
	var id string
	err := tx.QueryRow(ctx, `INSERT INTO sandbox_runs (tenant_id, repository_id, review_run_id, fix_run_id, purpose, image_class)
		VALUES (quavon_current_tenant(), $1, $2, $3, $4, $5) RETURNING id::text`,
		s.RepositoryID, nullIfEmpty(s.ReviewRunID), nullIfEmpty(s.FixRunID), s.Purpose, s.ImageClass).Scan(&id)
	if err != nil {
		return "", fmt.Errorf("sandboxrun.Begin: %w", err)
	}
	return id, nil
}

// Sizes are the bytes a job moved: its compressed snapshots in, its
// artefacts out (counted from the result when Out is 0).
type Sizes struct {
	In, Out int64
}

// Finish records how a run ended: from the runner's verified result, or,
// when there is none, from the worker's error (status error, with
// ReasonShutdown when it is a cancellation, ReasonNoResult otherwise).
// wall is the time the worker waited.
func Finish(ctx context.Context, tx pgx.Tx, id string, res *sandbox.SandboxResult, runErr error, sizes Sizes, wall time.Duration) error {
	if sizes.In < 0 || sizes.Out < 0 {
		return fmt.Errorf("sandboxrun.Finish: %w: negative size", ErrInvalid)
	}
	var (
		status                   = StatusError
		reason, errText          string
		jobID, digest, runner    *string
		exit, setupExit          *int
		setupTimedOut, truncated bool
		duration, setupMs, runMs *int64
		wallMs                   = wall.Milliseconds()
		bytesOut                 = sizes.Out
	)
	switch {
	case res != nil:
		status = Status(res.Status)
		switch status {
		case StatusCompleted, StatusTimedOut, StatusFailed, StatusRejected:
		default:
			return fmt.Errorf("sandboxrun.Finish: %w: result status %q", ErrInvalid, res.Status)
		}
		reason = string(res.RejectReason)
		errText = res.Error
		jobID, digest, runner = nullIfEmpty(res.JobID), nullIfEmpty(res.ImageDigest), nullIfEmpty(res.RunnerID)
		truncated = res.OutputTruncated
		d := res.DurationMillis
		duration = &d
		for _, st := range res.Steps {
			ms, code := st.DurationMillis, st.ExitCode
			switch st.Name {
			case "setup":
				setupMs, setupTimedOut = &ms, st.TimedOut
				if st.Ran {
					setupExit = &code
				}
			case "run":
				runMs = &ms
				if st.Ran {
					exit = &code
				}
			}
		}
		if status == StatusCompleted && exit == nil {
			code := res.ExitCode
			exit = &code
		}
		if bytesOut == 0 {
			for _, a := range res.Artefacts {
				bytesOut += int64(len(a))
			}
		}
	case runErr != nil:
		reason = ReasonNoResult
		if errors.Is(runErr, context.Canceled) {
			reason = ReasonShutdown
		}
		errText = runErr.Error()
	default:
		return fmt.Errorf("sandboxrun.Finish: %w: neither a result nor an error", ErrInvalid)
	}
	if wallMs < 0 {
		wallMs = 0
	}
	tag, err := tx.Exec(ctx, `UPDATE sandbox_runs SET status = $2, reason = $3, error = $4, job_id = $5, image_digest = $6,
			runner_id = $7, exit_code = $8, setup_exit_code = $9, setup_timed_out = $10, duration_ms = $11, setup_ms = $12,
			run_ms = $13, wall_ms = $14, bytes_in = $15, bytes_out = $16, output_truncated = $17, finished_at = now()
		WHERE id = $1 AND status = 'running'`,
		id, status, nullIfEmpty(reason), safeError(errText), jobID, digest, runner, exit, setupExit, setupTimedOut, duration,
		setupMs, runMs, wallMs, sizes.In, bytesOut, truncated)
	if err != nil {
		return fmt.Errorf("sandboxrun.Finish: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("sandboxrun.Finish %s: %w", id, ErrFinished)
	}
	return nil
}

// safeError is an error text to store: secrets redacted, valid UTF-8
// without NUL, at most 1 KiB.
func safeError(s string) string {
	s = secret.Redact(strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", ""))
	if len(s) <= 1024 {
		return s
	}
	s = s[:1024]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// Job runs one sandbox job and returns its verified result (nil with an
// error when there is none) and the bytes it moved.
type Job func(ctx context.Context) (*sandbox.SandboxResult, Sizes, error)

// Run records job around its execution: Begin in its own transaction,
// the job, Finish in another (with a context that outlives a cancelled
// ctx, so a job interrupted by shutdown is recorded as such). It returns
// the row's id with the job's outcome.
func Run(ctx context.Context, db *postgres.DB, tenant postgres.TenantID, s Start, job Job) (string, *sandbox.SandboxResult, error) {
	var id string
	if err := db.InTenant(ctx, tenant, func(tx pgx.Tx) error {
		var err error
		id, err = Begin(ctx, tx, s)
		return err
	}); err != nil {
		return "", nil, err
	}
	began := time.Now()
	res, sizes, runErr := job(ctx)
	if res != nil {
		runErr = nil
	} else if runErr == nil {
		runErr = errors.New("the sandbox job returned no result")
	}
	if errors.Is(ctx.Err(), context.Canceled) && res == nil && !errors.Is(runErr, context.Canceled) {
		runErr = fmt.Errorf("%w: %w", context.Canceled, runErr)
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := db.InTenant(fctx, tenant, func(tx pgx.Tx) error {
		return Finish(fctx, tx, id, res, runErr, sizes, time.Since(began))
	}); err != nil {
		return id, res, errors.Join(runErr, fmt.Errorf("sandboxrun: recording the end of %s: %w", id, err))
	}
	return id, res, runErr
}

// Row is a sandbox_runs row, for the dashboard and tests.
type Row struct {
	ID              string
	Purpose         string
	ImageClass      string
	ImageDigest     string
	JobID           string
	RunnerID        string
	Status          Status
	Reason          string
	Error           string
	ExitCode        *int
	SetupExitCode   *int
	SetupTimedOut   bool
	DurationMillis  *int64
	WallMillis      *int64
	BytesIn         int64
	BytesOut        int64
	OutputTruncated bool
	StartedAt       time.Time
	FinishedAt      *time.Time
}

// Get reads a row.
func Get(ctx context.Context, tx pgx.Tx, id string) (*Row, error) {
	var r Row
	err := tx.QueryRow(ctx, `SELECT id::text, purpose, image_class, coalesce(image_digest, ''), coalesce(job_id, ''),
			coalesce(runner_id, ''), status, coalesce(reason, ''), error, exit_code, setup_exit_code, setup_timed_out,
			duration_ms, wall_ms, bytes_in, bytes_out, output_truncated, started_at, finished_at
		FROM sandbox_runs WHERE id = $1`, id).Scan(&r.ID, &r.Purpose, &r.ImageClass, &r.ImageDigest, &r.JobID, &r.RunnerID,
		&r.Status, &r.Reason, &r.Error, &r.ExitCode, &r.SetupExitCode, &r.SetupTimedOut, &r.DurationMillis, &r.WallMillis,
		&r.BytesIn, &r.BytesOut, &r.OutputTruncated, &r.StartedAt, &r.FinishedAt)
	if err != nil {
		return nil, fmt.Errorf("sandboxrun.Get: %w", err)
	}
	return &r, nil
}
