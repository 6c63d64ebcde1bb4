package llm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// RetryPolicy bounds WithRetry. Zero fields take the defaults.
type RetryPolicy struct {
	// MaxRetries after the first attempt (default 4; negative: none).
	MaxRetries int
	// MaxWait caps the total time spent waiting between attempts
	// (default 2 minutes). A retry-after beyond what is left ends the
	// retries at once.
	MaxWait time.Duration
	// BaseDelay and MaxDelay shape the exponential backoff with full
	// jitter used when the server gives no retry-after (1 s, 30 s).
	BaseDelay, MaxDelay time.Duration
	// Sleep waits d or until ctx ends; tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Retry defaults.
const (
	DefaultMaxRetries = 4
	DefaultMaxWait    = 2 * time.Minute
	defaultBaseDelay  = time.Second
	defaultMaxDelay   = 30 * time.Second
)

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxRetries == 0 {
		p.MaxRetries = DefaultMaxRetries
	}
	if p.MaxRetries < 0 {
		p.MaxRetries = 0
	}
	if p.MaxWait <= 0 {
		p.MaxWait = DefaultMaxWait
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = defaultBaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = defaultMaxDelay
	}
	if p.Sleep == nil {
		p.Sleep = sleep
	}
	return p
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// WithRetry retries calls that failed with a retryable *APIError (429 rate
// limits, 529 / overloaded, other 5xx) and nothing else: not bad requests,
// auth, unknown models, spend limits, transport errors or timeouts (a call
// that may have reached the model is not sent twice). It honours
// retry-after, is bounded in count and total waiting time, and never waits
// past the context's deadline.
func WithRetry(m Model, p RetryPolicy) Model {
	return &retrying{next: m, p: p.withDefaults()}
}

type retrying struct {
	next Model
	p    RetryPolicy
}

func (r *retrying) Info() Info { return r.next.Info() }

// RetriedError is the error of a call that was retried before it failed.
type RetriedError struct {
	Err     error
	Retries int
}

func (e *RetriedError) Error() string { return fmt.Sprintf("%v (after %d retries)", e.Err, e.Retries) }
func (e *RetriedError) Unwrap() error { return e.Err }

// RetriesOf is the retry count recorded in err (0 when none).
func RetriesOf(err error) int {
	var re *RetriedError
	if errors.As(err, &re) {
		return re.Retries
	}
	return 0
}

func (r *retrying) Complete(ctx context.Context, req Request) (Response, error) {
	var waited time.Duration
	for attempt := 0; ; attempt++ {
		resp, err := r.next.Complete(ctx, req)
		if err == nil {
			resp.Retries = attempt
			return resp, nil
		}
		fail := func(err error) (Response, error) {
			if attempt == 0 {
				return Response{}, err
			}
			return Response{}, &RetriedError{Err: err, Retries: attempt}
		}
		var ae *APIError
		if !errors.As(err, &ae) || !ae.Retryable() || attempt >= r.p.MaxRetries {
			return fail(err)
		}
		d := ae.RetryAfter
		if d <= 0 {
			backoff := min(r.p.MaxDelay, r.p.BaseDelay<<min(attempt, 20))
			d = time.Duration(rand.Int64N(int64(backoff)) + 1)
		}
		if waited+d > r.p.MaxWait {
			return fail(err)
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
			return fail(err)
		}
		if serr := r.p.Sleep(ctx, d); serr != nil {
			return fail(err)
		}
		waited += d
	}
}
