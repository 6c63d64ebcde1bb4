package testenv

import (
	"github.com/quavon/quavon/internal/devenv"

	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
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

// BYOImage builds a test image FROM the lockfile's byo.smoke image
// (busybox, the sandbox images' shape) with files added (path in the image
// → content, mode 0755), offline with the classic builder, and returns its
// ID; it is removed at cleanup.
func BYOImage(tb testing.TB, files map[string]string) string {
	tb.Helper()
	var lock struct {
		BYO map[string]struct{ Ref string } `json:"byo"`
	}
	data, err := os.ReadFile(ImagesLock(tb))
	if err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(data, &lock); err != nil || lock.BYO["smoke"].Ref == "" {
		tb.Fatalf("the lockfile has no byo.smoke image (%v)", err)
	}
	dir := tb.TempDir()
	df := "FROM " + lock.BYO["smoke"].Ref + "\n"
	for i, name := range slices.Sorted(maps.Keys(files)) {
		ctxName := fmt.Sprintf("f%d", i)
		if err := os.WriteFile(filepath.Join(dir, ctxName), []byte(files[name]), 0o755); err != nil {
			tb.Fatal(err)
		}
		df += "COPY " + ctxName + " " + name + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644); err != nil {
		tb.Fatal(err)
	}
	build := exec.Command("docker", "build", "-q", "--network", "none", dir)
	build.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	var stderr strings.Builder
	build.Stderr = &stderr
	out, err := build.Output()
	if err != nil {
		tb.Fatalf("docker build: %v: %s", err, stderr.String())
	}
	id := strings.TrimSpace(string(out))
	tb.Cleanup(func() { exec.Command("docker", "rmi", "-f", id).Run() })
	return id
}

// LockWithBYO writes a copy of the test lockfile with byo entries added
// (name → image ID) and returns its path.
func LockWithBYO(tb testing.TB, byo map[string]string) string {
	tb.Helper()
	data, err := os.ReadFile(ImagesLock(tb))
	if err != nil {
		tb.Fatal(err)
	}
	var lock map[string]any
	if err := json.Unmarshal(data, &lock); err != nil {
		tb.Fatal(err)
	}
	entries, _ := lock["byo"].(map[string]any)
	if entries == nil {
		entries = map[string]any{}
	}
	for name, id := range byo {
		entries[name] = map[string]any{"name": "test/" + name, "ref": id}
	}
	lock["byo"] = entries
	out, _ := json.Marshal(lock)
	p := filepath.Join(tb.TempDir(), "images.lock.json")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}
