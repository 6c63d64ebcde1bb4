package check

import (
	"github.com/quavon/quavon/internal/acceptance/checkstore"
)

// The check's storage lives in the leaf package checkstore (so that a
// reader such as the dashboard does not link the judge); these names keep
// the check's callers as they were.
type (
	// Issue is a row of the issues table.
	Issue = checkstore.Issue
	// Event is what an issues webhook says of an issue.
	Event = checkstore.Event
	// Stored is a row of ac_checks.
	Stored = checkstore.Stored
	// LinkRecord is one linked issue and whether it could be used.
	LinkRecord = checkstore.LinkRecord
)

// Events.
const (
	EventChanged     = checkstore.EventChanged
	EventTransferred = checkstore.EventTransferred
	EventDeleted     = checkstore.EventDeleted
)

// Caps of stored issue text.
const (
	MaxTitleBytes = checkstore.MaxTitleBytes
	MaxBodyBytes  = checkstore.MaxBodyBytes
)

// Store functions.
var (
	Issues    = checkstore.Issues
	StoreRead = checkstore.StoreRead
	Observe   = checkstore.Observe
	Get       = checkstore.Get
	Insert    = checkstore.Insert
)
