package fix

import (
	"github.com/riverqueue/river"

	"github.com/quavon/quavon/internal/queues"
)

// RunJob is the River job of one fix run (kind fix_run, queue fix): the
// worker's internal/fix/fixjob works it. It lives here, beside the run it
// names, so a trigger that records a run (the webhook intake, a dashboard
// request in quavon-api) queues its job in the same transaction without
// linking the worker's agent and sandbox code.
type RunJob struct {
	TenantID string `json:"tenant_id"`
	RunID    string `json:"run_id"`
}

// Kind is River's job kind.
func (RunJob) Kind() string { return "fix_run" }

// InsertOpts puts the job on the fix queue; one job per run.
func (RunJob) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queues.Fix, MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}
