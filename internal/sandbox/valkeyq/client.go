package valkeyq

import (
	"github.com/quavon/quavon/internal/sandbox"

	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/quavon/quavon/internal/snapshot"
)

// JobSpec is what a worker-side caller decides about a job; the client
// fills in identity, snapshots and validity window.
type JobSpec struct {
	TenantID     string
	Purpose      sandbox.Purpose
	ImageClass   string
	SetupCommand string
	RunCommand   string
	Egress       sandbox.Egress
	Env          map[sandbox.SandboxEnvKey]string
	Limits       sandbox.Limits
	Artefacts    []string
	// TTL is how long a runner may take to pick the job up; 0 means 5 min.
	TTL time.Duration
}

// Client is the worker's one call into the sandbox.
type Client struct {
	pool     string
	queue    *Queue
	blobs    *BlobStore
	snapshot snapshot.Limits
	now      func() time.Time
}

// NewClient returns a client for pool; queue and blobs must be for the same
// pool and key ring.
func NewClient(pool string, queue *Queue, blobs *BlobStore, snap snapshot.Limits) (*Client, error) {
	if queue == nil || blobs == nil {
		return nil, errors.New("NewClient: queue and blob store are required")
	}
	if _, err := NamesFor(pool); err != nil {
		return nil, err
	}
	if snap.MaxBytes == 0 {
		snap.MaxBytes = blobs.maxBytes
	}
	return &Client{pool: pool, queue: queue, blobs: blobs, snapshot: snap, now: time.Now}, nil
}

// NewJobID returns a fresh random job id.
func NewJobID() string {
	var b [16]byte
	rand.Read(b[:])
	return "j" + hex.EncodeToString(b[:])
}

// Run is RunSources with directories: baseDir (and overlayDir, if not
// empty). quavon scan builds its snapshot this way.
func (c *Client) Run(ctx context.Context, spec JobSpec, baseDir, overlayDir string) (*sandbox.SandboxResult, error) {
	var overlay snapshot.Source
	if overlayDir != "" {
		overlay = snapshot.Dir(overlayDir)
	}
	return c.RunSources(ctx, spec, snapshot.Dir(baseDir), overlay)
}

// RunSources builds the base snapshot (and the overlay, if not nil: the
// edits, deletions as whiteouts, applied after the setup step), stores both
// encrypted, signs and enqueues the job, and waits for its verified result
// until the job's deadline. The worker's sources are repository trees read
// from git objects (gitrepo.TreeFiles) and in-memory overlays
// (snapshot.Overlay): no checkout on disk. The snapshots' chunks are
// deleted by the runner once fetched, and here when no runner answered.
func (c *Client) RunSources(ctx context.Context, spec JobSpec, baseSrc, overlaySrc snapshot.Source) (*sandbox.SandboxResult, error) {
	res, _, err := c.RunSourcesSized(ctx, spec, baseSrc, overlaySrc)
	return res, err
}

// RunSourcesSized is RunSources that also returns the bytes of the
// compressed, encrypted snapshots it sent (for sandbox_runs).
func (c *Client) RunSourcesSized(ctx context.Context, spec JobSpec, baseSrc, overlaySrc snapshot.Source) (*sandbox.SandboxResult, int64, error) {
	ttl := spec.TTL
	if ttl == 0 {
		ttl = 5 * time.Minute
	}
	if ttl < 0 || ttl > sandbox.MaxJobTTL {
		return nil, 0, fmt.Errorf("Client.Run: ttl %s out of range", ttl)
	}
	baseSnap, _, err := baseSrc.Build(c.snapshot)
	if err != nil {
		return nil, 0, fmt.Errorf("Client.Run: base: %w", err)
	}
	var overlaySnap []byte
	if overlaySrc != nil {
		if overlaySnap, _, err = overlaySrc.Build(c.snapshot); err != nil {
			return nil, 0, fmt.Errorf("Client.Run: overlay: %w", err)
		}
	}
	base, err := c.blobs.Store(ctx, spec.TenantID, baseSnap)
	if err != nil {
		return nil, 0, fmt.Errorf("Client.Run: %w", err)
	}
	refs := []sandbox.SnapshotRef{base}
	defer func() {
		for _, r := range refs { // no-ops when the runner deleted them
			c.blobs.Delete(context.WithoutCancel(ctx), r)
		}
	}()
	var overlay *sandbox.SnapshotRef
	if overlaySnap != nil {
		o, err := c.blobs.Store(ctx, spec.TenantID, overlaySnap)
		if err != nil {
			return nil, 0, fmt.Errorf("Client.Run: %w", err)
		}
		refs = append(refs, o)
		overlay = &o
	}
	issued := c.now().UTC().Truncate(time.Millisecond)
	job := &sandbox.SandboxJob{
		ID: NewJobID(), Pool: c.pool, TenantID: spec.TenantID, Purpose: spec.Purpose, ImageClass: spec.ImageClass,
		Base: base, Overlay: overlay, SetupCommand: spec.SetupCommand, RunCommand: spec.RunCommand,
		Egress: spec.Egress, Env: spec.Env, Limits: spec.Limits, Artefacts: spec.Artefacts,
		IssuedAt: issued, NotAfter: issued.Add(ttl),
	}
	res, err := c.queue.Run(ctx, job)
	return res, int64(len(baseSnap) + len(overlaySnap)), err
}
