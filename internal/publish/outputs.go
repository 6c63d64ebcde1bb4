// Package publish is the publisher's store: the outputs waiting to be
// published or approved (pending_outputs) and the publish intents, one per
// external write (publish_intents), the payload types of review outputs
// (review.Payload for reviews and check runs, SARIFPayload) and the publish job (Job) that asks
// quavon-publisher for one. The publisher itself, its re-checks and
// reconcile are publisher/ (fix outputs: with their own issue); render/
// and sanitise/ are the text it posts; everything they keep in the
// database goes through here. Every function runs in the caller's tenant
// transaction (postgres.DB.InTenant).
//
// # Outputs
//
// One output per run and kind: a review and a check run (and a SARIF
// upload) per review run, a fix_pr or fix_commit per fix run. The payload
// holds typed fields the publisher renders, never rendered text; its
// SHA-256 over the RFC 8785 canonical JSON, with the patch, base, head and
// policy hashes, is what an approval binds to.
//
//	stored             shadow mode: kept, never published
//	ready              to publish (review outputs in mode on, fix outputs in auto mode)
//	awaiting_approval  → approved | rejected | expired | cancelled
//	ready, approved    → published | failed | cancelled
//
// stored, rejected, expired, published, failed and cancelled are terminal.
// Decide refuses a decision on an output that expired (and expires it) or
// whose bound hashes differ from what the approver was shown.
//
// # Intents
//
// An intent is the claim on one external write, keyed
// kind:{repositoryId}:{runId} (review, check, sarif, fix_pr, fix_commit)
// and carrying a random marker the publisher hides in what it writes.
//
//	pending   → in_flight | cancelled | failed
//	in_flight → published | failed | in_flight (the next attempt)
//
// Claim reports whether an earlier attempt may have written already: then
// the publisher reconciles (finds the write by its marker) before it
// writes again. An in_flight intent is never cancelled: its write may
// exist.
package publish

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/quavon/quavon/internal/canonical"
)

// Kind is what an output is.
type Kind string

// Output kinds.
const (
	KindReview    Kind = "review"
	KindCheckRun  Kind = "check_run"
	KindSARIF     Kind = "sarif"
	KindFixPR     Kind = "fix_pr"
	KindFixCommit Kind = "fix_commit"
)

func (k Kind) ofReview() bool { return k == KindReview || k == KindCheckRun || k == KindSARIF }
func (k Kind) ofFix() bool    { return k == KindFixPR || k == KindFixCommit }

// OutputStatus is an output's state.
type OutputStatus string

// Output states.
const (
	OutputStored           OutputStatus = "stored"
	OutputReady            OutputStatus = "ready"
	OutputAwaitingApproval OutputStatus = "awaiting_approval"
	OutputApproved         OutputStatus = "approved"
	OutputRejected         OutputStatus = "rejected"
	OutputExpired          OutputStatus = "expired"
	OutputPublished        OutputStatus = "published"
	OutputFailed           OutputStatus = "failed"
	OutputCancelled        OutputStatus = "cancelled"
)

var outputEdges = map[OutputStatus][]OutputStatus{
	OutputAwaitingApproval: {OutputApproved, OutputRejected, OutputExpired, OutputCancelled},
	OutputReady:            {OutputPublished, OutputFailed, OutputCancelled},
	OutputApproved:         {OutputPublished, OutputFailed, OutputCancelled},
}

// OutputStatuses lists every output state.
func OutputStatuses() []OutputStatus {
	return []OutputStatus{OutputStored, OutputReady, OutputAwaitingApproval, OutputApproved, OutputRejected,
		OutputExpired, OutputPublished, OutputFailed, OutputCancelled}
}

// Terminal reports whether s is never left.
func (s OutputStatus) Terminal() bool {
	return slices.Contains(OutputStatuses(), s) && len(outputEdges[s]) == 0
}

// CanMoveOutput reports whether the machine has the edge from → to.
func CanMoveOutput(from, to OutputStatus) bool { return slices.Contains(outputEdges[from], to) }

func outputPredecessors(s OutputStatus) []string {
	var out []string
	for _, from := range OutputStatuses() {
		if CanMoveOutput(from, s) {
			out = append(out, string(from))
		}
	}
	return out
}

// Outcomes callers branch on.
var (
	ErrNotFound   = errors.New("publish: not found")
	ErrTerminal   = errors.New("publish: in a terminal state")
	ErrTransition = errors.New("publish: transition not allowed")
	ErrInvalid    = errors.New("publish: invalid request")
	// ErrExists: the run has an output of that kind already.
	ErrExists = errors.New("publish: exists already")
	// ErrExpired: the approval window closed before the decision.
	ErrExpired = errors.New("publish: the output expired before the decision")
	// ErrStale: what the approver was shown is not what is stored.
	ErrStale = errors.New("publish: the output changed since it was shown")
)

// Reasons used by the code in this repository.
const (
	ReasonApprovalExpired = "approval_expired"
	ReasonRunEnded        = "run_ended"
)

var (
	reasonRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	shaRE    = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)
	hash64RE = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// Bound are the hashes an output binds: the patch (PatchSHA256), the base
// commit, the head commit (review fixes: expectedHeadSha) and the policy
// verdicts the run was made under.
type Bound struct {
	PatchSHA256  string
	BaseSHA      string
	HeadSHA      string
	PolicySHA256 string
}

func (b Bound) check() error {
	for _, c := range []struct {
		name, v string
		re      *regexp.Regexp
	}{{"patch", b.PatchSHA256, hash64RE}, {"base", b.BaseSHA, shaRE}, {"head", b.HeadSHA, shaRE}, {"policy", b.PolicySHA256, hash64RE}} {
		if c.v != "" && !c.re.MatchString(c.v) {
			return fmt.Errorf("%s hash %q", c.name, c.v)
		}
	}
	return nil
}

// NewOutput is an output to store.
type NewOutput struct {
	RepositoryID string
	Kind         Kind
	ReviewRunID  string // review, check_run, sarif
	FixRunID     string // fix_pr, fix_commit
	// Status is stored, ready or awaiting_approval (fix kinds, with
	// ExpiresAt).
	Status    OutputStatus
	Payload   any
	Bound     Bound
	ExpiresAt time.Time
}

// MaxPayloadBytes caps an output's payload (canonical JSON).
const MaxPayloadBytes = 4 << 20

// Output is a pending_outputs row.
type Output struct {
	ID            string
	RepositoryID  string
	Kind          Kind
	ReviewRunID   string
	FixRunID      string
	Status        OutputStatus
	Reason        string
	Payload       json.RawMessage
	PayloadSHA256 string
	Bound         Bound
	ExpiresAt     *time.Time
	DecidedBy     string
	DecidedAt     *time.Time
	DecisionNote  string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

const outputColumns = `id::text, repository_id::text, kind, coalesce(review_run_id::text, ''), coalesce(fix_run_id::text, ''),
	status, coalesce(reason, ''), payload, payload_sha256, coalesce(patch_sha256, ''), coalesce(base_sha, ''),
	coalesce(head_sha, ''), coalesce(policy_sha256, ''), expires_at, coalesce(decided_by::text, ''), decided_at,
	decision_note, created_at, updated_at`

func scanOutput(row pgx.Row) (*Output, error) {
	var o Output
	var payload []byte
	err := row.Scan(&o.ID, &o.RepositoryID, &o.Kind, &o.ReviewRunID, &o.FixRunID, &o.Status, &o.Reason, &payload,
		&o.PayloadSHA256, &o.Bound.PatchSHA256, &o.Bound.BaseSHA, &o.Bound.HeadSHA, &o.Bound.PolicySHA256, &o.ExpiresAt,
		&o.DecidedBy, &o.DecidedAt, &o.DecisionNote, &o.CreatedAt, &o.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	o.Payload = payload
	return &o, nil
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Canonical returns the RFC 8785 form of v's JSON and its SHA-256.
func Canonical(v any) ([]byte, string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, "", err
	}
	c, err := canonical.Transform(raw)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(c)
	return c, hex.EncodeToString(sum[:]), nil
}

func pgErr(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "23514" || pe.Code == "23503" || pe.Code == "23505") {
		return fmt.Errorf("%w: %s", ErrInvalid, pe.Message)
	}
	return err
}

// CreateOutput stores an output. Its run must exist in the tenant.
func CreateOutput(ctx context.Context, tx pgx.Tx, n NewOutput) (*Output, error) {
	switch {
	case n.RepositoryID == "":
		return nil, fmt.Errorf("publish.CreateOutput: %w: no repository", ErrInvalid)
	case n.Kind.ofReview() && (n.ReviewRunID == "" || n.FixRunID != ""):
		return nil, fmt.Errorf("publish.CreateOutput: %w: a %s output belongs to a review run", ErrInvalid, n.Kind)
	case n.Kind.ofFix() && (n.FixRunID == "" || n.ReviewRunID != "" || n.Bound.PatchSHA256 == "" || n.Bound.BaseSHA == ""):
		return nil, fmt.Errorf("publish.CreateOutput: %w: a %s output belongs to a fix run and binds its patch and base", ErrInvalid, n.Kind)
	case n.Kind == KindFixCommit && n.Bound.HeadSHA == "":
		return nil, fmt.Errorf("publish.CreateOutput: %w: a fix_commit binds the expected head", ErrInvalid)
	case !n.Kind.ofReview() && !n.Kind.ofFix():
		return nil, fmt.Errorf("publish.CreateOutput: %w: kind %q", ErrInvalid, n.Kind)
	}
	switch n.Status {
	case OutputStored, OutputReady:
	case OutputAwaitingApproval:
		if !n.Kind.ofFix() || n.ExpiresAt.IsZero() {
			return nil, fmt.Errorf("publish.CreateOutput: %w: only fix outputs await approval, with an expiry", ErrInvalid)
		}
	default:
		return nil, fmt.Errorf("publish.CreateOutput: %w: a new output is stored, ready or awaiting_approval, not %q", ErrInvalid, n.Status)
	}
	if err := n.Bound.check(); err != nil {
		return nil, fmt.Errorf("publish.CreateOutput: %w: %w", ErrInvalid, err)
	}
	payload, sum, err := Canonical(n.Payload)
	if err != nil {
		return nil, fmt.Errorf("publish.CreateOutput: payload: %w", err)
	}
	if len(payload) > MaxPayloadBytes || len(payload) == 0 || payload[0] != '{' {
		return nil, fmt.Errorf("publish.CreateOutput: %w: the payload must be a JSON object of at most %d bytes", ErrInvalid, MaxPayloadBytes)
	}
	var expires *time.Time
	if !n.ExpiresAt.IsZero() {
		expires = &n.ExpiresAt
	}
	conflict := `ON CONFLICT (tenant_id, review_run_id, kind) WHERE review_run_id IS NOT NULL DO NOTHING`
	if n.Kind.ofFix() {
		conflict = `ON CONFLICT (tenant_id, fix_run_id, kind) WHERE fix_run_id IS NOT NULL DO NOTHING`
	}
	o, err := scanOutput(tx.QueryRow(ctx, `INSERT INTO pending_outputs (tenant_id, repository_id, kind, review_run_id, fix_run_id,
			status, payload, payload_sha256, patch_sha256, base_sha, head_sha, policy_sha256, expires_at)
		VALUES (quavon_current_tenant(), $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) `+conflict+` RETURNING `+outputColumns,
		n.RepositoryID, n.Kind, nullIfEmpty(n.ReviewRunID), nullIfEmpty(n.FixRunID), n.Status, payload, sum,
		nullIfEmpty(n.Bound.PatchSHA256), nullIfEmpty(n.Bound.BaseSHA), nullIfEmpty(n.Bound.HeadSHA),
		nullIfEmpty(n.Bound.PolicySHA256), expires))
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("publish.CreateOutput: %w: the run has a %s output already", ErrExists, n.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("publish.CreateOutput: %w", pgErr(err))
	}
	return o, nil
}

// GetOutput reads an output.
func GetOutput(ctx context.Context, tx pgx.Tx, id string) (*Output, error) {
	return scanOutput(tx.QueryRow(ctx, `SELECT `+outputColumns+` FROM pending_outputs WHERE id = $1`, id))
}

// OutputsOfRun lists the outputs of a review or fix run.
func OutputsOfRun(ctx context.Context, tx pgx.Tx, runID string) ([]*Output, error) {
	rows, err := tx.Query(ctx, `SELECT `+outputColumns+` FROM pending_outputs
		WHERE review_run_id::text = $1 OR fix_run_id::text = $1 ORDER BY kind`, runID)
	if err != nil {
		return nil, fmt.Errorf("publish.OutputsOfRun: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (*Output, error) { return scanOutput(row) })
}

func outputMoveErr(ctx context.Context, tx pgx.Tx, id string, to OutputStatus) error {
	var cur OutputStatus
	err := tx.QueryRow(ctx, `SELECT status FROM pending_outputs WHERE id = $1`, id).Scan(&cur)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return ErrNotFound
	case err != nil:
		return err
	case cur.Terminal():
		return fmt.Errorf("%w: output %s (asked for %s)", ErrTerminal, cur, to)
	}
	return fmt.Errorf("%w: output %s → %s", ErrTransition, cur, to)
}

// MoveOutput moves an output along an edge (compare-and-set); failed and
// cancelled need a reason. Decisions go through Decide.
func MoveOutput(ctx context.Context, tx pgx.Tx, id string, to OutputStatus, reason string) (*Output, error) {
	if to == OutputApproved || to == OutputRejected {
		return nil, fmt.Errorf("publish.MoveOutput: %w: decisions go through Decide", ErrInvalid)
	}
	if reason != "" && !reasonRE.MatchString(reason) || (to == OutputFailed || to == OutputCancelled || to == OutputExpired) && reason == "" {
		return nil, fmt.Errorf("publish.MoveOutput: %w: reason %q for %s", ErrInvalid, reason, to)
	}
	o, err := scanOutput(tx.QueryRow(ctx, `UPDATE pending_outputs SET status = $2, reason = coalesce($3, reason), updated_at = now()
		WHERE id = $1 AND status = ANY($4) RETURNING `+outputColumns, id, to, nullIfEmpty(reason), outputPredecessors(to)))
	if errors.Is(err, ErrNotFound) {
		err = outputMoveErr(ctx, tx, id, to)
	}
	if err != nil {
		return nil, fmt.Errorf("publish.MoveOutput %s: %w", id, err)
	}
	return o, nil
}

// Decision is a maintainer's decision on an output awaiting approval.
type Decision struct {
	Approve bool
	UserID  string
	Note    string
	// Shown are the hashes of what the approver was shown; they must
	// equal the output's (the payload's hash and every bound hash).
	ShownPayloadSHA256 string
	Shown              Bound
	Now                time.Time
}

// Decide approves or rejects an output awaiting approval. An output past
// its expiry is expired instead (and ErrExpired returned, the expiry
// committed with the caller's transaction); one whose hashes differ from
// what was shown is ErrStale and unchanged.
func Decide(ctx context.Context, tx pgx.Tx, id string, d Decision) (*Output, error) {
	if d.UserID == "" || d.Now.IsZero() {
		return nil, fmt.Errorf("publish.Decide: %w: the deciding user and the time are required", ErrInvalid)
	}
	o, err := scanOutput(tx.QueryRow(ctx, `SELECT `+outputColumns+` FROM pending_outputs WHERE id = $1 FOR UPDATE`, id))
	if err != nil {
		return nil, fmt.Errorf("publish.Decide: %w", err)
	}
	switch {
	case o.Status.Terminal():
		return nil, fmt.Errorf("publish.Decide %s: %w: %s", id, ErrTerminal, o.Status)
	case o.Status != OutputAwaitingApproval:
		return nil, fmt.Errorf("publish.Decide %s: %w: %s, not awaiting approval", id, ErrTransition, o.Status)
	case o.ExpiresAt != nil && !d.Now.Before(*o.ExpiresAt):
		if _, err := MoveOutput(ctx, tx, id, OutputExpired, ReasonApprovalExpired); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("publish.Decide %s: %w", id, ErrExpired)
	case d.ShownPayloadSHA256 != o.PayloadSHA256 || d.Shown != o.Bound:
		return nil, fmt.Errorf("publish.Decide %s: %w", id, ErrStale)
	}
	to := OutputRejected
	if d.Approve {
		to = OutputApproved
	}
	o, err = scanOutput(tx.QueryRow(ctx, `UPDATE pending_outputs SET status = $2, decided_by = $3, decided_at = $4,
			decision_note = $5, updated_at = now()
		WHERE id = $1 AND status = 'awaiting_approval' RETURNING `+outputColumns, id, to, d.UserID, d.Now, clip(d.Note, 2000)))
	if err != nil {
		return nil, fmt.Errorf("publish.Decide: %w", pgErr(err))
	}
	return o, nil
}

// ExpireDue expires every output awaiting approval whose expiry is at or
// before now and returns them (their fix runs expire with them: the
// caller moves those).
func ExpireDue(ctx context.Context, tx pgx.Tx, now time.Time) ([]*Output, error) {
	rows, err := tx.Query(ctx, `UPDATE pending_outputs SET status = 'expired', reason = $2, updated_at = now()
		WHERE status = 'awaiting_approval' AND expires_at <= $1 RETURNING `+outputColumns, now, ReasonApprovalExpired)
	if err != nil {
		return nil, fmt.Errorf("publish.ExpireDue: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (*Output, error) { return scanOutput(row) })
}

// EndOutputsOfRun takes the not yet published outputs of a run out of the
// way because the run ended (superseded, its subject closed): awaiting
// approval and ready ones are cancelled, approved ones too unless an
// intent is in flight for them (its write may exist; the publisher
// settles it). It returns the ids of the outputs it moved.
func EndOutputsOfRun(ctx context.Context, tx pgx.Tx, runID, reason string) ([]string, error) {
	if !reasonRE.MatchString(reason) {
		return nil, fmt.Errorf("publish.EndOutputsOfRun: %w: reason %q", ErrInvalid, reason)
	}
	rows, err := tx.Query(ctx, `UPDATE pending_outputs o SET status = 'cancelled', reason = $2, updated_at = now()
		WHERE (o.review_run_id::text = $1 OR o.fix_run_id::text = $1) AND o.status IN ('awaiting_approval', 'ready', 'approved')
		AND NOT EXISTS (SELECT 1 FROM publish_intents i WHERE i.pending_output_id = o.id AND i.status = 'in_flight')
		RETURNING o.id::text`, runID, reason)
	if err != nil {
		return nil, fmt.Errorf("publish.EndOutputsOfRun: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	// Their pending intents go with them.
	if _, err := tx.Exec(ctx, `UPDATE publish_intents SET status = 'cancelled', reason = $2, updated_at = now()
		WHERE pending_output_id::text = ANY($1) AND status = 'pending'`, ids, reason); err != nil {
		return nil, fmt.Errorf("publish.EndOutputsOfRun: %w", err)
	}
	return ids, nil
}
