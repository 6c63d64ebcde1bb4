package githubfake_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v75/github"

	"github.com/quavon/quavon/internal/githubfake"
)

// firstError is the first entry of GitHub's "errors" list (strings for the
// review rules).
func firstError(err error) string {
	var er *github.ErrorResponse
	if errors.As(err, &er) && len(er.Errors) > 0 {
		return er.Errors[0].Message
	}
	return ""
}

// numbered returns n lines "line 1\n" … "line n\n", with line k replaced.
func numbered(n, k int, replacement string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if i == k {
			b.WriteString(replacement + "\n")
			continue
		}
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// reviewWorld is newWorld with src/long.go (20 lines) on main and a pull
// request by alice from "feature" changing its line 10 and adding new.go.
func reviewWorld(t *testing.T) (*world, int, string) {
	t.Helper()
	w := newWorld(t)
	w.repo.Commit("main", map[string]string{"src/long.go": numbered(20, 0, "")}, "long file")
	head := w.repo.Commit("feature", map[string]string{"src/long.go": numbered(20, 10, "changed"), "new.go": "package a\n"}, "feature")
	n := w.repo.AddPullRequest(githubfake.PullRequestOptions{Title: "feature", Author: "alice", Head: "feature"})
	return w, n, head
}

func TestCreateReview(t *testing.T) {
	t.Parallel()
	w, n, head := reviewWorld(t)
	ctx := context.Background()
	c := client(t, w.s, w.s.InstallationToken(w.inst, map[string]string{"pull_requests": "write"}))

	rv, resp, err := c.PullRequests.CreateReview(ctx, "acme", "app", n, &github.PullRequestReviewRequest{
		Body: github.Ptr("looks fine"), Event: github.Ptr("COMMENT"),
		Comments: []*github.DraftReviewComment{
			{Path: github.Ptr("src/long.go"), Line: github.Ptr(10), Side: github.Ptr("RIGHT"), Body: github.Ptr("changed")},
			{Path: github.Ptr("src/long.go"), Line: github.Ptr(13), Body: github.Ptr("context, side defaults to RIGHT")},
			{Path: github.Ptr("src/long.go"), Line: github.Ptr(10), Side: github.Ptr("LEFT"), Body: github.Ptr("old line")},
			{Path: github.Ptr("src/long.go"), StartLine: github.Ptr(8), Line: github.Ptr(11), Body: github.Ptr("a range")},
		},
	})
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CreateReview: %v %v", resp, err)
	}
	if rv.GetState() != "COMMENTED" || rv.GetCommitID() != head || rv.GetSubmittedAt().IsZero() || rv.GetUser().GetLogin() != "quavon-fixer[bot]" {
		t.Errorf("review = %v", rv)
	}
	stored := w.repo.Reviews(n)
	if len(stored) != 1 || stored[0].ID != rv.GetID() || stored[0].State != githubfake.ReviewCommented || len(stored[0].Comments) != 4 {
		t.Fatalf("stored %+v", stored)
	}
	if cm := stored[0].Comments[1]; cm.Side != "RIGHT" || cm.Line != 13 {
		t.Errorf("default side: %+v", cm)
	}
	if cm := stored[0].Comments[3]; cm.StartLine != 8 || cm.Line != 11 {
		t.Errorf("multi-line comment: %+v", cm)
	}

	// commit_id defaults to the head; an older commit is allowed.
	newHead := w.repo.Commit("feature", map[string]string{"new.go": "package b\n"}, "more")
	rv2, _, err := c.PullRequests.CreateReview(ctx, "acme", "app", n, &github.PullRequestReviewRequest{
		CommitID: github.Ptr(head), Body: github.Ptr("on the old head"), Event: github.Ptr("REQUEST_CHANGES"),
	})
	if err != nil || rv2.GetCommitID() != head || rv2.GetState() != "CHANGES_REQUESTED" {
		t.Fatalf("stale commit_id: %v %v", rv2, err)
	}
	rv3, _, err := c.PullRequests.CreateReview(ctx, "acme", "app", n, &github.PullRequestReviewRequest{Event: github.Ptr("APPROVE")})
	if err != nil || rv3.GetCommitID() != newHead || rv3.GetState() != "APPROVED" {
		t.Fatalf("approve another author's pull request: %v %v", rv3, err)
	}

	// Read back through the list and get endpoints with a read token.
	ro := client(t, w.s, w.s.InstallationToken(w.inst, map[string]string{"pull_requests": "read"}))
	list, _, err := ro.PullRequests.ListReviews(ctx, "acme", "app", n, nil)
	if err != nil || len(list) != 3 || list[0].GetID() != rv.GetID() || list[2].GetState() != "APPROVED" {
		t.Fatalf("ListReviews = %v, %v", list, err)
	}
	got, _, err := ro.PullRequests.GetReview(ctx, "acme", "app", n, rv2.GetID())
	if err != nil || got.GetBody() != "on the old head" {
		t.Errorf("GetReview = %v, %v", got, err)
	}
	if _, _, err := ro.PullRequests.GetReview(ctx, "acme", "app", n, 1); status(err) != http.StatusNotFound {
		t.Errorf("unknown review: %v, want 404", err)
	}
}

func TestCreateReviewRefusals(t *testing.T) {
	t.Parallel()
	w, n, _ := reviewWorld(t)
	ctx := context.Background()
	c := client(t, w.s, w.s.InstallationToken(w.inst, map[string]string{"pull_requests": "write"}))
	comment := func(path string, line int, side string) *github.PullRequestReviewRequest {
		return &github.PullRequestReviewRequest{Body: github.Ptr("b"), Event: github.Ptr("COMMENT"), Comments: []*github.DraftReviewComment{
			{Path: github.Ptr(path), Line: github.Ptr(line), Side: github.Ptr(side), Body: github.Ptr("c")},
		}}
	}
	cases := []struct {
		name   string
		client *github.Client
		pr     int
		req    *github.PullRequestReviewRequest
		status int
		errMsg string
	}{
		{"request changes without body", c, n, &github.PullRequestReviewRequest{Event: github.Ptr("REQUEST_CHANGES")}, 422, "Body can't be blank"},
		{"comment without body", c, n, &github.PullRequestReviewRequest{Event: github.Ptr("COMMENT")}, 422, "Body can't be blank"},
		{"unknown event", c, n, &github.PullRequestReviewRequest{Body: github.Ptr("b"), Event: github.Ptr("MERGE")}, 422, ""},
		{"unknown commit", c, n, &github.PullRequestReviewRequest{CommitID: github.Ptr(strings.Repeat("ab", 20)), Body: github.Ptr("b"), Event: github.Ptr("COMMENT")}, 422, "No commit found for SHA: " + strings.Repeat("ab", 20)},
		{"path outside the diff", c, n, comment("README.md", 1, "RIGHT"), 422, "Path could not be resolved"},
		{"line outside the diff", c, n, comment("src/long.go", 1, "RIGHT"), 422, "Line could not be resolved"},
		{"line past the context", c, n, comment("src/long.go", 14, "RIGHT"), 422, "Line could not be resolved"},
		{"left side of an added file", c, n, comment("new.go", 1, "LEFT"), 422, "Line could not be resolved"},
		{"start_line after line", c, n, &github.PullRequestReviewRequest{Body: github.Ptr("b"), Event: github.Ptr("COMMENT"), Comments: []*github.DraftReviewComment{
			{Path: github.Ptr("src/long.go"), StartLine: github.Ptr(11), Line: github.Ptr(10), Body: github.Ptr("c")},
		}}, 422, ""},
		{"not a pull request", c, w.repo.AddIssue(githubfake.IssueOptions{Title: "i", Author: "bob"}), comment("new.go", 1, "RIGHT"), 404, ""},
		{"read token", client(t, w.s, w.s.InstallationToken(w.inst, map[string]string{"pull_requests": "read"})), n, comment("new.go", 1, "RIGHT"), 403, ""},
		{"issues token", client(t, w.s, w.s.InstallationToken(w.inst, map[string]string{"issues": "write"})), n, comment("new.go", 1, "RIGHT"), 403, ""},
		{"anonymous", client(t, w.s, ""), n, comment("new.go", 1, "RIGHT"), 404, ""},
	}
	for _, tc := range cases {
		_, _, err := tc.client.PullRequests.CreateReview(ctx, "acme", "app", tc.pr, tc.req)
		if status(err) != tc.status || (tc.errMsg != "" && firstError(err) != tc.errMsg) {
			t.Errorf("%s: %v (errors %q), want %d %q", tc.name, err, firstError(err), tc.status, tc.errMsg)
		}
	}
	if got := w.repo.Reviews(n); len(got) != 0 {
		t.Fatalf("refused reviews were stored: %+v", got)
	}
	// The same comments are fine where the diff shows them.
	if _, _, err := c.PullRequests.CreateReview(ctx, "acme", "app", n, comment("new.go", 1, "RIGHT")); err != nil {
		t.Errorf("comment on an added file: %v", err)
	}
}

func TestReviewOwnPullRequest(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	c := client(t, w.s, w.s.InstallationToken(w.inst, nil))
	w.repo.Commit("quavon/fix", map[string]string{"src/a.go": "package a // fixed\n"}, "fix")
	pr, _, err := c.PullRequests.Create(ctx, "acme", "app", &github.NewPullRequest{Title: github.Ptr("fix"), Head: github.Ptr("quavon/fix"), Base: github.Ptr("main")})
	if err != nil {
		t.Fatal(err)
	}
	n := pr.GetNumber()
	for event, want := range map[string]string{
		"APPROVE":         "Can not approve your own pull request",
		"REQUEST_CHANGES": "Can not request changes on your own pull request",
	} {
		_, _, err := c.PullRequests.CreateReview(ctx, "acme", "app", n, &github.PullRequestReviewRequest{Body: github.Ptr("b"), Event: github.Ptr(event)})
		if status(err) != http.StatusUnprocessableEntity || firstError(err) != want {
			t.Errorf("%s on own pull request: %v (errors %q), want 422 %q", event, err, firstError(err), want)
		}
	}
	if rv, _, err := c.PullRequests.CreateReview(ctx, "acme", "app", n, &github.PullRequestReviewRequest{Body: github.Ptr("note"), Event: github.Ptr("COMMENT")}); err != nil || rv.GetState() != "COMMENTED" {
		t.Errorf("COMMENT on own pull request: %v %v", rv, err)
	}
	if got := w.repo.Reviews(n); len(got) != 1 || got[0].State != githubfake.ReviewCommented {
		t.Errorf("stored %+v", got)
	}
}

func TestPendingReview(t *testing.T) {
	t.Parallel()
	w, n, _ := reviewWorld(t)
	ctx := context.Background()
	c := client(t, w.s, w.s.InstallationToken(w.inst, nil))
	rv, _, err := c.PullRequests.CreateReview(ctx, "acme", "app", n, &github.PullRequestReviewRequest{
		Comments: []*github.DraftReviewComment{{Path: github.Ptr("new.go"), Line: github.Ptr(1), Body: github.Ptr("draft")}},
	})
	if err != nil || rv.GetState() != "PENDING" || rv.SubmittedAt != nil {
		t.Fatalf("pending review: %v %v", rv, err)
	}
	_, _, err = c.PullRequests.CreateReview(ctx, "acme", "app", n, &github.PullRequestReviewRequest{Body: github.Ptr("b"), Event: github.Ptr("COMMENT")})
	if status(err) != http.StatusUnprocessableEntity || firstError(err) != "User can only have one pending review per pull request" {
		t.Errorf("second review with one pending: %v", err)
	}
	// Only its author sees a pending review.
	if list, _, err := c.PullRequests.ListReviews(ctx, "acme", "app", n, nil); err != nil || len(list) != 1 {
		t.Errorf("author's list = %v, %v", list, err)
	}
	other := w.s.RegisterApp("quavon-review")
	oi := w.s.Install(other, "acme", map[string]string{"pull_requests": "read"})
	oc := client(t, w.s, w.s.InstallationToken(oi, nil))
	if list, _, err := oc.PullRequests.ListReviews(ctx, "acme", "app", n, nil); err != nil || len(list) != 0 {
		t.Errorf("other app's list = %v, %v", list, err)
	}
	if _, _, err := oc.PullRequests.GetReview(ctx, "acme", "app", n, rv.GetID()); status(err) != http.StatusNotFound {
		t.Errorf("other app's get: %v, want 404", err)
	}
}
