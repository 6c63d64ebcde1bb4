package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ReplayGuard remembers job ids. Remember reports false when id was seen
// before; it must be atomic across runners.
type ReplayGuard interface {
	Remember(ctx context.Context, jobID string, until time.Time) (fresh bool, err error)
}

// Verifier is the runner's gate: a job it returns passed every check.
type Verifier struct {
	keys   *KeyRing
	pool   string
	replay ReplayGuard
	now    func() time.Time
}

// NewVerifier returns a Verifier for the runner's pool. now may be nil
// (time.Now).
func NewVerifier(keys *KeyRing, pool string, replay ReplayGuard, now func() time.Time) (*Verifier, error) {
	if keys == nil || replay == nil {
		return nil, errors.New("sandbox.NewVerifier: key ring and replay guard are required")
	}
	if err := ValidatePool(pool); err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	return &Verifier{keys: keys, pool: pool, replay: replay, now: now}, nil
}

// Verify checks a job envelope in the order of the contract. The replay
// guard is consulted last, so a job that fails any other check does not
// burn its id.
func (v *Verifier) Verify(ctx context.Context, envelope []byte) (*SandboxJob, error) {
	job, err := OpenJob(v.keys, envelope)
	if err != nil {
		return nil, err
	}
	if job.Pool != v.pool {
		return nil, fmt.Errorf("%w: job for pool %q, runner serves %q", ErrSchemaInvalid, job.Pool, v.pool)
	}
	now := v.now()
	if now.After(job.NotAfter.Add(ClockSkew)) {
		return nil, fmt.Errorf("%w: notAfter %s", ErrExpired, job.NotAfter.Format(time.RFC3339))
	}
	if job.NotAfter.After(now.Add(MaxJobTTL + ClockSkew)) {
		return nil, fmt.Errorf("%w: notAfter %s", ErrTooFarAhead, job.NotAfter.Format(time.RFC3339))
	}
	if job.IssuedAt.After(now.Add(ClockSkew)) {
		return nil, fmt.Errorf("%w: issuedAt %s", ErrTooFarAhead, job.IssuedAt.Format(time.RFC3339))
	}
	fresh, err := v.replay.Remember(ctx, job.ID, job.NotAfter.Add(ClockSkew))
	if err != nil {
		return nil, fmt.Errorf("sandbox.Verify %s: replay guard: %w", job.ID, err)
	}
	if !fresh {
		return nil, fmt.Errorf("%w: job %s", ErrReplayed, job.ID)
	}
	return job, nil
}
