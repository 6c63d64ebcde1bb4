package web_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/githubfake"
	"github.com/quavon/quavon/internal/policy"
	"github.com/quavon/quavon/internal/repos"
	"github.com/quavon/quavon/internal/web/webtest"
)

// TestBrowserStackedOffer: the page of a review-fix commit GitHub refused
// shows the stacked offer, passes the CSP, 375 px and axe-core checks, and
// one click opens the approved stacked run.
func TestBrowserStackedOffer(t *testing.T) {
	policy.LiftReviewFixGate(t)
	f := webtest.New(t, webtest.Options{})
	f.InTenant(t, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO repository_policies (tenant_id, repository_id, document) VALUES (quavon_current_tenant(), $1, $2::jsonb)`,
			f.Seed.Repository, `{"version":1,"features":{"fix":{"mode":"approval","reviewFixes":"commit"}}}`)
		return err
	})
	repo := f.GH.Repo("acme", "app")
	reviewed := repo.Commit("feature", map[string]string{"feature.txt": "f\n"}, "feature")
	pr := repo.AddPullRequest(githubfake.PullRequestOptions{Title: "Feature", Author: "bob", Head: "feature"})
	runID, _ := refusedCommit(t, f, f.AddUser(t, "mona", "write"), pr, reviewed)
	repo.Commit("feature", map[string]string{"other.txt": "the author pushed\n"}, "author push")
	f.AddUser(t, "alice", "write", repos.RoleReview)

	b := newBrowser(t)
	f.GH.SignInAs("alice")
	b.run(chromedp.Navigate(f.URL+"/auth/login?return=/fixes/"+runID), chromedp.WaitVisible(chromedp.CSS("#stacked")))
	b.check("fix-run-stacked-offer")
	b.run(chromedp.Click(chromedp.CSS("#stacked")))
	st := b.waitFor(`(document.querySelector("#stacked") === null && document.querySelector("#run-state")) ? document.querySelector("#run-state").textContent : ""`)
	if !strings.HasPrefix(st, "approved") {
		t.Fatalf("after the click the page shows state %q", st)
	}
	if url := value(b, chromedp.Location()); strings.HasSuffix(url, "/fixes/"+runID) {
		t.Fatalf("still on the refused run: %s", url)
	}
	b.check("fix-run-stacked")
}
