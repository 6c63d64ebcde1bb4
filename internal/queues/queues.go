// Package queues names quavon-worker's River queues, so the code that
// inserts a job and the worker that runs its queue agree. Each queue has
// its own concurrency setting (QUAVON_WORKER_*_CONCURRENCY), so long
// review runs never starve fix runs or the maintenance jobs.
package queues

// The queues.
const (
	// Review: pull request events and review runs.
	Review = "review"
	// Fix: issue events and fix runs.
	Fix = "fix"
	// Maintenance: the retention sweep, approval expiry.
	Maintenance = "maintenance"
)

// All lists the queues quavon-worker runs.
var All = []string{Review, Fix, Maintenance}

// Publish is quavon-publisher's queue: one job per output to publish. It
// is not in All: quavon-worker never works it (only the publisher holds
// write tokens); the worker and the API only insert into it.
const Publish = "publish"
