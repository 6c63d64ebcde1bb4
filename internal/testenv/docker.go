package testenv

import (
	"github.com/quavon/quavon/internal/devenv"

	"context"
	"os"
	"testing"
	"time"

	"github.com/docker/docker/client"
)

// Docker returns a client of the Docker Engine scripts/test started (the
// default socket), closed at cleanup.
func Docker(tb testing.TB) *client.Client {
	tb.Helper()
	c, err := client.NewClientWithOpts(client.WithHost("unix:///var/run/docker.sock"), client.WithAPIVersionNegotiation())
	if err != nil {
		unavailable(tb, "Docker Engine ("+err.Error()+")")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Ping(ctx); err != nil {
		c.Close()
		unavailable(tb, "Docker Engine ("+err.Error()+")")
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// ImagesLock returns the path of the lockfile deploy/images/build wrote for
// this run (QUAVON_TEST_IMAGES_LOCK).
func ImagesLock(tb testing.TB) string {
	tb.Helper()
	p := os.Getenv("QUAVON_TEST_IMAGES_LOCK")
	if p == "" {
		unavailable(tb, "sandbox images (QUAVON_TEST_IMAGES_LOCK)")
	}
	return p
}

// RunscPlatform is the platform scripts/test registered runsc with.
func RunscPlatform(tb testing.TB) string {
	tb.Helper()
	p := os.Getenv(devenv.VarRunscPlatform)
	if p == "" {
		unavailable(tb, "runsc (QUAVON_TEST_RUNSC_PLATFORM)")
	}
	return p
}
