package publisher_test

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/githubfake"
	"github.com/quavon/quavon/internal/patch"
	"github.com/quavon/quavon/internal/policy"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/publish/publisher"
	"github.com/quavon/quavon/internal/publish/render"
	"github.com/quavon/quavon/internal/review"
)

// The tests in this file lift the review-fix gate (policy.LiftReviewFixGate)
// and so never run in parallel.

// reviewFixPolicy opts in to both deliveries.
const reviewFixPolicy = `{"version":1,"features":{"fix":{"mode":"approval","testCommand":"go test ./...","reviewFixes":"commit"}}}`

// reviewWorld is a fixWorld with an open same-repository pull request from
// branch feature, reviewed at its head.
type reviewWorld struct {
	*fixWorld
	pr   int
	head string
}

func newReviewWorld(t *testing.T) *reviewWorld {
	t.Helper()
	policy.LiftReviewFixGate(t)
	w := newFixWorld(t, true, fixerPerms)
	w.policy(t, reviewFixPolicy)
	head := w.repo.Commit("feature", map[string]string{"feature.txt": "f\n"}, "feature work")
	pr := w.repo.AddPullRequest(githubfake.PullRequestOptions{Title: "Feature", Author: "alice", Head: "feature"})
	return &reviewWorld{fixWorld: w, pr: pr, head: head}
}

// hostileTitle is a finding title a model or scanner may write.
const hostileTitle = "Fixes #1 @bob see https://evil.example/x <img src=x> `rm -rf` [link](http://a) GH-12 closes acme/app#3"

// reviewFix stores what the worker and the dashboard leave for a review
// fix of rw.pr: a completed review run with two findings, a run on the
// reviewed head with its patch, and its output (fix_pr for stacked_pr,
// fix_commit for commit) approved by the maintainer; it returns the run
// and output ids.
func (rw *reviewWorld) reviewFix(t *testing.T, delivery fix.Delivery, titles ...string) (runID, outID string) {
	t.Helper()
	if len(titles) == 0 {
		titles = []string{"Add subtracts instead of adding", hostileTitle}
	}
	ctx := context.Background()
	changes := fixCalc()
	rw.in(t, func(tx pgx.Tx) error {
		rr, _, err := review.Create(ctx, tx, review.NewRun{RepositoryID: rw.repoID, PRNumber: rw.pr, HeadSHA: rw.head,
			HeadRef: "feature", BaseRef: "main", Trigger: review.TriggerOpened, Author: "alice"})
		if err != nil {
			return err
		}
		if _, err := review.Start(ctx, tx, rr.ID, review.Modes{Review: "on", SAST: "off", Acceptance: "off"}, "", ""); err != nil {
			return err
		}
		var fs []review.Finding
		for i, title := range titles {
			fs = append(fs, review.Finding{Fingerprint: strings.Repeat(strconv.Itoa(i+1), 32), Source: review.SourceLLM,
				Path: "calc.go", StartLine: 3, EndLine: 3, Severity: "high", Title: title})
		}
		if _, err := review.AddFindings(ctx, tx, rr.ID, fs); err != nil {
			return err
		}
		// The store redacts secrets in titles; a title its patterns miss
		// reaches the publisher as written, which this restores.
		for _, f := range fs {
			if _, err := tx.Exec(ctx, `UPDATE review_findings SET title = $3 WHERE review_run_id = $1 AND fingerprint = $2`,
				rr.ID, f.Fingerprint, f.Title); err != nil {
				return err
			}
		}
		if _, err := review.Complete(ctx, tx, rr.ID, review.Result{}); err != nil {
			return err
		}
		stored, err := review.Findings(ctx, tx, rr.ID)
		if err != nil {
			return err
		}
		var ids []string
		for _, f := range stored {
			ids = append(ids, f.ID)
		}
		r, err := fix.Create(ctx, tx, fix.NewRun{RepositoryID: rw.repoID, Subject: fix.SubjectPullRequest, Number: rw.pr,
			ReviewRunID: rr.ID, FindingIDs: ids, Delivery: delivery, Mode: fix.ModeApproval, Trigger: fix.TriggerDashboard,
			Actor: fix.Actor{Login: "alice", ID: 1}})
		if err != nil {
			return err
		}
		runID = r.ID
		if _, err := fix.Start(ctx, tx, r.ID, fix.Base{SHA: rw.head, Ref: "feature", HeadRepoExternalID: rw.repo.ID}); err != nil {
			return err
		}
		diff, err := patch.RenderDiff(changes, patch.MapBase(map[string]patch.MapFile{"calc.go": {Content: calcGo}}))
		if err != nil {
			return err
		}
		sum, err := fix.RecordPatch(ctx, tx, r.ID, changes, diff, "Add used `-`; it uses `+` now. Fixes #1 @bob")
		if err != nil {
			return err
		}
		if _, err := fix.Transition(ctx, tx, r.ID, fix.StatusAwaitingApproval, fix.Why{}); err != nil {
			return err
		}
		out := publish.NewOutput{RepositoryID: rw.repoID, Kind: publish.KindFixPR, FixRunID: r.ID,
			Payload: publish.FixPRPayload{Issue: rw.pr, BaseRef: "feature", BaseSHA: rw.head, Files: len(changes), Summary: "Add adds."},
			Bound:   publish.Bound{PatchSHA256: sum, BaseSHA: rw.head, PolicySHA256: verdicts(t, reviewFixPolicy)}, Status: publish.OutputAwaitingApproval,
			ExpiresAt: time.Now().Add(time.Hour)}
		if delivery == fix.DeliveryCommit {
			out.Kind, out.Bound.HeadSHA = publish.KindFixCommit, rw.head
		}
		po, err := publish.CreateOutput(ctx, tx, out)
		if err != nil {
			return err
		}
		outID = po.ID
		if _, err := publish.Decide(ctx, tx, po.ID, publish.Decision{Approve: true, UserID: rw.approverID,
			ShownPayloadSHA256: po.PayloadSHA256, Shown: po.Bound, Now: time.Now()}); err != nil {
			return err
		}
		_, err = fix.Transition(ctx, tx, r.ID, fix.StatusApproved, fix.Why{})
		return err
	})
	return runID, outID
}

func (rw *reviewWorld) output(t *testing.T, id string) *publish.Output {
	t.Helper()
	var o *publish.Output
	rw.in(t, func(tx pgx.Tx) error {
		var err error
		o, err = publish.GetOutput(context.Background(), tx, id)
		return err
	})
	return o
}

// graphQLWrites counts the createCommitOnBranch mutations sent.
func (rw *reviewWorld) commitMutations() int {
	n := 0
	for _, q := range rw.gh.Requests() {
		if strings.Contains(q.GraphQL, "createCommitOnBranch") {
			n++
		}
	}
	return n
}

// closingKeyword matches every closing keyword GitHub knows, in any case,
// followed by a reference in any form it links (#n, owner/repo#n, GH-n, a
// URL to an issue), with or without a colon.
var closingKeyword = regexp.MustCompile(`(?i)\b(close|closes|closed|fix|fixes|fixed|resolve|resolves|resolved)\b:?\s*` +
	`(#\d|[\w.-]+/[\w.-]+#\d|gh-\d|https?://\S+/(issues|pull)/\d)`)

// TestPublishReviewFixStacked: the happy path of delivery stacked_pr: a bot
// branch quavon/fix-<pr>-<8 hex> with one commit on the reviewed head, one
// draft pull request into the pull request's head branch whose body has
// the plain line "Fixes review findings of #<pr>" and no closing keyword,
// and the head branch untouched.
func TestPublishReviewFixStacked(t *testing.T) {
	rw := newReviewWorld(t)
	runID, outID := rw.reviewFix(t, fix.DeliveryStackedPR)
	res, err := rw.publish(t, outID)
	if err != nil || res.Outcome != publisher.OutcomePublished {
		t.Fatalf("publish: %+v %v", res, err)
	}
	if r := rw.run(t, runID); r.Status != fix.StatusPublished {
		t.Fatalf("run %s %s", r.Status, r.Reason)
	}
	in := rw.intent(t, outID)
	branch := publish.FixBranch(rw.pr, in.Marker)
	if !regexp.MustCompile(`^quavon/fix-`+strconv.Itoa(rw.pr)+`-[0-9a-f]{8}$`).MatchString(branch) || in.External.Branch != branch {
		t.Fatalf("branch %q, intent %+v", branch, in)
	}
	ci, ok := rw.repo.CommitInfo(rw.repo.Ref(branch))
	if !ok || len(ci.Parents) != 1 || ci.Parents[0] != rw.head || !strings.HasPrefix(ci.Message, render.ReviewFixHeadline+"\n") {
		t.Fatalf("commit %+v", ci)
	}
	prs := rw.fixPRs(t)
	if len(prs) != 1 || !prs[0].PullRequest.Draft || prs[0].PullRequest.Base != "feature" || prs[0].PullRequest.Head != branch ||
		prs[0].Author != "quavon-fixer[bot]" {
		t.Fatalf("pull requests %+v", prs)
	}
	body := prs[0].Body
	if !strings.Contains(body, "\nFixes review findings of #"+strconv.Itoa(rw.pr)+"\n") {
		t.Errorf("no reference line:\n%s", body)
	}
	if m := closingKeyword.FindAllString(body+"\n"+prs[0].Title, -1); len(m) > 0 {
		t.Errorf("closing keywords %q in\n%s", m, body)
	}
	if rw.repo.Ref("feature") != rw.head {
		t.Error("the head branch moved")
	}
	if n := rw.commitMutations(); n != 0 {
		t.Errorf("%d createCommitOnBranch calls for a stacked delivery", n)
	}
}

// TestClosingKeywordPattern: the pattern the stacked body is checked with
// finds every form GitHub links.
func TestClosingKeywordPattern(t *testing.T) {
	for _, s := range []string{"Fixes #1", "fixes: #2", "CLOSE #3", "Resolved acme/app#4", "closes GH-5",
		"fixed https://github.com/acme/app/issues/6", "Resolves   #7"} {
		if !closingKeyword.MatchString(s) {
			t.Errorf("%q not matched", s)
		}
	}
	for _, s := range []string{"Fixes review findings of #1", "prefixes #2", "fix the bug"} {
		if closingKeyword.MatchString(s) {
			t.Errorf("%q matched", s)
		}
	}
}

// TestPublishReviewFixCommit: the happy path of delivery commit: exactly
// one createCommitOnBranch with expectedHeadOid = the reviewed head, one
// commit whose single parent is that head, signed by GitHub, with the
// rendered message (fixed headline, plain finding titles, the reference
// line, no trailers), and nothing else written.
func TestPublishReviewFixCommit(t *testing.T) {
	rw := newReviewWorld(t)
	runID, outID := rw.reviewFix(t, fix.DeliveryCommit)
	res, err := rw.publish(t, outID)
	if err != nil || res.Outcome != publisher.OutcomePublished || res.Reconciled {
		t.Fatalf("publish: %+v %v", res, err)
	}
	if r := rw.run(t, runID); r.Status != fix.StatusPublished {
		t.Fatalf("run %s %s", r.Status, r.Reason)
	}
	in := rw.intent(t, outID)
	head := rw.repo.Ref("feature")
	if in.Key != publish.Key(publish.IntentFixCommit, rw.repoID, runID) || in.External.CommitSHA != head || in.External.Branch != "feature" {
		t.Fatalf("intent %+v (head %s)", in, head)
	}
	ci, _ := rw.repo.CommitInfo(head)
	if len(ci.Parents) != 1 || ci.Parents[0] != rw.head || !ci.Verified {
		t.Fatalf("commit %+v", ci)
	}
	want := render.ReviewFixHeadline + "\n\n- Add subtracts instead of adding\n" +
		"- Fixes 1 bob see https: evil.example x img src x rm -rf link (http: a) GH 12 closes acme app 3\n\n" +
		render.Marker(in.Marker).CommitLine()
	if ci.Message != want {
		t.Errorf("message\n%q\nwant\n%q", ci.Message, want)
	}
	files, _ := rw.repo.Files("feature")
	if files["calc.go"] != fixCalc()[0].NewContent || files["calc_test.go"] != fixCalc()[1].NewContent || files["feature.txt"] != "f\n" {
		t.Errorf("files %v", files)
	}
	if n := rw.commitMutations(); n != 1 {
		t.Errorf("%d createCommitOnBranch calls", n)
	}
	for _, q := range rw.rec.writes() {
		if !strings.HasSuffix(q.Path, "/graphql") {
			t.Errorf("a commit delivery wrote %s %s", q.Method, q.Path)
		}
	}
	if b := rw.botBranches(t); len(b) != 0 {
		t.Errorf("bot branches %v", b)
	}
	// Redelivered: nothing more.
	if res, err := rw.publish(t, outID); err != nil || res.Outcome != publisher.OutcomeAlready || rw.commitMutations() != 1 {
		t.Fatalf("again: %+v %v", res, err)
	}
}

// TestPublishReviewFixRefusals: each re-check of §7 item 4 and §7b refuses
// on its own, with its reason on the output and the run; nothing is
// written and the head branch stays where the author left it.
func TestPublishReviewFixRefusals(t *testing.T) {
	for _, tc := range []struct {
		name     string
		delivery fix.Delivery
		before   func(t *testing.T, rw *reviewWorld)
		titles   []string
		reason   string
		// moved: the head branch is expected to have moved (by the
		// scenario, not by the publisher).
		moved bool
		// mutated: createCommitOnBranch was sent (and refused).
		mutated bool
	}{
		{name: "moved head", delivery: fix.DeliveryCommit, reason: publisher.ReasonHeadMoved, moved: true, mutated: true,
			before: func(t *testing.T, rw *reviewWorld) {
				rw.repo.Commit("feature", map[string]string{"other.txt": "the author pushed\n"}, "author push")
			}},
		{name: "protected head branch", delivery: fix.DeliveryCommit, reason: publisher.ReasonBranchProtected,
			before: func(t *testing.T, rw *reviewWorld) { rw.repo.Protect("feature") }},
		{name: "default branch", delivery: fix.DeliveryCommit, reason: publisher.ReasonDefaultBranch,
			before: func(t *testing.T, rw *reviewWorld) { rw.repo.SetDefaultBranch("feature") }},
		{name: "default branch (stacked)", delivery: fix.DeliveryStackedPR, reason: publisher.ReasonDefaultBranch,
			before: func(t *testing.T, rw *reviewWorld) { rw.repo.SetDefaultBranch("feature") }},
		{name: "a blocking rule", delivery: fix.DeliveryCommit, reason: publisher.ReasonRuleBlocks,
			before: func(t *testing.T, rw *reviewWorld) {
				rw.gh.SetRules("acme", "app", "feature", []githubfake.Rule{{Type: "pull_request"}})
			}},
		{name: "an unknown rule type", delivery: fix.DeliveryCommit, reason: publisher.ReasonRuleBlocks,
			before: func(t *testing.T, rw *reviewWorld) {
				rw.gh.SetRules("acme", "app", "~ALL", []githubfake.Rule{{Type: "code_scanning"}})
			}},
		{name: "closed pull request", delivery: fix.DeliveryCommit, reason: publisher.ReasonPRClosed,
			before: func(t *testing.T, rw *reviewWorld) {
				rw.repo.UpdateIssue(rw.pr, func(i *githubfake.Issue) { i.State = "closed" })
			}},
		{name: "closed pull request (stacked)", delivery: fix.DeliveryStackedPR, reason: publisher.ReasonPRClosed,
			before: func(t *testing.T, rw *reviewWorld) {
				rw.repo.UpdateIssue(rw.pr, func(i *githubfake.Issue) { i.State = "closed" })
			}},
		{name: "changed head branch", delivery: fix.DeliveryCommit, reason: publisher.ReasonHeadBranchChanged,
			before: func(t *testing.T, rw *reviewWorld) {
				rw.repo.Commit("feature-2", map[string]string{"feature.txt": "f\n"}, "elsewhere")
				rw.repo.UpdateIssue(rw.pr, func(i *githubfake.Issue) { i.PullRequest.Head = "feature-2" })
			}},
		{name: "changed head branch (stacked)", delivery: fix.DeliveryStackedPR, reason: publisher.ReasonHeadBranchChanged,
			before: func(t *testing.T, rw *reviewWorld) {
				rw.repo.Commit("feature-2", map[string]string{"feature.txt": "f\n"}, "elsewhere")
				rw.repo.UpdateIssue(rw.pr, func(i *githubfake.Issue) { i.PullRequest.Head = "feature-2" })
			}},
		{name: "fork", delivery: fix.DeliveryCommit, reason: publisher.ReasonFork,
			before: func(t *testing.T, rw *reviewWorld) {
				rw.gh.AddOrg("mallory")
				fork := rw.gh.AddRepo("mallory", "app", githubfake.RepoOptions{Fork: rw.repo})
				rw.repo.UpdateIssue(rw.pr, func(i *githubfake.Issue) { i.PullRequest.HeadRepo = fork.FullName() })
			}},
		{name: "deleted head repository (stacked)", delivery: fix.DeliveryStackedPR, reason: publisher.ReasonFork,
			before: func(t *testing.T, rw *reviewWorld) {
				rw.gh.AddOrg("mallory")
				fork := rw.gh.AddRepo("mallory", "app", githubfake.RepoOptions{Fork: rw.repo})
				rw.repo.UpdateIssue(rw.pr, func(i *githubfake.Issue) { i.PullRequest.HeadRepo = fork.FullName() })
				fork.Delete()
			}},
		{name: "review fixes switched off", delivery: fix.DeliveryStackedPR, reason: publisher.ReasonReviewFixesOff,
			before: func(t *testing.T, rw *reviewWorld) {
				rw.policy(t, `{"version":1,"features":{"fix":{"mode":"approval","testCommand":"go test ./...","reviewFixes":"off"}}}`)
			}},
		{name: "commit opt-in withdrawn", delivery: fix.DeliveryCommit, reason: publisher.ReasonReviewFixesOff,
			before: func(t *testing.T, rw *reviewWorld) {
				rw.policy(t, `{"version":1,"features":{"fix":{"mode":"approval","testCommand":"go test ./...","reviewFixes":"stacked_pr"}}}`)
			}},
		{name: "actor downgraded", delivery: fix.DeliveryCommit, reason: publisher.ReasonActorNotPermitted,
			before: func(t *testing.T, rw *reviewWorld) { rw.gh.SetPermission("acme", "app", "alice", "read") }},
		{name: "a secret in a finding title", delivery: fix.DeliveryCommit, reason: publisher.ReasonSecretInMessage,
			titles: []string{"Leaked key AKIA" + "QX7ZK3MNPB2LD4VS in config"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rw := newReviewWorld(t)
			runID, outID := rw.reviewFix(t, tc.delivery, tc.titles...)
			if tc.before != nil {
				tc.before(t, rw)
			}
			headBefore := rw.repo.Ref("feature")
			res, err := rw.publish(t, outID)
			if err != nil || res.Outcome != publisher.OutcomeFailed || res.Reason != tc.reason {
				t.Fatalf("publish: %+v %v, want failed %s", res, err, tc.reason)
			}
			if r := rw.run(t, runID); r.Status != fix.StatusFailed || r.Reason != tc.reason {
				t.Errorf("run %s %s", r.Status, r.Reason)
			}
			if o := rw.output(t, outID); o.Status != publish.OutputFailed || o.Reason != tc.reason {
				t.Errorf("output %s %s", o.Status, o.Reason)
			}
			if got := rw.repo.Ref("feature"); got != headBefore || !tc.moved && got != rw.head {
				t.Errorf("the head branch is at %s (before %s, reviewed %s)", got, headBefore, rw.head)
			}
			if n := rw.commitMutations(); n != map[bool]int{true: 1, false: 0}[tc.mutated] {
				t.Errorf("%d createCommitOnBranch calls", n)
			}
			if b := rw.botBranches(t); len(b) != 0 {
				t.Errorf("bot branches %v", b)
			}
			if prs := rw.fixPRs(t); len(prs) != 0 {
				t.Errorf("pull requests %+v", prs)
			}
			// Never retried: a second delivery of the job is settled.
			if res, err := rw.publish(t, outID); err != nil || res.Outcome != publisher.OutcomeAlready {
				t.Errorf("again: %+v %v", res, err)
			}
		})
	}
}

// TestPublishReviewFixCommitLostResponse: a createCommitOnBranch whose
// response is lost is reconciled by the next attempt: the head's single
// parent is the reviewed head and its message carries the marker, so it is
// this intent's commit; nothing is sent again.
func TestPublishReviewFixCommitLostResponse(t *testing.T) {
	rw := newReviewWorld(t)
	runID, outID := rw.reviewFix(t, fix.DeliveryCommit)
	rw.gh.InjectFault(githubfake.Fault{Method: "POST", Path: "/graphql", Kind: githubfake.FaultLoseResponse})
	if res, err := rw.publish(t, outID); err == nil {
		t.Fatalf("first attempt: %+v, want an error", res)
	}
	if rw.gh.PendingFaults() != 0 || rw.repo.Ref("feature") == rw.head {
		t.Fatal("the lost mutation did not happen")
	}
	if r := rw.run(t, runID); r.Status != fix.StatusPublishing {
		t.Fatalf("run after the lost response: %s", r.Status)
	}
	res, err := rw.publish(t, outID)
	if err != nil || res.Outcome != publisher.OutcomePublished || !res.Reconciled || res.External != rw.repo.Ref("feature") {
		t.Fatalf("retry: %+v %v", res, err)
	}
	if n := rw.commitMutations(); n != 1 {
		t.Errorf("%d createCommitOnBranch calls", n)
	}
	if r := rw.run(t, runID); r.Status != fix.StatusPublished {
		t.Errorf("run %s", r.Status)
	}
}

// TestPublishReviewFixCommitReconcileForeignHead: after an attempt whose
// outcome is unknown (here: a 502 before anything happened), a head that
// is not the reviewed head and does not carry the marker is refused
// (head_moved); the patch is not pushed on top of it.
func TestPublishReviewFixCommitReconcileForeignHead(t *testing.T) {
	rw := newReviewWorld(t)
	runID, outID := rw.reviewFix(t, fix.DeliveryCommit)
	rw.gh.InjectFault(githubfake.Fault{Method: "POST", Path: "/graphql", Kind: githubfake.Fault5xx})
	if res, err := rw.publish(t, outID); err == nil {
		t.Fatalf("first attempt: %+v, want an error", res)
	}
	pushed := rw.repo.Commit("feature", map[string]string{"other.txt": "the author pushed\n"}, "author push")
	res, err := rw.publish(t, outID)
	if err != nil || res.Outcome != publisher.OutcomeFailed || res.Reason != publisher.ReasonHeadMoved {
		t.Fatalf("retry: %+v %v", res, err)
	}
	if rw.repo.Ref("feature") != pushed || rw.commitMutations() != 0 {
		t.Errorf("head %s (author's %s), %d mutations", rw.repo.Ref("feature"), pushed, rw.commitMutations())
	}
	if r := rw.run(t, runID); r.Status != fix.StatusFailed || r.Reason != publisher.ReasonHeadMoved {
		t.Errorf("run %s %s", r.Status, r.Reason)
	}
}

// TestPublishReviewFixCommitMarkerCopy documents the residual risk of spec
// §8: a user with write access who copies the intent's reference line into
// a commit of their own on the reviewed head, after an attempt whose
// outcome is unknown, makes the reconcile take that commit for the fix's.
// The run is recorded published with the copied commit; the patch itself
// is not pushed (once, or twice).
func TestPublishReviewFixCommitMarkerCopy(t *testing.T) {
	rw := newReviewWorld(t)
	_, outID := rw.reviewFix(t, fix.DeliveryCommit)
	rw.gh.InjectFault(githubfake.Fault{Method: "POST", Path: "/graphql", Kind: githubfake.Fault5xx})
	if res, err := rw.publish(t, outID); err == nil {
		t.Fatalf("first attempt: %+v, want an error", res)
	}
	marker := render.Marker(rw.intent(t, outID).Marker)
	copied := rw.repo.Commit("feature", map[string]string{"other.txt": "not the fix\n"}, "my change\n\n"+marker.CommitLine())
	res, err := rw.publish(t, outID)
	if err != nil || res.Outcome != publisher.OutcomePublished || !res.Reconciled || res.External != copied {
		t.Fatalf("retry: %+v %v (the copied commit is %s)", res, err, copied)
	}
	files, _ := rw.repo.Files("feature")
	if files["calc.go"] != calcGo || rw.commitMutations() != 0 {
		t.Errorf("the patch was pushed: calc.go %q, %d mutations", files["calc.go"], rw.commitMutations())
	}
}

// TestPublishReviewFixCommitSignedRule: required_signatures (with
// non_fast_forward and deletion) on the head branch passes: GitHub signs
// createCommitOnBranch commits, and the emulator enforces the rule.
func TestPublishReviewFixCommitSignedRule(t *testing.T) {
	rw := newReviewWorld(t)
	rw.gh.SetRules("acme", "app", "feature", []githubfake.Rule{{Type: "required_signatures"}, {Type: "non_fast_forward"}, {Type: "deletion"}})
	_, outID := rw.reviewFix(t, fix.DeliveryCommit)
	if res, err := rw.publish(t, outID); err != nil || res.Outcome != publisher.OutcomePublished {
		t.Fatalf("publish: %+v %v", res, err)
	}
	if ci, _ := rw.repo.CommitInfo(rw.repo.Ref("feature")); !ci.Verified || len(ci.Parents) != 1 || ci.Parents[0] != rw.head {
		t.Fatalf("commit %+v", ci)
	}
}

// TestPublishReviewFixStackedAfterRefusedCommit: after GitHub refused the
// commit (the author pushed), the same patch as a stacked run on the new
// head (what the dashboard's one-click offer records) is validated against
// that head and published as a draft pull request on it.
func TestPublishReviewFixStackedAfterRefusedCommit(t *testing.T) {
	rw := newReviewWorld(t)
	_, commitOut := rw.reviewFix(t, fix.DeliveryCommit)
	moved := rw.repo.Commit("feature", map[string]string{"other.txt": "the author pushed\n"}, "author push")
	if res, err := rw.publish(t, commitOut); err != nil || res.Reason != publisher.ReasonHeadMoved {
		t.Fatalf("commit: %+v %v", res, err)
	}
	rw.head = moved
	runID, outID := rw.reviewFix(t, fix.DeliveryStackedPR)
	res, err := rw.publish(t, outID)
	if err != nil || res.Outcome != publisher.OutcomePublished {
		t.Fatalf("stacked: %+v %v", res, err)
	}
	if r := rw.run(t, runID); r.Status != fix.StatusPublished {
		t.Fatalf("run %s", r.Status)
	}
	branch := publish.FixBranch(rw.pr, rw.intent(t, outID).Marker)
	if ci, _ := rw.repo.CommitInfo(rw.repo.Ref(branch)); len(ci.Parents) != 1 || ci.Parents[0] != moved {
		t.Fatalf("stacked commit %+v, want parent %s", ci, moved)
	}
	if prs := rw.fixPRs(t); len(prs) != 1 || prs[0].PullRequest.Base != "feature" {
		t.Fatalf("pull requests %+v", prs)
	}
	if rw.repo.Ref("feature") != moved {
		t.Error("the head branch moved")
	}
}
