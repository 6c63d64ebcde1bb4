package fix

import (
	"errors"
	"regexp"
	"slices"
)

// Status is a fix run's state (see the package documentation).
type Status string

// The states.
const (
	StatusQueued           Status = "queued"
	StatusIneligible       Status = "ineligible"
	StatusRunning          Status = "running"
	StatusFailed           Status = "failed"
	StatusAwaitingApproval Status = "awaiting_approval"
	StatusApproved         Status = "approved"
	StatusRejected         Status = "rejected"
	StatusExpired          Status = "expired"
	StatusPublishing       Status = "publishing"
	StatusPublished        Status = "published"
)

// edges is the state machine: the states each state may move to.
var edges = map[Status][]Status{
	StatusQueued:           {StatusRunning, StatusIneligible, StatusFailed},
	StatusRunning:          {StatusAwaitingApproval, StatusPublishing, StatusFailed},
	StatusAwaitingApproval: {StatusApproved, StatusRejected, StatusExpired},
	StatusApproved:         {StatusPublishing, StatusFailed},
	StatusPublishing:       {StatusPublished, StatusFailed},
}

// Statuses lists every state.
func Statuses() []Status {
	return []Status{StatusQueued, StatusIneligible, StatusRunning, StatusFailed, StatusAwaitingApproval,
		StatusApproved, StatusRejected, StatusExpired, StatusPublishing, StatusPublished}
}

// Valid reports whether s is a state.
func (s Status) Valid() bool { return slices.Contains(Statuses(), s) }

// Terminal reports whether s is never left.
func (s Status) Terminal() bool { return s.Valid() && len(edges[s]) == 0 }

// CanMove reports whether the state machine has the edge from → to.
func CanMove(from, to Status) bool { return slices.Contains(edges[from], to) }

// predecessors lists the states with an edge to s.
func predecessors(s Status) []string {
	var out []string
	for _, from := range Statuses() {
		if CanMove(from, s) {
			out = append(out, string(from))
		}
	}
	return out
}

// needsReason reports whether ending in s needs a reason code.
func needsReason(s Status) bool { return s.Terminal() && s != StatusPublished }

// Reasons used by the code in this repository; later code adds its own.
// A reason is a stable lower_snake code (ReasonRE) shown in the dashboard.
const (
	ReasonAlreadyRunning   = "already_running"
	ReasonShutdown         = "shutdown"
	ReasonIssueClosed      = "issue_closed"
	ReasonIssueTransferred = "issue_transferred"
	ReasonIssueDeleted     = "issue_deleted"
	ReasonPRClosed         = "pull_request_closed"
	ReasonHeadMoved        = "head_moved"
	ReasonApprovalExpired  = "approval_expired"
)

// ReasonRE is the form of a reason code.
var ReasonRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// Outcomes callers branch on.
var (
	ErrNotFound = errors.New("fix: no such fix run")
	// ErrTerminal: the run is in a terminal state; nothing moves it.
	ErrTerminal = errors.New("fix: the run is in a terminal state")
	// ErrTransition: the state machine has no edge from the run's state
	// to the one asked for (or the run moved on meanwhile).
	ErrTransition = errors.New("fix: transition not allowed")
	// ErrAlreadyRunning: another run of the same issue or pull request is
	// running (FX10).
	ErrAlreadyRunning = errors.New("fix: another fix run of this issue is running")
	// ErrInvalid: the request is malformed (a missing reason, a bad id, a
	// patch where none may be recorded).
	ErrInvalid = errors.New("fix: invalid request")
)
