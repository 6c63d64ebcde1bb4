package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/githubfake"
	"github.com/quavon/quavon/internal/patch"
	"github.com/quavon/quavon/internal/policy"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/repos"
	"github.com/quavon/quavon/internal/web/webtest"
)

// refusedCommit records, through the stores, a review fix of pull request
// pr delivered as a commit that the publisher failed with head_moved (the
// author pushed after the review, GitHub refused the compare-and-swap).
// Its patch changes README.md as it was at the reviewed head.
func refusedCommit(t *testing.T, f *webtest.Fixture, approverID string, pr int, head string) (runID, patchSHA string) {
	t.Helper()
	readme := "hi\n"
	changes := []patch.FixFileChange{{Path: "README.md", Operation: patch.OpModify, BaseBlobSHA: patch.BlobSHA([]byte(readme)),
		NewContent: "hi, fixed\n", Mode: patch.ModeFile}}
	reviewID := f.NewReviewRun(t, pr, head, nil)
	f.InTenant(t, func(ctx context.Context, tx pgx.Tx) error {
		run, err := fix.Create(ctx, tx, fix.NewRun{RepositoryID: f.Seed.Repository, Subject: fix.SubjectPullRequest, Number: pr, ReviewRunID: reviewID,
			Delivery: fix.DeliveryCommit, Mode: fix.ModeApproval, Trigger: fix.TriggerDashboard, Actor: fix.Actor{Login: "alice", ID: 7}})
		if err != nil {
			return err
		}
		runID = run.ID
		if _, err := fix.Start(ctx, tx, run.ID, fix.Base{SHA: head, Ref: "feature", HeadRepoExternalID: 1}); err != nil {
			return err
		}
		diff, err := patch.RenderDiff(changes, patch.MapBase(map[string]patch.MapFile{"README.md": {Content: readme}}))
		if err != nil {
			return err
		}
		if patchSHA, err = fix.RecordPatch(ctx, tx, run.ID, changes, diff, "README says it is fixed."); err != nil {
			return err
		}
		if _, err := fix.Transition(ctx, tx, run.ID, fix.StatusAwaitingApproval, fix.Why{}); err != nil {
			return err
		}
		out, err := publish.CreateOutput(ctx, tx, publish.NewOutput{RepositoryID: f.Seed.Repository, Kind: publish.KindFixCommit, FixRunID: run.ID,
			Status:  publish.OutputAwaitingApproval,
			Payload: publish.FixPRPayload{Issue: pr, BaseRef: "feature", BaseSHA: head, Files: 1, Summary: "s"},
			Bound:   publish.Bound{PatchSHA256: patchSHA, BaseSHA: head, HeadSHA: head}, ExpiresAt: time.Now().Add(time.Hour)})
		if err != nil {
			return err
		}
		if _, err := publish.Decide(ctx, tx, out.ID, publish.Decision{Approve: true, UserID: approverID,
			ShownPayloadSHA256: out.PayloadSHA256, Shown: out.Bound, Now: time.Now()}); err != nil {
			return err
		}
		for _, to := range []fix.Status{fix.StatusApproved, fix.StatusPublishing} {
			if _, err := fix.Transition(ctx, tx, run.ID, to, fix.Why{}); err != nil {
				return err
			}
		}
		// What the publisher leaves after GitHub refused the commit.
		if _, err := publish.MoveOutput(ctx, tx, out.ID, publish.OutputFailed, fix.ReasonHeadMoved); err != nil {
			return err
		}
		_, err = fix.Transition(ctx, tx, run.ID, fix.StatusFailed, fix.Why{Reason: fix.ReasonHeadMoved, Detail: "GitHub refused the commit"})
		return err
	})
	return runID, patchSHA
}

func postStacked(t *testing.T, c *http.Client, f *webtest.Fixture, id string, form url.Values) (int, string, string) {
	t.Helper()
	nc := *c
	nc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := nc.PostForm(f.URL+"/fixes/"+id+"/stacked", form)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Location"), body(t, resp)
}

// stackedForm reads the hidden fields of the stacked offer's form.
func stackedForm(t *testing.T, page string) url.Values {
	t.Helper()
	i := strings.Index(page, `id="stacked-offer"`)
	if i < 0 {
		t.Fatal("no stacked offer on the page")
	}
	end := strings.Index(page[i:], "</form>")
	v := url.Values{}
	for _, m := range hiddenRE.FindAllStringSubmatch(page[i:i+end], -1) {
		v.Set(m[1], m[2])
	}
	return v
}

// FX16: a commit GitHub refused because the head moved is offered as a
// stacked draft pull request with the same patch on the new head, by one
// click with the approval's checks (role, live permission, form token);
// a patch that no longer applies is refused with the way forward.
func TestStackedInsteadOfRefusedCommit(t *testing.T) {
	policy.LiftReviewFixGate(t)
	f := webtest.New(t, webtest.Options{})
	f.InTenant(t, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO repository_policies (tenant_id, repository_id, document) VALUES (quavon_current_tenant(), $1, $2::jsonb)
			ON CONFLICT (tenant_id, repository_id) DO UPDATE SET document = excluded.document`, f.Seed.Repository,
			`{"version":1,"features":{"fix":{"mode":"approval","reviewFixes":"commit"}}}`)
		return err
	})
	repo := f.GH.Repo("acme", "app")
	reviewed := repo.Commit("feature", map[string]string{"feature.txt": "f\n"}, "feature")
	pr := repo.AddPullRequest(githubfake.PullRequestOptions{Title: "Feature", Author: "bob", Head: "feature"})
	mona := f.AddUser(t, "mona", "write")
	runID, patchSHA := refusedCommit(t, f, mona, pr, reviewed)
	moved := repo.Commit("feature", map[string]string{"other.txt": "the author pushed\n"}, "author push")

	f.AddUser(t, "alice", "write", repos.RoleReview)
	f.AddUser(t, "rita", "read", repos.RoleReview) // the role, but read on GitHub
	f.AddUser(t, "vic", "write")                   // write on GitHub, no role
	c := f.Client(t)
	body(t, f.SignIn(t, c, "alice", "/repos"))
	page := body(t, mustGet(t, c, f.URL+"/fixes/"+runID))
	form := stackedForm(t, page)
	if form.Get("patch_sha256") != patchSHA {
		t.Fatalf("the offer does not bind the patch: %v", form)
	}
	// Without the form token (CSRF), with another patch: refused.
	if code, _, _ := postStacked(t, c, f, runID, url.Values{"patch_sha256": {patchSHA}}); code != http.StatusForbidden {
		t.Fatalf("without the form token: %d", code)
	}
	other := url.Values{"form_token": {form.Get("form_token")}, "patch_sha256": {strings.Repeat("0", 64)}}
	if code, _, _ := postStacked(t, c, f, runID, other); code != http.StatusConflict {
		t.Fatalf("another patch: %d", code)
	}
	for _, login := range []string{"rita", "vic"} {
		oc := f.Client(t)
		body(t, f.SignIn(t, oc, login, "/repos"))
		p := body(t, mustGet(t, oc, f.URL+"/fixes/"+runID))
		tok := ""
		for _, m := range hiddenRE.FindAllStringSubmatch(p, -1) {
			if m[1] == "form_token" {
				tok = m[2]
			}
		}
		// rita: 403 (read on GitHub); vic: 404 (without a role the
		// repository is not his to see).
		want := map[string]int{"rita": http.StatusForbidden, "vic": http.StatusNotFound}[login]
		if code, _, got := postStacked(t, oc, f, runID, url.Values{"form_token": {tok}, "patch_sha256": {patchSHA}}); code != want {
			t.Fatalf("%s: %d, want %d: %s", login, code, want, got)
		}
	}
	code, loc, got := postStacked(t, c, f, runID, form)
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/fixes/") {
		t.Fatalf("stacked: %d %s %s", code, loc, got)
	}
	newID := strings.TrimPrefix(loc, "/fixes/")
	var out *publish.Output
	f.InTenant(t, func(ctx context.Context, tx pgx.Tx) error {
		nr, err := fix.Get(ctx, tx, newID)
		if err != nil {
			return err
		}
		if nr.Status != fix.StatusApproved || nr.Delivery != fix.DeliveryStackedPR || nr.BaseSHA != moved || nr.BaseRef != "feature" ||
			nr.PatchSHA256 != patchSHA || nr.Number != pr || nr.Actor.Login != "alice" {
			t.Errorf("new run %+v", nr)
		}
		outs, err := publish.OutputsOfRun(ctx, tx, newID)
		if err != nil || len(outs) != 1 {
			t.Fatalf("outputs %v %v", outs, err)
		}
		out = outs[0]
		old, err := fix.Get(ctx, tx, runID)
		if err == nil && (old.Status != fix.StatusFailed || old.Reason != fix.ReasonHeadMoved) {
			t.Errorf("the refused run moved: %s %s", old.Status, old.Reason)
		}
		return err
	})
	if out.Kind != publish.KindFixPR || out.Status != publish.OutputApproved || out.Bound.BaseSHA != moved || out.Bound.PatchSHA256 != patchSHA {
		t.Fatalf("output %+v", out)
	}
	if _, _, err := publish.DecodeFixPRTarget(out); err != nil {
		t.Fatalf("the publisher cannot read the output: %v", err)
	}
	if n := publishJobs(t, f, out.ID); n != 1 {
		t.Errorf("%d publish jobs", n)
	}
	if n := auditCount(t, f, "fix_run.stacked_instead"); n != 1 {
		t.Errorf("%d audit entries", n)
	}
	// Once: the offer is gone and a second click is refused.
	if strings.Contains(body(t, mustGet(t, c, f.URL+"/fixes/"+runID)), `id="stacked-offer"`) {
		t.Error("the offer is still shown")
	}
	if code, _, _ := postStacked(t, c, f, runID, form); code != http.StatusConflict {
		t.Errorf("second click: %d", code)
	}

	// A patch that no longer applies: the author changed README.md.
	pr2 := repo.AddPullRequest(githubfake.PullRequestOptions{Title: "Feature 2", Author: "bob", Head: "feature"})
	runID2, _ := refusedCommit(t, f, mona, pr2, moved)
	repo.Commit("feature", map[string]string{"README.md": "rewritten by the author\n"}, "author rewrite")
	form2 := stackedForm(t, body(t, mustGet(t, c, f.URL+"/fixes/"+runID2)))
	code, _, got = postStacked(t, c, f, runID2, form2)
	if code != http.StatusConflict || !strings.Contains(got, "no longer applies") || !strings.Contains(got, "README.md") {
		t.Fatalf("a patch that no longer applies: %d %s", code, got)
	}
	if n := auditCount(t, f, "fix_run.stacked_instead"); n != 1 {
		t.Errorf("%d audit entries after a refusal", n)
	}
}

// With the gate as shipped the offer is not shown and the POST is 403.
func TestStackedRefusedWhileNotSignedOff(t *testing.T) {
	if policy.ReviewFixesSignedOff() {
		t.Fatal("this test is of the gate as shipped")
	}
	f := webtest.New(t, webtest.Options{})
	repo := f.GH.Repo("acme", "app")
	reviewed := repo.Commit("feature", map[string]string{"feature.txt": "f\n"}, "feature")
	pr := repo.AddPullRequest(githubfake.PullRequestOptions{Title: "Feature", Author: "bob", Head: "feature"})
	runID, patchSHA := refusedCommit(t, f, f.AddUser(t, "mona", "write"), pr, reviewed)
	f.AddUser(t, "alice", "write", repos.RoleReview)
	c := f.Client(t)
	body(t, f.SignIn(t, c, "alice", "/repos"))
	page := body(t, mustGet(t, c, f.URL+"/fixes/"+runID))
	if strings.Contains(page, `id="stacked-offer"`) {
		t.Fatal("offered while review fixes are not signed off")
	}
	tok := ""
	for _, m := range hiddenRE.FindAllStringSubmatch(page, -1) {
		if m[1] == "form_token" {
			tok = m[2]
		}
	}
	code, _, got := postStacked(t, c, f, runID, url.Values{"form_token": {tok}, "patch_sha256": {patchSHA}})
	if code != http.StatusForbidden || !strings.Contains(got, "REVIEW_FIX_SIGNED_OFF") {
		t.Fatalf("%d %s", code, got)
	}
}
