package fix

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// The agent's tools (spec §4), and Unknown for a call of any other name
// (refused, but logged as a step).
const (
	ToolListFiles  = "list_files"
	ToolReadFile   = "read_file"
	ToolSearch     = "search"
	ToolEditFile   = "edit_file"
	ToolCreateFile = "create_file"
	ToolDeleteFile = "delete_file"
	ToolRunTests   = "run_tests"
	ToolRunLinter  = "run_linter"
	ToolFinish     = "finish"
	ToolUnknown    = "unknown"
)

var tools = []string{ToolListFiles, ToolReadFile, ToolSearch, ToolEditFile, ToolCreateFile, ToolDeleteFile,
	ToolRunTests, ToolRunLinter, ToolFinish, ToolUnknown}

// Step outcomes.
const (
	OutcomeOK      = "ok"
	OutcomeError   = "error"   // the tool ran and failed (no such file, test failure is ok)
	OutcomeRefused = "refused" // path policy, unknown tool, bad arguments
	OutcomeLimit   = "limit"   // a limit ended the call
)

// MaxStepRows caps the steps logged per run, whatever the policy's
// maxSteps (at most 100) allows.
const MaxStepRows = 1000

// Step is one tool call of the agent. The arguments are never stored: they
// hold file content and model text. Their digest identifies repeated calls.
type Step struct {
	Tool string
	// Arguments are the call's raw arguments; only their SHA-256 is kept.
	Arguments []byte
	// ArgumentsSHA256, when set (64 hex), is that digest already taken
	// (internal/agent records steps so); Arguments is then ignored.
	ArgumentsSHA256 string
	Outcome         string
	Detail          string // short, redacted, capped at 512 bytes
	SandboxRunID    string
	Duration        time.Duration
}

// AddStep appends a step to a running run and returns its number. It fails
// with ErrInvalid past MaxStepRows.
func AddStep(ctx context.Context, tx pgx.Tx, id string, s Step) (int, error) {
	if !slices.Contains(tools, s.Tool) {
		return 0, fmt.Errorf("fix.AddStep: %w: tool %q (log unknown tools as %q)", ErrInvalid, s.Tool, ToolUnknown)
	}
	switch s.Outcome {
	case OutcomeOK, OutcomeError, OutcomeRefused, OutcomeLimit:
	default:
		return 0, fmt.Errorf("fix.AddStep: %w: outcome %q", ErrInvalid, s.Outcome)
	}
	sum := sha256.Sum256(s.Arguments)
	digest := hex.EncodeToString(sum[:])
	if s.ArgumentsSHA256 != "" {
		if b, err := hex.DecodeString(s.ArgumentsSHA256); err != nil || len(b) != sha256.Size || hex.EncodeToString(b) != s.ArgumentsSHA256 {
			return 0, fmt.Errorf("fix.AddStep: %w: arguments digest %q", ErrInvalid, clip(s.ArgumentsSHA256, 80))
		}
		digest = s.ArgumentsSHA256
	}
	var n int
	err := tx.QueryRow(ctx, `UPDATE fix_runs SET steps = steps + 1, updated_at = now()
		WHERE id = $1 AND status = 'running' AND steps < $2 RETURNING steps`, id, MaxStepRows).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		r, gerr := Get(ctx, tx, id)
		switch {
		case gerr != nil:
			return 0, fmt.Errorf("fix.AddStep: %w", gerr)
		case r.Status != StatusRunning:
			return 0, fmt.Errorf("fix.AddStep %s: %w: %s, not running", id, ErrTransition, r.Status)
		}
		return 0, fmt.Errorf("fix.AddStep %s: %w: %d steps logged already", id, ErrInvalid, MaxStepRows)
	}
	if err != nil {
		return 0, fmt.Errorf("fix.AddStep: %w", err)
	}
	ms := s.Duration.Milliseconds()
	if ms < 0 || ms > 1<<31-1 {
		ms = 0
	}
	if _, err := tx.Exec(ctx, `INSERT INTO fix_run_steps (tenant_id, fix_run_id, step, tool, arguments_sha256, outcome, detail,
			sandbox_run_id, duration_ms)
		VALUES (quavon_current_tenant(), $1, $2, $3, $4, $5, $6, $7, $8)`,
		id, n, s.Tool, digest, s.Outcome, safeText(s.Detail, 512), nullIfEmpty(s.SandboxRunID), ms); err != nil {
		return 0, fmt.Errorf("fix.AddStep: %w", err)
	}
	if s.SandboxRunID != "" {
		if _, err := tx.Exec(ctx, `UPDATE fix_runs SET sandbox_runs = sandbox_runs + 1 WHERE id = $1`, id); err != nil {
			return 0, fmt.Errorf("fix.AddStep: %w", err)
		}
	}
	return n, nil
}

// StepRow is a logged step.
type StepRow struct {
	Step            int
	Tool            string
	ArgumentsSHA256 string
	Outcome         string
	Detail          string
	SandboxRunID    string
	DurationMillis  int
	At              time.Time
}

// Steps lists a run's steps in order.
func Steps(ctx context.Context, tx pgx.Tx, id string) ([]StepRow, error) {
	rows, err := tx.Query(ctx, `SELECT step, tool, arguments_sha256, outcome, detail, coalesce(sandbox_run_id::text, ''), duration_ms, created_at
		FROM fix_run_steps WHERE fix_run_id = $1 ORDER BY step`, id)
	if err != nil {
		return nil, fmt.Errorf("fix.Steps: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (StepRow, error) {
		var s StepRow
		return s, r.Scan(&s.Step, &s.Tool, &s.ArgumentsSHA256, &s.Outcome, &s.Detail, &s.SandboxRunID, &s.DurationMillis, &s.At)
	})
}
