package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/githubfake"
	"github.com/quavon/quavon/internal/postgres"
)

// installed is a hookWorld with both apps installed on acme (their
// installation events delivered) and their webhooks flowing from the
// emulator's own state changes.
func installed(t *testing.T) (*hookWorld, postgres.TenantID, *githubfake.Installation) {
	t.Helper()
	w := newHookWorld(t)
	if d, _ := w.deliver(t, w.review, "installation", w.gh.InstallationEvent("created", w.reviewInstall, "alice")); d.StatusCode != 200 {
		t.Fatalf("review install: %d %s", d.StatusCode, d.Response)
	}
	fixerInstall := w.gh.Install(w.fixer, "acme", map[string]string{"contents": "write", "pull_requests": "write", "issues": "write",
		"metadata": "read"}, "acme/app", "acme/lib")
	if d, _ := w.deliver(t, w.fixer, "installation", w.gh.InstallationEvent("created", fixerInstall, "alice")); d.StatusCode != 200 {
		t.Fatalf("fixer install: %d %s", d.StatusCode, d.Response)
	}
	w.gh.AutoDeliver(w.review)
	w.gh.AutoDeliver(w.fixer)
	return w, w.tenantOf(t, "review", w.reviewInstall.ID), fixerInstall
}

type delivered struct {
	app, event, action, status string
	code                       int
}

// take returns the automatic deliveries since the last call.
func take(t *testing.T, w *hookWorld, seen *int) []delivered {
	t.Helper()
	all := w.gh.Deliveries()
	var out []delivered
	for _, d := range all[*seen:] {
		if d.Err != nil {
			t.Fatalf("delivery %s: %v", d.Event, d.Err)
		}
		var p struct{ Action string }
		json.Unmarshal(d.Body, &p)
		var res struct{ Status string }
		json.Unmarshal(d.Response, &res)
		app := "review"
		if d.App == w.fixer {
			app = "fixer"
		}
		out = append(out, delivered{app, d.Event, p.Action, res.Status, d.StatusCode})
	}
	*seen = len(all)
	return out
}

// stored is what the tenant has of events and the River jobs the intake
// inserted (River's table is not a tenant table: the superuser reads it).
func stored(t *testing.T, w *hookWorld, tenant postgres.TenantID) (events []string, jobs []string) {
	t.Helper()
	ctx := context.Background()
	rows, err := w.cp.Admin.Query(ctx, `SELECT e.app_kind || ' ' || e.event || '.' || e.action || ' #' || e.number,
			j.kind || ' ' || j.queue || ' ' || j.state
		FROM webhook_events e FULL JOIN river_job j ON j.args->>'event_id' = e.id::text
		WHERE e.tenant_id = $1 OR e.tenant_id IS NULL ORDER BY e.received_at, j.id`, string(tenant))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var e, j *string
		if err := rows.Scan(&e, &j); err != nil {
			t.Fatal(err)
		}
		if e == nil || j == nil {
			t.Errorf("an event without its job or a job without its event: %v %v", e, j)
			continue
		}
		events, jobs = append(events, *e), append(jobs, *j)
	}
	return events, jobs
}

// Pull request, issue and comment webhooks from the emulator's own state
// changes: the events a worker acts on are stored with their job in the
// right queue, the others are acknowledged and not stored, and a
// redelivery changes nothing.
func TestRepositoryEventsAreStoredWithTheirJob(t *testing.T) {
	w, tenant, _ := installed(t)
	seen := len(w.gh.Deliveries())

	w.app.Commit("feature", map[string]string{"a.go": "package a\n"}, "work")
	pr := w.app.AddPullRequest(githubfake.PullRequestOptions{Title: "Feature", Author: "alice", Head: "feature"})
	w.app.Commit("feature", map[string]string{"b.go": "package a\n"}, "push")
	n := w.app.AddIssue(githubfake.IssueOptions{Title: "Bug", Author: "alice", Labels: []string{"quavon:fix"}})
	w.app.AddComment(n, "bob", "@quavon-fixer fix")
	w.app.UpdateIssue(n, func(i *githubfake.Issue) { i.State = "closed" })
	w.app.UpdateIssue(pr, func(i *githubfake.Issue) { i.State = "closed" })

	got := take(t, w, &seen)
	want := map[string]string{
		"review pull_request.opened": "processed", "fixer pull_request.opened": "ignored",
		"review pull_request.synchronize": "processed", "fixer pull_request.synchronize": "ignored",
		"review issues.opened": "processed", "fixer issues.opened": "processed",
		"review issues.labeled": "ignored", "fixer issues.labeled": "processed",
		"review issue_comment.created": "processed", "fixer issue_comment.created": "ignored",
		"review issues.closed": "processed", "fixer issues.closed": "processed",
		"review pull_request.closed": "processed", "fixer pull_request.closed": "ignored",
	}
	if len(got) != len(want) {
		t.Errorf("%d deliveries, want %d: %+v", len(got), len(want), got)
	}
	for _, d := range got {
		key := d.app + " " + d.event + "." + d.action
		code := map[string]int{"processed": 200, "ignored": 202}[want[key]]
		if d.status != want[key] || d.code != code {
			t.Errorf("%s: %d %s, want %d %s", key, d.code, d.status, code, want[key])
		}
	}
	events, jobs := stored(t, w, tenant)
	wantEvents := []string{
		fmt.Sprintf("review pull_request.opened #%d", pr), fmt.Sprintf("review pull_request.synchronize #%d", pr),
		fmt.Sprintf("review issues.opened #%d", n), fmt.Sprintf("fixer issues.opened #%d", n), fmt.Sprintf("fixer issues.labeled #%d", n),
		fmt.Sprintf("review issue_comment.created #%d", n), fmt.Sprintf("review issues.closed #%d", n), fmt.Sprintf("fixer issues.closed #%d", n),
		fmt.Sprintf("review pull_request.closed #%d", pr),
	}
	wantJobs := []string{"pull_request_event review available", "pull_request_event review available",
		"issue_sync_event review available", "issue_sync_event review available", "fix_trigger fix available",
		"review_comment_event review available", "issue_sync_event review available", "issue_event fix available",
		"pull_request_event review available"}
	if fmt.Sprint(events) != fmt.Sprint(wantEvents) || fmt.Sprint(jobs) != fmt.Sprint(wantJobs) {
		t.Fatalf("stored events %v with jobs %v\nwant %v with %v", events, jobs, wantEvents, wantJobs)
	}
	// The job carries ids only.
	var args string
	if err := w.cp.Admin.QueryRow(context.Background(), "SELECT args::text FROM river_job LIMIT 1").Scan(&args); err != nil {
		t.Fatal(err)
	}
	var a map[string]string
	if err := json.Unmarshal([]byte(args), &a); err != nil || len(a) != 2 || a["tenant_id"] != string(tenant) || a["event_id"] == "" {
		t.Errorf("job args %s", args)
	}
	// The stored event: typed data, the sender as actor.
	var data string
	var actor string
	err := w.cp.App.InTenant(context.Background(), tenant, func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT data::text, actor_login || '/' || actor_type FROM webhook_events
			WHERE event = 'pull_request' AND action = 'synchronize'`).Scan(&data, &actor)
	})
	if err != nil {
		t.Fatal(err)
	}
	var ed map[string]any
	json.Unmarshal([]byte(data), &ed)
	if ed["before"] == nil || ed["after"] != w.app.Ref("feature") || ed["headRef"] != "feature" || !strings.Contains(actor, "/") {
		t.Errorf("stored data %s, actor %s", data, actor)
	}

	// Redelivering every delivery changes nothing.
	for _, d := range w.gh.Deliveries()[len(w.gh.Deliveries())-len(got):] {
		d2, err := w.gh.Redeliver(d)
		if err != nil {
			t.Fatal(err)
		}
		if d2.StatusCode != d.StatusCode || d.StatusCode == 200 && !strings.Contains(string(d2.Response), "duplicate") {
			t.Errorf("redelivery of %s: %d %s (first: %d)", d.Event, d2.StatusCode, d2.Response, d.StatusCode)
		}
	}
	e2, j2 := stored(t, w, tenant)
	if fmt.Sprint(e2) != fmt.Sprint(events) || fmt.Sprint(j2) != fmt.Sprint(jobs) {
		t.Fatalf("after redeliveries: %v %v", e2, j2)
	}
}

// An event of a repository the installation does not cover (here: not
// added to the Fixer's installation) is acknowledged and not stored.
func TestEventsOfUncoveredRepositoriesAreIgnored(t *testing.T) {
	w, tenant, fixerInstall := installed(t)
	w.gh.SetInstallationRepos(fixerInstall, []string{"acme/app"})
	seen := len(w.gh.Deliveries())
	// acme/lib is still covered in the emulator for the review app only.
	n := w.lib.AddIssue(githubfake.IssueOptions{Title: "Bug", Author: "alice"})
	w.lib.UpdateIssue(n, func(i *githubfake.Issue) { i.State = "closed" })
	// The review app still covers acme/lib: its issues events keep the
	// acceptance check's issues table in step.
	for _, d := range take(t, w, &seen) {
		if want := map[string]int{"review": 200, "fixer": 202}[d.app]; d.code != want {
			t.Errorf("%s %s.%s: %d %s, want %d", d.app, d.event, d.action, d.code, d.status, want)
		}
	}
	if events, _ := stored(t, w, tenant); fmt.Sprint(events) != fmt.Sprintf("[review issues.opened #%d review issues.closed #%d]", n, n) {
		t.Fatalf("stored %v", events)
	}
	// A routed event, signed correctly, of a repository the review
	// installation does not cover (it was never added): not stored.
	other := w.gh.AddRepo("acme", "secret", githubfake.RepoOptions{Private: true, Files: map[string]string{"x": "y\n"}})
	other.Commit("f", map[string]string{"a": "b\n"}, "c")
	pr := other.AddPullRequest(githubfake.PullRequestOptions{Title: "x", Author: "alice", Head: "f"})
	other.UpdateIssue(pr, func(i *githubfake.Issue) { i.State = "closed" })
	if d, status := w.deliver(t, w.review, "pull_request", w.gh.PullRequestEvent("closed", w.reviewInstall, other, pr, "alice")); d.StatusCode != 202 ||
		status != "ignored" {
		t.Errorf("closed in a repository Quavon does not know: %d %s", d.StatusCode, status)
	}
	if events, _ := stored(t, w, tenant); len(events) != 2 {
		t.Fatalf("stored %v", events)
	}
}

// counts returns how many deliveries, events and jobs the database holds,
// over every tenant.
func counts(t *testing.T, w *hookWorld) string {
	t.Helper()
	var d, e, j int
	if err := w.cp.Admin.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM webhook_deliveries),
		(SELECT count(*) FROM webhook_events), (SELECT count(*) FROM river_job)`).Scan(&d, &e, &j); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d deliveries, %d events, %d jobs", d, e, j)
}

func admin(t *testing.T, w *hookWorld, sql string) {
	t.Helper()
	if _, err := w.cp.Admin.Exec(context.Background(), sql); err != nil {
		t.Fatal(err)
	}
}

// Webhook → row + job atomicity. A failure injected between the event's
// row and its job (the job's insert refused), and one at commit after both
// were written, leave no row, no job and no delivery behind (500, so
// GitHub redelivers); the redelivery then stores exactly one of each.
func TestEventRowAndJobAreAtomic(t *testing.T) {
	w, tenant, _ := installed(t)
	seen := len(w.gh.Deliveries())
	w.app.Commit("feature", map[string]string{"a.go": "package a\n"}, "work")
	w.app.AddPullRequest(githubfake.PullRequestOptions{Title: "Feature", Author: "alice", Head: "feature"})
	take(t, w, &seen)
	before := counts(t, w)

	sync := func(file string) githubfake.Delivery {
		t.Helper()
		w.app.Commit("feature", map[string]string{file: "package a\n"}, "push")
		for _, d := range w.gh.Deliveries()[seen:] {
			seen++
			if d.App == w.review && d.Event == "pull_request" {
				return d
			}
		}
		t.Fatal("no synchronize delivered to the review app")
		return githubfake.Delivery{}
	}

	// 1. The event's row is written, then its job's insert fails.
	admin(t, w, "REVOKE INSERT ON river_job FROM quavon_app")
	d := sync("b.go")
	if d.StatusCode != 500 {
		t.Fatalf("with the job insert failing: %d %s", d.StatusCode, d.Response)
	}
	if got := counts(t, w); got != before {
		t.Fatalf("after the failure: %s, want %s", got, before)
	}
	admin(t, w, "GRANT INSERT ON river_job TO quavon_app")
	if d2, err := w.gh.Redeliver(d); err != nil || d2.StatusCode != 200 || !strings.Contains(string(d2.Response), "processed") {
		t.Fatalf("redelivery: %v %d %s", err, d2.StatusCode, d2.Response)
	}
	events, jobs := stored(t, w, tenant)
	if len(events) != 2 || len(jobs) != 2 { // the opened event, and the synchronize
		t.Fatalf("after the redelivery: %v %v", events, jobs)
	}
	one := counts(t, w)

	// 2. Both are written; the commit fails (a deferred check on the job).
	admin(t, w, `CREATE FUNCTION fail_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'injected failure at commit'; END $$`)
	admin(t, w, `CREATE CONSTRAINT TRIGGER fail_at_commit AFTER INSERT ON river_job DEFERRABLE INITIALLY DEFERRED
		FOR EACH ROW EXECUTE FUNCTION fail_at_commit()`)
	d = sync("c.go")
	if d.StatusCode != 500 {
		t.Fatalf("with the commit failing: %d %s", d.StatusCode, d.Response)
	}
	if got := counts(t, w); got != one {
		t.Fatalf("after the failed commit: %s, want %s", got, one)
	}
	admin(t, w, "DROP TRIGGER fail_at_commit ON river_job")
	if d2, err := w.gh.Redeliver(d); err != nil || d2.StatusCode != 200 {
		t.Fatalf("redelivery: %v %d %s", err, d2.StatusCode, d2.Response)
	}
	if events, jobs := stored(t, w, tenant); len(events) != 3 || len(jobs) != 3 {
		t.Fatalf("after the second redelivery: %v %v", events, jobs)
	}
}
