package web_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/patch"
	"github.com/quavon/quavon/internal/policy"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/queues"
	"github.com/quavon/quavon/internal/repos"
	"github.com/quavon/quavon/internal/review"
	"github.com/quavon/quavon/internal/web/webtest"
)

var hiddenRE = regexp.MustCompile(`<input type="hidden" name="([a-z_0-9]+)" value="([^"]*)">`)

// decisionForm reads the hidden fields of the fix run page's decision form.
func decisionForm(t *testing.T, page string) url.Values {
	t.Helper()
	i := strings.Index(page, `class="decision"`)
	if i < 0 {
		t.Fatalf("no decision form on the page")
	}
	v := url.Values{}
	for _, m := range hiddenRE.FindAllStringSubmatch(page[i:], -1) {
		v.Set(m[1], html.UnescapeString(m[2]))
	}
	return v
}

func state(t *testing.T, f *webtest.Fixture, fr webtest.FixRun) (fix.Status, publish.OutputStatus) {
	t.Helper()
	var rs fix.Status
	var os publish.OutputStatus
	f.InTenant(t, func(ctx context.Context, tx pgx.Tx) error {
		r, err := fix.Get(ctx, tx, fr.ID)
		if err != nil {
			return err
		}
		o, err := publish.GetOutput(ctx, tx, fr.OutputID)
		if err != nil {
			return err
		}
		rs, os = r.Status, o.Status
		return nil
	})
	return rs, os
}

func auditCount(t *testing.T, f *webtest.Fixture, action string) int {
	var n int
	f.InTenant(t, func(ctx context.Context, tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action = $1`, action).Scan(&n)
	})
	return n
}

// publishJobs counts the publish jobs queued for one output.
func publishJobs(t *testing.T, f *webtest.Fixture, outputID string) int {
	t.Helper()
	var n int
	f.InTenant(t, func(ctx context.Context, tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = $1 AND queue = $2 AND args->>'output' = $3`,
			publish.JobKind, queues.Publish, outputID).Scan(&n)
	})
	return n
}

func postDecision(t *testing.T, c *http.Client, f *webtest.Fixture, id string, form url.Values) (int, string) {
	t.Helper()
	nc := *c
	nc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := nc.PostForm(f.URL+"/fixes/"+id+"/decision", form)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body(t, resp)
}

func TestApproveTheExactPatch(t *testing.T) {
	f := webtest.New(t, webtest.Options{})
	f.AddUser(t, "alice", "write", repos.RoleReview, repos.RoleManage)
	c := f.Client(t)
	body(t, f.SignIn(t, c, "alice", "/repos"))
	changes, base := webtest.FixPatch(3, 5, "fix")
	fr := f.NewFixRun(t, 7, changes, base, time.Now().Add(time.Hour))

	resp, err := c.Get(f.URL + "/fixes/" + fr.ID)
	if err != nil {
		t.Fatal(err)
	}
	page := body(t, resp)
	for _, want := range []string{fr.PatchSHA, fr.BaseSHA, "Executed by build or test systems", "build recipe", "run on that branch with the repository's secrets",
		`class="file exec"`, `id="approve"`, "a draft pull request against the default branch", `class="c-`} {
		if !strings.Contains(page, want) {
			t.Errorf("the approval page lacks %q", want)
		}
	}
	form := decisionForm(t, page)
	if form.Get("patch_sha256") != fr.PatchSHA || form.Get("policy_sha256") != fr.PolicySHA || form.Get("base_sha") != fr.BaseSHA {
		t.Fatalf("the form does not bind what is shown: %v", form)
	}

	// A stale binding: a patch hash other than the stored one.
	stale := url.Values{}
	for k, v := range form {
		stale[k] = v
	}
	stale.Set("patch_sha256", strings.Repeat("0", 64))
	stale.Set("decision", "approve")
	if code, _ := postDecision(t, c, f, fr.ID, stale); code != http.StatusConflict {
		t.Fatalf("stale patch hash: %d, want 409", code)
	}
	stale.Set("patch_sha256", fr.PatchSHA)
	stale.Set("base_sha", strings.Repeat("cd", 20))
	if code, _ := postDecision(t, c, f, fr.ID, stale); code != http.StatusConflict {
		t.Fatalf("stale base: %d, want 409", code)
	}
	if rs, os := state(t, f, fr); rs != fix.StatusAwaitingApproval || os != publish.OutputAwaitingApproval {
		t.Fatalf("a refused decision changed state: %s %s", rs, os)
	}
	if n := publishJobs(t, f, fr.OutputID); n != 0 {
		t.Fatalf("a stale binding queued %d publish jobs", n)
	}

	form.Set("decision", "approve")
	if code, page := postDecision(t, c, f, fr.ID, form); code != http.StatusSeeOther {
		t.Fatalf("approve: %d %s", code, page)
	}
	if rs, os := state(t, f, fr); rs != fix.StatusApproved || os != publish.OutputApproved {
		t.Fatalf("after approval: %s %s", rs, os)
	}
	if n := auditCount(t, f, "fix_run.approve"); n != 1 {
		t.Fatalf("approval audit entries: %d", n)
	}
	// The approval queued the output's publication with it.
	if n := publishJobs(t, f, fr.OutputID); n != 1 {
		t.Fatalf("publish jobs after the approval: %d, want 1", n)
	}
	var meta string
	f.InTenant(t, func(ctx context.Context, tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT metadata::text FROM audit_log WHERE action = 'fix_run.approve'`).Scan(&meta)
	})
	for _, want := range []string{fr.PatchSHA, fr.BaseSHA, `"login": "alice"`, `"permission": "write"`} {
		if !strings.Contains(meta, want) {
			t.Errorf("the audit entry lacks %s: %s", want, meta)
		}
	}
	// A second decision on the same output is refused and queues nothing.
	if code, _ := postDecision(t, c, f, fr.ID, form); code != http.StatusConflict {
		t.Fatalf("second decision: %d", code)
	}
	if n := publishJobs(t, f, fr.OutputID); n != 1 {
		t.Fatalf("publish jobs after a refused second decision: %d, want 1", n)
	}
}

func TestPolicyChangeInvalidatesTheApproval(t *testing.T) {
	f := webtest.New(t, webtest.Options{})
	f.AddUser(t, "alice", "write", repos.RoleReview, repos.RoleManage)
	c := f.Client(t)
	body(t, f.SignIn(t, c, "alice", "/repos"))
	changes, base := webtest.FixPatch(1, 3, "x")
	fr := f.NewFixRun(t, 8, changes, base, time.Now().Add(time.Hour))
	resp, _ := c.Get(f.URL + "/fixes/" + fr.ID)
	form := decisionForm(t, body(t, resp))
	form.Set("decision", "approve")
	// The policy changes after the page was shown.
	f.InTenant(t, func(ctx context.Context, tx pgx.Tx) error {
		p := policy.Default()
		p.Features.SAST.Mode = policy.ModeOn
		doc, err := policy.Marshal(p)
		if err != nil {
			return err
		}
		_, err = repos.SavePolicy(ctx, tx, f.Seed.Repository, doc, 0, f.Seed.User)
		return err
	})
	if code, _ := postDecision(t, c, f, fr.ID, form); code != http.StatusConflict {
		t.Fatalf("approval under a changed policy: %d, want 409", code)
	}
	resp, _ = c.Get(f.URL + "/fixes/" + fr.ID)
	if page := body(t, resp); strings.Contains(page, `id="approve"`) || !strings.Contains(page, "policy changed") {
		t.Fatal("the page still offers approval under a changed policy")
	}
	if rs, _ := state(t, f, fr); rs != fix.StatusAwaitingApproval {
		t.Fatalf("state: %s", rs)
	}
}

func TestApprovalNeedsRoleAndLivePermission(t *testing.T) {
	f := webtest.New(t, webtest.Options{})
	f.AddUser(t, "alice", "write", repos.RoleReview)
	f.AddUser(t, "manager", "write", repos.RoleManage) // no repo:review
	f.AddUser(t, "reader", "read", repos.RoleReview)   // the role, but only read on GitHub
	changes, base := webtest.FixPatch(1, 3, "x")
	fr := f.NewFixRun(t, 9, changes, base, time.Now().Add(time.Hour))

	// alice's page gives the form a forger would copy.
	ac := f.Client(t)
	body(t, f.SignIn(t, ac, "alice", "/repos"))
	resp, _ := ac.Get(f.URL + "/fixes/" + fr.ID)
	form := decisionForm(t, body(t, resp))
	form.Set("decision", "approve")

	for _, login := range []string{"manager", "reader"} {
		c := f.Client(t)
		page := body(t, f.SignIn(t, c, login, "/fixes/"+fr.ID))
		if login == "manager" && strings.Contains(page, `id="approve"`) {
			t.Errorf("%s without repo:review sees the approve button", login)
		}
		form.Set("form_token", formToken(t, page))
		if code, _ := postDecision(t, c, f, fr.ID, form); code != http.StatusForbidden {
			t.Errorf("%s: forged approval answered %d, want 403", login, code)
		}
	}
	if rs, os := state(t, f, fr); rs != fix.StatusAwaitingApproval || os != publish.OutputAwaitingApproval {
		t.Fatalf("state: %s %s", rs, os)
	}
	// GitHub permission taken away after sign-in: the live check refuses.
	f.GH.SetPermission("acme", "app", "alice", "read")
	form.Set("form_token", formToken(t, body(t, mustGet(t, ac, f.URL+"/repos"))))
	if code, _ := postDecision(t, ac, f, fr.ID, form); code != http.StatusForbidden {
		t.Fatalf("approval after losing write on GitHub: %d", code)
	}
}

func mustGet(t *testing.T, c *http.Client, u string) *http.Response {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestRejectAndExpiry(t *testing.T) {
	f := webtest.New(t, webtest.Options{})
	f.AddUser(t, "alice", "write", repos.RoleReview)
	c := f.Client(t)
	body(t, f.SignIn(t, c, "alice", "/repos"))
	changes, base := webtest.FixPatch(1, 3, "x")
	fr := f.NewFixRun(t, 10, changes, base, time.Now().Add(time.Hour))
	form := decisionForm(t, body(t, mustGet(t, c, f.URL+"/fixes/"+fr.ID)))
	form.Set("decision", "reject")
	if code, _ := postDecision(t, c, f, fr.ID, form); code != http.StatusBadRequest {
		t.Fatalf("reject without a reason: %d", code)
	}
	form.Set("note", "touches the Makefile")
	if code, _ := postDecision(t, c, f, fr.ID, form); code != http.StatusSeeOther {
		t.Fatalf("reject: %d", code)
	}
	if rs, os := state(t, f, fr); rs != fix.StatusRejected || os != publish.OutputRejected || auditCount(t, f, "fix_run.reject") != 1 {
		t.Fatalf("after rejection: %s %s", rs, os)
	}
	if n := publishJobs(t, f, fr.OutputID); n != 0 {
		t.Fatalf("a rejection queued %d publish jobs", n)
	}

	late := f.NewFixRun(t, 11, changes, base, time.Now().Add(time.Hour))
	form = decisionForm(t, body(t, mustGet(t, c, f.URL+"/fixes/"+late.ID)))
	form.Set("decision", "approve")
	f.Advance(2 * time.Hour)
	form.Set("form_token", formToken(t, body(t, mustGet(t, c, f.URL+"/repos"))))
	if code, _ := postDecision(t, c, f, late.ID, form); code != http.StatusConflict {
		t.Fatalf("approval after the expiry: %d", code)
	}
	if rs, os := state(t, f, late); rs != fix.StatusExpired || os != publish.OutputExpired {
		t.Fatalf("after a late approval: %s %s", rs, os)
	}
	if n := publishJobs(t, f, late.OutputID); n != 0 {
		t.Fatalf("an expired approval queued %d publish jobs", n)
	}
}

// Untrusted text (finding titles and bodies, file names, the agent's
// summary, test output) is escaped on every page.
func TestUntrustedTextIsEscaped(t *testing.T) {
	f := webtest.New(t, webtest.Options{})
	f.AddUser(t, "alice", "write", repos.RoleReview, repos.RoleManage)
	c := f.Client(t)
	body(t, f.SignIn(t, c, "alice", "/repos"))
	evil := `<script>alert(1)</script><img src=x onerror=alert(2)>"'`
	changes := []patch.FixFileChange{{Path: `docs/<img src=x onerror=alert(3)>.md`, Operation: patch.OpCreate, NewContent: evil + "\n", Mode: patch.ModeFile}}
	fr := f.NewFixRun(t, 12, changes, patch.MapBase(nil), time.Now().Add(time.Hour))
	reviewID := f.NewReviewRun(t, 3, strings.Repeat("1", 40), []review.Finding{{Fingerprint: strings.Repeat("a", 32), Source: review.SourceSAST,
		Tools: []string{"gosec"}, Path: `a/<b>.go`, StartLine: 1, EndLine: 2, Severity: "high", Title: evil, Body: evil}})
	for _, u := range []string{"/fixes/" + fr.ID, "/reviews/" + reviewID, "/audit"} {
		page := body(t, mustGet(t, c, f.URL+u))
		for _, bad := range []string{"<script>", "<img src=x", "<b>.go"} {
			if strings.Contains(page, bad) {
				t.Errorf("%s contains %q unescaped", u, bad)
			}
		}
	}
	page := body(t, mustGet(t, c, f.URL+"/reviews/"+reviewID))
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") || !strings.Contains(page, "deterministic") {
		t.Error("the finding is not shown escaped with its badge")
	}
}

func TestDismissAndRestoreFeedsFeedback(t *testing.T) {
	f := webtest.New(t, webtest.Options{})
	f.AddUser(t, "alice", "write", repos.RoleReview)
	c := f.Client(t)
	body(t, f.SignIn(t, c, "alice", "/repos"))
	runID := f.NewReviewRun(t, 4, strings.Repeat("2", 40), []review.Finding{{Fingerprint: strings.Repeat("b", 32), Source: review.SourceLLM,
		Path: "x.go", StartLine: 1, EndLine: 1, Severity: "low", Title: "t", Body: "b"}})
	var findingID string
	f.InTenant(t, func(ctx context.Context, tx pgx.Tx) error {
		fs, err := review.Findings(ctx, tx, runID)
		findingID = fs[0].ID
		return err
	})
	page := body(t, mustGet(t, c, f.URL+"/reviews/"+runID))
	tok := formToken(t, page)
	u := f.URL + "/reviews/" + runID + "/findings/" + findingID + "/feedback"
	resp, _ := c.PostForm(u, url.Values{"form_token": {tok}, "action": {"dismiss"}, "reason": {"false_positive"}})
	if page := body(t, resp); !strings.Contains(page, ">dismissed<") || !strings.Contains(page, "Restore") {
		t.Fatalf("after dismissing: %d", resp.StatusCode)
	}
	resp, _ = c.PostForm(u, url.Values{"form_token": {tok}, "action": {"undismiss"}})
	if page := body(t, resp); strings.Contains(page, ">dismissed<") {
		t.Fatal("restore did not restore")
	}
	var n int
	f.InTenant(t, func(ctx context.Context, tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT count(*) FROM finding_feedback WHERE source = 'dashboard'`).Scan(&n)
	})
	if n != 2 || auditCount(t, f, "review_finding.dismiss") != 1 {
		t.Fatalf("feedback rows %d", n)
	}
}

func TestPolicyEditor(t *testing.T) {
	f := webtest.New(t, webtest.Options{})
	f.AddUser(t, "alice", "write", repos.RoleManage)
	c := f.Client(t)
	page := body(t, f.SignIn(t, c, "alice", "/repos/acme/app/policy"))
	tok := formToken(t, page)
	u := f.URL + "/repos/acme/app/policy"
	resp, _ := c.PostForm(u, url.Values{"form_token": {tok}, "version": {"0"}, "document": {`{"version":1,"features":{"sast":{"mode":"loud"}}}`}})
	if page := body(t, resp); resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(page, "/features/sast/mode") {
		t.Fatalf("invalid policy: %d", resp.StatusCode)
	}
	p := policy.Default()
	p.Features.SAST.Mode = policy.ModeOn
	doc, _ := policy.Marshal(p)
	resp, _ = c.PostForm(u, url.Values{"form_token": {tok}, "version": {"0"}, "document": {string(doc)}})
	if page := body(t, resp); resp.StatusCode != 200 || !strings.Contains(page, "Saved as version 1") || !strings.Contains(page, "/features/sast/mode") {
		t.Fatalf("save: %d %s", resp.StatusCode, page)
	}
	resp, _ = c.PostForm(u, url.Values{"form_token": {tok}, "version": {"0"}, "document": {string(doc)}})
	if page := body(t, resp); resp.StatusCode != http.StatusConflict || !strings.Contains(page, "after you opened it") {
		t.Fatalf("stale version: %d", resp.StatusCode)
	}
}

// FX15: a review fix delivered as a commit on the pull request's branch
// says so in its banner, and its approval binds the expected head too.
func TestCommitDeliveryBanner(t *testing.T) {
	f := webtest.New(t, webtest.Options{})
	f.AddUser(t, "alice", "write", repos.RoleReview)
	c := f.Client(t)
	body(t, f.SignIn(t, c, "alice", "/repos"))
	head := strings.Repeat("4", 40)
	reviewID := f.NewReviewRun(t, 6, head, nil)
	changes, base := webtest.FixPatch(2, 3, "x")
	var runID, outputID string
	f.InTenant(t, func(ctx context.Context, tx pgx.Tx) error {
		run, err := fix.Create(ctx, tx, fix.NewRun{RepositoryID: f.Seed.Repository, Subject: fix.SubjectPullRequest, Number: 6, ReviewRunID: reviewID,
			Delivery: fix.DeliveryCommit, Mode: fix.ModeApproval, Trigger: fix.TriggerDashboard, Actor: fix.Actor{Login: "alice", ID: 7}})
		if err != nil {
			return err
		}
		runID = run.ID
		if _, err := fix.Start(ctx, tx, run.ID, fix.Base{SHA: head, Ref: "feature", HeadRepoExternalID: 99}); err != nil {
			return err
		}
		diff, err := patch.RenderDiff(changes, base)
		if err != nil {
			return err
		}
		sum, err := fix.RecordPatch(ctx, tx, run.ID, changes, diff, "s")
		if err != nil {
			return err
		}
		if _, err := fix.Transition(ctx, tx, run.ID, fix.StatusAwaitingApproval, fix.Why{}); err != nil {
			return err
		}
		pol, err := policy.Resolve(nil, policy.RepoFacts{Private: true}).VerdictsSHA256()
		if err != nil {
			return err
		}
		out, err := publish.CreateOutput(ctx, tx, publish.NewOutput{RepositoryID: f.Seed.Repository, Kind: publish.KindFixCommit, FixRunID: run.ID,
			Status: publish.OutputAwaitingApproval, Payload: map[string]any{"fixRunId": run.ID},
			Bound: publish.Bound{PatchSHA256: sum, BaseSHA: head, HeadSHA: head, PolicySHA256: pol}, ExpiresAt: time.Now().Add(time.Hour)})
		if err != nil {
			return err
		}
		outputID = out.ID
		return nil
	})
	page := body(t, mustGet(t, c, f.URL+"/fixes/"+runID))
	if !strings.Contains(page, "This commit lands on the pull request") || !strings.Contains(page, "one commit on the pull request's branch") {
		t.Fatal("the commit delivery is not named in the banner")
	}
	if i := strings.Index(page, `id="executed"`); i < 0 || !strings.Contains(page[i:], "<code>"+webtest.ExecutedFile+"</code>") {
		t.Fatal("the executed file is not highlighted in the commit delivery's preview")
	}
	form := decisionForm(t, page)
	if form.Get("head_sha") != head || form.Get("output_id") != outputID {
		t.Fatalf("the form does not bind the head: %v", form)
	}
	form.Set("decision", "approve")
	form.Set("head_sha", strings.Repeat("5", 40))
	if code, _ := postDecision(t, c, f, runID, form); code != http.StatusConflict {
		t.Fatalf("a moved head: %d, want 409", code)
	}
	form.Set("head_sha", head)
	if code, _ := postDecision(t, c, f, runID, form); code != http.StatusSeeOther {
		t.Fatalf("approve: %d", code)
	}
}

// The publish job commits with the decision or not at all: an approval
// whose run can no longer move (here the run expired behind the page while
// its output still awaits approval) is refused and leaves no job.
func TestRefusedApprovalQueuesNoPublication(t *testing.T) {
	f := webtest.New(t, webtest.Options{})
	f.AddUser(t, "alice", "write", repos.RoleReview)
	c := f.Client(t)
	body(t, f.SignIn(t, c, "alice", "/repos"))
	changes, base := webtest.FixPatch(1, 3, "y")
	fr := f.NewFixRun(t, 13, changes, base, time.Now().Add(time.Hour))
	form := decisionForm(t, body(t, mustGet(t, c, f.URL+"/fixes/"+fr.ID)))
	form.Set("decision", "approve")
	f.InTenant(t, func(ctx context.Context, tx pgx.Tx) error {
		_, err := fix.Transition(ctx, tx, fr.ID, fix.StatusExpired, fix.Why{Reason: fix.ReasonApprovalExpired})
		return err
	})
	if code, page := postDecision(t, c, f, fr.ID, form); code != http.StatusConflict {
		t.Fatalf("approval of a run that moved: %d %s", code, page)
	}
	if rs, os := state(t, f, fr); rs != fix.StatusExpired || os != publish.OutputAwaitingApproval {
		t.Fatalf("a refused approval changed state: %s %s", rs, os)
	}
	if n := publishJobs(t, f, fr.OutputID); n != 0 {
		t.Fatalf("a refused approval left %d publish jobs", n)
	}
}
