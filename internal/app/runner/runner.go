// Package runner is the one assembly of the sandbox runner
// (quavon-sandbox-runner): the backend policy, the backends (Docker,
// Firecracker; Kubernetes from internal/app/runner/kube), the image
// lockfile, the pool's Valkey transport (jobs, blobs, replay guard, egress
// grants), the executor and the job loop, wired once. The binary (New), the
// in-process runner of `quavon scan` and the tests (StartLocal) all go
// through Build.
//
// The binary selects its backend from QUAVON_SANDBOX_BACKEND among the
// Openers it was built with; the Kubernetes backend's opener lives in its
// own package so that client-go is linked by quavon-sandbox-runner only,
// never by the quavon CLI, which links this package for `quavon scan`.
package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"regexp"
	"time"

	dockerclient "github.com/docker/docker/client"
	"github.com/valkey-io/valkey-go"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/metrics"
	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/sandbox/runner"
	"github.com/quavon/quavon/internal/sandbox/runner/docker"
	"github.com/quavon/quavon/internal/sandbox/runner/firecracker"
	"github.com/quavon/quavon/internal/sandbox/valkeyq"
	"github.com/quavon/quavon/internal/snapshot"
	qvalkey "github.com/quavon/quavon/internal/valkey"
)

// Parts are what the job loop is built from, however they were obtained.
type Parts struct {
	Valkey  valkey.Client
	Pool    string
	Keys    *sandbox.KeyRing
	Backend runner.Backend
	Images  *runner.Lockfile
	// Ceiling clamps every job's limits; the zero value means
	// sandbox.DefaultLimitCeiling.
	Ceiling  sandbox.Limits
	Snapshot snapshot.Limits
	// Egress, when not nil, enables setup-step egress (Grants is filled in
	// from Valkey).
	Egress      *runner.EgressConfig
	Concurrency int
	// ID is the runner id in results and the stream consumer name.
	ID  string
	Log *slog.Logger
	// Block is how long one stream read waits; 0 means 5 s.
	Block time.Duration
	// Metrics, when not nil, records jobs for /metrics.
	Metrics runner.JobObserver
}

// Built is the wired job loop and the worker-side pieces of the same pool.
type Built struct {
	Runner *runner.Runner
	Names  valkeyq.Names
	Blobs  *valkeyq.BlobStore
}

// Build wires the job loop from p.
func Build(ctx context.Context, p Parts) (*Built, error) {
	if p.Valkey == nil || p.Keys == nil || p.Backend == nil || p.Images == nil || p.Log == nil {
		return nil, errors.New("runner.Build: valkey, keys, backend, images and log are required")
	}
	if p.Ceiling == (sandbox.Limits{}) {
		p.Ceiling = sandbox.DefaultLimitCeiling
	}
	names, err := valkeyq.NamesFor(p.Pool)
	if err != nil {
		return nil, err
	}
	blobs, err := valkeyq.NewBlobStore(p.Valkey, valkeyq.BlobConfig{Names: names, Keys: p.Keys, MaxBytes: p.Snapshot.MaxBytes})
	if err != nil {
		return nil, err
	}
	if p.Egress != nil {
		eg := *p.Egress
		eg.Grants = valkeyq.NewEgressGrants(p.Valkey, names)
		p.Egress = &eg
	}
	exec, err := runner.NewExecutor(runner.ExecutorConfig{
		Backend: p.Backend, Images: p.Images, Blobs: blobs, Ceiling: p.Ceiling,
		Snapshot: p.Snapshot, Log: p.Log, Egress: p.Egress,
	})
	if err != nil {
		return nil, err
	}
	block := p.Block
	if block == 0 {
		block = 5 * time.Second
	}
	consumer, err := valkeyq.NewConsumer(p.Valkey, names, p.ID, block)
	if err != nil {
		return nil, err
	}
	if err := consumer.EnsureGroup(ctx); err != nil {
		return nil, err
	}
	verifier, err := sandbox.NewVerifier(p.Keys, p.Pool, valkeyq.NewReplayGuard(p.Valkey, names), nil)
	if err != nil {
		return nil, err
	}
	r, err := runner.New(runner.Config{
		ID: p.ID, Source: consumer, Verifier: verifier, Keys: p.Keys, Runtime: exec, Log: p.Log,
		Concurrency: p.Concurrency, Metrics: p.Metrics,
	})
	if err != nil {
		return nil, err
	}
	return &Built{Runner: r, Names: names, Blobs: blobs}, nil
}

// Backend is an opened Docker backend and its engine client.
type Backend struct {
	*docker.Backend
	docker *dockerclient.Client
}

// Close removes the containers started ahead and closes the engine
// client.
func (b *Backend) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return errors.Join(b.Backend.Close(ctx), b.docker.Close())
}

// OpenBackend applies the backend policy (SB11: gVisor unless development
// explicitly allows runc; never a fallback), logs the insecure mode's
// warning, and opens the engine and the backend cfg names.
func OpenBackend(ctx context.Context, core config.Core, rc config.Runner, log *slog.Logger) (*Backend, error) {
	if err := checkBackend(core, rc, log); err != nil {
		return nil, err
	}
	if rc.Backend != config.BackendRunsc && rc.Backend != config.BackendRuncInsecure {
		return nil, fmt.Errorf("%s: this mode runs on the local Docker Engine only (docker-runsc or docker-runc-insecure)", rc.Backend)
	}
	return openDocker(ctx, rc, log)
}

// Opened is a backend the runner binary serves jobs on.
type Opened interface {
	runner.Backend
	Runtime() string
	Close() error
}

// Opener opens one backend from the runner's configuration.
type Opener func(ctx context.Context, cfg config.RunnerConfig, images *runner.Lockfile, log *slog.Logger) (Opened, error)

// Openers are the backends a build of the runner can open.
type Openers map[config.Backend]Opener

// DefaultOpeners are the backends of this package: Docker (gVisor, and runc
// for development) and Firecracker.
func DefaultOpeners() Openers {
	dockerOpener := func(ctx context.Context, cfg config.RunnerConfig, _ *runner.Lockfile, log *slog.Logger) (Opened, error) {
		return openDocker(ctx, cfg.Runner, log)
	}
	return Openers{config.BackendRunsc: dockerOpener, config.BackendRuncInsecure: dockerOpener, config.BackendFirecracker: openFirecracker}
}

func openFirecracker(ctx context.Context, cfg config.RunnerConfig, images *runner.Lockfile, log *slog.Logger) (Opened, error) {
	fc := cfg.Backends.Firecracker
	lock, err := firecracker.LoadLock(fc.Lock)
	if err != nil {
		return nil, err
	}
	var proxy netip.AddrPort
	if len(cfg.Runner.Registries) > 0 {
		if proxy, err = netip.ParseAddrPort(cfg.Runner.EgressProxy); err != nil {
			return nil, fmt.Errorf("QUAVON_SANDBOX_REGISTRIES needs QUAVON_SANDBOX_EGRESS_PROXY (ip:port of the proxy): %w", err)
		}
	}
	return firecracker.New(ctx, firecracker.Config{Lock: lock, Images: images, KVMDevice: fc.KVMDevice, ChrootBase: fc.ChrootBase,
		UIDFirst: fc.UIDFirst, UIDLast: fc.UIDLast, CgroupParent: fc.CgroupParent, BootTimeout: fc.BootTimeout,
		EgressProxy: proxy, Log: log})
}

// policy is the backend policy of the runner binary: the firecracker
// backend's KVM device is probed before anything else happens.
func policy(cfg config.RunnerConfig) runner.BackendPolicy {
	return runner.BackendPolicy{
		Backend: string(cfg.Runner.Backend), Production: cfg.Env == config.Production,
		Enterprise: cfg.Edition == config.Enterprise, AllowInsecure: cfg.Runner.AllowInsecure,
		KVM: func() error { return firecracker.ProbeKVM(cfg.Backends.Firecracker.KVMDevice) },
	}
}

func checkBackend(core config.Core, rc config.Runner, log *slog.Logger) error {
	return checkPolicy(runner.BackendPolicy{
		Backend: string(rc.Backend), Production: core.Env == config.Production,
		Enterprise: core.Edition == config.Enterprise, AllowInsecure: rc.AllowInsecure,
	}, log)
}

func checkPolicy(p runner.BackendPolicy, log *slog.Logger) error {
	warning, err := p.Check()
	if err != nil {
		return err
	}
	if warning != "" {
		log.Warn(warning, slog.String("backend", p.Backend))
	}
	return nil
}

func openDocker(ctx context.Context, rc config.Runner, log *slog.Logger) (*Backend, error) {
	dc, err := dockerclient.NewClientWithOpts(dockerclient.WithHost(rc.DockerHost), dockerclient.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	b, err := docker.New(ctx, dc, docker.Mode(rc.Backend), string(rc.RunscPlatform))
	if err != nil {
		dc.Close()
		return nil, err
	}
	if rc.Backend == config.BackendRunsc {
		warnShmemTHP(log, docker.ShmemTHPFile)
	}
	if n, err := b.RemoveLeftovers(ctx); err != nil {
		log.Warn("sandbox: prestarted containers of an earlier runner not removed", slog.String("error", err.Error()))
	} else if n > 0 {
		log.Info("sandbox: removed prestarted containers of an earlier runner", slog.Int("containers", n))
	}
	b.Prestart(rc.Prestart)
	return &Backend{Backend: b, docker: dc}, nil
}

// warnShmemTHP logs a warning when this host's kernel gives gVisor no huge
// pages (docker.ShmemTHPFile): every job runs more slowly, nothing is less
// safe, so the runner starts. It reads the runner's own view of /sys,
// which in a container is the host's.
func warnShmemTHP(log *slog.Logger, file string) {
	v, err := docker.ShmemTHP(file)
	switch {
	case err != nil:
		log.Warn("cannot read the host's huge page setting for gVisor", slog.String("file", file), slog.String("error", err.Error()))
	case !docker.ShmemTHPServesGVisor(v):
		log.Warn("the host's kernel gives gVisor no huge pages: "+docker.ShmemTHPCost+"; on the host: echo advise > "+file,
			slog.String("file", file), slog.String("value", v))
	}
}

// Service is the runner binary.
type Service struct {
	built   *Built
	closers []func() error
	metrics *metrics.Server // nil unless QUAVON_SANDBOX_METRICS_LISTEN is set
	log     *slog.Logger
}

// runnerLabels are the closed label sets of the runner's metrics, from the
// sandbox contract.
func runnerLabels() metrics.RunnerLabels {
	str := func(vs ...any) []string {
		out := make([]string, len(vs))
		for i, v := range vs {
			out[i] = fmt.Sprint(v)
		}
		return out
	}
	return metrics.RunnerLabels{
		Purposes:     str(sandbox.PurposeSAST, sandbox.PurposeFixTest, sandbox.PurposeFixLint),
		ImageClasses: sandbox.ImageClasses,
		Statuses:     str(sandbox.StatusCompleted, sandbox.StatusTimedOut, sandbox.StatusFailed, sandbox.StatusRejected),
		RejectReasons: str(sandbox.RejectMalformed, sandbox.RejectUnknownKey, sandbox.RejectBadSignature, sandbox.RejectSchemaInvalid,
			sandbox.RejectExpired, sandbox.RejectTooFarAhead, sandbox.RejectReplayed),
	}
}

var hostRE = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// ID returns the configured runner id, or the host name made safe.
func ID(rc config.Runner) string {
	if rc.ID != "" {
		return rc.ID
	}
	h, _ := os.Hostname()
	id := hostRE.ReplaceAllString(h, "-")
	if len(id) > 64 {
		id = id[:64]
	}
	return id
}

// New builds the runner from its configuration with the backend openers
// of this build. It refuses to start (before touching Valkey or the
// runtime) on a configuration that must never run, and on a backend this
// build cannot open.
func New(ctx context.Context, cfg config.RunnerConfig, log *slog.Logger, openers Openers) (_ *Service, err error) {
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	if err := sandbox.ValidatePool(cfg.Pool); err != nil {
		return nil, fmt.Errorf("QUAVON_SANDBOX_POOL: %w", err)
	}
	ceiling, err := sandbox.ParseLimitCeiling(cfg.Runner.CeilingJSON)
	if err != nil {
		return nil, err
	}
	// The policy first: a refused backend never reaches the key or the
	// runtime.
	if err := checkPolicy(policy(cfg), log); err != nil {
		return nil, err
	}
	open, ok := openers[cfg.Runner.Backend]
	if !ok {
		return nil, fmt.Errorf("QUAVON_SANDBOX_BACKEND=%s is not in this build of the runner", cfg.Runner.Backend)
	}
	keys, err := sandbox.LoadKeyRing(cfg.SandboxKeys.SigningKeyFile, cfg.SandboxKeys.PreviousKeysFile)
	if err != nil {
		return nil, err
	}
	images, err := runner.LoadLockfile(cfg.Runner.ImagesLock)
	if err != nil {
		return nil, err
	}
	s := &Service{}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	vk, err := qvalkey.Open(ctx, qvalkey.Config{Addr: cfg.Valkey.Addr, Username: cfg.Valkey.User, PasswordFile: cfg.Valkey.PasswordFile})
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, func() error { vk.Close(); return nil })
	backend, err := open(ctx, cfg, images, log)
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, backend.Close)
	var eg *runner.EgressConfig
	if len(cfg.Runner.Registries) > 0 {
		proxy, err := netip.ParseAddrPort(cfg.Runner.EgressProxy)
		if err != nil {
			return nil, fmt.Errorf("QUAVON_SANDBOX_REGISTRIES needs QUAVON_SANDBOX_EGRESS_PROXY (ip:port of the proxy): %w", err)
		}
		if n, ok := backend.(interface {
			EnsureEgressNetwork(context.Context, string) error
		}); ok {
			if err := n.EnsureEgressNetwork(ctx, cfg.Runner.EgressNetwork); err != nil {
				return nil, err
			}
		}
		eg = &runner.EgressConfig{Registries: cfg.Runner.Registries, Network: cfg.Runner.EgressNetwork, Proxy: proxy,
			HostProxy: cfg.Runner.EgressHostProxy}
	}
	id := ID(cfg.Runner)
	reg := metrics.NewRegistry()
	recorder := metrics.NewRunner(reg, string(cfg.Runner.Backend), runnerLabels())
	s.log = log
	if cfg.MetricsListen != "" {
		if s.metrics, err = metrics.Listen(cfg.MetricsListen, reg); err != nil {
			return nil, err
		}
		s.closers = append(s.closers, s.metrics.Close)
		log.Info("sandbox runner metrics listening", slog.String("addr", s.metrics.Addr()))
	}
	s.built, err = Build(ctx, Parts{
		Valkey: vk, Pool: cfg.Pool, Keys: keys, Backend: backend, Images: images, Ceiling: ceiling,
		Snapshot: snapshot.Limits{MaxBytes: cfg.Snapshots.MaxBytes, MaxEntries: cfg.Snapshots.MaxEntries},
		Egress:   eg, Concurrency: cfg.Runner.Concurrency, ID: id, Log: log, Metrics: recorder,
	})
	if err != nil {
		return nil, err
	}
	log.Info("sandbox runner started", slog.String("runner_id", id), slog.String("pool", cfg.Pool),
		slog.String("backend", backend.Name()), slog.String("runtime", backend.Runtime()),
		slog.String("key_id", keys.Current().ID()), slog.Int("concurrency", cfg.Runner.Concurrency), slog.Int("prestart", cfg.Runner.Prestart))
	return s, nil
}

// MetricsAddr is the metrics listener's address ("" when off).
func (s *Service) MetricsAddr() string {
	if s.metrics == nil {
		return ""
	}
	return s.metrics.Addr()
}

// Run serves jobs (and /metrics, when on) until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	if s.metrics != nil {
		defer s.metrics.Start(s.log, "sandbox runner")()
	}
	return s.built.Runner.Serve(ctx)
}

// Close releases Docker and Valkey.
func (s *Service) Close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
}

// Local is a runner in this process and the worker-side client that feeds
// it, over the same Valkey contract (signed jobs, encrypted snapshots,
// signed results) as a separate runner.
type Local struct {
	Client *valkeyq.Client
	stop   context.CancelFunc
	done   chan struct{}
}

// StartLocal builds p (ID defaults to "local-<prefix>", Block to 1 s) and
// starts the job loop; Close stops it.
func StartLocal(ctx context.Context, p Parts) (*Local, error) {
	if p.Block == 0 {
		p.Block = time.Second
	}
	if p.ID == "" {
		names, err := valkeyq.NamesFor(p.Pool)
		if err != nil {
			return nil, err
		}
		p.ID = "local-" + names.Prefix()
	}
	b, err := Build(ctx, p)
	if err != nil {
		return nil, err
	}
	client, err := valkeyq.NewClient(p.Pool, valkeyq.NewQueue(p.Valkey, b.Names, p.Keys), b.Blobs, p.Snapshot)
	if err != nil {
		return nil, err
	}
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	l := &Local{Client: client, stop: stop, done: make(chan struct{})}
	go func() {
		b.Runner.Serve(sctx)
		close(l.done)
	}()
	return l, nil
}

// Close stops the job loop and waits for running jobs to end.
func (l *Local) Close() {
	l.stop()
	<-l.done
}
