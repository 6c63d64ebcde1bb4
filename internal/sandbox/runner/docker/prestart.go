package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/quavon/quavon/internal/sandbox/runner"
)

// Containers started ahead of their jobs (QUAVON_SANDBOX_PRESTART).
//
// The Engine takes 0.18–0.2 s to start a runc container and 0.5 s to start
// a gVisor sandbox on the machines we measure on, whatever the container
// then runs: most of a small job's time, and a fixed tax on every review
// run's scan. So when a job without a network ends, the backend creates,
// attaches and starts a container of the same shape (image, limits and
// environment: everything of its configuration but the job-id label) and
// keeps it for the next job of that shape. Such a container is exactly the
// container the next job would have got: the entry program is PID 1 and
// waits for the hello on its stdin, and nothing else runs in it. Nothing
// of any job has been in it (the channel key, the request and the snapshot
// all arrive with its job), it serves one job and is removed after it like
// any other, so spec §3's "one container per job, nothing reused" (SB9)
// holds.
//
// Only jobs without a network get one: a setup step's egress network and
// its per-job credentials (in the environment) exist only for the job, and
// Isolate finds a job's container by its job-id label, which a container
// started ahead cannot carry (it says "prestarted" instead).
//
// At most keep shapes are kept, the least recently used dropped first. The
// containers count beyond the runner's concurrency: keep is also the most
// idle containers a runner holds. A prestarted container that died while it
// waited (an Engine restart) is removed and the job gets a fresh one. When
// the runner stops, Close removes them; when it dies, the attach connection
// closes, the entry program reads the end of its input and exits, and the
// next runner on the engine removes the exited container (RemoveLeftovers).

// labelPrestarted is the job-id label of a container started ahead.
const labelPrestarted = "prestarted"

type prestartPool struct {
	mu      sync.Mutex
	keep    int                 // shapes kept; 0: none
	warm    map[string]*started // one container per shape
	used    []string            // shapes by last use, oldest first
	filling map[string]bool     // shapes being started
	closed  bool
	pending sync.WaitGroup
}

// started is a created, attached and started container.
type started struct {
	id       string
	att      types.HijackedResponse
	waitC    <-chan container.WaitResponse
	waitErr  <-chan error
	stopWait context.CancelFunc
}

// Prestart sets how many job shapes the backend keeps a started container
// for (0, the default: none), and removes the least recently used ones'
// beyond that.
func (b *Backend) Prestart(keep int) {
	p := &b.pool
	p.mu.Lock()
	p.keep = max(keep, 0)
	drop := p.evict()
	p.mu.Unlock()
	for _, c := range drop {
		b.remove(context.Background(), c)
	}
}

// shapeOf is the key of the containers a job can be given: "" when it gets
// none started ahead (prestarting off, or a job with a network).
func (b *Backend) shapeOf(spec runner.ContainerSpec, cfg *container.Config, host *container.HostConfig) string {
	b.pool.mu.Lock()
	keep := b.pool.keep
	b.pool.mu.Unlock()
	if keep == 0 || spec.Network != "" || !cfg.NetworkDisabled {
		return ""
	}
	c := *cfg
	c.Labels = nil
	c.Env = slices.Sorted(slices.Values(cfg.Env))
	data, err := json.Marshal(struct {
		Config *container.Config
		Host   *container.HostConfig
	}{&c, host})
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// take hands out the container started for shape, if there is one that is
// still running.
func (b *Backend) take(ctx context.Context, shape string) *started {
	if shape == "" {
		return nil
	}
	p := &b.pool
	p.mu.Lock()
	c := p.warm[shape]
	delete(p.warm, shape)
	p.touch(shape)
	p.mu.Unlock()
	if c == nil {
		return nil
	}
	select {
	case <-c.waitC:
	case <-c.waitErr:
	default:
		// The wait stream reports an exit some time after the engine
		// knows of it: the engine's own state decides (a few ms against
		// the ~200 ms a start costs).
		info, err := b.cli.ContainerInspect(ctx, c.id)
		if err == nil && info.State != nil && info.State.Running && !info.State.Paused && !info.State.Restarting {
			return c
		}
	}
	// It died while it waited: the job gets a fresh one.
	b.remove(context.Background(), c)
	return nil
}

// touch marks shape as the most recently used. The caller holds mu.
func (p *prestartPool) touch(shape string) {
	p.used = slices.DeleteFunc(p.used, func(s string) bool { return s == shape })
	p.used = append(p.used, shape)
}

// start creates, attaches and starts a container. The wait is registered
// before the start, so a fast exit is not missed; it lives until remove.
func (b *Backend) start(ctx context.Context, cfg *container.Config, host *container.HostConfig) (*started, error) {
	created, err := b.cli.ContainerCreate(ctx, cfg, host, nil, nil, "")
	if err != nil {
		return nil, fmt.Errorf("docker: create: %w", err)
	}
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	c := &started{id: created.ID, stopWait: stop}
	fail := func(err error) (*started, error) {
		b.remove(wctx, c)
		return nil, err
	}
	if c.att, err = b.cli.ContainerAttach(ctx, c.id, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true}); err != nil {
		return fail(fmt.Errorf("docker: attach: %w", err))
	}
	c.waitC, c.waitErr = b.cli.ContainerWait(wctx, c.id, container.WaitConditionNextExit)
	if err := b.cli.ContainerStart(ctx, c.id, container.StartOptions{}); err != nil {
		return fail(fmt.Errorf("docker: start: %w", err))
	}
	return c, nil
}

// remove closes the container's attachment and removes it, whatever ctx
// has become.
func (b *Backend) remove(ctx context.Context, c *started) error {
	if c.att.Conn != nil {
		c.att.Close()
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	defer c.stopWait()
	if err := b.cli.ContainerRemove(rctx, c.id, container.RemoveOptions{Force: true}); err != nil {
		return fmt.Errorf("docker: remove %s: %w", c.id[:12], err)
	}
	return nil
}

// refill starts a container for shape in the background, unless one is
// there or on its way, and drops the least recently used shapes' beyond
// keep.
func (b *Backend) refill(shape string, cfg *container.Config, host *container.HostConfig) {
	if shape == "" {
		return
	}
	p := &b.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.keep == 0 || p.warm[shape] != nil || p.filling[shape] {
		return
	}
	if p.filling == nil {
		p.filling, p.warm = map[string]bool{}, map[string]*started{}
	}
	p.filling[shape] = true
	ahead := *cfg
	ahead.Labels = map[string]string{LabelJobID: labelPrestarted}
	p.pending.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c, err := b.start(ctx, &ahead, host)
		var drop []*started
		p.mu.Lock()
		delete(p.filling, shape)
		switch {
		case err != nil:
		case p.closed || p.keep == 0:
			drop = append(drop, c)
		default:
			p.warm[shape] = c
			drop = p.evict()
		}
		p.mu.Unlock()
		for _, c := range drop {
			b.remove(ctx, c)
		}
	})
}

// evict takes the least recently used shapes' containers out of the pool
// until at most keep are left. The caller holds mu and removes them.
func (p *prestartPool) evict() []*started {
	// Shapes without a container are forgotten.
	p.used = slices.DeleteFunc(p.used, func(s string) bool { return p.warm[s] == nil && !p.filling[s] })
	var out []*started
	for _, s := range slices.Clone(p.used) {
		if len(p.warm) <= p.keep {
			break
		}
		if c := p.warm[s]; c != nil {
			delete(p.warm, s)
			p.used = slices.DeleteFunc(p.used, func(u string) bool { return u == s })
			out = append(out, c)
		}
	}
	return out
}

// WaitPrestarts waits until no container is being started ahead.
func (b *Backend) WaitPrestarts() { b.pool.pending.Wait() }

// Prestarted lists the ids of the containers started ahead and waiting.
func (b *Backend) Prestarted() []string {
	b.pool.mu.Lock()
	defer b.pool.mu.Unlock()
	var ids []string
	for _, c := range b.pool.warm {
		ids = append(ids, c.id)
	}
	slices.Sort(ids)
	return ids
}

// Close stops prestarting and removes the containers started ahead.
func (b *Backend) Close(ctx context.Context) error {
	p := &b.pool
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.pending.Wait()
	p.mu.Lock()
	warm := p.warm
	p.warm = nil
	p.mu.Unlock()
	var errs []error
	for _, c := range warm {
		if err := b.remove(ctx, c); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("docker: %d prestarted container(s) not removed: %w", len(errs), errs[0])
	}
	return nil
}

// RemoveLeftovers removes containers a runner that died had started ahead:
// they exited when its attach connection closed. Running ones belong to
// live runners and stay.
func (b *Backend) RemoveLeftovers(ctx context.Context) (int, error) {
	args := filters.NewArgs(filters.Arg("label", LabelJobID+"="+labelPrestarted))
	for _, st := range []string{"exited", "dead"} {
		args.Add("status", st)
	}
	cs, err := b.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: args})
	if err != nil {
		return 0, fmt.Errorf("docker: list prestarted containers: %w", err)
	}
	n := 0
	for _, c := range cs {
		if err := b.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil {
			return n, fmt.Errorf("docker: remove prestarted container %s: %w", c.ID[:12], err)
		}
		n++
	}
	return n, nil
}
