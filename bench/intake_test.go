package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/quavon/quavon/internal/api"
	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/githubfake"
	"github.com/quavon/quavon/internal/testenv"
)

// noJobs is the baseline's inserter: the same request, transaction and
// event row, with the job insert left out.
type noJobs struct{}

func (noJobs) InsertTx(context.Context, pgx.Tx, river.JobArgs, *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	return &rivertype.JobInsertResult{}, nil
}

// BenchmarkWebhookIntake: 1,000 signed pull_request synchronize deliveries
// (the emulator's payload, about 20 KB, each with its own delivery id) at
// concurrency 16 through the real API handler and PostgreSQL: each is
// verified, parsed, routed, stored as a delivery and an event and gets its
// River job in one transaction. The baseline is the same requests with the
// job insert left out, interleaved in the same run. Goal: jobs/nojobs p99 ≤
// 1.3 and ≥ 300 deliveries/s (with jobs) on 2 cores.
func BenchmarkWebhookIntake(b *testing.B) {
	const deliveries, concurrency = 1000, 16
	cp := testenv.NewControlPlane(b, 2*concurrency)
	ctx := context.Background()
	gh := githubfake.New(b)
	app := gh.RegisterApp("quavon-review")
	gh.AddOrg("acme")
	repo := gh.AddRepo("acme", "app", githubfake.RepoOptions{Private: true, Files: map[string]string{"README.md": "x\n"}})
	inst := gh.Install(app, "acme", map[string]string{"contents": "read", "pull_requests": "write", "metadata": "read"}, "acme/app")
	repo.Commit("feature", map[string]string{"a.go": "package a\n"}, "work")
	pr := repo.AddPullRequest(githubfake.PullRequestOptions{Title: "Feature", Author: "alice", Head: "feature"})
	repo.Commit("feature", map[string]string{"b.go": "package a\n"}, "push")

	jobs, err := river.NewClient(riverpgxv5.New(cp.App.Pool), &river.Config{})
	if err != nil {
		b.Fatal(err)
	}
	secrets := map[github.AppKind][]byte{github.AppReview: []byte(app.WebhookSecret)}
	withJobs := httptest.NewServer((&api.Server{DB: cp.App, Jobs: jobs, WebhookSecrets: secrets}).Handler())
	defer withJobs.Close()
	without := httptest.NewServer((&api.Server{DB: cp.App, Jobs: noJobs{}, WebhookSecrets: secrets}).Handler())
	defer without.Close()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: concurrency}}
	post := func(url, event, delivery string, body []byte) (int, error) {
		req, _ := http.NewRequest(http.MethodPost, url+"/webhooks/github/review", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", event)
		req.Header.Set("X-GitHub-Delivery", delivery)
		req.Header.Set("X-Hub-Signature-256", githubfake.Sign(app.WebhookSecret, body))
		res, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		defer res.Body.Close()
		return res.StatusCode, nil
	}
	install, _ := json.Marshal(gh.InstallationEvent("created", inst, "alice"))
	if code, err := post(withJobs.URL, "installation", "install-0", install); err != nil || code != 200 {
		b.Fatalf("installation: %d %v", code, err)
	}
	body, _ := json.Marshal(gh.PullRequestEvent("synchronize", inst, repo, pr, "alice"))

	var seq atomic.Int64
	round := func(url string) ([]time.Duration, time.Duration) {
		lat := make([]time.Duration, deliveries)
		var next atomic.Int64
		var wg sync.WaitGroup
		t0 := time.Now()
		for range concurrency {
			wg.Go(func() {
				for {
					i := next.Add(1) - 1
					if i >= deliveries {
						return
					}
					id := fmt.Sprintf("bench-%d", seq.Add(1))
					s := time.Now()
					code, err := post(url, "pull_request", id, body)
					lat[i] = time.Since(s)
					if err != nil || code != 200 {
						b.Errorf("delivery %s: %d %v", id, code, err)
						return
					}
				}
			})
		}
		wg.Wait()
		return lat, time.Since(t0)
	}
	// Warm both paths (connections, plans, the notifier), then measure.
	round(withJobs.URL)
	round(without.URL)
	b.ResetTimer()
	var jl, nl []time.Duration
	var jwall, nwall time.Duration
	for i := 0; b.Loop(); i++ {
		run := func(url string, lats *[]time.Duration, wall *time.Duration) {
			l, w := round(url)
			*lats = append(*lats, l...)
			*wall += w
		}
		// Alternate which goes first, so neither always runs on a warmer machine.
		if i%2 == 0 {
			run(withJobs.URL, &jl, &jwall)
			run(without.URL, &nl, &nwall)
		} else {
			run(without.URL, &nl, &nwall)
			run(withJobs.URL, &jl, &jwall)
		}
	}
	b.StopTimer()
	var stored, queued int
	if err := cp.Admin.QueryRow(ctx, `SELECT (SELECT count(*) FROM webhook_events), (SELECT count(*) FROM river_job
		WHERE kind = 'pull_request_event')`).Scan(&stored, &queued); err != nil {
		b.Fatal(err)
	}
	if want := len(jl) + len(nl) + 2*deliveries; stored != want || queued != len(jl)+deliveries {
		b.Fatalf("%d events and %d jobs stored, want %d and %d", stored, queued, want, len(jl)+deliveries)
	}
	pct := func(l []time.Duration, p float64) float64 {
		slices.Sort(l)
		return float64(l[int(float64(len(l)-1)*p)].Microseconds()) / 1000
	}
	j50, j99, n50, n99 := pct(jl, 0.5), pct(jl, 0.99), pct(nl, 0.5), pct(nl, 0.99)
	b.ReportMetric(float64(len(jl))/jwall.Seconds(), "deliveries/s")
	b.ReportMetric(float64(len(nl))/nwall.Seconds(), "nojobs-deliveries/s")
	b.ReportMetric(j50, "p50-ms")
	b.ReportMetric(j99, "p99-ms")
	b.ReportMetric(n50, "nojobs-p50-ms")
	b.ReportMetric(n99, "nojobs-p99-ms")
	b.ReportMetric(j50/n50, "jobs/nojobs-p50")
	b.ReportMetric(j99/n99, "jobs/nojobs-p99")
}
