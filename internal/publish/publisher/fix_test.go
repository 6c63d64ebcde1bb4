package publisher_test

import (
	"context"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	"github.com/quavon/quavon/internal/policy"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/publish/publisher"
	"github.com/quavon/quavon/internal/secret/leaks"
	"github.com/quavon/quavon/internal/testenv"
	"github.com/quavon/quavon/internal/testenv/testbroker"
	"github.com/quavon/quavon/internal/tokenbroker"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const calcGo = "package calc\n\nfunc Add(a, b int) int { return a - b }\n"

// fixWorld is a repository with both apps installed through the real
// webhook intake (changes delivered automatically), the token broker
// granting the publisher's role, and a publisher with fix publication on.
type fixWorld struct {
	cp         *testenv.ControlPlane
	gh         *githubfake.Server
	review     *githubfake.App
	fixer      *githubfake.App
	fixerInst  *githubfake.Installation
	repo       *githubfake.Repo
	tenant     postgres.TenantID
	repoID     string
	issue      int
	rec        *recorder
	pub        *publisher.Publisher
	conn       *github.Conn
	approverID string
}

// fixPolicy is the policy the scenarios' runs are made under.
const fixPolicy = `{"version":1,"features":{"fix":{"mode":"approval","testCommand":"go test ./..."}}}`

// verdicts is the verdicts hash of a private repository's doc.
func verdicts(t *testing.T, doc string) string {
	t.Helper()
	h, err := policy.Resolve([]byte(doc), policy.RepoFacts{Private: true}).VerdictsSHA256()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

var fixerPerms = map[string]string{"contents": "write", "pull_requests": "write"}

func newFixWorld(t *testing.T, private bool, fixerGrant map[string]string) *fixWorld {
	t.Helper()
	w := &fixWorld{cp: testenv.NewControlPlane(t, 8), gh: githubfake.New(t), rec: &recorder{base: http.DefaultTransport}}
	w.review = w.gh.RegisterApp("quavon-review")
	w.fixer = w.gh.RegisterApp("quavon-fixer")
	jobs, err := river.NewClient(riverpgxv5.New(w.cp.App.Pool), &river.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer((&api.Server{DB: w.cp.App, Jobs: jobs, WebhookSecrets: map[github.AppKind][]byte{
		github.AppReview: []byte(w.review.WebhookSecret), github.AppFixer: []byte(w.fixer.WebhookSecret)}}).Handler())
	t.Cleanup(srv.Close)
	w.gh.SetWebhookURL(w.review, srv.URL+"/webhooks/github/review")
	w.gh.SetWebhookURL(w.fixer, srv.URL+"/webhooks/github/fixer")
	w.gh.AddOrg("acme")
	w.repo = w.gh.AddRepo("acme", "app", githubfake.RepoOptions{Private: private,
		Files: map[string]string{"calc.go": calcGo, "README.md": "calc\n"}})
	w.gh.SetPermission("acme", "app", "alice", "write")
	w.issue = w.repo.AddIssue(githubfake.IssueOptions{Title: "Add subtracts @bob", Body: "2+2 is 0", Author: "alice"})
	for _, app := range []*githubfake.App{w.review, w.fixer} {
		perms := reviewPerms
		if app == w.fixer {
			perms = fixerGrant
		}
		in := w.gh.Install(app, "acme", perms, "acme/app")
		if app == w.fixer {
			w.fixerInst = in
		}
		d, err := w.gh.Deliver(app, "installation", w.gh.InstallationEvent("created", in, "alice"))
		if err != nil || d.StatusCode != 200 {
			t.Fatalf("install %s: %v %d %s", app.Slug, err, d.StatusCode, d.Response)
		}
		w.gh.AutoDeliver(app)
	}
	var tenant *string
	if err := w.cp.App.Pool.QueryRow(context.Background(), "SELECT quavon_route_account($1)::text", w.gh.AddOrg("acme").ID).Scan(&tenant); err != nil || tenant == nil {
		t.Fatalf("tenant: %v", err)
	}
	w.tenant = postgres.TenantID(*tenant)
	w.in(t, func(tx pgx.Tx) error {
		ctx := context.Background()
		if err := tx.QueryRow(ctx, "SELECT id::text FROM repositories WHERE external_id = $1", w.repo.ID).Scan(&w.repoID); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, "INSERT INTO users (tenant_id, display_name) VALUES (quavon_current_tenant(), 'Mona') RETURNING id::text").Scan(&w.approverID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "INSERT INTO user_identities (tenant_id, user_id, login, external_id) VALUES (quavon_current_tenant(), $1, 'mona', 77)", w.approverID)
		return err
	})
	w.policy(t, fixPolicy)
	b := testbroker.Start(t, w.gh, map[github.AppKind]*githubfake.App{github.AppReview: w.review, github.AppFixer: w.fixer}, testbroker.Options{})
	conn := b.Conn(t, tokenbroker.RolePublisher, github.TransportConfig{Base: w.rec})
	w.conn = conn
	scanner, err := leaks.NewScanner()
	if err != nil {
		t.Fatal(err)
	}
	w.pub, err = publisher.New(w.cp.App, publisher.ConnReviewers(conn), publisher.Config{ReviewAppSlug: w.review.Slug,
		Fix: &publisher.FixConfig{AppSlug: w.fixer.Slug, Fixers: publisher.ConnFixers(conn), Readers: publisher.ConnReaders(conn),
			Scanner: scanner}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *fixWorld) in(t *testing.T, fn func(tx pgx.Tx) error) {
	t.Helper()
	if err := w.cp.App.InTenant(context.Background(), w.tenant, fn); err != nil {
		t.Fatal(err)
	}
}

func (w *fixWorld) policy(t *testing.T, doc string) {
	t.Helper()
	w.in(t, func(tx pgx.Tx) error {
		_, err := tx.Exec(context.Background(), `INSERT INTO repository_policies (tenant_id, repository_id, document)
			VALUES (quavon_current_tenant(), $1, $2::jsonb)
			ON CONFLICT (tenant_id, repository_id) DO UPDATE SET document = excluded.document, version = repository_policies.version + 1`,
			w.repoID, doc)
		return err
	})
}

// fixCalc is the patch every scenario publishes unless it says otherwise.
func fixCalc() []patch.FixFileChange {
	return []patch.FixFileChange{
		{Path: "calc.go", Operation: patch.OpModify, BaseBlobSHA: patch.BlobSHA([]byte(calcGo)), Mode: patch.ModeFile,
			NewContent: "package calc\n\nfunc Add(a, b int) int { return a + b }\n"},
		{Path: "calc_test.go", Operation: patch.OpCreate, Mode: patch.ModeFile,
			NewContent: "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 2) != 4 {\n\t\tt.Fatal(Add(2, 2))\n\t}\n}\n"},
	}
}

type runOpts struct {
	changes []patch.FixFileChange
	mode    fix.Mode
	// decide: "approve", "reject" or "" (left awaiting approval); auto
	// runs are ready without a decision.
	decide string
	// policySHA256 is bound by the output ("": none).
	policySHA256 string
}

// fixRun stores what fixrun leaves (a run with its patch and test result
// and a fix_pr output) and the dashboard's decision; it returns the run
// and output ids.
func (w *fixWorld) fixRun(t *testing.T, o runOpts) (runID, outID string) {
	t.Helper()
	if o.changes == nil {
		o.changes = fixCalc()
	}
	if o.mode == "" {
		o.mode = fix.ModeApproval
	}
	ctx := context.Background()
	base := w.repo.Ref("main")
	w.in(t, func(tx pgx.Tx) error {
		r, err := fix.Create(ctx, tx, fix.NewRun{RepositoryID: w.repoID, Subject: fix.SubjectIssue, Number: w.issue, Delivery: fix.DeliveryPR,
			Mode: o.mode, Trigger: fix.TriggerLabel, Label: "quavon:fix", Actor: fix.Actor{Login: "alice", ID: 1}})
		if err != nil {
			return err
		}
		runID = r.ID
		if _, err := fix.Start(ctx, tx, r.ID, fix.Base{SHA: base, Ref: "main"}); err != nil {
			return err
		}
		tr := fix.TestResult{Status: "completed", ExitCode: 0, DurationMillis: 1250}
		tr.SetTails("ok  \tcalc\t0.012s\n", "", false)
		if err := fix.SetTestResult(ctx, tx, r.ID, fix.KindTest, tr); err != nil {
			return err
		}
		diff, err := patch.RenderDiff(o.changes, patch.MapBase(map[string]patch.MapFile{"calc.go": {Content: calcGo}, "README.md": {Content: "calc\n"}}))
		if err != nil {
			return err
		}
		sum, err := fix.RecordPatch(ctx, tx, r.ID, o.changes, diff, "Add used `-`; it uses `+` now. <img src=x onerror=alert(1)> @bob")
		if err != nil {
			return err
		}
		out := publish.NewOutput{RepositoryID: w.repoID, Kind: publish.KindFixPR, FixRunID: r.ID,
			Payload: publish.FixPRPayload{Issue: w.issue, BaseRef: "main", BaseSHA: base, Files: len(o.changes), Summary: "Add adds."},
			Bound:   publish.Bound{PatchSHA256: sum, BaseSHA: base, PolicySHA256: o.policySHA256}}
		if o.mode == fix.ModeAuto {
			out.Status = publish.OutputReady
			_, err = fix.Transition(ctx, tx, r.ID, fix.StatusPublishing, fix.Why{})
		} else {
			out.Status, out.ExpiresAt = publish.OutputAwaitingApproval, time.Now().Add(time.Hour)
			_, err = fix.Transition(ctx, tx, r.ID, fix.StatusAwaitingApproval, fix.Why{})
		}
		if err != nil {
			return err
		}
		po, err := publish.CreateOutput(ctx, tx, out)
		if err != nil {
			return err
		}
		outID = po.ID
		if o.decide == "" {
			return nil
		}
		// What the dashboard does (internal/web): the decision bound to
		// the hashes shown, and the run moved with it.
		approve := o.decide == "approve"
		if _, err := publish.Decide(ctx, tx, po.ID, publish.Decision{Approve: approve, UserID: w.approverID,
			ShownPayloadSHA256: po.PayloadSHA256, Shown: po.Bound, Now: time.Now()}); err != nil {
			return err
		}
		to := fix.StatusRejected
		if approve {
			to = fix.StatusApproved
		}
		_, err = fix.Transition(ctx, tx, r.ID, to, fix.Why{Reason: map[bool]string{true: "", false: "rejected"}[approve]})
		return err
	})
	return runID, outID
}

func (w *fixWorld) publish(t *testing.T, outID string) (publisher.Result, error) {
	t.Helper()
	return w.pub.Publish(context.Background(), w.tenant, outID)
}

func (w *fixWorld) run(t *testing.T, id string) *fix.Run {
	t.Helper()
	var r *fix.Run
	w.in(t, func(tx pgx.Tx) error {
		var err error
		r, err = fix.Get(context.Background(), tx, id)
		return err
	})
	return r
}

func (w *fixWorld) intent(t *testing.T, outID string) *publish.Intent {
	t.Helper()
	var in *publish.Intent
	w.in(t, func(tx pgx.Tx) error {
		var err error
		in, _, err = publish.EnsureIntent(context.Background(), tx, outID)
		return err
	})
	return in
}

// botBranches lists the repository's quavon/fix-* branches.
func (w *fixWorld) botBranches(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, n := range w.repo.Branches() {
		if strings.HasPrefix(n, "quavon/fix-") {
			out = append(out, n)
		}
	}
	return out
}

// fixPRs lists the pull requests whose head is a bot branch.
func (w *fixWorld) fixPRs(t *testing.T) []githubfake.Issue {
	t.Helper()
	var out []githubfake.Issue
	for _, i := range w.repo.Issues() {
		if i.PullRequest != nil && strings.HasPrefix(i.PullRequest.Head, "quavon/fix-") {
			out = append(out, i)
		}
	}
	return out
}

func TestPublishFixHappyPath(t *testing.T) {
	w := newFixWorld(t, true, fixerPerms)
	base := w.repo.Ref("main")
	runID, outID := w.fixRun(t, runOpts{decide: "approve", policySHA256: verdicts(t, fixPolicy)})
	res, err := w.publish(t, outID)
	if err != nil || res.Outcome != publisher.OutcomePublished || res.Reconciled {
		t.Fatalf("publish: %+v %v", res, err)
	}
	in := w.intent(t, outID)
	branch := publish.FixBranch(w.issue, in.Marker)
	if in.Key != publish.Key(publish.IntentFixPR, w.repoID, runID) || in.Status != publish.IntentPublished || in.External.Branch != branch {
		t.Fatalf("intent %+v", in)
	}
	if r := w.run(t, runID); r.Status != fix.StatusPublished {
		t.Fatalf("run %s %s", r.Status, r.Reason)
	}
	// Exactly the patch's tree on the bot branch: one commit on the base.
	if got := w.botBranches(t); len(got) != 1 || got[0] != branch {
		t.Fatalf("branches %v", got)
	}
	files, err := w.repo.Files(branch)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"README.md": "calc\n"}
	for _, c := range fixCalc() {
		want[c.Path] = c.NewContent
	}
	if len(files) != len(want) {
		t.Fatalf("files %v", files)
	}
	for p, c := range want {
		if files[p] != c {
			t.Errorf("%s = %q, want %q", p, files[p], c)
		}
	}
	head := w.repo.Ref(branch)
	ci, ok := w.repo.CommitInfo(head)
	if !ok || len(ci.Parents) != 1 || ci.Parents[0] != base || in.External.CommitSHA != head {
		t.Fatalf("commit %+v (base %s)", ci, base)
	}
	// One draft pull request into the default branch, by the Fixer's bot.
	prs := w.fixPRs(t)
	if len(prs) != 1 || !prs[0].PullRequest.Draft || prs[0].PullRequest.Base != "main" || prs[0].PullRequest.Head != branch ||
		prs[0].Number != in.External.Number || prs[0].Author != "quavon-fixer[bot]" || len(prs[0].Labels) != 0 {
		t.Fatalf("pull requests %+v", prs)
	}
	body := prs[0].Body
	if strings.Count(body, "Fixes #") != 1 || !strings.Contains(body, "Fixes #"+strconv.Itoa(w.issue)+"\n") {
		t.Errorf("closing lines: %s", body)
	}
	// The body, golden (the marker and the commit vary per run).
	norm := strings.ReplaceAll(body, in.Marker, "MARKER")
	norm = strings.ReplaceAll(norm, base[:7], "BASESHA")
	golden(t, "fix_pr_body.golden", norm)
	// The writes: exactly tree, commit, ref, pull request.
	var writes []string
	for _, q := range w.rec.writes() {
		writes = append(writes, q.Method+" "+q.Path)
	}
	if len(writes) != 4 || !strings.HasSuffix(writes[0], "/git/trees") || !strings.HasSuffix(writes[1], "/git/commits") ||
		!strings.HasSuffix(writes[2], "/git/refs") || !strings.HasSuffix(writes[3], "/pulls") {
		t.Errorf("writes %v", writes)
	}
	// A redelivered job changes nothing.
	if res, err := w.publish(t, outID); err != nil || res.Outcome != publisher.OutcomeAlready {
		t.Fatalf("again: %+v %v", res, err)
	}
	if len(w.rec.writes()) != 4 {
		t.Errorf("a settled output wrote again")
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != got {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// TestPublishFixRefusals: each §7 re-check refuses on its own, with its
// reason on the output and the run, and nothing is written.
func TestPublishFixRefusals(t *testing.T) {
	const foreignFile = "package calc\n// someone else's\n"
	for _, tc := range []struct {
		name   string
		grant  map[string]string
		opts   runOpts
		before func(t *testing.T, w *fixWorld, outID string)
		reason string
	}{
		{name: "moved base", reason: publisher.ReasonBaseMoved, before: func(t *testing.T, w *fixWorld, _ string) {
			w.repo.Commit("main", map[string]string{"calc.go": "package calc\n\n// Add adds.\nfunc Add(a, b int) int { return a - b }\n"}, "human edit")
		}},
		{name: "changed patch", reason: publisher.ReasonPatchChanged, before: func(t *testing.T, w *fixWorld, outID string) {
			w.in(t, func(tx pgx.Tx) error {
				_, err := tx.Exec(context.Background(), `UPDATE fix_runs SET changes = jsonb_set(changes, '{0,newContent}', '"package calc\n"')
					WHERE id = (SELECT fix_run_id FROM pending_outputs WHERE id = $1)`, outID)
				return err
			})
		}},
		{name: "issue closed", reason: publisher.ReasonIssueClosed, before: func(t *testing.T, w *fixWorld, _ string) {
			w.repo.UpdateIssue(w.issue, func(i *githubfake.Issue) { i.State = "closed" })
		}},
		{name: "issue transferred", reason: publisher.ReasonIssueTransferred, before: func(t *testing.T, w *fixWorld, _ string) {
			other := w.gh.AddRepo("acme", "other", githubfake.RepoOptions{Private: true, Files: map[string]string{"x": "y\n"}})
			w.repo.TransferIssue(w.issue, other)
		}},
		{name: "actor downgraded to triage", reason: publisher.ReasonActorNotPermitted, before: func(t *testing.T, w *fixWorld, _ string) {
			w.gh.SetPermission("acme", "app", "alice", "triage")
		}},
		{name: "installation suspended", reason: publisher.ReasonFixerSuspended, before: func(t *testing.T, w *fixWorld, _ string) {
			w.gh.SetSuspended(w.fixerInst, true)
			w.gh.WaitDeliveries()
		}},
		{name: "installation uninstalled", reason: publisher.ReasonFixerNotInstalled, before: func(t *testing.T, w *fixWorld, _ string) {
			d, err := w.gh.Deliver(w.fixer, "installation", w.gh.InstallationEvent("deleted", w.fixerInst, "alice"))
			if err != nil || d.StatusCode != 200 {
				t.Fatalf("uninstall: %v %+v", err, d)
			}
			w.gh.Uninstall(w.fixerInst)
		}},
		{name: "missing permission", grant: map[string]string{"contents": "write", "pull_requests": "read"}, reason: publisher.ReasonFixerPermissionMissing},
		{name: "a blocking rule", reason: publisher.ReasonRuleBlocks, before: func(t *testing.T, w *fixWorld, _ string) {
			w.gh.SetRules("acme", "app", "quavon/**", []githubfake.Rule{{Type: "creation"}})
		}},
		{name: "an unknown rule type", reason: publisher.ReasonRuleBlocks, before: func(t *testing.T, w *fixWorld, _ string) {
			w.gh.SetRules("acme", "app", "quavon/**", []githubfake.Rule{{Type: "merge_queue"}})
		}},
		{name: "protection", reason: publisher.ReasonBranchProtected, before: func(t *testing.T, w *fixWorld, outID string) {
			b := publish.FixBranch(w.issue, w.intent(t, outID).Marker)
			w.repo.Commit(b, map[string]string{"calc.go": foreignFile}, "a branch of that name")
			w.repo.Protect(b)
		}},
		{name: "an existing foreign branch", reason: publisher.ReasonBranchExists, before: func(t *testing.T, w *fixWorld, outID string) {
			b := publish.FixBranch(w.issue, w.intent(t, outID).Marker)
			w.repo.Commit(b, map[string]string{"calc.go": foreignFile}, "a branch of that name")
		}},
		{name: "secret in the patch", reason: publisher.ReasonSecretInPatch, opts: runOpts{changes: []patch.FixFileChange{{Path: "config.go",
			Operation: patch.OpCreate, Mode: patch.ModeFile, NewContent: "package calc\n\nconst token = \"ghp_" + strings.Repeat("A1b2", 9) + "\"\n"}}}},
		{name: "a workflow file", reason: publisher.ReasonPatchRejected, opts: runOpts{changes: []patch.FixFileChange{{Path: ".github/workflows/ci.yml",
			Operation: patch.OpCreate, Mode: patch.ModeFile, NewContent: "on: push\n"}}}},
		{name: "policy switched off", reason: publisher.ReasonFixOff, before: func(t *testing.T, w *fixWorld, _ string) {
			w.policy(t, `{"version":1,"features":{"fix":{"mode":"off"}}}`)
		}},
		{name: "policy verdicts changed", reason: publisher.ReasonPolicyChanged, opts: runOpts{policySHA256: verdicts(t, fixPolicy)},
			before: func(t *testing.T, w *fixWorld, _ string) {
				w.policy(t, `{"version":1,"features":{"fix":{"mode":"approval","testCommand":"go test ./...","deniedPaths":["docs/**"]}}}`)
			}},
		{name: "policy invalid", reason: publisher.ReasonPolicyInvalid, before: func(t *testing.T, w *fixWorld, _ string) {
			w.policy(t, `{"version":1,"features":{"fix":{"mode":"sometimes"}}}`)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			grant := tc.grant
			if grant == nil {
				grant = fixerPerms
			}
			w := newFixWorld(t, true, grant)
			tc.opts.decide = "approve"
			runID, outID := w.fixRun(t, tc.opts)
			if tc.before != nil {
				tc.before(t, w, outID)
			}
			res, err := w.publish(t, outID)
			if err != nil || res.Outcome != publisher.OutcomeFailed || res.Reason != tc.reason {
				t.Fatalf("publish: %+v %v, want failed %s", res, err, tc.reason)
			}
			if r := w.run(t, runID); r.Status != fix.StatusFailed || r.Reason != tc.reason {
				t.Errorf("run %s %s", r.Status, r.Reason)
			}
			w.in(t, func(tx pgx.Tx) error {
				o, err := publish.GetOutput(context.Background(), tx, outID)
				if err == nil && (o.Status != publish.OutputFailed || o.Reason != tc.reason) {
					t.Errorf("output %s %s", o.Status, o.Reason)
				}
				return err
			})
			for _, q := range w.rec.writes() {
				if strings.HasSuffix(q.Path, "/git/refs") || strings.HasSuffix(q.Path, "/pulls") {
					t.Errorf("refused, yet wrote %s %s", q.Method, q.Path)
				}
			}
			if prs := w.fixPRs(t); len(prs) != 0 {
				t.Errorf("pull requests %+v", prs)
			}
		})
	}
}

// TestPublishFixDecisions: an expired or rejected approval, or none yet,
// publishes nothing.
func TestPublishFixDecisions(t *testing.T) {
	w := newFixWorld(t, true, fixerPerms)
	_, pending := w.fixRun(t, runOpts{})
	if res, err := w.publish(t, pending); err != nil || res.Outcome != publisher.OutcomeNotReady {
		t.Fatalf("awaiting approval: %+v %v", res, err)
	}
	if n, err := fix.ExpireApprovals(context.Background(), w.cp.App, time.Now().Add(2*time.Hour)); err != nil || n != 1 {
		t.Fatalf("expire: %d %v", n, err)
	}
	if res, err := w.publish(t, pending); err != nil || res.Outcome != publisher.OutcomeAlready || res.Reason != publish.ReasonApprovalExpired {
		t.Fatalf("expired: %+v %v", res, err)
	}
	w.issue = w.repo.AddIssue(githubfake.IssueOptions{Title: "another", Author: "alice"})
	_, rejected := w.fixRun(t, runOpts{decide: "reject"})
	if res, err := w.publish(t, rejected); err != nil || res.Outcome != publisher.OutcomeAlready {
		t.Fatalf("rejected: %+v %v", res, err)
	}
	if len(w.rec.writes()) != 0 || len(w.botBranches(t)) != 0 {
		t.Fatalf("wrote %v", w.rec.writes())
	}
}

// TestPublishFixLostResponses: a lost response after the ref and after
// the pull request, and a crash between them, end in exactly one branch
// and one pull request.
func TestPublishFixLostResponses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault githubfake.Fault
	}{
		{"lost ref response", githubfake.Fault{Method: "POST", Path: "/repos/{o}/{r}/git/refs", Kind: githubfake.FaultLoseResponse}},
		{"lost pull request response", githubfake.Fault{Method: "POST", Path: "/repos/{o}/{r}/pulls", Kind: githubfake.FaultLoseResponse}},
		{"crash between ref and pull request", githubfake.Fault{Method: "POST", Path: "/repos/{o}/{r}/pulls", Kind: githubfake.Fault5xx}},
		{"lost commit response", githubfake.Fault{Method: "POST", Path: "/repos/{o}/{r}/git/commits", Kind: githubfake.FaultLoseResponse}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newFixWorld(t, true, fixerPerms)
			runID, outID := w.fixRun(t, runOpts{decide: "approve"})
			w.gh.InjectFault(tc.fault)
			if res, err := w.publish(t, outID); err == nil {
				t.Fatalf("first attempt: %+v, want an error", res)
			}
			if w.gh.PendingFaults() != 0 {
				t.Fatal("the fault did not fire")
			}
			if r := w.run(t, runID); r.Status != fix.StatusPublishing {
				t.Fatalf("run after the failed attempt: %s", r.Status)
			}
			res, err := w.publish(t, outID)
			if err != nil || res.Outcome != publisher.OutcomePublished {
				t.Fatalf("retry: %+v %v", res, err)
			}
			if tc.fault.Kind == githubfake.FaultLoseResponse && strings.HasSuffix(tc.fault.Path, "/pulls") && !res.Reconciled {
				t.Error("the pull request was not found by reconcile")
			}
			if b := w.botBranches(t); len(b) != 1 {
				t.Errorf("branches %v", b)
			}
			if prs := w.fixPRs(t); len(prs) != 1 {
				t.Errorf("pull requests %d", len(prs))
			}
			if r := w.run(t, runID); r.Status != fix.StatusPublished {
				t.Errorf("run %s", r.Status)
			}
		})
	}
}

// TestPublishFixSignedRule: required_signatures passes when GitHub
// reports the created commit verified.
func TestPublishFixSignedRule(t *testing.T) {
	w := newFixWorld(t, true, fixerPerms)
	w.gh.SetRules("acme", "app", "quavon/**", []githubfake.Rule{{Type: "required_signatures"}, {Type: "non_fast_forward"}})
	_, outID := w.fixRun(t, runOpts{decide: "approve"})
	// GitHub reports the app's commit verified: the rule passes.
	if res, err := w.publish(t, outID); err != nil || res.Outcome != publisher.OutcomePublished {
		t.Fatalf("publish: %+v %v", res, err)
	}
}

// TestPublishFixAuto: auto mode publishes without approval on a private
// repository; once the repository is public it waits for one.
func TestPublishFixAuto(t *testing.T) {
	auto := `{"version":1,"features":{"fix":{"mode":"auto"}}}`
	w := newFixWorld(t, true, fixerPerms)
	w.policy(t, auto)
	runID, outID := w.fixRun(t, runOpts{mode: fix.ModeAuto})
	if res, err := w.publish(t, outID); err != nil || res.Outcome != publisher.OutcomePublished {
		t.Fatalf("private: %+v %v", res, err)
	}
	if r := w.run(t, runID); r.Status != fix.StatusPublished {
		t.Fatalf("run %s", r.Status)
	}
	if prs := w.fixPRs(t); len(prs) != 1 || !strings.Contains(prs[0].Body, "without a maintainer's approval") {
		t.Fatalf("pull requests %+v", prs)
	}

	p := newFixWorld(t, false, fixerPerms)
	p.policy(t, auto)
	runID, outID = p.fixRun(t, runOpts{mode: fix.ModeAuto})
	if res, err := p.publish(t, outID); err != nil || res.Reason != publisher.ReasonApprovalRequired {
		t.Fatalf("public: %+v %v", res, err)
	}
	if len(p.rec.writes()) != 0 {
		t.Fatalf("public: wrote %v", p.rec.writes())
	}
}

// TestFixerWorkflowWriteRefusedByGitHub: past the path policy, GitHub
// itself refuses the Fixer's ref that adds a workflow file, because the
// Fixer has no workflows permission (the emulator enforces it).
func TestFixerWorkflowWriteRefusedByGitHub(t *testing.T) {
	w := newFixWorld(t, true, fixerPerms)
	ctx := context.Background()
	fx, err := publisher.ConnFixers(w.conn)(ctx, w.fixerInst.ID, "acme/app")
	if err != nil {
		t.Fatal(err)
	}
	base := w.repo.Ref("main")
	bc, err := fx.Commit(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	content := "on: push\njobs: {}\n"
	tree, err := fx.CreateTree(ctx, bc.Tree, []writer.TreeChange{{Path: ".github/workflows/ci.yml", Mode: "100644", Content: &content}})
	if err != nil {
		t.Fatal(err)
	}
	commit, err := fx.CreateCommit(ctx, "workflow\n", tree, base)
	if err != nil {
		t.Fatal(err)
	}
	err = fx.CreateBranch(ctx, "quavon/fix-1-0123abcd", commit)
	if err == nil || !strings.Contains(err.Error(), "workflows") {
		t.Fatalf("create branch with a workflow: %v", err)
	}
	if w.repo.Ref("quavon/fix-1-0123abcd") != "" {
		t.Fatal("the branch exists")
	}
	// The same commit without the workflow file goes through.
	readme := "calc, documented\n"
	tree, err = fx.CreateTree(ctx, bc.Tree, []writer.TreeChange{{Path: "README.md", Mode: "100644", Content: &readme}})
	if err != nil {
		t.Fatal(err)
	}
	if commit, err = fx.CreateCommit(ctx, "readme\n", tree, base); err != nil {
		t.Fatal(err)
	}
	if err := fx.CreateBranch(ctx, "quavon/fix-1-0123abcd", commit); err != nil {
		t.Fatal(err)
	}
}

// TestSweepFix: approved and ready fix_pr outputs get a publish job at
// the next sweep, once; one still awaiting approval gets none.
func TestSweepFix(t *testing.T) {
	w := newFixWorld(t, true, fixerPerms)
	ctx := context.Background()
	_, waiting := w.fixRun(t, runOpts{})
	w.issue = w.repo.AddIssue(githubfake.IssueOptions{Title: "another", Author: "alice"})
	_, approved := w.fixRun(t, runOpts{decide: "approve"})
	jobs, err := river.NewClient(riverpgxv5.New(w.cp.App.Pool), &river.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{1, 0} {
		if n, err := publisher.SweepFix(ctx, w.cp.App, jobs); err != nil || n != want {
			t.Fatalf("sweep %d: %d %v, want %d", i, n, err, want)
		}
	}
	var outputID string
	if err := w.cp.Admin.QueryRow(ctx, `SELECT args->>'output' FROM river_job WHERE kind = $1`, publish.JobKind).Scan(&outputID); err != nil {
		t.Fatal(err)
	}
	if outputID != approved || outputID == waiting {
		t.Fatalf("job for %s, want %s", outputID, approved)
	}
}
