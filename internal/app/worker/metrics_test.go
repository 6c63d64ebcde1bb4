package worker_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"

	workerapp "github.com/quavon/quavon/internal/app/worker"
	"github.com/quavon/quavon/internal/config"
)

// /metrics of the assembled worker: River's job events (the maintenance
// jobs run at start) and the queue depths read from the database, no
// repository or tenant in any label.
func TestWorkerMetrics(t *testing.T) {
	w := newWorld(t)
	cfg, err := config.LoadWorker(w.env(t, "QUAVON_WORKER_METRICS_LISTEN=127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := workerapp.New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	addr := <-s.MetricsReady()
	scrape := func() string {
		res, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	done1 := regexp.MustCompile(`(?m)^quavon_jobs_total\{kind="retention_sweep",outcome="completed",queue="maintenance"\} [1-9]`)
	depth := regexp.MustCompile(`(?m)^quavon_queue_jobs\{queue="maintenance",state="completed"\} [1-9]`)
	wait := regexp.MustCompile(`(?m)^quavon_job_run_seconds_count\{kind="approval_expiry",outcome="completed",queue="maintenance"\} [1-9]`)
	var body string
	waitFor(t, "the maintenance jobs in /metrics", func() bool {
		body = scrape()
		return done1.MatchString(body) && depth.MatchString(body) && wait.MatchString(body)
	})
	if strings.Contains(body, "acme") || strings.Contains(body, string(w.tenant)) {
		t.Fatal("a repository or tenant reached /metrics")
	}
	if !strings.Contains(body, "quavon_queue_scrape_errors_total 0") {
		t.Fatal("queue depths could not be read")
	}
}
