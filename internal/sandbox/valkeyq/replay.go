package valkeyq

import (
	"context"
	"time"

	"github.com/valkey-io/valkey-go"
)

// ReplayGuard is the runner's sandbox.ReplayGuard: it keeps seen job ids under <prefix>:seen:<jobId>.
type ReplayGuard struct {
	client valkey.Client
	names  Names
}

// NewReplayGuard returns a guard for one pool.
func NewReplayGuard(client valkey.Client, names Names) *ReplayGuard {
	return &ReplayGuard{client: client, names: names}
}

// Remember sets the seen key with SET NX until until.
func (g *ReplayGuard) Remember(ctx context.Context, jobID string, until time.Time) (bool, error) {
	cmd := g.client.B().Set().Key(g.names.Seen(jobID)).Value("1").Nx().Pxat(until).Build()
	err := g.client.Do(ctx, cmd).Error()
	if valkey.IsValkeyNil(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, nil
}
