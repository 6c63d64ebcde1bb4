package web_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/acceptance"
	"github.com/quavon/quavon/internal/acceptance/checkstore"
	"github.com/quavon/quavon/internal/repos"
	"github.com/quavon/quavon/internal/web/webtest"
)

// The review run page shows the acceptance check of the run's head: the
// linked issue, each criterion with its verified verdict and evidence, the
// criterion text escaped; and why the check has no verdicts when it has
// none.
func TestReviewPageAcceptanceCriteria(t *testing.T) {
	f := webtest.New(t, webtest.Options{})
	f.AddUser(t, "alice", "write", repos.RoleReview, repos.RoleManage)
	c := f.Client(t)
	body(t, f.SignIn(t, c, "alice", "/repos"))

	evil := `<script>alert(1)</script><img src=x onerror=alert(2)>`
	head := strings.Repeat("3", 40)
	runID := f.NewReviewRun(t, 8, head, nil)
	f.InTenant(t, func(ctx context.Context, tx pgx.Tx) error {
		_, err := checkstore.Insert(ctx, tx, checkstore.Stored{RepositoryID: f.Seed.Repository, PRNumber: 8, HeadSHA: head,
			ReviewRunID: runID, Mode: "on", Status: "completed", Issue: 42,
			Links: []checkstore.LinkRecord{{Number: 42, Sources: []acceptance.LinkSource{"closing_reference"}, Usable: true}},
			Criteria: acceptance.Extraction{Criteria: []acceptance.Criterion{
				{ID: "c1", Source: acceptance.SourceChecklist, Text: "Login page " + evil},
				{ID: "c2", Source: acceptance.SourceChecklist, Text: "Rate limit on sign-in"},
				{ID: "c3", Source: acceptance.SourceChecklist, Text: "Docs updated"}}},
			Verdicts: acceptance.Verification{Verdicts: []acceptance.Verdict{
				{CriterionID: "c1", Status: acceptance.StatusMet, Evidence: []acceptance.Location{{Path: "web/<login>.go", StartLine: 10, EndLine: 14}},
					Reason: "handler added " + evil},
				{CriterionID: "c2", Status: acceptance.StatusUnmet, Reason: "no limiter"},
				{CriterionID: "c3", Status: acceptance.StatusUnclear, Note: acceptance.NoteNoEvidence}}}})
		return err
	})
	page := body(t, mustGet(t, c, f.URL+"/reviews/"+runID))
	for _, want := range []string{"Acceptance criteria", "#42", "1 met, 1 unmet, 1 unclear", "Login page &lt;script&gt;",
		"<code>web/&lt;login&gt;.go</code> lines 10–14", `class="ac-met"`, `class="ac-unmet"`, `class="ac-unclear"`,
		"met was claimed without evidence in the diff", "Rate limit on sign-in"} {
		if !strings.Contains(page, want) {
			t.Errorf("the review page lacks %q", want)
		}
	}
	for _, bad := range []string{"<script>", "<img src=x", "<login>"} {
		if strings.Contains(page, bad) {
			t.Errorf("the review page carries unescaped %q", bad)
		}
	}

	// A check without a linked issue says so; a head without a check says
	// it did not run.
	noLink := strings.Repeat("4", 40)
	noLinkRun := f.NewReviewRun(t, 9, noLink, nil)
	f.InTenant(t, func(ctx context.Context, tx pgx.Tx) error {
		_, err := checkstore.Insert(ctx, tx, checkstore.Stored{RepositoryID: f.Seed.Repository, PRNumber: 9, HeadSHA: noLink,
			ReviewRunID: noLinkRun, Mode: "shadow", Status: "skipped", Reason: checkstore.ReasonNoLink})
		return err
	})
	page = body(t, mustGet(t, c, f.URL+"/reviews/"+noLinkRun))
	for _, want := range []string{"Check skipped, mode shadow", "The pull request links no issue."} {
		if !strings.Contains(page, want) {
			t.Errorf("the no-link page lacks %q", want)
		}
	}
	none := f.NewReviewRun(t, 10, strings.Repeat("5", 40), nil)
	if page := body(t, mustGet(t, c, f.URL+"/reviews/"+none)); !strings.Contains(page, "The acceptance check did not run for this head") {
		t.Errorf("a head without a check does not say the check did not run")
	}
}
