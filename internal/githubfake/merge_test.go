package githubfake_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-github/v75/github"

	"github.com/quavon/quavon/internal/githubfake"
)

type githubPR = github.PullRequest

func ptr[T any](v T) *T { return &v }

func githubfakePR(head string, draft bool) githubfake.PullRequestOptions {
	return githubfake.PullRequestOptions{Title: head, Author: "bob", Head: head, Draft: draft}
}

// TestPullRequestMergeState: mergeable, mergeable_state, merge_commit_sha,
// merged_by, merged_at and closed_at follow real state transitions.
func TestPullRequestMergeState(t *testing.T) {
	w := newWorld(t)
	s, repo := w.s, w.repo
	ctx := context.Background()
	c := client(t, s, s.InstallationToken(w.inst, nil))
	repo.Commit("clean", map[string]string{"new.go": "package a\n"}, "adds a file")
	repo.Commit("dirty", map[string]string{"README.md": "theirs\n"}, "edits the README")
	repo.Commit("main", map[string]string{"README.md": "ours\n"}, "main edits it too")
	clean := repo.AddPullRequest(githubfakePR("clean", false))
	dirty := repo.AddPullRequest(githubfakePR("dirty", false))
	draft := repo.AddPullRequest(githubfakePR("clean", true))

	type state struct {
		Mergeable      *bool   `json:"mergeable"`
		MergeableState string  `json:"mergeable_state"`
		MergeCommitSHA *string `json:"merge_commit_sha"`
		Merged         bool    `json:"merged"`
		MergedAt       *string `json:"merged_at"`
		ClosedAt       *string `json:"closed_at"`
		MergedBy       *struct {
			Login string `json:"login"`
		} `json:"merged_by"`
	}
	get := func(n int) state {
		t.Helper()
		status, body := w.do(t, httpCall{"GET", fmt.Sprintf("/repos/acme/app/pulls/%d", n), s.InstallationToken(w.inst, nil), nil})
		if status != 200 {
			t.Fatalf("GET pull %d = %d", n, status)
		}
		var st state
		if err := json.Unmarshal(body, &st); err != nil {
			t.Fatal(err)
		}
		return st
	}

	st := get(clean)
	if st.Mergeable == nil || !*st.Mergeable || st.MergeableState != "clean" || st.MergeCommitSHA == nil ||
		*st.MergeCommitSHA != repo.Ref(fmt.Sprintf("refs/pull/%d/merge", clean)) || st.ClosedAt != nil {
		t.Errorf("clean: %+v", st)
	}
	if info, _ := repo.CommitInfo(*st.MergeCommitSHA); len(info.Parents) != 2 || info.Parents[0] != repo.Ref("main") || info.Parents[1] != repo.Ref("clean") {
		t.Errorf("test merge parents: %v", info.Parents)
	}
	if repo.Ref(fmt.Sprintf("refs/pull/%d/head", clean)) != repo.Ref("clean") {
		t.Error("refs/pull/N/head does not point at the head")
	}
	if st := get(dirty); st.Mergeable == nil || *st.Mergeable || st.MergeableState != "dirty" || st.MergeCommitSHA != nil {
		t.Errorf("dirty: %+v", st)
	}
	if st := get(draft); st.MergeableState != "draft" {
		t.Errorf("draft: %+v", st)
	}
	repo.Protect("main")
	if st := get(clean); st.MergeableState != "blocked" {
		t.Errorf("protected base: %+v", st)
	}
	repo.Unprotect("main")

	// Closing stamps closed_at and forgets mergeability; reopening clears it.
	if _, _, err := c.PullRequests.Edit(ctx, "acme", "app", draft, &githubPR{State: ptr("closed")}); err != nil {
		t.Fatal(err)
	}
	if st := get(draft); st.ClosedAt == nil || st.Mergeable != nil || st.MergeableState != "unknown" || st.Merged {
		t.Errorf("closed: %+v", st)
	}
	if _, _, err := c.PullRequests.Edit(ctx, "acme", "app", draft, &githubPR{State: ptr("open")}); err != nil {
		t.Fatal(err)
	}
	if st := get(draft); st.ClosedAt != nil {
		t.Errorf("reopened: %+v", st)
	}

	// Merging: a merge commit on main, merged by alice.
	if _, err := repo.MergePullRequest(dirty, "alice"); err == nil {
		t.Error("a conflicting pull request merged")
	}
	sha, err := repo.MergePullRequest(clean, "alice")
	if err != nil {
		t.Fatal(err)
	}
	st = get(clean)
	if !st.Merged || st.MergedAt == nil || st.ClosedAt == nil || st.MergedBy == nil || st.MergedBy.Login != "alice" ||
		st.MergeCommitSHA == nil || *st.MergeCommitSHA != sha || repo.Ref("main") != sha {
		t.Errorf("merged: %+v (main %s, merge %s)", st, repo.Ref("main"), sha)
	}
	if files, _ := repo.Files("main"); files["new.go"] != "package a\n" || files["README.md"] != "ours\n" {
		t.Errorf("main after the merge: %v", files)
	}
	// The list's simple form has merged_at but no merged.
	status, body := w.do(t, httpCall{"GET", "/repos/acme/app/pulls?state=closed", s.InstallationToken(w.inst, nil), nil})
	var list []map[string]any
	if err := json.Unmarshal(body, &list); status != 200 || err != nil || len(list) != 1 {
		t.Fatalf("list: %d %v %s", status, err, body)
	}
	if _, ok := list[0]["merged"]; ok || list[0]["merged_at"] == nil {
		t.Errorf("list item: merged present %v, merged_at %v", ok, list[0]["merged_at"])
	}
	// The issue view knows it too.
	iss, _, err := c.Issues.Get(ctx, "acme", "app", clean)
	if err != nil || iss.GetPullRequestLinks().MergedAt == nil || iss.GetClosedAt().IsZero() {
		t.Errorf("issue view of the merged pull request: %+v %v", iss.GetPullRequestLinks(), err)
	}
}
