package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
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
	"github.com/quavon/quavon/internal/secret/leaks"
	"github.com/quavon/quavon/internal/testenv"
	"github.com/quavon/quavon/internal/testenv/testbroker"
	"github.com/quavon/quavon/internal/tokenbroker"
)

// BenchmarkPublishFix: a 10-file patch of an auto-mode fix run published
// by the publisher (decide and write transactions, every §7 re-check
// against the emulator: repository, issue, actor permission, a fresh
// listing and ValidatePatch with gitleaks, rules, branch; rendering;
// broker tokens) against the same four writes (tree with inline content,
// commit, ref, draft pull request) made directly with the writer's
// go-github calls, interleaved in the same run. Reports write calls per
// run (goal ≤ 4) and publisher/bare ms per run.
func BenchmarkPublishFix(b *testing.B) {
	ctx := context.Background()
	cp := testenv.NewControlPlane(b, 8)
	gh := githubfake.New(b)
	review := gh.RegisterApp("quavon-review")
	fixer := gh.RegisterApp("quavon-fixer")
	jobs, err := river.NewClient(riverpgxv5.New(cp.App.Pool), &river.Config{})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer((&api.Server{DB: cp.App, Jobs: jobs, WebhookSecrets: map[github.AppKind][]byte{
		github.AppReview: []byte(review.WebhookSecret), github.AppFixer: []byte(fixer.WebhookSecret)}}).Handler())
	defer srv.Close()
	gh.SetWebhookURL(review, srv.URL+"/webhooks/github/review")
	gh.SetWebhookURL(fixer, srv.URL+"/webhooks/github/fixer")
	org := gh.AddOrg("acme")
	files := map[string]string{}
	var changes []patch.FixFileChange
	for i := range 10 {
		p := fmt.Sprintf("pkg/f%d.go", i)
		old := fmt.Sprintf("package pkg\n\nfunc F%d() int { return %d }\n", i, i)
		files[p] = old
		changes = append(changes, patch.FixFileChange{Path: p, Operation: patch.OpModify, BaseBlobSHA: patch.BlobSHA([]byte(old)),
			Mode: patch.ModeFile, NewContent: fmt.Sprintf("package pkg\n\n// F%d returns its number.\nfunc F%d() int { return %d }\n", i, i, i)})
	}
	repo := gh.AddRepo("acme", "app", githubfake.RepoOptions{Private: true, Files: files})
	gh.SetPermission("acme", "app", "alice", "write")
	issue := repo.AddIssue(githubfake.IssueOptions{Title: "document the functions", Author: "alice"})
	var fixerInst *githubfake.Installation
	for _, app := range []*githubfake.App{review, fixer} {
		perms := map[string]string{"contents": "read", "pull_requests": "write", "issues": "write", "checks": "write"}
		if app == fixer {
			perms = map[string]string{"contents": "write", "pull_requests": "write"}
		}
		in := gh.Install(app, "acme", perms, "acme/app")
		if app == fixer {
			fixerInst = in
		}
		if d, err := gh.Deliver(app, "installation", gh.InstallationEvent("created", in, "alice")); err != nil || d.StatusCode != 200 {
			b.Fatalf("install: %v", err)
		}
	}
	var tenant string
	if err := cp.App.Pool.QueryRow(ctx, "SELECT quavon_route_account($1)::text", org.ID).Scan(&tenant); err != nil {
		b.Fatal(err)
	}
	tid := postgres.TenantID(tenant)
	var repoID string
	if err := cp.App.InTenant(ctx, tid, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, "SELECT id::text FROM repositories WHERE external_id = $1", repo.ID).Scan(&repoID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO repository_policies (tenant_id, repository_id, document)
			VALUES (quavon_current_tenant(), $1, '{"version":1,"features":{"fix":{"mode":"auto"}}}'::jsonb)`, repoID)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	broker := testbroker.Start(b, gh, map[github.AppKind]*githubfake.App{github.AppReview: review, github.AppFixer: fixer}, testbroker.Options{})
	counter := &writeCounter{base: http.DefaultTransport}
	conn := broker.Conn(b, tokenbroker.RolePublisher, github.TransportConfig{Base: counter})
	scanner, err := leaks.NewScanner()
	if err != nil {
		b.Fatal(err)
	}
	pub, err := publisher.New(cp.App, publisher.ConnReviewers(conn), publisher.Config{ReviewAppSlug: review.Slug,
		Fix: &publisher.FixConfig{AppSlug: fixer.Slug, Fixers: publisher.ConnFixers(conn), Readers: publisher.ConnReaders(conn),
			Scanner: scanner}}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	bare, err := writer.NewFixer(ctx, conn, fixerInst.ID, "acme/app")
	if err != nil {
		b.Fatal(err)
	}
	base := repo.Ref("main")
	baseCommit, err := bare.Commit(ctx, base)
	if err != nil {
		b.Fatal(err)
	}
	// The bare baseline sends what the publisher sends: the same body and
	// message from the same renderer, the same inline tree entries.
	rend, err := render.New(render.Repo{Host: "github.com", Owner: "acme", Name: "app"})
	if err != nil {
		b.Fatal(err)
	}
	const marker = render.Marker("0123456789abcdef0123456789abcdef")
	pr, err := rend.FixPullRequest(render.FixPR{Issue: issue, IssueTitle: "document the functions", Marker: marker, Plan: "Doc comments.",
		Change: render.Change{Files: 10, Added: 10}, Verified: render.Verified{Against: base}})
	if err != nil {
		b.Fatal(err)
	}
	msg, _ := render.IssueFixCommitMessage(render.IssueFix{Issue: issue, Marker: marker})
	var entries []writer.TreeChange
	for _, c := range changes {
		content := c.NewContent
		entries = append(entries, writer.TreeChange{Path: c.Path, Mode: "100644", Content: &content})
	}

	newOutput := func() string {
		var id string
		if err := cp.App.InTenant(ctx, tid, func(tx pgx.Tx) error {
			r, err := fix.Create(ctx, tx, fix.NewRun{RepositoryID: repoID, Subject: fix.SubjectIssue, Number: issue, Delivery: fix.DeliveryPR,
				Mode: fix.ModeAuto, Trigger: fix.TriggerLabel, Label: "quavon:fix", Actor: fix.Actor{Login: "alice", ID: 1}})
			if err != nil {
				return err
			}
			if _, err := fix.Start(ctx, tx, r.ID, fix.Base{SHA: base, Ref: "main"}); err != nil {
				return err
			}
			sum, err := fix.RecordPatch(ctx, tx, r.ID, changes, "", "Doc comments.")
			if err != nil {
				return err
			}
			if _, err := fix.Transition(ctx, tx, r.ID, fix.StatusPublishing, fix.Why{}); err != nil {
				return err
			}
			o, err := publish.CreateOutput(ctx, tx, publish.NewOutput{RepositoryID: repoID, Kind: publish.KindFixPR, FixRunID: r.ID,
				Status: publish.OutputReady, Payload: publish.FixPRPayload{Issue: issue, BaseRef: "main", BaseSHA: base, Files: 10},
				Bound: publish.Bound{PatchSHA256: sum, BaseSHA: base}})
			if err == nil {
				id = o.ID
			}
			return err
		}); err != nil {
			b.Fatal(err)
		}
		return id
	}
	publishRun := func() (time.Duration, int64) {
		id := newOutput()
		w0 := counter.writes.Load()
		t0 := time.Now()
		res, err := pub.Publish(ctx, tid, id)
		if err != nil || res.Outcome != publisher.OutcomePublished {
			b.Fatalf("publish: %+v %v", res, err)
		}
		return time.Since(t0), counter.writes.Load() - w0
	}
	n := 0
	bareRun := func() time.Duration {
		n++
		branch := fmt.Sprintf("quavon/fix-%d-%08x", issue, n)
		t0 := time.Now()
		tree, err := bare.CreateTree(ctx, baseCommit.Tree, entries)
		if err != nil {
			b.Fatal(err)
		}
		commit, err := bare.CreateCommit(ctx, msg.String(), tree, base)
		if err != nil {
			b.Fatal(err)
		}
		if err := bare.CreateBranch(ctx, branch, commit); err != nil {
			b.Fatal(err)
		}
		if _, err := bare.CreateDraftPullRequest(ctx, writer.DraftPullRequest{Title: pr.Title, Body: pr.Body, Head: branch, Base: "main"}); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
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
