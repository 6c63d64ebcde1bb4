package github_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/githubfake"
)

// parse marshals an emulator-built payload and parses it as Quavon does.
func parse(t *testing.T, event string, payload map[string]any) any {
	t.Helper()
	body, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	got, err := github.ParseWebhook(event, body)
	if err != nil {
		t.Fatalf("%s %v: %v", event, payload["action"], err)
	}
	return got
}

// The payloads the emulator's builders make (checked against GitHub's
// webhook descriptions when those are installed) parse into what the
// worker needs, for every action Quavon handles.
func TestParseRepositoryEventsFromTheEmulator(t *testing.T) {
	s := githubfake.New(t)
	s.AddOrg("acme")
	repo := s.AddRepo("acme", "app", githubfake.RepoOptions{Private: true, Files: map[string]string{"README.md": "x\n"}})
	other := s.AddRepo("acme", "other", githubfake.RepoOptions{Files: map[string]string{"README.md": "x\n"}})
	fork := s.AddRepo("mallory", "app", githubfake.RepoOptions{Fork: repo})
	app := s.RegisterApp("quavon-review")
	inst := s.Install(app, "acme", map[string]string{"contents": "read", "pull_requests": "write", "issues": "write"})

	repo.Commit("feature", map[string]string{"a.go": "package a\n"}, "work")
	pr := repo.AddPullRequest(githubfake.PullRequestOptions{Title: "Feature", Body: "Fixes #1", Author: "alice", Head: "feature", Draft: true})
	before := repo.Ref("feature")
	after := repo.Commit("feature", map[string]string{"b.go": "package a\n"}, "more")
	base := repo.Ref("main")

	for _, action := range []string{"opened", "synchronize", "reopened", "ready_for_review"} {
		if action == "ready_for_review" {
			repo.UpdateIssue(pr, func(i *githubfake.Issue) { i.PullRequest.Draft = false })
		}
		ev := parse(t, "pull_request", s.PullRequestEvent(action, inst, repo, pr, "alice")).(*github.PullRequestEvent)
		p := ev.PullRequest
		if ev.Action != action || ev.InstallationID != inst.ID || ev.Number != pr || ev.Repository.ID != repo.ID ||
			ev.Repository.FullName != "acme/app" || ev.Repository.Visibility != "private" || ev.Repository.DefaultBranch != "main" ||
			p.HeadSHA != after || p.BaseSHA != base || p.HeadRef != "feature" || p.BaseRef != "main" || p.HeadRepoID != repo.ID ||
			p.Author != "alice" || p.Title != "Feature" || p.Body != "Fixes #1" || p.Draft != (action != "ready_for_review") || p.State != "open" ||
			ev.Sender.Login != "alice" || ev.Sender.Type != "User" {
			t.Errorf("%s: %+v", action, ev)
		}
		if action == "synchronize" && (ev.Before != before || ev.After != after) {
			t.Errorf("synchronize before/after %s/%s, want %s/%s", ev.Before, ev.After, before, after)
		}
	}
	repo.UpdateIssue(pr, func(i *githubfake.Issue) { i.State = "closed" })
	ev := parse(t, "pull_request", s.PullRequestEvent("closed", inst, repo, pr, "bob")).(*github.PullRequestEvent)
	if ev.PullRequest.State != "closed" || ev.PullRequest.Merged || ev.Sender.Login != "bob" {
		t.Errorf("closed: %+v", ev)
	}

	// A pull request from a fork names the fork as its head repository.
	fork.Commit("evil", map[string]string{"c.go": "package a\n"}, "from a fork")
	fpr := repo.AddPullRequest(githubfake.PullRequestOptions{Title: "From a fork", Author: "mallory", Head: "evil", HeadRepo: fork})
	ev = parse(t, "pull_request", s.PullRequestEvent("opened", inst, repo, fpr, "mallory")).(*github.PullRequestEvent)
	if ev.PullRequest.HeadRepoID != fork.ID || ev.PullRequest.HeadRepo != "mallory/app" {
		t.Errorf("fork pull request: %+v", ev.PullRequest)
	}

	// Issues: labeled (by a bot), closed, transferred, deleted.
	n := repo.AddIssue(githubfake.IssueOptions{Title: "Crash", Body: "steps", Author: "alice", Labels: []string{"bug"}})
	iev := parse(t, "issues", s.IssuesEvent("labeled", inst, repo, n, app.Bot.Login, "quavon:fix")).(*github.IssuesEvent)
	if iev.Label != "quavon:fix" || iev.Issue.Number != n || iev.Issue.Title != "Crash" || iev.Issue.IsPullRequest ||
		iev.Sender.Type != "Bot" || iev.Sender.Login != "quavon-review[bot]" || iev.Issue.Author != "alice" {
		t.Errorf("labeled: %+v", iev)
	}
	repo.UpdateIssue(n, func(i *githubfake.Issue) { i.State = "closed" })
	if iev := parse(t, "issues", s.IssuesEvent("closed", inst, repo, n, "alice", "")).(*github.IssuesEvent); iev.Issue.State != "closed" {
		t.Errorf("closed: %+v", iev)
	}
	moved := repo.AddIssue(githubfake.IssueOptions{Title: "Wrong place", Author: "alice"})
	to := repo.TransferIssue(moved, other)
	iev = parse(t, "issues", s.IssuesEvent("transferred", inst, repo, moved, "acme", "")).(*github.IssuesEvent)
	if iev.NewRepository.ID != other.ID || iev.NewRepository.FullName != "acme/other" || iev.NewNumber != to || iev.Issue.Number != moved {
		t.Errorf("transferred: %+v", iev)
	}
	gone := repo.AddIssue(githubfake.IssueOptions{Title: "Spam", Author: "spammer"})
	repo.DeleteIssue(gone)
	if iev := parse(t, "issues", s.IssuesEvent("deleted", inst, repo, gone, "acme", "")).(*github.IssuesEvent); iev.Issue.Number != gone {
		t.Errorf("deleted: %+v", iev)
	}

	// Comments, on an issue and on a pull request.
	cid := repo.AddComment(n, "bob", "@quavon-fixer fix")
	cev := parse(t, "issue_comment", s.IssueCommentEvent("created", inst, repo, n, cid, "bob")).(*github.IssueCommentEvent)
	if cev.Comment.ID != cid || cev.Comment.Body != "@quavon-fixer fix" || cev.Comment.Author != "bob" || cev.Comment.AuthorType != "User" ||
		cev.Issue.IsPullRequest || cev.Comment.CreatedAt.IsZero() {
		t.Errorf("comment: %+v", cev)
	}
	pcid := repo.AddComment(fpr, "bob", "@quavon-review review")
	cev = parse(t, "issue_comment", s.IssueCommentEvent("created", inst, repo, fpr, pcid, "bob")).(*github.IssueCommentEvent)
	if !cev.Issue.IsPullRequest || cev.Issue.Number != fpr {
		t.Errorf("comment on a pull request: %+v", cev.Issue)
	}

	// Actions Quavon does not act on are unsupported, not errors.
	repo.UpdateIssue(fpr, func(i *githubfake.Issue) { i.PullRequest.Draft = true })
	repo.UpdateIssue(n, func(i *githubfake.Issue) { i.State = "open" })
	for _, c := range []struct {
		event   string
		payload map[string]any
	}{
		{"pull_request", s.PullRequestEvent("converted_to_draft", inst, repo, fpr, "alice")},
		{"issues", s.IssuesEvent("assigned", inst, repo, n, "alice", "")},
	} {
		body, _ := json.Marshal(c.payload)
		if _, err := github.ParseWebhook(c.event, body); !errors.Is(err, github.ErrUnsupportedEvent) {
			t.Errorf("%s %v: %v", c.event, c.payload["action"], err)
		}
	}
}

// Hostile or broken payloads are refused with ErrInvalidPayload: every field
// the worker reads is checked, and texts over GitHub's own limits did not
// come from GitHub.
func TestParseRepositoryEventsRefuses(t *testing.T) {
	s := githubfake.New(t)
	s.AddOrg("acme")
	repo := s.AddRepo("acme", "app", githubfake.RepoOptions{Files: map[string]string{"README.md": "x\n"}})
	app := s.RegisterApp("quavon-review")
	inst := s.Install(app, "acme", map[string]string{"pull_requests": "read", "issues": "read"})
	repo.Commit("feature", map[string]string{"a.go": "package a\n"}, "work")
	pr := repo.AddPullRequest(githubfake.PullRequestOptions{Title: "Feature", Author: "alice", Head: "feature"})
	n := repo.AddIssue(githubfake.IssueOptions{Title: "Crash", Author: "alice"})
	cid := repo.AddComment(n, "bob", "hi")

	type edit func(m map[string]any)
	sub := func(m map[string]any, keys ...string) map[string]any {
		for _, k := range keys {
			m = m[k].(map[string]any)
		}
		return m
	}
	cases := []struct {
		name, event string
		build       func() map[string]any
		edit        edit
	}{
		{"no pull request", "pull_request", func() map[string]any { return s.PullRequestEvent("opened", inst, repo, pr, "alice") },
			func(m map[string]any) { delete(m, "pull_request") }},
		{"numbers disagree", "pull_request", func() map[string]any { return s.PullRequestEvent("opened", inst, repo, pr, "alice") },
			func(m map[string]any) { m["number"] = pr + 1 }},
		{"short head sha", "pull_request", func() map[string]any { return s.PullRequestEvent("opened", inst, repo, pr, "alice") },
			func(m map[string]any) { sub(m, "pull_request", "head")["sha"] = "abc123" }},
		{"upper-case sha", "pull_request", func() map[string]any { return s.PullRequestEvent("opened", inst, repo, pr, "alice") },
			func(m map[string]any) {
				h := sub(m, "pull_request", "head")
				h["sha"] = strings.ToUpper(h["sha"].(string))
			}},
		{"no head ref", "pull_request", func() map[string]any { return s.PullRequestEvent("opened", inst, repo, pr, "alice") },
			func(m map[string]any) { sub(m, "pull_request", "head")["ref"] = "" }},
		{"base of another repository", "pull_request", func() map[string]any { return s.PullRequestEvent("opened", inst, repo, pr, "alice") },
			func(m map[string]any) { sub(m, "pull_request", "base", "repo")["id"] = 1 }},
		{"title over 256", "pull_request", func() map[string]any { return s.PullRequestEvent("opened", inst, repo, pr, "alice") },
			func(m map[string]any) { sub(m, "pull_request")["title"] = strings.Repeat("ü", 257) }},
		{"body over 65536", "pull_request", func() map[string]any { return s.PullRequestEvent("opened", inst, repo, pr, "alice") },
			func(m map[string]any) { sub(m, "pull_request")["body"] = strings.Repeat("x", 65537) }},
		{"synchronize without after", "pull_request", func() map[string]any { return s.PullRequestEvent("synchronize", inst, repo, pr, "alice") },
			func(m map[string]any) { delete(m, "after") }},
		{"closed but open", "pull_request", func() map[string]any { return s.PullRequestEvent("opened", inst, repo, pr, "alice") },
			func(m map[string]any) { m["action"] = "closed" }},
		{"unknown sender type", "pull_request", func() map[string]any { return s.PullRequestEvent("opened", inst, repo, pr, "alice") },
			func(m map[string]any) { sub(m, "sender")["type"] = "Robot" }},
		{"no sender", "issues", func() map[string]any { return s.IssuesEvent("labeled", inst, repo, n, "alice", "x") },
			func(m map[string]any) { delete(m, "sender") }},
		{"label over 50", "issues", func() map[string]any { return s.IssuesEvent("labeled", inst, repo, n, "alice", "x") },
			func(m map[string]any) { sub(m, "label")["name"] = strings.Repeat("l", 51) }},
		{"101 labels", "issues", func() map[string]any { return s.IssuesEvent("labeled", inst, repo, n, "alice", "x") },
			func(m map[string]any) {
				var ls []any
				for range 101 {
					ls = append(ls, map[string]any{"name": "l"})
				}
				sub(m, "issue")["labels"] = ls
			}},
		{"issue state", "issues", func() map[string]any { return s.IssuesEvent("labeled", inst, repo, n, "alice", "x") },
			func(m map[string]any) { sub(m, "issue")["state"] = "merged" }},
		{"transferred nowhere", "issues", func() map[string]any { return s.IssuesEvent("labeled", inst, repo, n, "alice", "x") },
			func(m map[string]any) { m["action"] = "transferred"; delete(m, "changes") }},
		{"no installation", "issues", func() map[string]any { return s.IssuesEvent("labeled", inst, repo, n, "alice", "x") },
			func(m map[string]any) { delete(m, "installation") }},
		{"repository name with a path", "issues", func() map[string]any { return s.IssuesEvent("labeled", inst, repo, n, "alice", "x") },
			func(m map[string]any) { sub(m, "repository")["full_name"] = "acme/../etc" }},
		{"comment without id", "issue_comment", func() map[string]any { return s.IssueCommentEvent("created", inst, repo, n, cid, "bob") },
			func(m map[string]any) { delete(sub(m, "comment"), "id") }},
		{"comment body over 65536", "issue_comment", func() map[string]any { return s.IssueCommentEvent("created", inst, repo, n, cid, "bob") },
			func(m map[string]any) { sub(m, "comment")["body"] = strings.Repeat("é", 65537) }},
		{"comment time", "issue_comment", func() map[string]any { return s.IssueCommentEvent("created", inst, repo, n, cid, "bob") },
			func(m map[string]any) { sub(m, "comment")["created_at"] = "yesterday" }},
		{"comment body a number", "issue_comment", func() map[string]any { return s.IssueCommentEvent("created", inst, repo, n, cid, "bob") },
			func(m map[string]any) { sub(m, "comment")["body"] = 7 }},
	}
	for _, c := range cases {
		m := c.build()
		c.edit(m)
		body, _ := json.Marshal(m)
		if got, err := github.ParseWebhook(c.event, body); !errors.Is(err, github.ErrInvalidPayload) || got != nil {
			t.Errorf("%s: %v, %v", c.name, got, err)
		}
	}
	// At the limits exactly: accepted.
	m := s.PullRequestEvent("opened", inst, repo, pr, "alice")
	sub(m, "pull_request")["title"] = strings.Repeat("ü", 256)
	sub(m, "pull_request")["body"] = strings.Repeat("ü", 65536)
	body, _ := json.Marshal(m)
	if _, err := github.ParseWebhook("pull_request", body); err != nil {
		t.Errorf("at the limits: %v", err)
	}
}
