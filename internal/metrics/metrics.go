// Package metrics is Quavon's Prometheus instrumentation: a registry per
// process (Go runtime and process collectors included), served with
// /healthz on a listener of its own (Server), and one recorder per service
// (API, Worker, Runner).
//
// No label carries repository content or anything else a sender chooses:
// every label value is checked against a closed set given when the recorder
// is built (event names Quavon parses, its own queue and job kinds, the
// sandbox contract's purposes, statuses and reasons), and anything outside
// it is recorded as "other". Repository names, owners, installation ids,
// delivery ids, job ids, digests and error texts are never labels.
//
// The package links no domain package (no GitHub client, no sandbox
// contract, no database), so every binary may use it whatever its
// dependency rules.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Other is the label value of anything outside a label's closed set.
const Other = "other"

// NewRegistry returns a registry with the Go runtime and process
// collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	// The prometheus package's own constructors, not package collectors':
	// that one links database/sql (its DBStats collector), which the
	// runner's and the egress proxy's dependency rules forbid.
	reg.MustRegister(prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{})) //nolint:staticcheck // see above
	return reg
}

// closed is a label's set of allowed values.
type closed []string

func (c closed) of(v string) string {
	if slices.Contains(c, v) {
		return v
	}
	return Other
}

// Server serves GET /metrics and GET /healthz on its own listener, apart
// from any API the process has.
type Server struct {
	ln  net.Listener
	srv *http.Server
}

// Listen opens addr (host:port) for reg's metrics.
func Listen(addr string, reg *prometheus.Registry) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics.Listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		Registry:            reg, // promhttp_* about the handler itself
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	return &Server{ln: ln, srv: &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      15 * time.Second,
		MaxHeaderBytes:    8 << 10,
	}}, nil
}

// Addr is the listening address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Run serves until ctx ends, then shuts down (in-flight scrapes get 5 s).
func (s *Server) Run(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(s.ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("metrics: %w", err)
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(shut); err != nil {
		return fmt.Errorf("metrics shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}

// Start serves in the background, apart from the service's own context,
// until the returned stop is called: the metrics listener outlives the
// jobs' shutdown grace, so callers defer stop to run last. stop shuts the
// server down, waits for it, and logs an error as service's.
func (s *Server) Start(log *slog.Logger, service string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			log.Warn(service+" metrics", slog.String("error", err.Error()))
		}
	}
}

// Close stops the server at once.
func (s *Server) Close() error { return s.srv.Close() }

// Webhook outcomes, one per way quavon-api answers a delivery.
const (
	WebhookProcessed    = "processed"     // applied (200)
	WebhookDuplicate    = "duplicate"     // a redelivery, acknowledged (200)
	WebhookIgnored      = "ignored"       // an event or repository Quavon does not act on (202)
	WebhookBadSignature = "bad_signature" // 401, nothing stored
	WebhookTooLarge     = "too_large"     // 413
	WebhookBadRequest   = "bad_request"   // 400: headers or payload malformed
	WebhookNotFound     = "not_found"     // an app without a webhook secret
	WebhookError        = "error"         // 500: rolled back, GitHub redelivers
)

var webhookOutcomes = closed{WebhookProcessed, WebhookDuplicate, WebhookIgnored, WebhookBadSignature, WebhookTooLarge,
	WebhookBadRequest, WebhookNotFound, WebhookError}

// API records quavon-api's webhook intake.
type API struct {
	apps, events closed
	deliveries   *prometheus.CounterVec
	duration     *prometheus.HistogramVec
}

// NewAPI registers the API's metrics on reg. apps and events are the
// label values allowed (the GitHub Apps and the webhook events Quavon
// parses); any other app or event is recorded as "other".
func NewAPI(reg prometheus.Registerer, apps, events []string) *API {
	m := &API{
		apps: closed(apps), events: closed(events),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quavon_webhook_deliveries_total",
			Help: "Webhook deliveries by app, event (Quavon's parsed events, else other) and outcome.",
		}, []string{"app", "event", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "quavon_webhook_duration_seconds",
			Help:    "Time from a delivery's arrival to its answer, by app and outcome.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"app", "outcome"}),
	}
	reg.MustRegister(m.deliveries, m.duration)
	return m
}

// ObserveWebhook records one delivery.
func (m *API) ObserveWebhook(app, event, outcome string, d time.Duration) {
	app, outcome = m.apps.of(app), webhookOutcomes.of(outcome)
	m.deliveries.WithLabelValues(app, m.events.of(event), outcome).Inc()
	m.duration.WithLabelValues(app, outcome).Observe(d.Seconds())
}

// Job outcomes of the worker's River jobs.
const (
	JobCompleted   = "completed"
	JobFailed      = "failed"
	JobCancelled   = "cancelled"
	JobSnoozed     = "snoozed"
	JobInterrupted = "interrupted"
)

var jobOutcomes = closed{JobCompleted, JobFailed, JobCancelled, JobSnoozed, JobInterrupted}

// QueueCount is the number of jobs of one queue in one state.
type QueueCount struct {
	Queue, State string
	Jobs         int64
}

// QueueCounter reads the job counts at scrape time.
type QueueCounter func(ctx context.Context) ([]QueueCount, error)

// jobStates are River's job states.
var jobStates = closed{"available", "cancelled", "completed", "discarded", "pending", "retryable", "running", "scheduled"}

// Worker records quavon-worker's queues.
type Worker struct {
	queues, kinds closed
	jobs          *prometheus.CounterVec
	wait, run     *prometheus.HistogramVec
}

// NewWorker registers the worker's metrics on reg. queues and kinds are the
// worker's own queue names and job kinds. count, when not nil, is asked for
// the queue depths at every scrape (bounded by 5 s); a failure is reported
// as quavon_queue_scrape_errors_total, never as made-up depths.
func NewWorker(reg prometheus.Registerer, queues, kinds []string, count QueueCounter) *Worker {
	m := &Worker{
		queues: closed(queues), kinds: closed(kinds),
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quavon_jobs_total",
			Help: "Jobs this worker finished working, by queue, kind and outcome.",
		}, []string{"queue", "kind", "outcome"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "quavon_job_queue_wait_seconds",
			Help:    "Time a job waited, available, before a worker started it, by queue and kind.",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 10),
		}, []string{"queue", "kind"}),
		run: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "quavon_job_run_seconds",
			Help:    "Time a job ran, by queue, kind and outcome.",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 10),
		}, []string{"queue", "kind", "outcome"}),
	}
	reg.MustRegister(m.jobs, m.wait, m.run)
	if count != nil {
		reg.MustRegister(&queueCollector{count: count, queues: m.queues, errs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "quavon_queue_scrape_errors_total",
			Help: "Scrapes whose queue depths could not be read.",
		})})
	}
	return m
}

// ObserveJob records one worked job.
func (m *Worker) ObserveJob(queue, kind, outcome string, wait, run time.Duration) {
	queue, kind, outcome = m.queues.of(queue), m.kinds.of(kind), jobOutcomes.of(outcome)
	m.jobs.WithLabelValues(queue, kind, outcome).Inc()
	m.wait.WithLabelValues(queue, kind).Observe(wait.Seconds())
	m.run.WithLabelValues(queue, kind, outcome).Observe(run.Seconds())
}

var queueDepthDesc = prometheus.NewDesc("quavon_queue_jobs",
	"Jobs in the database by queue and River state, read at scrape time.", []string{"queue", "state"}, nil)

type queueCollector struct {
	count  QueueCounter
	queues closed
	errs   prometheus.Counter
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueDepthDesc
	c.errs.Describe(ch)
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := c.count(ctx)
	if err != nil {
		c.errs.Inc()
	}
	sum := map[[2]string]int64{}
	for _, q := range counts {
		sum[[2]string{c.queues.of(q.Queue), jobStates.of(q.State)}] += q.Jobs
	}
	for k, n := range sum {
		ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
	c.errs.Collect(ch)
}

// Runner records quavon-sandbox-runner's jobs.
type Runner struct {
	backend                              string
	purposes, classes, statuses, reasons closed
	jobs                                 *prometheus.CounterVec
	duration                             *prometheus.HistogramVec
	rejected                             *prometheus.CounterVec
}

// RunnerLabels are the closed sets of the runner's labels: the sandbox
// contract's purposes, built-in image classes (byo:<name> classes are
// recorded as "byo"), result statuses and reject reasons.
type RunnerLabels struct {
	Purposes, ImageClasses, Statuses, RejectReasons []string
}

// NewRunner registers the runner's metrics on reg; backend is the
// process's configured backend (its runtime label).
func NewRunner(reg prometheus.Registerer, backend string, l RunnerLabels) *Runner {
	m := &Runner{
		backend: backend, purposes: closed(l.Purposes), classes: append(closed(l.ImageClasses), "byo"),
		statuses: closed(l.Statuses), reasons: closed(l.RejectReasons),
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quavon_sandbox_jobs_total",
			Help: "Sandbox jobs run, by runtime (the runner's backend), purpose, image class and status.",
		}, []string{"runtime", "purpose", "image_class", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "quavon_sandbox_job_duration_seconds",
			Help:    "Wall time of sandbox jobs from verification to result, by runtime, purpose and status.",
			Buckets: []float64{.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320, 640, 1280},
		}, []string{"runtime", "purpose", "status"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quavon_sandbox_jobs_rejected_total",
			Help: "Job envelopes refused before any runtime call, by reason.",
		}, []string{"reason"}),
	}
	reg.MustRegister(m.jobs, m.duration, m.rejected)
	return m
}

// JobDone records a job that ran (or failed to).
func (m *Runner) JobDone(purpose, imageClass, status string, d time.Duration) {
	if len(imageClass) > 4 && imageClass[:4] == "byo:" {
		imageClass = "byo"
	}
	purpose, status = m.purposes.of(purpose), m.statuses.of(status)
	m.jobs.WithLabelValues(m.backend, purpose, m.classes.of(imageClass), status).Inc()
	m.duration.WithLabelValues(m.backend, purpose, status).Observe(d.Seconds())
}

// JobRejected records a refused envelope.
func (m *Runner) JobRejected(reason string) {
	m.rejected.WithLabelValues(m.reasons.of(reason)).Inc()
}
