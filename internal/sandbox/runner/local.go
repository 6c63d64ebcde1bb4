package runner

import (
	"github.com/quavon/quavon/internal/sandbox/valkeyq"

	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/snapshot"
)

// LocalConfig wires a worker-side client to a runner in the same process,
// over the same Valkey contract (signed jobs, encrypted snapshots, signed
// results) as a separate runner. `quavon scan` and the tests use it.
type LocalConfig struct {
	Valkey      valkey.Client
	Pool        string
	Keys        *sandbox.KeyRing
	Backend     Backend
	Images      *Lockfile
	Ceiling     sandbox.Limits
	Snapshot    snapshot.Limits
	Concurrency int
	Log         *slog.Logger
	// Egress, when not nil, enables setup-step egress; Grants is filled in.
	Egress *EgressConfig
}

// Local is a running in-process runner and the client that feeds it.
type Local struct {
	Client *valkeyq.Client
	stop   context.CancelFunc
	done   chan struct{}
}

// StartLocal starts the runner loop; Close stops it.
func StartLocal(ctx context.Context, cfg LocalConfig) (*Local, error) {
	if cfg.Valkey == nil || cfg.Keys == nil || cfg.Log == nil {
		return nil, errors.New("runner.StartLocal: valkey, keys and log are required")
	}
	names, err := valkeyq.NamesFor(cfg.Pool)
	if err != nil {
		return nil, err
	}
	blobs, err := valkeyq.NewBlobStore(cfg.Valkey, valkeyq.BlobConfig{Names: names, Keys: cfg.Keys, MaxBytes: cfg.Snapshot.MaxBytes})
	if err != nil {
		return nil, err
	}
	if cfg.Egress != nil {
		eg := *cfg.Egress
		eg.Grants = valkeyq.NewEgressGrants(cfg.Valkey, names)
		cfg.Egress = &eg
	}
	ex, err := NewExecutor(ExecutorConfig{Backend: cfg.Backend, Images: cfg.Images, Blobs: blobs, Ceiling: cfg.Ceiling,
		Snapshot: cfg.Snapshot, Log: cfg.Log, Egress: cfg.Egress})
	if err != nil {
		return nil, err
	}
	id := "local-" + names.Prefix()
	consumer, err := valkeyq.NewConsumer(cfg.Valkey, names, id, time.Second)
	if err != nil {
		return nil, err
	}
	if err := consumer.EnsureGroup(ctx); err != nil {
		return nil, err
	}
	verifier, err := sandbox.NewVerifier(cfg.Keys, cfg.Pool, valkeyq.NewReplayGuard(cfg.Valkey, names), nil)
	if err != nil {
		return nil, err
	}
	r, err := New(Config{ID: id, Source: consumer, Verifier: verifier, Keys: cfg.Keys, Runtime: ex, Log: cfg.Log, Concurrency: cfg.Concurrency})
	if err != nil {
		return nil, err
	}
	client, err := valkeyq.NewClient(cfg.Pool, valkeyq.NewQueue(cfg.Valkey, names, cfg.Keys), blobs, cfg.Snapshot)
	if err != nil {
		return nil, err
	}
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	l := &Local{Client: client, stop: stop, done: make(chan struct{})}
	go func() {
		r.Serve(sctx)
		close(l.done)
	}()
	return l, nil
}

// Close stops the runner loop and waits for running jobs to end.
func (l *Local) Close() {
	l.stop()
	<-l.done
}
