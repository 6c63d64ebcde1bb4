package config

import (
	"regexp"
	"strings"
	"time"
)

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
	// BYOScanners are the bring-your-own scanner images (byo names of the
	// runner's image lockfile) that repositories may run through
	// features.sast.byo; any other name is not run and is reported
	// missing. Empty: none.
	BYOScanners []string
}

// byoNameRE is a lockfile byo name (internal/sandbox/runner).
var byoNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

func (r *reader) worker() Worker {
	w := Worker{
		ReviewConcurrency:      r.intRange("QUAVON_WORKER_REVIEW_CONCURRENCY", 1, 256),
		FixConcurrency:         r.intRange("QUAVON_WORKER_FIX_CONCURRENCY", 1, 256),
		MaintenanceConcurrency: r.intRange("QUAVON_WORKER_MAINTENANCE_CONCURRENCY", 1, 16),
	}
	w.ShutdownGrace = parseDuration(r.vals, "QUAVON_WORKER_SHUTDOWN_GRACE", 0, 10*time.Minute, &r.errs)
	if v := r.vals["QUAVON_SAST_BYO_SCANNERS"]; v != "" {
		for _, name := range strings.Split(v, ",") {
			name = strings.TrimSpace(name)
			if !byoNameRE.MatchString(name) {
				r.fail("QUAVON_SAST_BYO_SCANNERS: %q is not a byo name of the image lockfile ([a-z0-9][a-z0-9._-], at most 63; no byo: prefix)", name)
				continue
			}
			w.BYOScanners = append(w.BYOScanners, name)
		}
	}
	return w
}
