package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestWorkerSettings(t *testing.T) {
	t.Parallel()
	c, err := LoadWorker(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.Worker, Worker{ReviewConcurrency: 2, FixConcurrency: 2, MaintenanceConcurrency: 1, ShutdownGrace: 30 * time.Second}) {
		t.Fatalf("defaults %+v", c.Worker)
	}
	c, err = LoadWorker([]string{"QUAVON_WORKER_REVIEW_CONCURRENCY=8", "QUAVON_WORKER_FIX_CONCURRENCY=1",
		"QUAVON_WORKER_MAINTENANCE_CONCURRENCY=2", "QUAVON_WORKER_SHUTDOWN_GRACE=0s", "QUAVON_SAST_BYO_SCANNERS=acme-lint, corp.sec_2"})
	if err != nil || !reflect.DeepEqual(c.Worker, Worker{ReviewConcurrency: 8, FixConcurrency: 1, MaintenanceConcurrency: 2,
		BYOScanners: []string{"acme-lint", "corp.sec_2"}}) {
		t.Fatalf("%+v %v", c.Worker, err)
	}
	for _, env := range []string{"QUAVON_WORKER_REVIEW_CONCURRENCY=0", "QUAVON_WORKER_FIX_CONCURRENCY=lots",
		"QUAVON_WORKER_MAINTENANCE_CONCURRENCY=17", "QUAVON_WORKER_SHUTDOWN_GRACE=1h", "QUAVON_WORKER_SHUTDOWN_GRACE=-1s",
		"QUAVON_WORKER_SHUTDOWN_GRACE=30", "QUAVON_SAST_BYO_SCANNERS=byo:acme", "QUAVON_SAST_BYO_SCANNERS=acme,,x",
		"QUAVON_SAST_BYO_SCANNERS=../etc"} {
		name, _, _ := strings.Cut(env, "=")
		if _, err := LoadWorker([]string{env}); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", env, err)
		}
	}
	// The worker's settings are the worker's only.
	if _, err := LoadAPI([]string{"QUAVON_WORKER_FIX_CONCURRENCY=2"}); err == nil || !strings.Contains(err.Error(), "a setting of quavon-worker, not of quavon-api") {
		t.Errorf("the API took a worker setting: %v", err)
	}
}

func TestWorkerReviewRuns(t *testing.T) {
	c, err := LoadWorker(nil)
	if err != nil || c.BrokerClient.Addr != "" {
		t.Fatalf("default: %v, broker %q (without a credential the worker reads nothing on GitHub)", err, c.BrokerClient.Addr)
	}
	c, err = LoadWorker([]string{"QUAVON_BROKER_CREDENTIAL_FILE=/run/secrets/broker", "QUAVON_GITHUB_REVIEW_APP_SLUG=quavon-review",
		"QUAVON_GITHUB_GIT_URL=https://ghe.example.com/"})
	if err != nil || c.BrokerClient.Addr == "" || c.ReviewAppSlug != "quavon-review" || c.Runs.GitURL != "https://ghe.example.com/" ||
		c.Runs.GitCacheDir != "/var/lib/quavon/git" {
		t.Fatalf("%v %+v %q %+v", err, c.BrokerClient, c.ReviewAppSlug, c.Runs)
	}
	if _, err := LoadWorker([]string{"QUAVON_GITHUB_GIT_URL=ftp://x"}); err == nil {
		t.Error("a git URL that is not https: accepted")
	}
	if _, err := LoadWorker([]string{"QUAVON_BROKER_CREDENTIAL=abc"}); err == nil {
		t.Error("a secret in the environment: accepted")
	}
}
