package config

import "time"

// Worker is how quavon-worker runs its River queues.
type Worker struct {
	// ReviewConcurrency, FixConcurrency and MaintenanceConcurrency are the
	// jobs each queue runs at once, so long review runs never starve fix
	// runs or the maintenance jobs.
	ReviewConcurrency      int
	FixConcurrency         int
	MaintenanceConcurrency int
	// ShutdownGrace is how long running jobs may finish after a stop
	// signal before their contexts are cancelled.
	ShutdownGrace time.Duration
}

func (r *reader) worker() Worker {
	w := Worker{
		ReviewConcurrency:      r.intRange("QUAVON_WORKER_REVIEW_CONCURRENCY", 1, 256),
		FixConcurrency:         r.intRange("QUAVON_WORKER_FIX_CONCURRENCY", 1, 256),
		MaintenanceConcurrency: r.intRange("QUAVON_WORKER_MAINTENANCE_CONCURRENCY", 1, 16),
	}
	w.ShutdownGrace = parseDuration(r.vals, "QUAVON_WORKER_SHUTDOWN_GRACE", 0, 10*time.Minute, &r.errs)
	return w
}
