// Command quavon-sandbox-runner runs signed sandbox jobs (zone Z3).
//
// It pulls jobs from its pool's Valkey stream as the sandbox ACL user,
// verifies each completely, runs it in a gVisor (or, in development only,
// runc) container through the Docker Engine API and pushes a signed result.
// It holds the pool key and its Valkey password, nothing else: no database,
// no tokens, no model keys, and it listens on no port.
package main

import (
	"github.com/quavon/quavon/internal/sandbox/valkeyq"

	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"os/signal"
	"regexp"
	"syscall"
	"time"

	dockerclient "github.com/docker/docker/client"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/sandbox/runner"
	"github.com/quavon/quavon/internal/sandbox/runner/docker"
	qvalkey "github.com/quavon/quavon/internal/valkey"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Environ(), os.Stderr)
	stop()
	if err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "quavon-sandbox-runner:", err)
		os.Exit(1)
	}
}

var hostRE = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// run wires the runner from environ and serves until ctx ends.
func run(ctx context.Context, environ []string, logOut io.Writer) error {
	log := slog.New(slog.NewJSONHandler(logOut, nil))
	cfg, err := config.Load(environ)
	if err != nil {
		return err
	}
	warning, err := runner.BackendPolicy{
		Backend: cfg.Runner.Backend, Production: cfg.Env == config.Production,
		Enterprise: cfg.Edition == config.Enterprise, AllowInsecure: cfg.Runner.AllowInsecure,
	}.Check()
	if err != nil {
		return err
	}
	if warning != "" {
		log.Warn(warning, slog.String("backend", cfg.Runner.Backend))
	}
	keys, err := cfg.SandboxKeys()
	if err != nil {
		return err
	}
	images, err := runner.LoadLockfile(cfg.Runner.ImagesLock)
	if err != nil {
		return err
	}
	id := cfg.Runner.ID
	if id == "" {
		h, _ := os.Hostname()
		id = hostRE.ReplaceAllString(h, "-")
		if len(id) > 64 {
			id = id[:64]
		}
	}
	names, err := valkeyq.NamesFor(cfg.Sandbox.Pool)
	if err != nil {
		return err
	}
	vk, err := qvalkey.Open(ctx, qvalkey.Config{Addr: cfg.Valkey.Addr, Username: cfg.Valkey.User, PasswordFile: cfg.Valkey.PasswordFile})
	if err != nil {
		return err
	}
	defer vk.Close()
	dc, err := dockerclient.NewClientWithOpts(dockerclient.WithHost(cfg.Runner.DockerHost), dockerclient.WithAPIVersionNegotiation())
	if err != nil {
		return fmt.Errorf("docker client: %w", err)
	}
	defer dc.Close()
	backend, err := docker.New(ctx, dc, docker.Mode(cfg.Runner.Backend), cfg.Runner.RunscPlatform)
	if err != nil {
		return err
	}
	blobs, err := valkeyq.NewBlobStore(vk, valkeyq.BlobConfig{Names: names, Keys: keys, MaxBytes: cfg.Sandbox.MaxSnapshotBytes})
	if err != nil {
		return err
	}
	var eg *runner.EgressConfig
	if len(cfg.Runner.Registries) > 0 {
		proxy, err := netip.ParseAddrPort(cfg.Runner.EgressProxy)
		if err != nil {
			return fmt.Errorf("QUAVON_SANDBOX_REGISTRIES needs QUAVON_SANDBOX_EGRESS_PROXY (ip:port of the proxy): %w", err)
		}
		if err := backend.EnsureEgressNetwork(ctx, cfg.Runner.EgressNetwork); err != nil {
			return err
		}
		eg = &runner.EgressConfig{Registries: cfg.Runner.Registries, Network: cfg.Runner.EgressNetwork, Proxy: proxy,
			HostProxy: cfg.Runner.EgressHostProxy, Grants: valkeyq.NewEgressGrants(vk, names)}
		if eg.HostProxy {
			log.Warn("INSECURE EGRESS: the egress proxy runs on the host, so setup steps can reach the host's own services on the egress network's gateway address")
		}
	}
	exec, err := runner.NewExecutor(runner.ExecutorConfig{
		Backend: backend, Images: images, Blobs: blobs, Ceiling: cfg.Runner.Ceiling,
		Snapshot: cfg.SnapshotLimits(), Log: log, Egress: eg,
	})
	if err != nil {
		return err
	}
	consumer, err := valkeyq.NewConsumer(vk, names, id, 5*time.Second)
	if err != nil {
		return err
	}
	if err := consumer.EnsureGroup(ctx); err != nil {
		return err
	}
	verifier, err := sandbox.NewVerifier(keys, cfg.Sandbox.Pool, valkeyq.NewReplayGuard(vk, names), nil)
	if err != nil {
		return err
	}
	r, err := runner.New(runner.Config{
		ID: id, Source: consumer, Verifier: verifier, Keys: keys, Runtime: exec, Log: log,
		Concurrency: cfg.Runner.Concurrency,
	})
	if err != nil {
		return err
	}
	log.Info("sandbox runner started", slog.String("runner_id", id), slog.String("pool", cfg.Sandbox.Pool),
		slog.String("backend", backend.Name()), slog.String("runtime", backend.Runtime()),
		slog.String("key_id", keys.Current().ID()), slog.Int("concurrency", cfg.Runner.Concurrency))
	return r.Serve(ctx)
}
