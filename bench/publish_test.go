package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/quavon/quavon/internal/api"
	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/github/writer"
	"github.com/quavon/quavon/internal/githubfake"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/publish/publisher"
	"github.com/quavon/quavon/internal/publish/render"
	"github.com/quavon/quavon/internal/review"
	"github.com/quavon/quavon/internal/sast"
	"github.com/quavon/quavon/internal/testenv"
	"github.com/quavon/quavon/internal/testenv/testbroker"
	"github.com/quavon/quavon/internal/tokenbroker"
)

// writeCounter counts the requests that write to GitHub (token mints
// excluded).
type writeCounter struct {
	base   http.RoundTripper
	writes atomic.Int64
}

func (c *writeCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet && !strings.HasSuffix(req.URL.Path, "/access_tokens") {
		c.writes.Add(1)
	}
	return c.base.RoundTrip(req)
}

// BenchmarkPublishReview: one review run's review with 20 inline comments
// and its check run, published by the publisher (decide and write
// transactions, intents, rendering, broker tokens) through the emulator,
// against the same two writes with the same rendered payloads made
// directly with the writer's go-github calls, interleaved in the same run.
// Reports write calls per run (goal: exactly 2) and publisher/bare ms per
// run (goal ≤ 1.2).
func BenchmarkPublishReview(b *testing.B) {
	ctx := context.Background()
	cp := testenv.NewControlPlane(b, 8)
	gh := githubfake.New(b)
	app := gh.RegisterApp("quavon-review")
	jobs, err := river.NewClient(riverpgxv5.New(cp.App.Pool), &river.Config{})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer((&api.Server{DB: cp.App, Jobs: jobs, WebhookSecrets: map[github.AppKind][]byte{
		github.AppReview: []byte(app.WebhookSecret)}}).Handler())
	defer srv.Close()
	gh.SetWebhookURL(app, srv.URL+"/webhooks/github/review")
	org := gh.AddOrg("acme")
	repo := gh.AddRepo("acme", "app", githubfake.RepoOptions{Private: true, Files: map[string]string{"a.go": "package a\n"}})
	var lines strings.Builder
	lines.WriteString("package a\n")
	for i := range 40 {
		fmt.Fprintf(&lines, "var v%d = %d\n", i, i)
	}
	head := repo.Commit("feature", map[string]string{"a.go": lines.String()}, "forty lines")
	pr := repo.AddPullRequest(githubfake.PullRequestOptions{Title: "vars", Author: "alice", Head: "feature"})
	inst := gh.Install(app, "acme", map[string]string{"contents": "read", "pull_requests": "write", "issues": "write", "checks": "write"}, "acme/app")
	if d, err := gh.Deliver(app, "installation", gh.InstallationEvent("created", inst, "alice")); err != nil || d.StatusCode != 200 {
		b.Fatalf("install: %v", err)
	}
	var tenant string
	if err := cp.App.Pool.QueryRow(ctx, "SELECT quavon_route_account($1)::text", org.ID).Scan(&tenant); err != nil {
		b.Fatal(err)
	}
	tid := postgres.TenantID(tenant)
	var repoID string
	if err := cp.App.InTenant(ctx, tid, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, "SELECT id::text FROM repositories WHERE external_id = $1", repo.ID).Scan(&repoID)
	}); err != nil {
		b.Fatal(err)
	}
	broker := testbroker.Start(b, gh, map[github.AppKind]*githubfake.App{github.AppReview: app}, testbroker.Options{})
	counter := &writeCounter{base: http.DefaultTransport}
	conn := broker.Conn(b, tokenbroker.RolePublisher, github.TransportConfig{Base: counter})
	pub, err := publisher.New(cp.App, publisher.ConnReviewers(conn), publisher.Config{ReviewAppSlug: app.Slug}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	bare, err := writer.NewReviewer(ctx, conn, inst.ID, "acme/app")
	if err != nil {
		b.Fatal(err)
	}

	pl := review.Payload{Version: review.PayloadVersion, PR: pr, HeadSHA: head, Model: "scripted"}
	for i := range 20 {
		pl.Inline = append(pl.Inline, review.PayloadFinding{Severity: string(sast.SeverityMedium), Title: fmt.Sprintf("v%d is unused", i),
			Body: "It is **never** read; see https://github.com/acme/app/blob/main/a.go.", Path: "a.go", StartLine: i + 2,
			EndLine: i + 2, Source: review.SourceLLM, Fingerprint: fmt.Sprintf("%032x", i+1)})
	}
	rv := pl.Render("")
	// The bare baseline sends what the publisher sends: the same renderer's output.
	rend, err := render.New(render.Repo{Host: "github.com", Owner: "acme", Name: "app"})
	if err != nil {
		b.Fatal(err)
	}
	brv := rv
	brv.Marker = "0123456789abcdef0123456789abcdef"
	body, _ := rend.ReviewBody(brv)
	out, _ := rend.CheckRun(brv)
	var comments []writer.ReviewComment
	for _, f := range rv.Inline {
		c, _ := rend.Comment(f)
		comments = append(comments, writer.ReviewComment{Path: f.Path, Line: f.Line, Side: "RIGHT", Body: c})
	}

	newOutputs := func() []string {
		var ids []string
		if err := cp.App.InTenant(ctx, tid, func(tx pgx.Tx) error {
			r, err := review.NewAttempt(ctx, tx, review.NewRun{RepositoryID: repoID, PRNumber: pr, HeadSHA: head, Trigger: review.TriggerCommand})
			if err != nil {
				return err
			}
			if _, err := review.Start(ctx, tx, r.ID, review.Modes{Review: "on", SAST: "off", Acceptance: "off"}, "", ""); err != nil {
				return err
			}
			if _, err := review.Complete(ctx, tx, r.ID, review.Result{}); err != nil {
				return err
			}
			for _, k := range []publish.Kind{publish.KindReview, publish.KindCheckRun} {
				o, err := publish.CreateOutput(ctx, tx, publish.NewOutput{RepositoryID: repoID, Kind: k, ReviewRunID: r.ID,
					Status: publish.OutputReady, Payload: pl})
				if err != nil {
					return err
				}
				ids = append(ids, o.ID)
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		return ids
	}
	publishRun := func() (time.Duration, int64) {
		ids := newOutputs()
		w0 := counter.writes.Load()
		t0 := time.Now()
		for _, id := range ids {
			res, err := pub.Publish(ctx, tid, id)
			if err != nil || res.Outcome != publisher.OutcomePublished {
				b.Fatalf("publish: %+v %v", res, err)
			}
		}
		return time.Since(t0), counter.writes.Load() - w0
	}
	bareRun := func() time.Duration {
		t0 := time.Now()
		if _, err := bare.CreateReview(ctx, pr, head, body, comments); err != nil {
			b.Fatal(err)
		}
		if _, err := bare.CreateCheckRun(ctx, writer.CheckRun{Name: publisher.CheckRunName, HeadSHA: head, ExternalID: string(brv.Marker),
			Status: "completed", Conclusion: "neutral", Title: out.Title, Summary: out.Summary}); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	// Warm both paths, then measure, alternating which goes first.
	publishRun()
	bareRun()
	var pubTotal, bareTotal time.Duration
	var writes, runs int64
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			d, w := publishRun()
			pubTotal, writes = pubTotal+d, writes+w
			bareTotal += bareRun()
		} else {
			bareTotal += bareRun()
			d, w := publishRun()
			pubTotal, writes = pubTotal+d, writes+w
		}
		runs++
	}
	b.StopTimer()
	b.ReportMetric(float64(writes)/float64(runs), "writes/run")
	b.ReportMetric(float64(pubTotal.Microseconds())/1000/float64(runs), "publisher-ms/run")
	b.ReportMetric(float64(bareTotal.Microseconds())/1000/float64(runs), "bare-ms/run")
	b.ReportMetric(float64(pubTotal)/float64(bareTotal), "publisher/bare")
}
