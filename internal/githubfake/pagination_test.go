package githubfake_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v75/github"

	"github.com/quavon/quavon/internal/githubfake"
)

func TestRevokeInstallationToken(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	tok := w.s.InstallationToken(w.inst, map[string]string{"contents": "read"})
	other := w.s.InstallationToken(w.inst, map[string]string{"contents": "read"})
	c := client(t, w.s, tok)
	if _, _, err := c.Repositories.Get(ctx, "acme", "app"); err != nil {
		t.Fatal(err)
	}
	resp, err := c.Apps.RevokeInstallationToken(ctx)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("revoke: %v %v", resp, err)
	}
	if _, _, err := c.Repositories.Get(ctx, "acme", "app"); status(err) != http.StatusUnauthorized || message(err) != "Bad credentials" {
		t.Errorf("revoked token: %v, want 401 Bad credentials", err)
	}
	if _, err := c.Apps.RevokeInstallationToken(ctx); status(err) != http.StatusUnauthorized {
		t.Errorf("revoking twice: %v, want 401", err)
	}
	// Only the calling token is revoked.
	if _, _, err := client(t, w.s, other).Repositories.Get(ctx, "acme", "app"); err != nil {
		t.Errorf("other token of the installation: %v", err)
	}
	for name, cred := range map[string]string{"app JWT": w.s.SignJWT(w.app), "anonymous": ""} {
		if _, err := client(t, w.s, cred).Apps.RevokeInstallationToken(ctx); status(err) != http.StatusUnauthorized {
			t.Errorf("%s revoke: %v, want 401", name, err)
		}
	}
	var log []string
	for _, r := range w.s.Requests() {
		if r.Method == http.MethodDelete && r.Path == "/installation/token" {
			log = append(log, fmt.Sprintf("%s %d %d", r.TokenKind, r.InstallationID, r.Status))
		}
	}
	want := fmt.Sprintf("installation %d 204", w.inst.ID)
	if len(log) != 4 || log[0] != want || log[1] != "invalid 0 401" {
		t.Errorf("request log %q, want %q first", log, want)
	}
}

// TestPagination lists 101 items from every paginated endpoint the client
// uses, following go-github's NextPage: one more than GitHub's largest
// page, so per_page=500 gives a page of 100 and a page of 1. (250 items
// took 35 s of a loaded CI run: every answer is checked against GitHub's
// OpenAPI description.)
func TestPagination(t *testing.T) {
	t.Parallel()
	const total = 101
	s := githubfake.New(t)
	repo := s.AddRepo("acme", "app", githubfake.RepoOptions{Private: true, Files: map[string]string{"a.go": "package a\n"}})
	head := repo.Commit("feature", map[string]string{"a.go": "package a // changed\n"}, "change")
	app := s.RegisterApp("quavon")
	in := s.Install(app, "acme", map[string]string{"pull_requests": "write", "issues": "write", "checks": "write", "contents": "read"})
	ctx := context.Background()
	c := client(t, s, s.InstallationToken(in, nil))

	pr := repo.AddPullRequest(githubfake.PullRequestOptions{Title: "pr", Author: "alice", Head: "feature"})
	for i := 1; i < total; i++ {
		repo.AddPullRequest(githubfake.PullRequestOptions{Title: fmt.Sprintf("pr %d", i), Author: "alice", Head: "feature"})
	}
	for i := range total {
		repo.AddComment(pr, "alice", fmt.Sprintf("comment %d", i))
		s.AddRepo("acme", fmt.Sprintf("r%03d", i), githubfake.RepoOptions{})
	}
	for i := range total {
		if _, _, err := c.Checks.CreateCheckRun(ctx, "acme", "app", github.CreateCheckRunOptions{Name: fmt.Sprintf("check %d", i), HeadSHA: head}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.PullRequests.CreateReview(ctx, "acme", "app", pr, &github.PullRequestReviewRequest{Body: github.Ptr("b"), Event: github.Ptr("COMMENT")}); err != nil {
			t.Fatal(err)
		}
	}

	// Each lister fetches one page and reports its items' identities.
	listers := map[string]struct {
		want int
		list func(opt github.ListOptions) ([]string, *github.Response, error)
	}{
		"issues": {total, func(opt github.ListOptions) ([]string, *github.Response, error) {
			v, r, err := c.Issues.ListByRepo(ctx, "acme", "app", &github.IssueListByRepoOptions{ListOptions: opt})
			return collect(v, func(x *github.Issue) string { return fmt.Sprint(x.GetNumber()) }), r, err
		}},
		"issue comments": {total, func(opt github.ListOptions) ([]string, *github.Response, error) {
			v, r, err := c.Issues.ListComments(ctx, "acme", "app", pr, &github.IssueListCommentsOptions{ListOptions: opt})
			return collect(v, func(x *github.IssueComment) string { return x.GetBody() }), r, err
		}},
		"pulls": {total, func(opt github.ListOptions) ([]string, *github.Response, error) {
			v, r, err := c.PullRequests.List(ctx, "acme", "app", &github.PullRequestListOptions{ListOptions: opt})
			return collect(v, func(x *github.PullRequest) string { return fmt.Sprint(x.GetNumber()) }), r, err
		}},
		"reviews": {total, func(opt github.ListOptions) ([]string, *github.Response, error) {
			v, r, err := c.PullRequests.ListReviews(ctx, "acme", "app", pr, &opt)
			return collect(v, func(x *github.PullRequestReview) string { return fmt.Sprint(x.GetID()) }), r, err
		}},
		"check runs": {total, func(opt github.ListOptions) ([]string, *github.Response, error) {
			v, r, err := c.Checks.ListCheckRunsForRef(ctx, "acme", "app", head, &github.ListCheckRunsOptions{ListOptions: opt})
			if v != nil && v.GetTotal() != total {
				t.Errorf("check runs total_count = %d, want %d", v.GetTotal(), total)
			}
			return collect(v.CheckRuns, func(x *github.CheckRun) string { return x.GetName() }), r, err
		}},
		"installation repositories": {total + 1, func(opt github.ListOptions) ([]string, *github.Response, error) {
			v, r, err := c.Apps.ListRepos(ctx, &opt)
			if v != nil && v.GetTotalCount() != total+1 {
				t.Errorf("repositories total_count = %d, want %d", v.GetTotalCount(), total+1)
			}
			return collect(v.Repositories, func(x *github.Repository) string { return x.GetFullName() }), r, err
		}},
	}
	for name, l := range listers {
		for _, perPage := range []int{0, 100, 7, 500} {
			size := perPage
			switch {
			case perPage == 0:
				size = 30 // GitHub's default
			case perPage > 100:
				size = 100 // and its maximum
			}
			pages := (l.want + size - 1) / size
			seen := map[string]bool{}
			opt := github.ListOptions{PerPage: perPage}
			for n := 1; ; n++ {
				items, resp, err := l.list(opt)
				if err != nil {
					t.Fatalf("%s per_page %d page %d: %v", name, perPage, n, err)
				}
				if n < pages && len(items) != size {
					t.Errorf("%s per_page %d page %d: %d items, want %d", name, perPage, n, len(items), size)
				}
				if resp.LastPage != 0 && resp.LastPage != pages || resp.NextPage == 0 && n != pages {
					t.Errorf("%s per_page %d page %d: next %d last %d, want %d pages", name, perPage, n, resp.NextPage, resp.LastPage, pages)
				}
				if n > 1 && (resp.PrevPage != n-1 || resp.FirstPage != 1) {
					t.Errorf("%s page %d: prev %d first %d", name, n, resp.PrevPage, resp.FirstPage)
				}
				for _, it := range items {
					if seen[it] {
						t.Errorf("%s per_page %d: %s listed twice", name, perPage, it)
					}
					seen[it] = true
				}
				if resp.NextPage == 0 {
					break
				}
				opt.Page = resp.NextPage
			}
			if len(seen) != l.want {
				t.Errorf("%s per_page %d: %d items, want %d", name, perPage, len(seen), l.want)
			}
		}
	}
}

func collect[T any](items []T, id func(T) string) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, id(it))
	}
	return out
}

func TestPaginationLinkHeader(t *testing.T) {
	t.Parallel()
	s := githubfake.New(t)
	repo := s.AddRepo("acme", "app", githubfake.RepoOptions{Files: map[string]string{"a": "a"}})
	for i := range 5 {
		repo.AddIssue(githubfake.IssueOptions{Title: fmt.Sprint(i), Author: "alice", Labels: []string{"bug"}})
	}
	link := func(query string) string {
		t.Helper()
		resp, err := http.Get(s.URL + "/repos/acme/app/issues" + query)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header.Get("Link")
	}
	if got := link(""); got != "" {
		t.Errorf("one page: Link %q, want none", got)
	}
	got := link("?per_page=2&page=2&labels=bug")
	want := []string{
		`<` + s.URL + `/repos/acme/app/issues?labels=bug&page=1&per_page=2>; rel="prev"`,
		`<` + s.URL + `/repos/acme/app/issues?labels=bug&page=3&per_page=2>; rel="next"`,
		`<` + s.URL + `/repos/acme/app/issues?labels=bug&page=3&per_page=2>; rel="last"`,
		`<` + s.URL + `/repos/acme/app/issues?labels=bug&page=1&per_page=2>; rel="first"`,
	}
	if got != strings.Join(want, ", ") {
		t.Errorf("Link = %s\nwant   %s", got, strings.Join(want, ", "))
	}
	if got := link("?page=9"); !strings.Contains(got, `page=8>; rel="prev"`) || strings.Contains(got, `rel="next"`) {
		t.Errorf("past the end: Link %q", got)
	}
}
