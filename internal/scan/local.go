package scan

import (
	"github.com/quavon/quavon/internal/sandbox/valkeyq"

	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	dockerclient "github.com/docker/docker/client"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/sandbox/runner"
	"github.com/quavon/quavon/internal/sandbox/runner/docker"
	qvalkey "github.com/quavon/quavon/internal/valkey"
)

// Local is the sandbox of one `quavon scan`: a private Valkey (queue and
// blob store), an ephemeral signing key, and the runner code of a
// deployment, in process, on the local Docker Engine.
type Local struct {
	Client  *valkeyq.Client
	Backend string
	Runtime string
	valkey  *qvalkey.Embedded
	local   *runner.Local
	docker  *dockerclient.Client
}

// StartLocal applies the deployment's backend policy (gVisor unless
// development mode explicitly allows runc) and starts the runner.
func StartLocal(ctx context.Context, cfg config.Config, logOut io.Writer) (*Local, string, error) {
	warning, err := runner.BackendPolicy{
		Backend: cfg.Runner.Backend, Production: cfg.Env == config.Production,
		Enterprise: cfg.Edition == config.Enterprise, AllowInsecure: cfg.Runner.AllowInsecure,
	}.Check()
	if err != nil {
		return nil, "", err
	}
	images, err := runner.LoadLockfile(cfg.Runner.ImagesLock)
	if err != nil {
		return nil, "", fmt.Errorf("%w (build the images: deploy/images/build --lock %s)", err, cfg.Runner.ImagesLock)
	}
	if _, err := images.Resolve(ImageClass); err != nil {
		return nil, "", fmt.Errorf("%s: %w (build it: deploy/images/build --only scanners --lock %s)", cfg.Runner.ImagesLock, err, cfg.Runner.ImagesLock)
	}
	dc, err := dockerclient.NewClientWithOpts(dockerclient.WithHost(cfg.Runner.DockerHost), dockerclient.WithAPIVersionNegotiation())
	if err != nil {
		return nil, "", fmt.Errorf("docker client: %w", err)
	}
	backend, err := docker.New(ctx, dc, docker.Mode(cfg.Runner.Backend), cfg.Runner.RunscPlatform)
	if err != nil {
		dc.Close()
		return nil, "", err
	}
	vk, err := qvalkey.StartEmbedded(ctx)
	if err != nil {
		dc.Close()
		return nil, "", err
	}
	secret := make([]byte, sandbox.MinKeyBytes)
	rand.Read(secret)
	key, err := sandbox.NewKey(secret)
	if err != nil {
		return nil, "", errors.Join(err, closeAll(vk, dc))
	}
	ring, err := sandbox.NewKeyRing(key)
	if err != nil {
		return nil, "", errors.Join(err, closeAll(vk, dc))
	}
	if logOut == nil {
		logOut = io.Discard
	}
	l, err := runner.StartLocal(ctx, runner.LocalConfig{
		Valkey: vk.Client, Pool: cfg.Sandbox.Pool, Keys: ring, Backend: backend, Images: images,
		Ceiling: cfg.Runner.Ceiling, Snapshot: cfg.SnapshotLimits(), Concurrency: 1,
		Log: slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return nil, "", errors.Join(err, closeAll(vk, dc))
	}
	return &Local{Client: l.Client, Backend: backend.Name(), Runtime: backend.Runtime(), valkey: vk, local: l, docker: dc}, warning, nil
}

func closeAll(vk *qvalkey.Embedded, dc *dockerclient.Client) error {
	vk.Close()
	return dc.Close()
}

// Close stops the runner and the private Valkey.
func (l *Local) Close() {
	l.local.Close()
	closeAll(l.valkey, l.docker)
}

// ScanEnviron is environ with the defaults `quavon scan` differs on: a
// developer's machine, the lockfile deploy/images/build writes by default.
// Explicit settings win.
func ScanEnviron(environ []string) []string {
	defaults := map[string]string{
		"QUAVON_SANDBOX_IMAGES_LOCK": DefaultImagesLock,
	}
	out := make([]string, 0, len(environ)+len(defaults))
	for k, v := range defaults {
		if _, ok := lookup(environ, k); !ok {
			out = append(out, k+"="+v)
		}
	}
	return append(out, environ...)
}

// DefaultImagesLock is where deploy/images/build writes the lockfile.
const DefaultImagesLock = "/var/lib/quavon/images.lock.json"

func lookup(environ []string, key string) (string, bool) {
	for i := len(environ) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(environ[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}
