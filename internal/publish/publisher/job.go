package publisher

import (
	"context"
	"errors"
	"time"

	"github.com/riverqueue/river"

	"github.com/quavon/quavon/internal/publish"
)

// Worker runs publish.Job on River's publish queue.
type Worker struct {
	river.WorkerDefaults[publish.Job]
	Publisher *Publisher
}

// Timeout bounds one attempt: the decide transaction, the writes and the
// record.
func (w *Worker) Timeout(*river.Job[publish.Job]) time.Duration {
	return w.Publisher.cfg.WriteTimeout + time.Minute
}

// Work publishes the job's output. A repository that wrote too recently
// snoozes the job (its worker is free for other repositories); every
// other error is retried by River, and the retry reconciles first.
func (w *Worker) Work(ctx context.Context, job *river.Job[publish.Job]) error {
	_, err := w.Publisher.Publish(ctx, job.Args.Tenant, job.Args.OutputID)
	var sp *SpacedError
	if errors.As(err, &sp) {
		return river.JobSnooze(sp.Wait)
	}
	return err
}
