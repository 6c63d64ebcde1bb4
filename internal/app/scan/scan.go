// Package scan is the assembly of `quavon scan`'s sandbox: a private Valkey
// (queue and blob store), an ephemeral signing key, and the runner of a
// deployment (internal/app/runner), in process, on the local Docker Engine.
package scan

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	runnerapp "github.com/quavon/quavon/internal/app/runner"
	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/sandbox/runner"
	"github.com/quavon/quavon/internal/sandbox/valkeyq"
	"github.com/quavon/quavon/internal/scan"
	"github.com/quavon/quavon/internal/snapshot"
	qvalkey "github.com/quavon/quavon/internal/valkey"
)

// Local is the sandbox of one `quavon scan`.
type Local struct {
	Client  *valkeyq.Client
	Backend string
	Runtime string
	valkey  *qvalkey.Embedded
	local   *runnerapp.Local
	backend *runnerapp.Backend
}

// StartLocal applies the deployment's backend policy (gVisor unless
// development mode explicitly allows runc; its warning goes to logOut) and
// starts the runner.
func StartLocal(ctx context.Context, cfg config.ScanConfig, logOut io.Writer) (*Local, error) {
	if logOut == nil {
		logOut = io.Discard
	}
	log := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ceiling, err := sandbox.ParseLimitCeiling(cfg.Runner.CeilingJSON)
	if err != nil {
		return nil, err
	}
	images, err := runner.LoadLockfile(cfg.Runner.ImagesLock)
	if err != nil {
		return nil, fmt.Errorf("%w (build the images: deploy/images/build --lock %s)", err, cfg.Runner.ImagesLock)
	}
	if _, err := images.Resolve(scan.ImageClass); err != nil {
		return nil, fmt.Errorf("%s: %w (build it: deploy/images/build --only scanners --lock %s)", cfg.Runner.ImagesLock, err, cfg.Runner.ImagesLock)
	}
	backend, err := runnerapp.OpenBackend(ctx, cfg.Core, cfg.Runner, log)
	if err != nil {
		return nil, err
	}
	vk, err := qvalkey.StartEmbedded(ctx)
	if err != nil {
		backend.Close()
		return nil, err
	}
	fail := func(err error) (*Local, error) {
		vk.Close()
		return nil, errors.Join(err, backend.Close())
	}
	secret := make([]byte, sandbox.MinKeyBytes)
	rand.Read(secret)
	key, err := sandbox.NewKey(secret)
	if err != nil {
		return fail(err)
	}
	ring, err := sandbox.NewKeyRing(key)
	if err != nil {
		return fail(err)
	}
	l, err := runnerapp.StartLocal(ctx, runnerapp.Parts{
		Valkey: vk.Client, Pool: sandbox.DefaultPool, Keys: ring, Backend: backend, Images: images,
		Ceiling: ceiling, Snapshot: snapshot.Limits{MaxBytes: cfg.Snapshots.MaxBytes, MaxEntries: cfg.Snapshots.MaxEntries},
		Concurrency: 1, Log: log,
	})
	if err != nil {
		return fail(err)
	}
	return &Local{Client: l.Client, Backend: backend.Name(), Runtime: backend.Runtime(), valkey: vk, local: l, backend: backend}, nil
}

// Prestart sets how many job shapes get a container started ahead
// (QUAVON_SANDBOX_PRESTART; `quavon scan` itself keeps none) and removes
// those beyond; WaitPrestarts waits until none is being started.
func (l *Local) Prestart(keep int) { l.backend.Prestart(keep) }

// WaitPrestarts: see Prestart.
func (l *Local) WaitPrestarts() { l.backend.WaitPrestarts() }

// Close stops the runner and the private Valkey.
func (l *Local) Close() {
	l.local.Close()
	l.valkey.Close()
	l.backend.Close()
}

// Environ is environ with the defaults `quavon scan` differs on: a
// developer's machine, the lockfile deploy/images/build writes by default.
// Explicit settings win.
func Environ(environ []string) []string {
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
