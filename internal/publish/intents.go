package publish

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/secret"
)

// IntentKind is the kind of external write.
type IntentKind string

// Intent kinds (the prefixes of their keys).
const (
	IntentReview    IntentKind = "review"
	IntentCheck     IntentKind = "check"
	IntentSARIF     IntentKind = "sarif"
	IntentFixPR     IntentKind = "fix_pr"
	IntentFixCommit IntentKind = "fix_commit"
)

// intentKinds maps an output to the write that publishes it.
var intentKinds = map[Kind]IntentKind{
	KindReview: IntentReview, KindCheckRun: IntentCheck, KindSARIF: IntentSARIF,
	KindFixPR: IntentFixPR, KindFixCommit: IntentFixCommit,
}

// Key is the idempotency key of a write: kind:{repositoryId}:{runId}.
func Key(kind IntentKind, repositoryID, runID string) string {
	return string(kind) + ":" + repositoryID + ":" + runID
}

// IntentStatus is an intent's state.
type IntentStatus string

// Intent states.
const (
	IntentPending   IntentStatus = "pending"
	IntentInFlight  IntentStatus = "in_flight"
	IntentPublished IntentStatus = "published"
	IntentFailed    IntentStatus = "failed"
	IntentCancelled IntentStatus = "cancelled"
)

// Terminal reports whether s is never left.
func (s IntentStatus) Terminal() bool {
	return s == IntentPublished || s == IntentFailed || s == IntentCancelled
}

// Intent is a publish_intents row.
type Intent struct {
	ID              string
	RepositoryID    string
	OutputID        string
	Kind            IntentKind
	Key             string
	Marker          string
	Status          IntentStatus
	Attempts        int
	ClaimedAt       *time.Time
	Reason          string
	LastError       string
	External        External
	CreatedAt       time.Time
	UpdatedAt       time.Time
	PublishedAtTime *time.Time
}

// External is what GitHub answered a write with.
type External struct {
	// ID is the review, check run or SARIF upload id (or a node id).
	ID string
	// Number is the pull request a fix_pr opened.
	Number int
	// CommitSHA and Branch are the commit and branch a fix wrote.
	CommitSHA string
	Branch    string
}

const intentColumns = `id::text, repository_id::text, pending_output_id::text, kind, key, marker, status, attempts, claimed_at,
	coalesce(reason, ''), last_error, coalesce(external_id, ''), coalesce(external_number, 0), coalesce(commit_sha, ''),
	coalesce(branch, ''), created_at, updated_at, published_at`

func scanIntent(row pgx.Row) (*Intent, error) {
	var i Intent
	err := row.Scan(&i.ID, &i.RepositoryID, &i.OutputID, &i.Kind, &i.Key, &i.Marker, &i.Status, &i.Attempts, &i.ClaimedAt,
		&i.Reason, &i.LastError, &i.External.ID, &i.External.Number, &i.External.CommitSHA, &i.External.Branch,
		&i.CreatedAt, &i.UpdatedAt, &i.PublishedAtTime)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	return &i, err
}

// newMarker is 16 random bytes in hex: the hidden marker of one write.
func newMarker() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return hex.EncodeToString(b[:])
}

// FixBranch is the bot branch of a fix: quavon/fix-<number>-<first 8 hex of
// the intent's marker>.
func FixBranch(number int, marker string) string {
	return fmt.Sprintf("quavon/fix-%d-%s", number, marker[:8])
}

// EnsureIntent returns the intent of an output, creating it (with a fresh
// marker) when there is none; created says which. Outputs that are stored
// only, or already settled, get none.
func EnsureIntent(ctx context.Context, tx pgx.Tx, outputID string) (*Intent, bool, error) {
	o, err := scanOutput(tx.QueryRow(ctx, `SELECT `+outputColumns+` FROM pending_outputs WHERE id = $1 FOR UPDATE`, outputID))
	if err != nil {
		return nil, false, fmt.Errorf("publish.EnsureIntent: %w", err)
	}
	run := o.ReviewRunID
	if o.Kind.ofFix() {
		run = o.FixRunID
	}
	key := Key(intentKinds[o.Kind], o.RepositoryID, run)
	existing, err := scanIntent(tx.QueryRow(ctx, `SELECT `+intentColumns+` FROM publish_intents WHERE key = $1`, key))
	if err == nil {
		return existing, false, nil
	}
	if !errors.Is(err, ErrNotFound) {
		return nil, false, fmt.Errorf("publish.EnsureIntent: %w", err)
	}
	if o.Status != OutputReady && o.Status != OutputApproved {
		return nil, false, fmt.Errorf("publish.EnsureIntent %s: %w: the output is %s", outputID, ErrTransition, o.Status)
	}
	i, err := scanIntent(tx.QueryRow(ctx, `INSERT INTO publish_intents (tenant_id, repository_id, pending_output_id, kind, key, marker)
		VALUES (quavon_current_tenant(), $1, $2, $3, $4, $5) RETURNING `+intentColumns,
		o.RepositoryID, o.ID, intentKinds[o.Kind], key, newMarker()))
	if err != nil {
		return nil, false, fmt.Errorf("publish.EnsureIntent: %w", pgErr(err))
	}
	return i, true, nil
}

// GetIntent reads an intent.
func GetIntent(ctx context.Context, tx pgx.Tx, id string) (*Intent, error) {
	return scanIntent(tx.QueryRow(ctx, `SELECT `+intentColumns+` FROM publish_intents WHERE id = $1`, id))
}

// Claim takes an intent for one attempt (pending or in_flight →
// in_flight, attempts + 1), locking its row until the caller's
// transaction ends. reconcileFirst is true when an earlier attempt was
// claimed: its write may have happened, so the publisher looks for it by
// the marker before writing.
func Claim(ctx context.Context, tx pgx.Tx, id string) (in *Intent, reconcileFirst bool, err error) {
	cur, err := scanIntent(tx.QueryRow(ctx, `SELECT `+intentColumns+` FROM publish_intents WHERE id = $1 FOR UPDATE`, id))
	if err != nil {
		return nil, false, fmt.Errorf("publish.Claim: %w", err)
	}
	if cur.Status.Terminal() {
		return nil, false, fmt.Errorf("publish.Claim %s: %w: %s", id, ErrTerminal, cur.Status)
	}
	in, err = scanIntent(tx.QueryRow(ctx, `UPDATE publish_intents SET status = 'in_flight', attempts = attempts + 1,
		claimed_at = now(), updated_at = now() WHERE id = $1 RETURNING `+intentColumns, id))
	if err != nil {
		return nil, false, fmt.Errorf("publish.Claim: %w", err)
	}
	return in, cur.Attempts > 0, nil
}

// Published records the write's result: the intent (in flight) and its
// output are published.
func Published(ctx context.Context, tx pgx.Tx, id string, ext External) (*Intent, error) {
	if ext.ID == "" && ext.Number == 0 && ext.CommitSHA == "" {
		return nil, fmt.Errorf("publish.Published: %w: no external id", ErrInvalid)
	}
	if ext.CommitSHA != "" && !shaRE.MatchString(ext.CommitSHA) || ext.Number < 0 || len(ext.ID) > 200 || len(ext.Branch) > 255 {
		return nil, fmt.Errorf("publish.Published: %w: external %+v", ErrInvalid, ext)
	}
	in, err := scanIntent(tx.QueryRow(ctx, `UPDATE publish_intents SET status = 'published', external_id = $2,
			external_number = $3, commit_sha = $4, branch = $5, published_at = now(), updated_at = now()
		WHERE id = $1 AND status = 'in_flight' RETURNING `+intentColumns,
		id, nullIfEmpty(ext.ID), nullIfZeroInt(ext.Number), nullIfEmpty(ext.CommitSHA), nullIfEmpty(ext.Branch)))
	if errors.Is(err, ErrNotFound) {
		err = intentMoveErr(ctx, tx, id, IntentPublished)
	}
	if err != nil {
		return nil, fmt.Errorf("publish.Published %s: %w", id, pgErr(err))
	}
	if _, err := MoveOutput(ctx, tx, in.OutputID, OutputPublished, ""); err != nil {
		return nil, err
	}
	return in, nil
}

// Fail ends an intent that will never be written (a §7 re-check refused,
// GitHub refused for good), and its output, with reason and the error's
// text (capped; never a token).
func Fail(ctx context.Context, tx pgx.Tx, id, reason, detail string) (*Intent, error) {
	if !reasonRE.MatchString(reason) {
		return nil, fmt.Errorf("publish.Fail: %w: reason %q", ErrInvalid, reason)
	}
	in, err := scanIntent(tx.QueryRow(ctx, `UPDATE publish_intents SET status = 'failed', reason = $2, last_error = $3, updated_at = now()
		WHERE id = $1 AND status IN ('pending', 'in_flight') RETURNING `+intentColumns, id, reason, safeError(detail)))
	if errors.Is(err, ErrNotFound) {
		err = intentMoveErr(ctx, tx, id, IntentFailed)
	}
	if err != nil {
		return nil, fmt.Errorf("publish.Fail %s: %w", id, err)
	}
	if _, err := MoveOutput(ctx, tx, in.OutputID, OutputFailed, reason); err != nil && !errors.Is(err, ErrTerminal) {
		return nil, err
	}
	return in, nil
}

// Cancel ends a pending intent before any attempt (the run was superseded,
// the policy switched off). An in-flight intent is never cancelled.
func Cancel(ctx context.Context, tx pgx.Tx, id, reason string) (*Intent, error) {
	if !reasonRE.MatchString(reason) {
		return nil, fmt.Errorf("publish.Cancel: %w: reason %q", ErrInvalid, reason)
	}
	in, err := scanIntent(tx.QueryRow(ctx, `UPDATE publish_intents SET status = 'cancelled', reason = $2, updated_at = now()
		WHERE id = $1 AND status = 'pending' RETURNING `+intentColumns, id, reason))
	if errors.Is(err, ErrNotFound) {
		err = intentMoveErr(ctx, tx, id, IntentCancelled)
	}
	if err != nil {
		return nil, fmt.Errorf("publish.Cancel %s: %w", id, err)
	}
	if _, err := MoveOutput(ctx, tx, in.OutputID, OutputCancelled, reason); err != nil && !errors.Is(err, ErrTerminal) {
		return nil, err
	}
	return in, nil
}

// RecordAttemptError notes why an attempt failed without ending the
// intent (it stays in flight; the next attempt reconciles first).
func RecordAttemptError(ctx context.Context, tx pgx.Tx, id, detail string) error {
	tag, err := tx.Exec(ctx, `UPDATE publish_intents SET last_error = $2, updated_at = now() WHERE id = $1 AND status = 'in_flight'`,
		id, safeError(detail))
	if err != nil {
		return fmt.Errorf("publish.RecordAttemptError: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return intentMoveErr(ctx, tx, id, IntentInFlight)
	}
	return nil
}

func intentMoveErr(ctx context.Context, tx pgx.Tx, id string, to IntentStatus) error {
	var cur IntentStatus
	err := tx.QueryRow(ctx, `SELECT status FROM publish_intents WHERE id = $1`, id).Scan(&cur)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return ErrNotFound
	case err != nil:
		return err
	case cur.Terminal():
		return fmt.Errorf("%w: intent %s (asked for %s)", ErrTerminal, cur, to)
	}
	return fmt.Errorf("%w: intent %s → %s", ErrTransition, cur, to)
}

// safeError is an error's text to store: secrets redacted, capped.
func safeError(s string) string {
	return clip(secret.Redact(strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")), 1024)
}

func nullIfZeroInt(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}

// clip cuts s to at most max bytes of valid UTF-8.
func clip(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= max {
		return s
	}
	s = s[:max]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
