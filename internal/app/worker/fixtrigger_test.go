package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/fix/fixjob"
	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/githubfake"
	"github.com/quavon/quavon/internal/testenv/testbroker"
	"github.com/quavon/quavon/internal/tokenbroker"
)

// fixRuns lists the fix runs of issue n as "status:reason", sorted.
func (w *world) fixRuns(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	w.in(t, func(tx pgx.Tx) error {
		rows, err := tx.Query(context.Background(), `SELECT status || ':' || coalesce(reason, '') FROM fix_runs
			WHERE repository_id = $1 AND number = $2 ORDER BY 1`, w.repoID, n)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	return out
}

// The eligibility matrix through the emulator's webhooks, the real API
// intake and the assembled worker, with live permission checks through
// the real token broker. The worker has no fix model: an admitted run gets
// its fix_run job, which ends it failed with model_unavailable.
func TestFixTriggersThroughTheEmulator(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.in(t, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO repository_policies (tenant_id, repository_id, document)
			VALUES (quavon_current_tenant(), $1, $2)`, w.repoID,
			`{"version":1,"features":{"fix":{"mode":"approval","triggerLabels":["quavon:fix"],"maxRunsPerIssuePerDay":2,"maxRunsPerDay":50}}}`)
		return err
	})
	for login, role := range map[string]string{"wanda": "write", "adam": "admin", "rita": "read", "tom": "triage"} {
		w.gh.AddUser(login)
		w.gh.SetPermission("acme", "app", login, role)
	}
	w.gh.AddUser("eve")
	admitted := "failed:" + fixjob.ReasonModelUnavailable
	stop := w.startWorker(t, w.workerGitHubEnv(t)...)
	defer stop()

	type want struct {
		issue int
		runs  []string
	}
	var cases []struct {
		name string
		want want
	}
	add := func(name string, n int, runs ...string) {
		cases = append(cases, struct {
			name string
			want want
		}{name, want{n, runs}})
	}
	// Labels set at creation (issue templates) carry the creator as sender.
	add("write user's template label", w.repo.AddIssue(githubfake.IssueOptions{Title: "a", Author: "wanda", Labels: []string{"quavon:fix"}}), admitted)
	add("triage user's template label", w.repo.AddIssue(githubfake.IssueOptions{Title: "b", Author: "tom", Labels: []string{"quavon:fix"}}), "ineligible:"+fix.ReasonActorNoWrite)
	add("outsider's template label", w.repo.AddIssue(githubfake.IssueOptions{Title: "c", Author: "eve", Labels: []string{"quavon:fix"}}), "ineligible:"+fix.ReasonActorNoWrite)
	add("other label", w.repo.AddIssue(githubfake.IssueOptions{Title: "d", Author: "wanda", Labels: []string{"bug"}}))
	// Comments.
	n := w.repo.AddIssue(githubfake.IssueOptions{Title: "e", Author: "eve"})
	w.repo.AddComment(n, "rita", "@quavon-fixer fix")
	add("read user's comment", n, "ineligible:"+fix.ReasonActorNoWrite)
	n = w.repo.AddIssue(githubfake.IssueOptions{Title: "f", Author: "eve"})
	w.repo.AddComment(n, "wanda", "`@quavon-fixer fix`")
	w.repo.AddComment(n, "wanda", "> @quavon-fixer fix")
	w.repo.AddComment(n, "wanda", "@quavon-review fix")
	w.repo.AddComment(n, "wanda", "@quavon-fixer please")
	add("mentions in code, quotes, of another app, another command", n)
	id := w.repo.AddComment(n, "wanda", "thanks")
	w.repo.EditComment(id, "@quavon-fixer fix")
	add("an edited comment", n)
	n = w.repo.AddIssue(githubfake.IssueOptions{Title: "g", Author: "eve"})
	w.repo.AddComment(n, "adam", "Could you look at this?\n\n@Quavon-Fixer fix please")
	w.repo.AddComment(n, "wanda", "@quavon-fixer fix")
	w.repo.AddComment(n, "wanda", "@quavon-fixer fix")
	add("an admin's comment, then two more triggers (the issue cap is 2)", n, admitted, admitted,
		"ineligible:"+fix.ReasonCapIssue)
	w.repo.Commit("feature", map[string]string{"x.go": "package x\n"}, "x")
	pr := w.repo.AddPullRequest(githubfake.PullRequestOptions{Title: "pr", Author: "wanda", Head: "feature"})
	w.repo.AddComment(pr, "wanda", "@quavon-fixer fix")
	add("a comment on a pull request", pr, "ineligible:"+fix.ReasonNotAnIssue)
	n = w.repo.AddIssue(githubfake.IssueOptions{Title: "h", Author: "eve"})
	w.repo.AddComment(n, w.fixer.Bot.Login, "@quavon-fixer fix")
	add("the Fixer app's own comment", n, "ineligible:"+fix.ReasonActorNotUser)

	waitFor(t, "every event processed and every admitted run taken", func() bool {
		var pending int
		w.in(t, func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM webhook_events WHERE processed_at IS NULL)
				+ (SELECT count(*) FROM fix_runs WHERE status IN ('queued', 'running'))`).Scan(&pending)
		})
		return pending == 0
	})
	for _, c := range cases {
		want := slices.Sorted(slices.Values(c.want.runs))
		if got := w.fixRuns(t, c.want.issue); !slices.Equal(got, want) {
			t.Errorf("%s (#%d): runs %v, want %v", c.name, c.want.issue, got, c.want.runs)
		}
	}
	// A redelivery changes nothing.
	before := w.fixRuns(t, cases[0].want.issue)
	for _, d := range w.gh.Deliveries() {
		if d.Event == "issues" && d.App == w.fixer && strings.Contains(string(d.Body), `"labeled"`) {
			if _, err := w.gh.Redeliver(d); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if got := w.fixRuns(t, cases[0].want.issue); !slices.Equal(got, before) {
		t.Errorf("after a redelivery: %v, want %v", got, before)
	}
}

// workerGitHubEnv starts a real token broker for the emulator's apps and
// returns the worker's settings to read GitHub through it.
func (w *world) workerGitHubEnv(t *testing.T) []string {
	t.Helper()
	b := testbroker.Start(t, w.gh, map[github.AppKind]*githubfake.App{github.AppReview: w.review, github.AppFixer: w.fixer},
		testbroker.Options{})
	cred := filepath.Join(t.TempDir(), "broker-credential")
	if err := os.WriteFile(cred, []byte(b.Credential(tokenbroker.RoleWorker)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"QUAVON_BROKER_ADDR=" + b.Addr, "QUAVON_BROKER_CREDENTIAL_FILE=" + cred,
		"QUAVON_GITHUB_API_URL=" + w.gh.URL + "/", "QUAVON_GITHUB_GRAPHQL_URL=" + w.gh.URL + "/graphql",
		"QUAVON_GIT_CACHE_DIR=" + t.TempDir(), "QUAVON_GITHUB_GIT_URL=" + w.gh.URL + "/",
		fmt.Sprintf("QUAVON_MAX_FIX_RUNS_PER_TENANT_PER_DAY=%d", 50)}
}
