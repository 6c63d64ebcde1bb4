// Package riverrun is the run loop quavon-worker and quavon-publisher
// share: River's job events recorded as metrics, then work until the
// context ends, a grace for running jobs, and their cancellation.
package riverrun

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/quavon/quavon/internal/metrics"
)

// HardStopWait bounds the wait for cancelled jobs to return.
const HardStopWait = 30 * time.Second

// Recorder records a finished job attempt (*metrics.Worker).
type Recorder interface {
	ObserveJob(queue, kind, outcome string, wait, run time.Duration)
}

var outcomes = map[river.EventKind]string{
	river.EventKindJobCompleted: metrics.JobCompleted, river.EventKindJobFailed: metrics.JobFailed,
	river.EventKindJobCancelled: metrics.JobCancelled, river.EventKindJobSnoozed: metrics.JobSnoozed,
	river.EventKindJobInterrupted: metrics.JobInterrupted,
}

// Run starts client and works until ctx ends, recording every job event
// with rec; then running jobs get grace to finish, and after it their
// contexts are cancelled and River waits (HardStopWait) for them to
// return. name prefixes the log lines; started are the attributes of the
// "started" line.
func Run[T any](ctx context.Context, client *river.Client[T], rec Recorder, grace time.Duration, log *slog.Logger, name string,
	started ...any) error {
	events, unsubscribe := client.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed,
		river.EventKindJobCancelled, river.EventKindJobSnoozed, river.EventKindJobInterrupted)
	observed := make(chan struct{})
	go func() {
		defer close(observed)
		for ev := range events {
			if ev.Job == nil || ev.JobStats == nil {
				continue
			}
			rec.ObserveJob(ev.Job.Queue, ev.Job.Kind, outcomes[ev.Kind], ev.JobStats.QueueWaitDuration, ev.JobStats.RunDuration)
		}
	}()
	defer func() { unsubscribe(); <-observed }()
	if err := client.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	log.Info(name+" started", started...)
	<-ctx.Done()
	log.Info(name+" stopping", slog.Duration("grace", grace))
	soft, cancel := context.WithTimeout(context.Background(), grace)
	err := client.Stop(soft)
	cancel()
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	log.Warn(name + ": jobs still running after the grace; cancelling them")
	hard, cancel := context.WithTimeout(context.Background(), HardStopWait)
	defer cancel()
	return client.StopAndCancel(hard)
}
