package publisher_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/quavon/quavon/internal/api"
	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/github/writer"
	"github.com/quavon/quavon/internal/githubfake"
	"github.com/quavon/quavon/internal/patch"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/publish/publisher"
	"github.com/quavon/quavon/internal/publish/render"
	"github.com/quavon/quavon/internal/review"
	"github.com/quavon/quavon/internal/sast"
	"github.com/quavon/quavon/internal/sast/sariftest"
	"github.com/quavon/quavon/internal/testenv"
	"github.com/quavon/quavon/internal/testenv/testbroker"
	"github.com/quavon/quavon/internal/tokenbroker"
)

// recorder sees every request the publisher sends to GitHub, bodies
// included, so a test can assert that no review ever asks for APPROVE or
// REQUEST_CHANGES and that no check run ever fails.
type recorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	reqs []recorded
}

type recorded struct {
	Method, Path string
	Body         []byte
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	r.mu.Lock()
	r.reqs = append(r.reqs, recorded{Method: req.Method, Path: req.URL.Path, Body: body})
	r.mu.Unlock()
	return r.base.RoundTrip(req)
}

func (r *recorder) writes() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []recorded
	for _, q := range r.reqs {
		if q.Method != http.MethodGet && !strings.HasSuffix(q.Path, "/access_tokens") {
			out = append(out, q)
		}
	}
	return out
}

// world is a control plane with a repository installed through the real
// webhook intake, the emulator, the token broker and a publisher whose
// tokens come from it as the publisher's role.
type world struct {
	cp     *testenv.ControlPlane
	gh     *githubfake.Server
	app    *githubfake.App
	inst   *githubfake.Installation
	repo   *githubfake.Repo
	tenant postgres.TenantID
	repoID string
	pr     int
	head   string
	rec    *recorder
	pub    *publisher.Publisher
}

func newWorld(t *testing.T, perms map[string]string) *world {
	t.Helper()
	w := &world{cp: testenv.NewControlPlane(t, 8), gh: githubfake.New(t), rec: &recorder{base: http.DefaultTransport}}
	w.app = w.gh.RegisterApp("quavon-review")
	jobs, err := river.NewClient(riverpgxv5.New(w.cp.App.Pool), &river.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer((&api.Server{DB: w.cp.App, Jobs: jobs, WebhookSecrets: map[github.AppKind][]byte{
		github.AppReview: []byte(w.app.WebhookSecret)}}).Handler())
	t.Cleanup(srv.Close)
	w.gh.SetWebhookURL(w.app, srv.URL+"/webhooks/github/review")
	w.gh.AddOrg("acme")
	w.repo = w.gh.AddRepo("acme", "app", githubfake.RepoOptions{Private: true, Files: map[string]string{"a.go": "package a\n"}})
	w.head = w.repo.Commit("feature", map[string]string{"a.go": "package a\n\nfunc A() {}\n\nfunc B() {}\n"}, "add A and B")
	w.pr = w.repo.AddPullRequest(githubfake.PullRequestOptions{Title: "A and B", Author: "alice", Head: "feature"})
	w.inst = w.gh.Install(w.app, "acme", perms, "acme/app")
	d, err := w.gh.Deliver(w.app, "installation", w.gh.InstallationEvent("created", w.inst, "alice"))
	if err != nil || d.StatusCode != 200 {
		t.Fatalf("install: %v %d %s", err, d.StatusCode, d.Response)
	}
	var tenant *string
	if err := w.cp.App.Pool.QueryRow(context.Background(), "SELECT quavon_route_account($1)::text", w.gh.AddOrg("acme").ID).Scan(&tenant); err != nil || tenant == nil {
		t.Fatalf("tenant: %v", err)
	}
	w.tenant = postgres.TenantID(*tenant)
	w.in(t, func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), "SELECT id::text FROM repositories WHERE external_id = $1", w.repo.ID).Scan(&w.repoID)
	})
	b := testbroker.Start(t, w.gh, map[github.AppKind]*githubfake.App{github.AppReview: w.app}, testbroker.Options{})
	conn := b.Conn(t, tokenbroker.RolePublisher, github.TransportConfig{Base: w.rec})
	w.policy(t, sastOn)
	// Every scenario: whatever the publisher sent, no review approves or
	// requests changes and no check run fails.
	t.Cleanup(func() { w.assertNoApproval(t) })
	w.pub, err = publisher.New(w.cp.App, publisher.ConnReviewers(conn), publisher.Config{ReviewAppSlug: w.app.Slug}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// policy stores the repository's policy document ("" removes it: the
// defaults apply).
func (w *world) policy(t *testing.T, doc string) {
	t.Helper()
	w.in(t, func(tx pgx.Tx) error {
		if doc == "" {
			_, err := tx.Exec(context.Background(), `DELETE FROM repository_policies WHERE repository_id = $1`, w.repoID)
			return err
		}
		_, err := tx.Exec(context.Background(), `INSERT INTO repository_policies (tenant_id, repository_id, document)
			VALUES (quavon_current_tenant(), $1, $2::jsonb)
			ON CONFLICT (tenant_id, repository_id) DO UPDATE SET document = excluded.document, version = repository_policies.version + 1`,
			w.repoID, doc)
		return err
	})
}

// sastOn is the policy the tests' runs were made under: the scanners on.
const sastOn = `{"version":1,"features":{"sast":{"mode":"on"}}}`

var reviewPerms = map[string]string{"contents": "read", "pull_requests": "write", "issues": "write", "checks": "write"}

func (w *world) in(t *testing.T, fn func(tx pgx.Tx) error) {
	t.Helper()
	if err := w.cp.App.InTenant(context.Background(), w.tenant, fn); err != nil {
		t.Fatal(err)
	}
}

// outputs stores a completed review run of the pull request's head with
// two findings and its ready review and check run outputs (what a review
// run in mode on leaves), returning the output ids by kind.
func (w *world) outputs(t *testing.T, modes review.Modes, kinds ...publish.Kind) (runID string, ids map[publish.Kind]string) {
	t.Helper()
	ctx := context.Background()
	ids = map[publish.Kind]string{}
	w.in(t, func(tx pgx.Tx) error {
		r, err := review.NewAttempt(ctx, tx, review.NewRun{RepositoryID: w.repoID, PRNumber: w.pr, HeadSHA: w.head,
			HeadRef: "feature", BaseRef: "main", Trigger: review.TriggerOpened})
		if err != nil {
			return err
		}
		runID = r.ID
		if _, err := review.Start(ctx, tx, r.ID, modes, w.repo.Ref("main"), ""); err != nil {
			return err
		}
		if _, err := review.AddFindings(ctx, tx, r.ID, []review.Finding{
			{Fingerprint: strings.Repeat("a", 32), Source: review.SourceLLM, Path: "a.go", StartLine: 3, EndLine: 3, Severity: "high",
				Title: "A does nothing @bob", Body: "See ![x](https://evil.example/x.png) and https://evil.example/steal"},
			{Fingerprint: strings.Repeat("b", 32), Source: review.SourceSAST, Tools: []string{"gosec"}, RuleIDs: []string{"G104"},
				Path: "a.go", StartLine: 5, EndLine: 5, Severity: "medium", Title: "Errors unhandled", Weakness: "CWE-703"},
		}); err != nil {
			return err
		}
		if _, err := review.Complete(ctx, tx, r.ID, review.Result{}); err != nil {
			return err
		}
		fs, err := review.Findings(ctx, tx, r.ID)
		if err != nil {
			return err
		}
		tools := []render.ToolRun{{Tool: "gosec", Status: sast.StatusOK, Findings: 1}}
		pl := review.Payload{Version: review.PayloadVersion, RunID: r.ID, PR: w.pr, HeadSHA: w.head, Model: "scripted",
			SAST: &review.PayloadSAST{Tools: []review.PayloadToolRun{{Tool: "gosec", Status: sast.StatusOK, Findings: 1}}}}
		for _, f := range fs {
			pl.Inline = append(pl.Inline, review.PayloadFinding{Fingerprint: f.Fingerprint, Source: f.Source, Tools: f.Tools,
				RuleIDs: f.RuleIDs, Weakness: f.Weakness, Path: f.Path, StartLine: f.StartLine, EndLine: f.EndLine,
				Severity: f.Severity, Title: f.Title, Body: f.Body})
		}
		for _, k := range kinds {
			var payload any = pl
			if k == publish.KindSARIF {
				payload = publish.SARIFPayload{PullRequest: w.pr, HeadSHA: w.head, Ref: "refs/pull/1/head", Tools: tools}
			}
			o, err := publish.CreateOutput(ctx, tx, publish.NewOutput{RepositoryID: w.repoID, Kind: k, ReviewRunID: r.ID,
				Status: publish.OutputReady, Payload: payload})
			if err != nil {
				return err
			}
			ids[k] = o.ID
		}
		return nil
	})
	return runID, ids
}

var modesOn = review.Modes{Review: "on", SAST: "on", Acceptance: "off"}

func (w *world) publish(t *testing.T, id string) (publisher.Result, error) {
	t.Helper()
	return w.pub.Publish(context.Background(), w.tenant, id)
}

func (w *world) mustPublish(t *testing.T, id string, want publisher.Outcome) publisher.Result {
	t.Helper()
	res, err := w.publish(t, id)
	if err != nil {
		t.Fatalf("publish %s: %v", id, err)
	}
	if res.Outcome != want {
		t.Fatalf("publish %s: %+v, want %s", id, res, want)
	}
	return res
}

func (w *world) intent(t *testing.T, outputID string) *publish.Intent {
	t.Helper()
	var in *publish.Intent
	w.in(t, func(tx pgx.Tx) error {
		var id string
		if err := tx.QueryRow(context.Background(), `SELECT id::text FROM publish_intents WHERE pending_output_id = $1`, outputID).Scan(&id); err != nil {
			return err
		}
		var err error
		in, err = publish.GetIntent(context.Background(), tx, id)
		return err
	})
	return in
}

func (w *world) output(t *testing.T, id string) *publish.Output {
	t.Helper()
	var o *publish.Output
	w.in(t, func(tx pgx.Tx) error {
		var err error
		o, err = publish.GetOutput(context.Background(), tx, id)
		return err
	})
	return o
}

// assertNoApproval scans every write the publisher sent: reviews are
// COMMENT only, check runs success or neutral only.
func (w *world) assertNoApproval(t *testing.T) {
	t.Helper()
	for _, q := range w.rec.writes() {
		var body map[string]any
		_ = json.Unmarshal(q.Body, &body)
		if strings.HasSuffix(q.Path, "/reviews") && body["event"] != "COMMENT" {
			t.Errorf("review with event %v", body["event"])
		}
		if ev, ok := body["event"].(string); ok && (ev == "APPROVE" || ev == "REQUEST_CHANGES") {
			t.Errorf("%s %s asks for %s", q.Method, q.Path, ev)
		}
		if strings.Contains(q.Path, "/check-runs") {
			if c, ok := body["conclusion"]; ok && c != publisher.ConclusionSuccess && c != publisher.ConclusionNeutral {
				t.Errorf("check run with conclusion %v", c)
			}
		}
	}
	for _, rv := range w.repo.Reviews(w.pr) {
		if rv.State != githubfake.ReviewCommented {
			t.Errorf("review %d is %s", rv.ID, rv.State)
		}
	}
}

func (w *world) countWrites(suffix string) int {
	n := 0
	for _, q := range w.rec.writes() {
		if strings.HasSuffix(q.Path, suffix) {
			n++
		}
	}
	return n
}

func TestPublishesReviewAndCheckRunOnce(t *testing.T) {
	t.Parallel()
	w := newWorld(t, reviewPerms)
	_, ids := w.outputs(t, modesOn, publish.KindReview, publish.KindCheckRun)
	rv := w.mustPublish(t, ids[publish.KindReview], publisher.OutcomePublished)
	cr := w.mustPublish(t, ids[publish.KindCheckRun], publisher.OutcomePublished)
	// A redelivered job changes nothing.
	w.mustPublish(t, ids[publish.KindReview], publisher.OutcomeAlready)
	w.mustPublish(t, ids[publish.KindCheckRun], publisher.OutcomeAlready)

	reviews := w.repo.Reviews(w.pr)
	if len(reviews) != 1 || reviews[0].Author != "quavon-review[bot]" || reviews[0].CommitID != w.head {
		t.Fatalf("reviews %+v", reviews)
	}
	got := reviews[0]
	if len(got.Comments) != 2 || got.Comments[0].Line != 3 || got.Comments[1].Line != 5 {
		t.Fatalf("comments %+v", got.Comments)
	}
	for _, c := range got.Comments {
		// The model's text passed the sanitiser: no image, no live link
		// to another host, no live mention (they are code now).
		if strings.Contains(c.Body, "](https://evil") || strings.Contains(c.Body, "![") || strings.Contains(c.Body, " @bob") ||
			!strings.Contains(c.Body, "`https://evil.example/steal`") && strings.Contains(c.Body, "evil.example") {
			t.Errorf("unsanitised comment %q", c.Body)
		}
	}
	in := w.intent(t, ids[publish.KindReview])
	if in.Status != publish.IntentPublished || in.External.ID != rv.External || !render.BodyHasMarker(got.Body, render.Marker(in.Marker)) {
		t.Fatalf("intent %+v, review body %q", in, got.Body)
	}
	if !strings.HasPrefix(in.Key, "review:"+w.repoID+":") {
		t.Fatalf("key %q", in.Key)
	}
	runs := w.repo.CheckRuns()
	if len(runs) != 1 || runs[0].Conclusion != "neutral" || runs[0].Name != publisher.CheckRunName || runs[0].ExternalID == "" {
		t.Fatalf("check runs %+v (result %+v)", runs, cr)
	}
	if o := w.output(t, ids[publish.KindReview]); o.Status != publish.OutputPublished {
		t.Fatalf("output %s", o.Status)
	}
	// The findings the review showed are posted: never shown again.
	w.in(t, func(tx pgx.Tx) error {
		shown, err := review.Shown(context.Background(), tx, w.repoID, w.pr, "")
		if len(shown) != 2 || err != nil {
			t.Errorf("shown %v %v", shown, err)
		}
		return nil
	})
	if w.countWrites("/reviews") != 1 || w.countWrites("/check-runs") != 1 {
		t.Fatalf("writes %+v", w.rec.writes())
	}
	w.assertNoApproval(t)
}

func TestLostResponseReconciles(t *testing.T) {
	t.Parallel()
	w := newWorld(t, reviewPerms)
	_, ids := w.outputs(t, modesOn, publish.KindReview, publish.KindCheckRun)
	w.gh.InjectFault(githubfake.Fault{Method: "POST", Path: "/repos/{o}/{r}/pulls/{n}/reviews", Kind: githubfake.FaultLoseResponse})
	w.gh.InjectFault(githubfake.Fault{Method: "POST", Path: "/repos/{o}/{r}/check-runs", Kind: githubfake.FaultLoseResponse})
	for _, k := range []publish.Kind{publish.KindReview, publish.KindCheckRun} {
		if _, err := w.publish(t, ids[k]); err == nil {
			t.Fatalf("%s: a lost response must fail the attempt", k)
		}
		if in := w.intent(t, ids[k]); in.Status != publish.IntentInFlight || in.LastError == "" {
			t.Fatalf("%s: intent after a lost response %+v", k, in)
		}
		res := w.mustPublish(t, ids[k], publisher.OutcomePublished)
		if !res.Reconciled {
			t.Fatalf("%s: the retry wrote again instead of reconciling: %+v", k, res)
		}
	}
	if n := len(w.repo.Reviews(w.pr)); n != 1 {
		t.Fatalf("%d reviews", n)
	}
	if n := len(w.repo.CheckRuns()); n != 1 {
		t.Fatalf("%d check runs", n)
	}
	if w.countWrites("/reviews") != 1 || w.countWrites("/check-runs") != 1 {
		t.Fatalf("writes %+v", w.rec.writes())
	}
	w.assertNoApproval(t)
}

// TestCrashBetweenClaimAndRecord: an attempt claimed the intent and died,
// once before its write reached GitHub and once after (the write exists,
// the record does not). The next attempt writes in the first case and
// finds the write in the second: one review, one check run either way.
func TestCrashBetweenClaimAndRecord(t *testing.T) {
	t.Parallel()
	w := newWorld(t, reviewPerms)
	ctx := context.Background()
	_, ids := w.outputs(t, modesOn, publish.KindReview, publish.KindCheckRun)
	claim := func(outputID string) *publish.Intent {
		var in *publish.Intent
		w.in(t, func(tx pgx.Tx) error {
			i, _, err := publish.EnsureIntent(ctx, tx, outputID)
			if err != nil {
				return err
			}
			in, _, err = publish.Claim(ctx, tx, i.ID)
			return err
		})
		return in
	}
	// Crash before the write: claimed, nothing on GitHub.
	claim(ids[publish.KindCheckRun])
	res := w.mustPublish(t, ids[publish.KindCheckRun], publisher.OutcomePublished)
	if res.Reconciled {
		t.Fatal("nothing was written, yet reconcile found a check run")
	}
	// Crash after the write: the review exists with the intent's marker.
	in := claim(ids[publish.KindReview])
	rw, err := writer.NewReviewer(ctx, w.pubConn(t), w.inst.ID, "acme/app")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rw.CreateReview(ctx, w.pr, w.head, "crashed attempt "+render.Marker(in.Marker).Comment(), nil); err != nil {
		t.Fatal(err)
	}
	res = w.mustPublish(t, ids[publish.KindReview], publisher.OutcomePublished)
	if !res.Reconciled {
		t.Fatalf("the review of the crashed attempt was not found: %+v", res)
	}
	if n := len(w.repo.Reviews(w.pr)); n != 1 {
		t.Fatalf("%d reviews", n)
	}
	if n := len(w.repo.CheckRuns()); n != 1 {
		t.Fatalf("%d check runs", n)
	}
}

func (w *world) pubConn(t *testing.T) *github.Conn {
	b := testbroker.Start(t, w.gh, map[github.AppKind]*githubfake.App{github.AppReview: w.app}, testbroker.Options{})
	return b.Conn(t, tokenbroker.RolePublisher, github.TransportConfig{})
}

// TestReconcileTrustsOnlyTheBot: a review carrying the marker but written
// by someone else is not Quavon's.
func TestReconcileTrustsOnlyTheBot(t *testing.T) {
	t.Parallel()
	w := newWorld(t, reviewPerms)
	ctx := context.Background()
	_, ids := w.outputs(t, modesOn, publish.KindReview)
	var in *publish.Intent
	w.in(t, func(tx pgx.Tx) error {
		i, _, err := publish.EnsureIntent(ctx, tx, ids[publish.KindReview])
		if err != nil {
			return err
		}
		in, _, err = publish.Claim(ctx, tx, i.ID)
		return err
	})
	// Another app, with its own installation, copies the marker.
	other := w.gh.RegisterApp("mallory")
	oi := w.gh.Install(other, "acme", reviewPerms, "acme/app")
	ob := testbroker.Start(t, w.gh, map[github.AppKind]*githubfake.App{github.AppReview: other}, testbroker.Options{})
	ow, err := writer.NewReviewer(ctx, ob.Conn(t, tokenbroker.RolePublisher, github.TransportConfig{}), oi.ID, "acme/app")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ow.CreateReview(ctx, w.pr, w.head, "copied "+render.Marker(in.Marker).Comment(), nil); err != nil {
		t.Fatal(err)
	}
	res := w.mustPublish(t, ids[publish.KindReview], publisher.OutcomePublished)
	if res.Reconciled {
		t.Fatal("a human's review with the marker was taken for Quavon's")
	}
	if n := len(w.repo.Reviews(w.pr)); n != 2 {
		t.Fatalf("%d reviews", n)
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		modes   review.Modes
		perms   map[string]string
		before  func(t *testing.T, w *world, runID string)
		outcome publisher.Outcome
		reason  string
	}{
		{name: "superseded run", modes: modesOn, outcome: publisher.OutcomeCancelled, reason: publisher.ReasonSuperseded,
			before: func(t *testing.T, w *world, runID string) {
				next := w.repo.Commit("feature", map[string]string{"a.go": "package a\n"}, "undo")
				w.in(t, func(tx pgx.Tx) error {
					_, _, err := review.Create(ctx, tx, review.NewRun{RepositoryID: w.repoID, PRNumber: w.pr, HeadSHA: next,
						Trigger: review.TriggerSynchronize})
					return err
				})
			}},
		{name: "policy switched off", modes: modesOn, outcome: publisher.OutcomeCancelled, reason: publisher.ReasonPolicyOff,
			before: func(t *testing.T, w *world, runID string) {
				w.policy(t, `{"version":1,"features":{"sast":{"mode":"off"}}}`)
			}},
		{name: "policy that does not parse", modes: review.Modes{Review: "on", SAST: "off", Acceptance: "off"},
			outcome: publisher.OutcomeCancelled, reason: publisher.ReasonPolicyOff,
			before: func(t *testing.T, w *world, runID string) {
				w.policy(t, `{"version":1,"features":{"sast":{"mode":"loud"}}}`)
			}},
		{name: "shadow run", modes: review.Modes{Review: "shadow", SAST: "shadow", Acceptance: "off"},
			outcome: publisher.OutcomeCancelled, reason: publisher.ReasonPolicyOff},
		{name: "suspended installation", modes: modesOn, outcome: publisher.OutcomeFailed, reason: publisher.ReasonInstallationSuspended,
			before: func(t *testing.T, w *world, runID string) {
				// GitHub suspends it and tells Quavon through the webhook.
				w.gh.SetSuspended(w.inst, true)
				d, err := w.gh.Deliver(w.app, "installation", w.gh.InstallationEvent("suspend", w.inst, "alice"))
				if err != nil || d.StatusCode != 200 {
					t.Fatalf("suspend: %v %d", err, d.StatusCode)
				}
			}},
		{name: "repository no longer covered", modes: modesOn, outcome: publisher.OutcomeFailed, reason: publisher.ReasonRepositoryNotCovered,
			before: func(t *testing.T, w *world, runID string) {
				if _, err := w.cp.Admin.Exec(ctx, `UPDATE repositories SET review_installation_id = NULL WHERE id = $1`, w.repoID); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "archived repository", modes: modesOn, outcome: publisher.OutcomeFailed, reason: publisher.ReasonRepositoryArchived,
			before: func(t *testing.T, w *world, runID string) {
				if _, err := w.cp.Admin.Exec(ctx, `UPDATE repositories SET archived = true WHERE id = $1`, w.repoID); err != nil {
					t.Fatal(err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, reviewPerms)
			runID, ids := w.outputs(t, tc.modes, publish.KindReview, publish.KindCheckRun)
			if tc.before != nil {
				tc.before(t, w, runID)
			}
			for k, id := range ids {
				res := w.mustPublish(t, id, tc.outcome)
				if res.Reason != tc.reason {
					t.Errorf("%s: reason %q, want %q", k, res.Reason, tc.reason)
				}
				in := w.intent(t, id)
				if in.Reason != tc.reason || !in.Status.Terminal() {
					t.Errorf("%s: intent %+v", k, in)
				}
				if o := w.output(t, id); o.Reason != tc.reason || !o.Status.Terminal() {
					t.Errorf("%s: output %s %q", k, o.Status, o.Reason)
				}
			}
			if len(w.rec.writes()) != 0 || len(w.repo.Reviews(w.pr)) != 0 || len(w.repo.CheckRuns()) != 0 {
				t.Fatalf("published despite the refusal: %+v", w.rec.writes())
			}
		})
	}
}

// TestFixOutputsUntouched: fix outputs are issue 22's; the publisher
// leaves them exactly as they are (no intent, no write, same status).
func TestFixOutputsUntouched(t *testing.T) {
	t.Parallel()
	w := newWorld(t, reviewPerms)
	ctx := context.Background()
	var id string
	w.in(t, func(tx pgx.Tx) error {
		r, err := fix.Create(ctx, tx, fix.NewRun{RepositoryID: w.repoID, Subject: fix.SubjectIssue, Number: 9,
			Delivery: fix.DeliveryPR, Mode: fix.ModeAuto, Trigger: fix.TriggerLabel, Actor: fix.Actor{Login: "ada", ID: 7}})
		if err != nil {
			return err
		}
		base := w.repo.Ref("main")
		if _, err := fix.Start(ctx, tx, r.ID, fix.Base{SHA: base, Ref: "main"}); err != nil {
			return err
		}
		sum, err := fix.RecordPatch(ctx, tx, r.ID, []patch.FixFileChange{{Path: "b.go", Operation: patch.OpCreate,
			NewContent: "package a\n", Mode: patch.ModeFile}}, "diff", "")
		if err != nil {
			return err
		}
		o, err := publish.CreateOutput(ctx, tx, publish.NewOutput{RepositoryID: w.repoID, Kind: publish.KindFixPR, FixRunID: r.ID,
			Status: publish.OutputReady, Payload: map[string]any{"issue": 9}, Bound: publish.Bound{PatchSHA256: sum, BaseSHA: base}})
		if err != nil {
			return err
		}
		id = o.ID
		return nil
	})
	before := w.output(t, id)
	res := w.mustPublish(t, id, publisher.OutcomeNotHandled)
	if res.Reason != publisher.ReasonFixNotHandled {
		t.Fatalf("reason %q", res.Reason)
	}
	after := w.output(t, id)
	if after.Status != before.Status || !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Fatalf("the fix output changed: %+v", after)
	}
	w.in(t, func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM publish_intents WHERE pending_output_id = $1`, id).Scan(&n); err != nil || n != 0 {
			t.Errorf("%d intents (%v)", n, err)
		}
		return nil
	})
	if len(w.rec.writes()) != 0 {
		t.Fatalf("writes %+v", w.rec.writes())
	}
}

var sarifPerms = map[string]string{"contents": "read", "pull_requests": "write", "issues": "write", "checks": "write", "security_events": "write"}

const sarifOn = `{"version":1,"features":{"sast":{"mode":"on","uploadSarif":true}}}`

func TestSARIFOncePerRun(t *testing.T) {
	t.Parallel()
	w := newWorld(t, sarifPerms)
	w.policy(t, sarifOn)
	_, ids := w.outputs(t, modesOn, publish.KindSARIF)
	w.gh.InjectFault(githubfake.Fault{Method: "POST", Path: "/repos/{o}/{r}/code-scanning/sarifs", Kind: githubfake.FaultLoseResponse})
	if _, err := w.publish(t, ids[publish.KindSARIF]); err == nil {
		t.Fatal("a lost upload response must fail the attempt")
	}
	res := w.mustPublish(t, ids[publish.KindSARIF], publisher.OutcomePublished)
	if !res.Reconciled {
		t.Fatalf("the retry uploaded again: %+v", res)
	}
	w.mustPublish(t, ids[publish.KindSARIF], publisher.OutcomeAlready)
	ups := w.repo.SARIFUploads()
	if len(ups) != 1 || ups[0].ID != res.External || ups[0].CommitSHA != w.head {
		t.Fatalf("uploads %+v, result %+v", ups, res)
	}
	// Regenerated from the stored SAST finding only: the model's finding
	// is not code scanning's, and nothing of raw tool output is there.
	var doc struct {
		Runs []struct {
			Tool struct {
				Driver struct{ Name string } `json:"driver"`
			} `json:"tool"`
			AutomationDetails struct{ ID string } `json:"automationDetails"`
			Results           []struct {
				RuleID string `json:"ruleId"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(ups[0].SARIF, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Runs) != 1 || doc.Runs[0].Tool.Driver.Name != "gosec" || len(doc.Runs[0].Results) != 1 ||
		doc.Runs[0].Results[0].RuleID != "G104" || !strings.HasPrefix(doc.Runs[0].AutomationDetails.ID, publisher.SARIFCategory) {
		t.Fatalf("SARIF %s", ups[0].SARIF)
	}
	sariftest.Validate(t, ups[0].SARIF)
}

func TestSARIFOnlyWithTheFeature(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, policy string
		perms        map[string]string
		reason       string
	}{
		{"upload off", `{"version":1,"features":{"sast":{"mode":"on","uploadSarif":false}}}`, sarifPerms, publisher.ReasonSARIFOff},
		{"no policy (default off)", "", sarifPerms, publisher.ReasonPolicyOff},
		{"code scanning not granted", sarifOn, reviewPerms, publisher.ReasonCodeScanningNotGrant},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, tc.perms)
			w.policy(t, tc.policy)
			_, ids := w.outputs(t, modesOn, publish.KindSARIF)
			res, err := w.publish(t, ids[publish.KindSARIF])
			if err != nil || res.Reason != tc.reason {
				t.Fatalf("%+v %v, want reason %s", res, err, tc.reason)
			}
			if n := len(w.repo.SARIFUploads()); n != 0 {
				t.Fatalf("%d uploads", n)
			}
		})
	}
}

// TestRateLimitedWriteIsReplayed: GitHub refuses a write with a secondary
// rate limit (it did not process it); the shared transport waits as asked
// and sends it again: one review, published in the same attempt.
func TestRateLimitedWriteIsReplayed(t *testing.T) {
	t.Parallel()
	w := newWorld(t, reviewPerms)
	_, ids := w.outputs(t, modesOn, publish.KindReview)
	w.gh.InjectFault(githubfake.Fault{Method: "POST", Path: "/repos/{o}/{r}/pulls/{n}/reviews", Kind: githubfake.FaultSecondaryRateLimit})
	res := w.mustPublish(t, ids[publish.KindReview], publisher.OutcomePublished)
	if res.Reconciled || w.gh.PendingFaults() != 0 {
		t.Fatalf("%+v, pending faults %d", res, w.gh.PendingFaults())
	}
	if n := len(w.repo.Reviews(w.pr)); n != 1 {
		t.Fatalf("%d reviews", n)
	}
	if in := w.intent(t, ids[publish.KindReview]); in.Attempts != 1 {
		t.Fatalf("attempts %d", in.Attempts)
	}
}

// TestSweep: outputs that waited too long get a publish job again, once;
// settled outputs and outputs whose job still waits get none.
func TestSweep(t *testing.T) {
	t.Parallel()
	w := newWorld(t, reviewPerms)
	ctx := context.Background()
	_, ids := w.outputs(t, modesOn, publish.KindReview, publish.KindCheckRun)
	jobs, err := river.NewClient(riverpgxv5.New(w.cp.App.Pool), &river.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := publisher.Sweep(ctx, w.cp.App, jobs, time.Hour); err != nil || n != 0 {
		t.Fatalf("fresh outputs swept: %d %v", n, err)
	}
	w.mustPublish(t, ids[publish.KindCheckRun], publisher.OutcomePublished)
	if _, err := w.cp.Admin.Exec(ctx, `UPDATE pending_outputs SET updated_at = now() - interval '2 hours' WHERE repository_id = $1`, w.repoID); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{1, 0} {
		if n, err := publisher.Sweep(ctx, w.cp.App, jobs, time.Hour); err != nil || n != want {
			t.Fatalf("sweep %d: %d %v, want %d", i, n, err, want)
		}
	}
	var args []byte
	if err := w.cp.Admin.QueryRow(ctx, `SELECT args FROM river_job WHERE kind = $1`, publish.JobKind).Scan(&args); err != nil {
		t.Fatal(err)
	}
	var job publish.Job
	if err := json.Unmarshal(args, &job); err != nil || job.OutputID != ids[publish.KindReview] || job.Tenant != w.tenant {
		t.Fatalf("job %s", args)
	}
}
