package metrics

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// hostile is what a sender controls: it must never reach a label.
const hostile = "acme/secret-repo\"} 1\nevil"

func serve(t *testing.T) (*Server, func() string) {
	t.Helper()
	reg := NewRegistry()
	api := NewAPI(reg, []string{"review", "fixer"}, []string{"pull_request", "issues"})
	api.ObserveWebhook("review", "pull_request", WebhookProcessed, 20*time.Millisecond)
	api.ObserveWebhook("review", hostile, WebhookIgnored, time.Millisecond)
	api.ObserveWebhook(hostile, "issues", hostile, time.Millisecond)

	w := NewWorker(reg, []string{"review", "fix", "maintenance"}, []string{"retention_sweep"}, func(context.Context) ([]QueueCount, error) {
		return []QueueCount{{"review", "available", 3}, {hostile, "running", 2}, {"fix", hostile, 1}, {"fix", "available", 4}}, nil
	})
	w.ObserveJob("maintenance", "retention_sweep", JobCompleted, time.Second, 2*time.Second)
	w.ObserveJob(hostile, hostile, hostile, 0, 0)

	r := NewRunner(reg, "docker-runsc", RunnerLabels{Purposes: []string{"sast"}, ImageClasses: []string{"scanners"},
		Statuses: []string{"completed", "failed"}, RejectReasons: []string{"replayed"}})
	r.JobDone("sast", "scanners", "completed", 3*time.Second)
	r.JobDone("sast", "byo:"+hostile, hostile, time.Second)
	r.JobRejected("replayed")
	r.JobRejected(hostile)

	s, err := Listen("127.0.0.1:0", reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return s, func() string {
		res, err := http.Get("http://" + s.Addr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 {
			t.Fatalf("GET /metrics: %d %s", res.StatusCode, b)
		}
		return string(b)
	}
}

func parse(t *testing.T, body string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

func value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if got[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func TestMetricsServed(t *testing.T) {
	s, scrape := serve(t)
	body := scrape()
	fams := parse(t, body)
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"quavon_webhook_deliveries_total", map[string]string{"app": "review", "event": "pull_request", "outcome": "processed"}, 1},
		{"quavon_webhook_deliveries_total", map[string]string{"app": "review", "event": Other, "outcome": "ignored"}, 1},
		{"quavon_webhook_deliveries_total", map[string]string{"app": Other, "event": "issues", "outcome": Other}, 1},
		{"quavon_webhook_duration_seconds", map[string]string{"app": "review", "outcome": "processed"}, 1},
		{"quavon_queue_jobs", map[string]string{"queue": "review", "state": "available"}, 3},
		{"quavon_queue_jobs", map[string]string{"queue": "fix", "state": "available"}, 4},
		{"quavon_queue_jobs", map[string]string{"queue": Other, "state": "running"}, 2},
		{"quavon_queue_jobs", map[string]string{"queue": "fix", "state": Other}, 1},
		{"quavon_jobs_total", map[string]string{"queue": "maintenance", "kind": "retention_sweep", "outcome": "completed"}, 1},
		{"quavon_jobs_total", map[string]string{"queue": Other, "kind": Other, "outcome": Other}, 1},
		{"quavon_job_queue_wait_seconds", map[string]string{"queue": "maintenance", "kind": "retention_sweep"}, 1},
		{"quavon_sandbox_jobs_total", map[string]string{"runtime": "docker-runsc", "purpose": "sast", "image_class": "scanners", "status": "completed"}, 1},
		{"quavon_sandbox_jobs_total", map[string]string{"runtime": "docker-runsc", "purpose": "sast", "image_class": "byo", "status": Other}, 1},
		{"quavon_sandbox_job_duration_seconds", map[string]string{"runtime": "docker-runsc", "purpose": "sast", "status": "completed"}, 1},
		{"quavon_sandbox_jobs_rejected_total", map[string]string{"reason": "replayed"}, 1},
		{"quavon_sandbox_jobs_rejected_total", map[string]string{"reason": Other}, 1},
		{"quavon_queue_scrape_errors_total", nil, 0},
	} {
		if got, ok := value(fams, tc.name, tc.labels); !ok || got != tc.want {
			t.Errorf("%s%v = %v (found %v), want %v", tc.name, tc.labels, got, ok, tc.want)
		}
	}
	if _, ok := fams["go_goroutines"]; !ok {
		t.Error("no Go runtime metrics")
	}
	for _, part := range []string{"acme", "secret-repo", "evil"} {
		if strings.Contains(body, part) {
			t.Errorf("a sender's text %q reached /metrics", part)
		}
	}
	res, err := http.Get("http://" + s.Addr() + "/healthz")
	if err != nil || res.StatusCode != http.StatusNoContent {
		t.Fatalf("GET /healthz: %v %v", res, err)
	}
	res.Body.Close()
}

func TestQueueDepthErrorIsCounted(t *testing.T) {
	reg := NewRegistry()
	NewWorker(reg, []string{"review"}, nil, func(context.Context) ([]QueueCount, error) { return nil, errors.New("db down") })
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var depth bool
	for _, f := range fams {
		switch f.GetName() {
		case "quavon_queue_jobs":
			depth = true
		case "quavon_queue_scrape_errors_total":
			if f.Metric[0].Counter.GetValue() != 1 {
				t.Errorf("scrape errors %v", f.Metric[0].Counter.GetValue())
			}
		}
	}
	if depth {
		t.Error("depths reported although they could not be read")
	}
}
