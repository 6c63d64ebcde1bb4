package publish

import (
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/queues"
)

// JobKind is the River kind of a publish job.
const JobKind = "publish_output"

// JobMaxAttempts bounds the attempts of one publish job. Every attempt
// after the first reconciles before it writes, so retries never duplicate.
const JobMaxAttempts = 12

// Job asks quavon-publisher to publish one pending output. Insert it in the
// transaction that makes the output ready (or approves it), with
// InsertOpts, so the job exists exactly when the output does. It carries
// ids only.
type Job struct {
	Tenant   postgres.TenantID `json:"tenant"`
	OutputID string            `json:"output"`
}

// Kind implements river.JobArgs.
func (Job) Kind() string { return JobKind }

// InsertOpts puts the job on the publish queue, once per output while one
// is waiting, running or retrying (a redelivered event adds none). A
// finished job does not count, so the sweep can ask again for an output
// whose jobs gave up; a job for a settled output changes nothing.
func (Job) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queues.Publish, MaxAttempts: JobMaxAttempts,
		UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{rivertype.JobStateAvailable,
			rivertype.JobStatePending, rivertype.JobStateRunning, rivertype.JobStateRetryable, rivertype.JobStateScheduled}}}
}
