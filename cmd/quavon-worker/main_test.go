package main

import (
	"context"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/testenv"
)

// The binary's wiring: configuration, the service role's connection, River
// with the retention job, which runs once at start.
func TestRunsTheRetentionJob(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	cp.Seed(t, "acme", "app", "private")
	u, _ := url.Parse(cp.AppURL)
	pw, _ := u.User.Password()
	u.User = url.User(u.User.Username())
	pwFile := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(pwFile, []byte(pw), 0o600)
	env := []string{"QUAVON_DATABASE_URL=" + u.String(), "QUAVON_DATABASE_PASSWORD_FILE=" + pwFile, "QUAVON_WORKER_METRICS_LISTEN=127.0.0.1:0"}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, env, io.Discard) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		err := cp.Admin.QueryRow(context.Background(),
			"SELECT count(*) FROM river_job WHERE kind = 'retention_sweep' AND state = 'completed'").Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the retention job did not complete within 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
