// Package review holds the pull-request review runs and their findings: the
// store of review_runs, review_findings and finding_feedback. The review
// itself (LLM review, SAST, acceptance check, joining) arrives with its own
// issue and moves runs only through this package. Every function runs in
// the caller's tenant transaction (postgres.DB.InTenant).
//
// # Runs
//
// A run reviews one head commit of one pull request. Automatic triggers
// (opened, synchronize, reopened, ready_for_review) make attempt 1 of a
// head, and only once: Create returns the existing run for a head that has
// one, so redeliveries and the same event from two apps change nothing.
// NewAttempt makes another run of the same head (a forced review, or a head
// that became current again after it was superseded), so every run has its
// own id for the publisher's intent keys.
//
//	queued  → running | cancelled | skipped | failed
//	running → completed | failed | cancelled
//
// completed, failed, cancelled and skipped are terminal and never left
// (Transition returns ErrTerminal; a trigger in the database refuses it
// too). failed, cancelled and skipped carry a reason code. A cancelled run
// (superseded by a newer head, its pull request closed) publishes nothing.
//
// # Findings
//
// A run's findings are stored once per fingerprint, with the pull
// request's number, so that Shown can tell which fingerprints the pull
// request already showed and with what outcome: a finding posted once is
// never posted again, a dismissed one (finding_feedback) never returns.
// Every text field is untrusted model or tool output: it is stored
// secret-redacted and capped, and sanitised by the publisher before
// anyone sees it.
//
// # From a review to its outputs
//
// The review itself (internal/review/engine) hands its results to:
//
//   - Verify: a model finding is kept only on a changed line of a changed
//     file with its quote at those lines (else dropped_unverified);
//   - Join: scanner findings badged and grouped across tools by weakness,
//     the model's duplicates merged into them;
//   - Classify: against Shown and the last completed run: new, repeated
//     (never posted again), dismissed (never posted again), resolved;
//   - NewPayload: the typed content of the review and check run outputs,
//     which the publisher renders (Payload.Render).
package review

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/quavon/quavon/internal/secret"
)

// Status is a run's state.
type Status string

// The states.
const (
	StatusQueued    Status = "queued"
	StatusRunning   Status = "running"
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
	StatusSkipped   Status = "skipped"
)

var edges = map[Status][]Status{
	StatusQueued:  {StatusRunning, StatusCancelled, StatusSkipped, StatusFailed},
	StatusRunning: {StatusCompleted, StatusFailed, StatusCancelled},
}

// Statuses lists every state.
func Statuses() []Status {
	return []Status{StatusQueued, StatusRunning, StatusCompleted, StatusFailed, StatusCancelled, StatusSkipped}
}

// Valid reports whether s is a state.
func (s Status) Valid() bool { return slices.Contains(Statuses(), s) }

// Terminal reports whether s is never left.
func (s Status) Terminal() bool { return s.Valid() && len(edges[s]) == 0 }

// CanMove reports whether the machine has the edge from → to.
func CanMove(from, to Status) bool { return slices.Contains(edges[from], to) }

func predecessors(s Status) []string {
	var out []string
	for _, from := range Statuses() {
		if CanMove(from, s) {
			out = append(out, string(from))
		}
	}
	return out
}

// Trigger is what made a run.
type Trigger string

// Triggers.
const (
	TriggerOpened         Trigger = "opened"
	TriggerSynchronize    Trigger = "synchronize"
	TriggerReopened       Trigger = "reopened"
	TriggerReadyForReview Trigger = "ready_for_review"
	// TriggerCommand is "@<review-app> review" by a write user: a full
	// review, always a new attempt.
	TriggerCommand Trigger = "command"
)

// Reasons used by the code in this repository.
const (
	ReasonSuperseded = "superseded"
	ReasonPRClosed   = "pull_request_closed"
	ReasonShutdown   = "shutdown"
)

// ReasonRE is the form of a reason code.
var ReasonRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// Outcomes callers branch on.
var (
	ErrNotFound   = errors.New("review: no such review run")
	ErrTerminal   = errors.New("review: the run is in a terminal state")
	ErrTransition = errors.New("review: transition not allowed")
	ErrInvalid    = errors.New("review: invalid request")
)

var shaRE = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// ValidSHA reports whether s is a full commit id (SHA-1 or SHA-256).
func ValidSHA(s string) bool { return shaRE.MatchString(s) }

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

// safeText is untrusted text to store: secrets redacted, valid UTF-8, NUL
// removed (Postgres refuses it), capped.
func safeText(s string, max int) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
	return clip(secret.Redact(s), max)
}
