package sandboxrun

import (
	"context"

	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/sandbox/valkeyq"
	"github.com/quavon/quavon/internal/snapshot"
)

// Sender sends sandbox jobs (*valkeyq.Client).
type Sender interface {
	RunSourcesSized(ctx context.Context, spec valkeyq.JobSpec, base, overlay snapshot.Source) (*sandbox.SandboxResult, int64, error)
}

var _ Sender = (*valkeyq.Client)(nil)

// Recorder sends a run's sandbox jobs through Client and records each as a
// sandbox run (Run): the worker's review and fix runs hand it to the code
// that builds the jobs (scan.Run, fixagent.JobSandbox), so no job leaves
// the worker unrecorded. Purpose and image class come from each job's spec.
type Recorder struct {
	Client Sender
	DB     *postgres.DB
	Tenant postgres.TenantID
	// RepositoryID and exactly one of ReviewRunID (sast) and FixRunID
	// (fix_test, fix_lint).
	RepositoryID, ReviewRunID, FixRunID string
}

// RunSources sends one job and records it.
func (r *Recorder) RunSources(ctx context.Context, spec valkeyq.JobSpec, base, overlay snapshot.Source) (*sandbox.SandboxResult, error) {
	_, res, err := r.RunRecorded(ctx, spec, base, overlay)
	return res, err
}

// RunRecorded is RunSources that also returns the sandbox run's id (fix
// runs link their steps and test results to it).
func (r *Recorder) RunRecorded(ctx context.Context, spec valkeyq.JobSpec, base, overlay snapshot.Source) (string, *sandbox.SandboxResult, error) {
	s := Start{RepositoryID: r.RepositoryID, ReviewRunID: r.ReviewRunID, FixRunID: r.FixRunID, Purpose: spec.Purpose,
		ImageClass: spec.ImageClass}
	return Run(ctx, r.DB, r.Tenant, s, func(ctx context.Context) (*sandbox.SandboxResult, Sizes, error) {
		res, in, err := r.Client.RunSourcesSized(ctx, spec, base, overlay)
		return res, Sizes{In: in}, err
	})
}

// Run is RunSources with directories, as valkeyq.Client.Run.
func (r *Recorder) Run(ctx context.Context, spec valkeyq.JobSpec, baseDir, overlayDir string) (*sandbox.SandboxResult, error) {
	var overlay snapshot.Source
	if overlayDir != "" {
		overlay = snapshot.Dir(overlayDir)
	}
	return r.RunSources(ctx, spec, snapshot.Dir(baseDir), overlay)
}
