package github

import (
	"encoding/json"
	"strings"
	"testing"

	gh "github.com/google/go-github/v75/github"

	"github.com/quavon/quavon/internal/githubfake/apidesc"
	"github.com/quavon/quavon/internal/testenv"
)

// The audit of Quavon's own readers against GitHub's descriptions: every
// field a reader (reader.go, types.go, webhook.go) takes from GitHub is
// listed here with what the description promises. A field GitHub may omit
// or send as null carries a check that feeds the converter exactly that
// and asserts the safe result. When a new description version changes a
// promise, TestReadersAgainstDescriptions fails and names the field.

type readField struct {
	// where is "<operationId> <status>" or "webhook <event>.<action>".
	op     string
	status int
	event  string
	action string
	path   string
	// absent: the description lets GitHub omit the field or send null.
	absent bool
	// missing: the description does not define the field at all there
	// (Quavon must not rely on it from this endpoint).
	missing bool
	// handled shows the converter's answer when the field is absent or
	// null; required for absent and missing fields.
	handled func(t *testing.T)
}

func decode[T any](t *testing.T, doc string) *T {
	t.Helper()
	v := new(T)
	if err := json.Unmarshal([]byte(doc), v); err != nil {
		t.Fatalf("decode %s: %v", doc, err)
	}
	return v
}

var readFields = []readField{
	// Reader.Repository: GET /repos/{owner}/{repo}.
	{op: "repos/get", status: 200, path: "id"},
	{op: "repos/get", status: 200, path: "node_id"},
	{op: "repos/get", status: 200, path: "owner.login"},
	{op: "repos/get", status: 200, path: "name"},
	{op: "repos/get", status: 200, path: "full_name"},
	{op: "repos/get", status: 200, path: "default_branch"},
	{op: "repos/get", status: 200, path: "private"},
	{op: "repos/get", status: 200, path: "archived"},
	{op: "repos/get", status: 200, path: "fork"},
	{op: "repos/get", status: 200, path: "visibility", absent: true, handled: func(t *testing.T) {
		// Without visibility, private decides; never "public" for a
		// private repository.
		r := newRepository(decode[gh.Repository](t, `{"id":1,"private":true}`))
		p := newRepository(decode[gh.Repository](t, `{"id":1,"private":false}`))
		i := newRepository(decode[gh.Repository](t, `{"id":1,"private":true,"visibility":"internal"}`))
		if r.Visibility != "private" || p.Visibility != "public" || i.Visibility != "internal" {
			t.Errorf("visibility: %q %q %q", r.Visibility, p.Visibility, i.Visibility)
		}
	}},

	// Reader.Issue: GET /repos/{owner}/{repo}/issues/{n}.
	{op: "issues/get", status: 200, path: "number"},
	{op: "issues/get", status: 200, path: "title"},
	{op: "issues/get", status: 200, path: "state"},
	{op: "issues/get", status: 200, path: "locked"},
	{op: "issues/get", status: 200, path: "labels"},
	{op: "issues/get", status: 200, path: "body", absent: true, handled: func(t *testing.T) {
		for _, doc := range []string{`{"number":1}`, `{"number":1,"body":null}`} {
			if i := newIssue(decode[gh.Issue](t, doc)); i.Body != "" {
				t.Errorf("%s: body %q", doc, i.Body)
			}
		}
	}},
	{op: "issues/get", status: 200, path: "user", absent: true, handled: func(t *testing.T) {
		// A deleted account ("ghost"): no author, so no author rights.
		i := newIssue(decode[gh.Issue](t, `{"number":1,"user":null}`))
		if i.Author != "" || i.AuthorID != 0 {
			t.Errorf("author %q %d", i.Author, i.AuthorID)
		}
	}},
	{op: "issues/get", status: 200, path: "user.login"},
	{op: "issues/get", status: 200, path: "user.id"},
	{op: "issues/get", status: 200, path: "pull_request", absent: true, handled: func(t *testing.T) {
		// Absent means an issue; present (any shape) a pull request.
		if newIssue(decode[gh.Issue](t, `{"number":1}`)).IsPullRequest {
			t.Error("an issue without pull_request reads as a pull request")
		}
		if !newIssue(decode[gh.Issue](t, `{"number":1,"pull_request":{"url":"u","merged_at":null}}`)).IsPullRequest {
			t.Error("a pull request's issue reads as an issue")
		}
	}},

	// Reader.IssueComments: GET .../issues/{n}/comments.
	{op: "issues/list-comments", status: 200, path: "[].id"},
	{op: "issues/list-comments", status: 200, path: "[].created_at"},
	{op: "issues/list-comments", status: 200, path: "[].updated_at"},
	{op: "issues/list-comments", status: 200, path: "[].body", absent: true, handled: func(t *testing.T) {
		if c := newComment(decode[gh.IssueComment](t, `{"id":1}`)); c.Body != "" {
			t.Errorf("body %q", c.Body)
		}
	}},
	{op: "issues/list-comments", status: 200, path: "[].user", absent: true, handled: func(t *testing.T) {
		c := newComment(decode[gh.IssueComment](t, `{"id":1,"user":null}`))
		if c.Author != "" || c.AuthorID != 0 || c.AuthorType != "" {
			t.Errorf("author %q %d %q", c.Author, c.AuthorID, c.AuthorType)
		}
	}},
	{op: "issues/list-comments", status: 200, path: "[].user.login"},
	{op: "issues/list-comments", status: 200, path: "[].user.type"},

	// Reader.PullRequest (GET one) and writer.CreateDraftPullRequest
	// (create): the full pull request.
	{op: "pulls/get", status: 200, path: "number"},
	{op: "pulls/get", status: 200, path: "node_id"},
	{op: "pulls/get", status: 200, path: "state"},
	{op: "pulls/get", status: 200, path: "merged"},
	{op: "pulls/get", status: 200, path: "title"},
	{op: "pulls/get", status: 200, path: "user.login"},
	{op: "pulls/get", status: 200, path: "user.id"},
	{op: "pulls/get", status: 200, path: "head.ref"},
	{op: "pulls/get", status: 200, path: "head.sha"},
	{op: "pulls/get", status: 200, path: "base.ref"},
	{op: "pulls/get", status: 200, path: "base.sha"},
	{op: "pulls/get", status: 200, path: "html_url"},
	{op: "pulls/get", status: 200, path: "body", absent: true, handled: pullBodyNull},
	{op: "pulls/get", status: 200, path: "draft", absent: true, handled: pullDraftAbsent},
	{op: "pulls/get", status: 200, path: "head.repo", absent: true, handled: pullHeadRepoNull},
	{op: "pulls/get", status: 200, path: "head.repo.id"},
	{op: "pulls/get", status: 200, path: "head.repo.full_name"},
	{op: "pulls/create", status: 201, path: "merged"},
	{op: "pulls/create", status: 201, path: "head.repo", absent: true, handled: pullHeadRepoNull},

	// writer.PullRequestsByHead: the list's simple form.
	{op: "pulls/list", status: 200, path: "[].number"},
	{op: "pulls/list", status: 200, path: "[].state"},
	{op: "pulls/list", status: 200, path: "[].head.ref"},
	{op: "pulls/list", status: 200, path: "[].head.sha"},
	{op: "pulls/list", status: 200, path: "[].merged", missing: true, handled: func(t *testing.T) {
		// The list has no "merged"; merged_at decides.
		merged := NewPullRequest(decode[gh.PullRequest](t, `{"number":1,"state":"closed","merged_at":"2026-01-02T03:04:05Z"}`))
		closed := NewPullRequest(decode[gh.PullRequest](t, `{"number":1,"state":"closed","merged_at":null}`))
		if !merged.Merged || closed.Merged {
			t.Errorf("merged from the list: %v, closed unmerged: %v", merged.Merged, closed.Merged)
		}
	}},
	{op: "pulls/list", status: 200, path: "[].merged_at", absent: true, handled: func(t *testing.T) {
		if NewPullRequest(decode[gh.PullRequest](t, `{"number":1,"state":"open"}`)).Merged {
			t.Error("an open pull request without merged_at reads as merged")
		}
	}},
	{op: "pulls/list", status: 200, path: "[].user", absent: true, handled: func(t *testing.T) {
		p := NewPullRequest(decode[gh.PullRequest](t, `{"number":1,"user":null}`))
		if p.Author != "" || p.AuthorID != 0 {
			t.Errorf("author %q %d", p.Author, p.AuthorID)
		}
	}},
	{op: "pulls/list", status: 200, path: "[].body", absent: true, handled: pullBodyNull},
	{op: "pulls/list", status: 200, path: "[].draft", absent: true, handled: pullDraftAbsent},
	{op: "pulls/list", status: 200, path: "[].head.repo", absent: true, handled: pullHeadRepoNull},

	// Reader.Tree.
	{op: "git/get-tree", status: 200, path: "sha"},
	{op: "git/get-tree", status: 200, path: "truncated"},
	{op: "git/get-tree", status: 200, path: "tree.[].path"},
	{op: "git/get-tree", status: 200, path: "tree.[].mode"},
	{op: "git/get-tree", status: 200, path: "tree.[].type"},
	{op: "git/get-tree", status: 200, path: "tree.[].sha"},
	{op: "git/get-tree", status: 200, path: "tree.[].size", absent: true, handled: treeEntryFields},

	// Reader.FileContent.
	{op: "repos/get-content", status: 200, path: "type"},
	{op: "repos/get-content", status: 200, path: "path"},
	{op: "repos/get-content", status: 200, path: "size"},
	{op: "repos/get-content", status: 200, path: "sha"},
	{op: "repos/get-content", status: 200, path: "content"},
	{op: "repos/get-content", status: 200, path: "encoding"},

	// Reader.CollaboratorPermission.
	{op: "repos/get-collaborator-permission-level", status: 200, path: "permission"},

	// ParseWebhook: installation.
	{event: "installation", action: "created", path: "installation.id"},
	{event: "installation", action: "created", path: "installation.account", absent: true, handled: webhookAccountMissing},
	{event: "installation", action: "created", path: "installation.account.id"},
	{event: "installation", action: "created", path: "installation.permissions"},
	{event: "installation", action: "created", path: "installation.repository_selection"},
	{event: "installation", action: "created", path: "repositories", absent: true, handled: func(t *testing.T) {
		ev, err := ParseWebhook("installation", []byte(`{"action":"created","installation":{"id":7,"account":{"id":1,"login":"acme","type":"Organization"}},"sender":{"id":2,"login":"ada"}}`))
		if err != nil || len(ev.(*InstallationEvent).Repositories) != 0 {
			t.Errorf("created without repositories: %v %v", ev, err)
		}
	}},
	{event: "installation", action: "created", path: "repositories.[].id"},
	{event: "installation", action: "created", path: "repositories.[].full_name"},
	{event: "installation", action: "created", path: "repositories.[].private"},
	{event: "installation", action: "suspend", path: "installation.id"},
	{event: "installation", action: "deleted", path: "installation.id"},

	// ParseWebhook: installation_repositories.
	{event: "installation_repositories", action: "added", path: "repositories_added.[].id"},
	{event: "installation_repositories", action: "added", path: "repositories_added.[].full_name"},
	{event: "installation_repositories", action: "added", path: "repository_selection"},
	{event: "installation_repositories", action: "removed", path: "repositories_removed.[].id"},
	{event: "installation_repositories", action: "removed", path: "repositories_removed.[].full_name"},

	// ParseWebhook: repository.
	{event: "repository", action: "renamed", path: "installation", absent: true, handled: func(t *testing.T) {
		// A repository event without an installation is not for an app:
		// refused, never applied to an installation 0.
		_, err := ParseWebhook("repository", []byte(`{"action":"renamed","repository":{"id":5,"full_name":"acme/app2","owner":{"id":1,"login":"acme"}},"changes":{"repository":{"name":{"from":"app"}}},"sender":{"id":2,"login":"ada"}}`))
		if err == nil {
			t.Error("a repository event without installation was accepted")
		}
	}},
	// ParseWebhook: pull_request, issues and issue_comment (the repository
	// events the worker acts on).
	{event: "pull_request", action: "opened", path: "installation.id"},
	{event: "pull_request", action: "opened", path: "sender.id"},
	{event: "pull_request", action: "opened", path: "sender.login"},
	{event: "pull_request", action: "opened", path: "sender.type"},
	{event: "pull_request", action: "opened", path: "number"},
	{event: "pull_request", action: "opened", path: "pull_request.number"},
	{event: "pull_request", action: "opened", path: "pull_request.state"},
	{event: "pull_request", action: "opened", path: "pull_request.draft", absent: true, handled: prDraftAbsent},
	{event: "pull_request", action: "opened", path: "pull_request.merged", absent: true, handled: prMergedNull},
	{event: "pull_request", action: "opened", path: "pull_request.title"},
	{event: "pull_request", action: "opened", path: "pull_request.body", absent: true, handled: prBodyNull},
	{event: "pull_request", action: "opened", path: "pull_request.user"},
	{event: "pull_request", action: "opened", path: "pull_request.user.id"},
	{event: "pull_request", action: "opened", path: "pull_request.user.login"},
	{event: "pull_request", action: "opened", path: "pull_request.user.type"},
	{event: "pull_request", action: "opened", path: "pull_request.head.ref"},
	{event: "pull_request", action: "opened", path: "pull_request.head.sha"},
	{event: "pull_request", action: "opened", path: "pull_request.head.repo", absent: true, handled: prHeadRepoNull},
	{event: "pull_request", action: "opened", path: "pull_request.base.ref"},
	{event: "pull_request", action: "opened", path: "pull_request.base.sha"},
	{event: "pull_request", action: "opened", path: "pull_request.html_url"},
	{event: "pull_request", action: "opened", path: "repository.default_branch"},
	{event: "pull_request", action: "opened", path: "repository.visibility", absent: true, handled: eventVisibilityAbsent},
	{event: "pull_request", action: "synchronize", path: "installation.id"},
	{event: "pull_request", action: "synchronize", path: "sender.id"},
	{event: "pull_request", action: "synchronize", path: "sender.login"},
	{event: "pull_request", action: "synchronize", path: "sender.type"},
	{event: "pull_request", action: "synchronize", path: "number"},
	{event: "pull_request", action: "synchronize", path: "pull_request.number"},
	{event: "pull_request", action: "synchronize", path: "pull_request.state"},
	{event: "pull_request", action: "synchronize", path: "pull_request.draft"},
	{event: "pull_request", action: "synchronize", path: "pull_request.merged", absent: true, handled: prMergedNull},
	{event: "pull_request", action: "synchronize", path: "pull_request.title"},
	{event: "pull_request", action: "synchronize", path: "pull_request.body", absent: true, handled: prBodyNull},
	{event: "pull_request", action: "synchronize", path: "pull_request.user", absent: true, handled: prUserNull},
	{event: "pull_request", action: "synchronize", path: "pull_request.user.id"},
	{event: "pull_request", action: "synchronize", path: "pull_request.user.login"},
	{event: "pull_request", action: "synchronize", path: "pull_request.user.type", absent: true, handled: authorTypeAbsent},
	{event: "pull_request", action: "synchronize", path: "pull_request.head.ref"},
	{event: "pull_request", action: "synchronize", path: "pull_request.head.sha"},
	{event: "pull_request", action: "synchronize", path: "pull_request.head.repo", absent: true, handled: prHeadRepoNull},
	{event: "pull_request", action: "synchronize", path: "pull_request.base.ref"},
	{event: "pull_request", action: "synchronize", path: "pull_request.base.sha"},
	{event: "pull_request", action: "synchronize", path: "pull_request.html_url"},
	{event: "pull_request", action: "synchronize", path: "repository.default_branch"},
	{event: "pull_request", action: "synchronize", path: "repository.visibility", absent: true, handled: eventVisibilityAbsent},
	{event: "pull_request", action: "synchronize", path: "before"},
	{event: "pull_request", action: "synchronize", path: "after"},
	{event: "issues", action: "labeled", path: "issue.number"},
	{event: "issues", action: "labeled", path: "issue.title"},
	{event: "issues", action: "labeled", path: "issue.body", absent: true, handled: issueBodyNull},
	{event: "issues", action: "labeled", path: "issue.state", absent: true, handled: issueStateAbsent},
	{event: "issues", action: "labeled", path: "issue.locked", absent: true, handled: issueLockedAbsent},
	{event: "issues", action: "labeled", path: "issue.user", absent: true, handled: issueUserNull},
	{event: "issues", action: "labeled", path: "issue.user.id"},
	{event: "issues", action: "labeled", path: "issue.user.login"},
	{event: "issues", action: "labeled", path: "issue.user.type", absent: true, handled: authorTypeAbsent},
	{event: "issues", action: "labeled", path: "issue.labels", absent: true, handled: issueLabelsAbsent},
	{event: "issues", action: "labeled", path: "issue.pull_request", absent: true, handled: issuePullRequestAbsent},
	{event: "issues", action: "labeled", path: "sender.id"},
	{event: "issues", action: "labeled", path: "sender.login"},
	{event: "issues", action: "closed", path: "issue.number"},
	{event: "issues", action: "closed", path: "issue.title"},
	{event: "issues", action: "closed", path: "issue.body", absent: true, handled: issueBodyNull},
	{event: "issues", action: "closed", path: "issue.state"},
	{event: "issues", action: "closed", path: "issue.locked", absent: true, handled: issueLockedAbsent},
	{event: "issues", action: "closed", path: "issue.user", absent: true, handled: issueUserNull},
	{event: "issues", action: "closed", path: "issue.user.id"},
	{event: "issues", action: "closed", path: "issue.user.login"},
	{event: "issues", action: "closed", path: "issue.user.type", absent: true, handled: authorTypeAbsent},
	{event: "issues", action: "closed", path: "issue.labels", absent: true, handled: issueLabelsAbsent},
	{event: "issues", action: "closed", path: "issue.pull_request", absent: true, handled: issuePullRequestAbsent},
	{event: "issues", action: "closed", path: "sender.id"},
	{event: "issues", action: "closed", path: "sender.login"},
	{event: "issues", action: "transferred", path: "issue.number"},
	{event: "issues", action: "transferred", path: "issue.title"},
	{event: "issues", action: "transferred", path: "issue.body", absent: true, handled: issueBodyNull},
	{event: "issues", action: "transferred", path: "issue.state", absent: true, handled: issueStateAbsent},
	{event: "issues", action: "transferred", path: "issue.locked", absent: true, handled: issueLockedAbsent},
	{event: "issues", action: "transferred", path: "issue.user", absent: true, handled: issueUserNull},
	{event: "issues", action: "transferred", path: "issue.user.id"},
	{event: "issues", action: "transferred", path: "issue.user.login"},
	{event: "issues", action: "transferred", path: "issue.user.type", absent: true, handled: authorTypeAbsent},
	{event: "issues", action: "transferred", path: "issue.labels", absent: true, handled: issueLabelsAbsent},
	{event: "issues", action: "transferred", path: "issue.pull_request", absent: true, handled: issuePullRequestAbsent},
	{event: "issues", action: "transferred", path: "sender.id"},
	{event: "issues", action: "transferred", path: "sender.login"},
	{event: "issues", action: "deleted", path: "issue.number"},
	{event: "issues", action: "deleted", path: "issue.title"},
	{event: "issues", action: "deleted", path: "issue.body", absent: true, handled: issueBodyNull},
	{event: "issues", action: "deleted", path: "issue.state", absent: true, handled: issueStateAbsent},
	{event: "issues", action: "deleted", path: "issue.locked", absent: true, handled: issueLockedAbsent},
	{event: "issues", action: "deleted", path: "issue.user", absent: true, handled: issueUserNull},
	{event: "issues", action: "deleted", path: "issue.user.id"},
	{event: "issues", action: "deleted", path: "issue.user.login"},
	{event: "issues", action: "deleted", path: "issue.user.type", absent: true, handled: authorTypeAbsent},
	{event: "issues", action: "deleted", path: "issue.labels", absent: true, handled: issueLabelsAbsent},
	{event: "issues", action: "deleted", path: "issue.pull_request", absent: true, handled: issuePullRequestAbsent},
	{event: "issues", action: "deleted", path: "sender.id"},
	{event: "issues", action: "deleted", path: "sender.login"},
	{event: "issues", action: "labeled", path: "label", absent: true, handled: labelAbsent},
	{event: "issues", action: "labeled", path: "label.name"},
	{event: "issues", action: "transferred", path: "changes.new_issue.number"},
	{event: "issues", action: "transferred", path: "changes.new_repository.id"},
	{event: "issue_comment", action: "created", path: "issue.number"},
	{event: "issue_comment", action: "created", path: "issue.user", absent: true, handled: issueUserNull},
	{event: "issue_comment", action: "created", path: "issue.pull_request", absent: true, handled: issuePullRequestAbsent},
	{event: "issue_comment", action: "created", path: "comment.id"},
	{event: "issue_comment", action: "created", path: "comment.body"},
	{event: "issue_comment", action: "created", path: "comment.user", absent: true, handled: commentUserNull},
	{event: "issue_comment", action: "created", path: "comment.user.id"},
	{event: "issue_comment", action: "created", path: "comment.user.login"},
	{event: "issue_comment", action: "created", path: "comment.user.type", absent: true, handled: authorTypeAbsent},
	{event: "issue_comment", action: "created", path: "comment.created_at"},
	{event: "issue_comment", action: "created", path: "comment.updated_at"},
	{event: "issue_comment", action: "created", path: "sender.type"},
	{event: "repository", action: "renamed", path: "repository.id"},
	{event: "repository", action: "renamed", path: "repository.full_name"},
	{event: "repository", action: "renamed", path: "repository.private"},
	{event: "repository", action: "renamed", path: "repository.archived"},
	{event: "repository", action: "renamed", path: "repository.owner.id"},
	{event: "repository", action: "renamed", path: "repository.owner.login"},
	{event: "repository", action: "renamed", path: "changes.repository.name.from"},
	{event: "repository", action: "renamed", path: "repository.visibility", absent: true, handled: func(t *testing.T) {
		ev, err := ParseWebhook("repository", []byte(`{"action":"privatized","installation":{"id":7},"repository":{"id":5,"full_name":"acme/app","private":true,"owner":{"id":1,"login":"acme"}},"sender":{"id":2,"login":"ada"}}`))
		if err != nil || ev.(*RepositoryEvent).Visibility != "private" {
			t.Errorf("privatized without visibility: %+v %v", ev, err)
		}
	}},
	{event: "repository", action: "transferred", path: "changes.owner.from.user", absent: true, handled: func(t *testing.T) {
		ev, err := ParseWebhook("repository", []byte(`{"action":"transferred","installation":{"id":7},"repository":{"id":5,"full_name":"new/app","owner":{"id":1,"login":"new"}},"changes":{"owner":{"from":{"organization":{"id":3,"login":"old"}}}},"sender":{"id":2,"login":"ada"}}`))
		if err != nil || ev.(*RepositoryEvent).FromOwner != "old" {
			t.Errorf("transferred from an organization: %+v %v", ev, err)
		}
		if _, err := ParseWebhook("repository", []byte(`{"action":"transferred","installation":{"id":7},"repository":{"id":5,"full_name":"new/app","owner":{"id":1,"login":"new"}},"changes":{"owner":{"from":{}}},"sender":{"id":2,"login":"ada"}}`)); err == nil {
			t.Error("transferred without a previous owner was accepted")
		}
	}},
}

func pullBodyNull(t *testing.T) {
	if p := NewPullRequest(decode[gh.PullRequest](t, `{"number":1,"body":null}`)); p.Body != "" {
		t.Errorf("body %q", p.Body)
	}
}

func pullDraftAbsent(t *testing.T) {
	if NewPullRequest(decode[gh.PullRequest](t, `{"number":1}`)).Draft {
		t.Error("a pull request without draft reads as a draft")
	}
}

// pullHeadRepoNull: a deleted fork; HeadRepoID 0 means "treat as a fork"
// (FX7, FX13), never as the base repository.
func pullHeadRepoNull(t *testing.T) {
	p := NewPullRequest(decode[gh.PullRequest](t, `{"number":1,"head":{"ref":"x","sha":"abc","repo":null},"base":{"ref":"main","sha":"def","repo":{"id":5}}}`))
	if p.HeadRepoID != 0 || p.HeadRepo != "" || p.HeadRef != "x" || p.HeadSHA != "abc" {
		t.Errorf("deleted fork: %+v", p)
	}
}

// treeEntryFields: trees have no size, only blobs; an entry without one
// reads as 0.
func treeEntryFields(t *testing.T) {
	tr := decode[gh.Tree](t, `{"sha":"t","tree":[{"path":"d","mode":"040000","type":"tree","sha":"s"}],"truncated":false}`)
	if e := tr.Entries[0]; e.GetSize() != 0 {
		t.Errorf("entry %+v", e)
	}
}

func webhookAccountMissing(t *testing.T) {
	// An installation without account (or an enterprise account, which
	// has no login) is refused as invalid, never stored half-read.
	for _, doc := range []string{
		`{"action":"created","installation":{"id":7},"sender":{"id":2,"login":"ada"}}`,
		`{"action":"created","installation":{"id":7,"account":{"id":9,"slug":"big-corp","name":"Big Corp"}},"sender":{"id":2,"login":"ada"}}`,
	} {
		if _, err := ParseWebhook("installation", []byte(doc)); err == nil {
			t.Errorf("accepted %s", doc)
		}
	}
}

// TestReadersAgainstDescriptions checks each field against the pinned
// descriptions and runs its check.
func TestReadersAgainstDescriptions(t *testing.T) {
	d, ok, err := apidesc.Shared()
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		if testenv.Required() {
			t.Fatalf("$%s is required (QUAVON_TEST_REQUIRE_SERVICES=1); run scripts/test", apidesc.EnvDir)
		}
		t.Skipf("$%s not set; run scripts/test", apidesc.EnvDir)
	}
	for _, f := range readFields {
		where := f.op
		var got apidesc.Field
		var err error
		if f.event != "" {
			where = "webhook " + f.event + "." + f.action
			got, err = d.WebhookField(f.event, f.action, f.path)
		} else {
			got, err = d.ResponseField(f.op, f.status, f.path)
		}
		name := where + " " + f.path
		switch {
		case f.missing:
			if err == nil {
				t.Errorf("%s: the description defines it now (%v); read it and drop missing", name, got)
			}
		case err != nil:
			t.Errorf("%s: %v", name, err)
		case got.Absent() != f.absent:
			t.Errorf("%s: the description says %v; the audit says absent=%v: handle the field and update the table", name, got, f.absent)
		}
		if (f.absent || f.missing) && f.handled == nil {
			t.Errorf("%s: GitHub may omit it, but no check shows how Quavon handles that", name)
		}
		if f.handled != nil {
			t.Run(name, f.handled)
		}
	}
}

// repoEvent parses a minimal payload of a repository-level event that
// carries every field Quavon requires, after edit changed it.
func repoEvent(t *testing.T, event, action string, edit func(m map[string]any)) (any, error) {
	t.Helper()
	sha := func(c string) string { return strings.Repeat(c, 40) }
	repo := func() map[string]any {
		return map[string]any{"id": 5, "full_name": "acme/app", "private": false, "visibility": "public",
			"default_branch": "main", "owner": map[string]any{"id": 1, "login": "acme"}}
	}
	user := func() map[string]any { return map[string]any{"id": 3, "login": "alice", "type": "User"} }
	m := map[string]any{"action": action, "installation": map[string]any{"id": 7}, "repository": repo(),
		"sender": map[string]any{"id": 2, "login": "ada", "type": "User"}}
	issue := map[string]any{"number": 1, "title": "Crash", "body": "b", "state": "open", "locked": false,
		"user": user(), "labels": []any{map[string]any{"name": "bug"}}}
	switch event {
	case "pull_request":
		m["number"] = 4
		m["pull_request"] = map[string]any{"number": 4, "state": "open", "draft": true, "merged": false, "title": "T",
			"body": "b", "user": user(), "html_url": "https://github.com/acme/app/pull/4",
			"head": map[string]any{"ref": "feature", "sha": sha("a"), "repo": repo()},
			"base": map[string]any{"ref": "main", "sha": sha("b"), "repo": repo()}}
		if action == "synchronize" {
			m["before"], m["after"] = sha("c"), sha("a")
		}
	case "issues":
		m["issue"] = issue
		if action == "labeled" {
			m["label"] = map[string]any{"name": "quavon:fix"}
		}
		if action == "closed" {
			issue["state"] = "closed"
		}
	case "issue_comment":
		m["issue"] = issue
		m["comment"] = map[string]any{"id": 9, "body": "hi", "user": user(),
			"created_at": "2026-01-02T03:04:05Z", "updated_at": "2026-01-02T03:04:05Z"}
	}
	edit(m)
	body, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return ParseWebhook(event, body)
}

// sub returns the object at keys inside m.
func sub(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		m = m[k].(map[string]any)
	}
	return m
}

func parsedPull(t *testing.T, edit func(m map[string]any)) PullRequest {
	t.Helper()
	ev, err := repoEvent(t, "pull_request", "synchronize", edit)
	if err != nil {
		t.Fatal(err)
	}
	return ev.(*PullRequestEvent).PullRequest
}

func parsedIssue(t *testing.T, action string, edit func(m map[string]any)) *IssuesEvent {
	t.Helper()
	ev, err := repoEvent(t, "issues", action, edit)
	if err != nil {
		t.Fatalf("%s: %v", action, err)
	}
	return ev.(*IssuesEvent)
}

func prDraftAbsent(t *testing.T) {
	if parsedPull(t, func(m map[string]any) { delete(sub(m, "pull_request"), "draft") }).Draft {
		t.Error("a pull request without draft reads as a draft")
	}
}

func prMergedNull(t *testing.T) {
	if parsedPull(t, func(m map[string]any) { sub(m, "pull_request")["merged"] = nil }).Merged {
		t.Error("merged: null reads as merged")
	}
}

func prBodyNull(t *testing.T) {
	if p := parsedPull(t, func(m map[string]any) { sub(m, "pull_request")["body"] = nil }); p.Body != "" {
		t.Errorf("body %q", p.Body)
	}
}

// prHeadRepoNull: a deleted fork counts as a fork (HeadRepoID 0).
func prHeadRepoNull(t *testing.T) {
	if p := parsedPull(t, func(m map[string]any) { sub(m, "pull_request", "head")["repo"] = nil }); p.HeadRepoID != 0 || p.HeadRepo != "" {
		t.Errorf("head repository %d %q", p.HeadRepoID, p.HeadRepo)
	}
}

func eventVisibilityAbsent(t *testing.T) {
	ev, err := repoEvent(t, "pull_request", "opened", func(m map[string]any) {
		r := sub(m, "repository")
		delete(r, "visibility")
		r["private"] = true
	})
	if err != nil || ev.(*PullRequestEvent).Repository.Visibility != "private" {
		t.Errorf("private repository without visibility: %+v %v", ev, err)
	}
}

// prUserNull: the author's account was deleted: no author, so no author
// rights, and the event still applies (a push to the pull request).
func prUserNull(t *testing.T) {
	if p := parsedPull(t, func(m map[string]any) { sub(m, "pull_request")["user"] = nil }); p.Author != "" || p.AuthorID != 0 {
		t.Errorf("author %q %d", p.Author, p.AuthorID)
	}
}

// authorTypeAbsent: an author without a type is accepted for every
// author field; one with an unknown type or without a login is not.
func authorTypeAbsent(t *testing.T) {
	for _, c := range []struct {
		event, action string
		path          []string
	}{
		{"pull_request", "opened", []string{"pull_request", "user"}},
		{"issues", "labeled", []string{"issue", "user"}},
		{"issue_comment", "created", []string{"comment", "user"}},
	} {
		if _, err := repoEvent(t, c.event, c.action, func(m map[string]any) { delete(sub(m, c.path...), "type") }); err != nil {
			t.Errorf("%s %v without type: %v", c.event, c.path, err)
		}
		if _, err := repoEvent(t, c.event, c.action, func(m map[string]any) { sub(m, c.path...)["type"] = "Robot" }); err == nil {
			t.Errorf("%s %v with type Robot accepted", c.event, c.path)
		}
		if _, err := repoEvent(t, c.event, c.action, func(m map[string]any) { delete(sub(m, c.path...), "login") }); err == nil {
			t.Errorf("%s %v without login accepted", c.event, c.path)
		}
	}
}

func issueBodyNull(t *testing.T) {
	if ev := parsedIssue(t, "labeled", func(m map[string]any) { sub(m, "issue")["body"] = nil }); ev.Issue.Body != "" {
		t.Errorf("body %q", ev.Issue.Body)
	}
}

// issueStateAbsent: "" says the payload did not tell; closed must still
// say closed.
func issueStateAbsent(t *testing.T) {
	for _, action := range []string{"labeled", "transferred", "deleted"} {
		ev, err := repoEvent(t, "issues", action, func(m map[string]any) {
			delete(sub(m, "issue"), "state")
			if action == "transferred" {
				m["changes"] = map[string]any{"new_issue": map[string]any{"number": 3},
					"new_repository": map[string]any{"id": 6, "full_name": "acme/other", "owner": map[string]any{"id": 1, "login": "acme"}}}
			}
		})
		if err != nil || ev.(*IssuesEvent).Issue.State != "" {
			t.Errorf("%s without state: %+v %v", action, ev, err)
		}
	}
	if _, err := repoEvent(t, "issues", "closed", func(m map[string]any) { delete(sub(m, "issue"), "state") }); err == nil {
		t.Error("closed without state accepted")
	}
}

func issueLockedAbsent(t *testing.T) {
	if parsedIssue(t, "labeled", func(m map[string]any) { delete(sub(m, "issue"), "locked") }).Issue.Locked {
		t.Error("an issue without locked reads as locked")
	}
}

func issueUserNull(t *testing.T) {
	for _, c := range []struct{ event, action string }{{"issues", "labeled"}, {"issues", "closed"}, {"issue_comment", "created"}} {
		ev, err := repoEvent(t, c.event, c.action, func(m map[string]any) { sub(m, "issue")["user"] = nil })
		if err != nil {
			t.Fatalf("%s.%s with a deleted author: %v", c.event, c.action, err)
		}
		var is Issue
		if e, ok := ev.(*IssuesEvent); ok {
			is = e.Issue
		} else {
			is = ev.(*IssueCommentEvent).Issue
		}
		if is.Author != "" || is.AuthorID != 0 {
			t.Errorf("%s.%s: author %q %d", c.event, c.action, is.Author, is.AuthorID)
		}
	}
}

func issueLabelsAbsent(t *testing.T) {
	if ev := parsedIssue(t, "labeled", func(m map[string]any) { delete(sub(m, "issue"), "labels") }); len(ev.Issue.Labels) != 0 {
		t.Errorf("labels %v", ev.Issue.Labels)
	}
}

func issuePullRequestAbsent(t *testing.T) {
	if parsedIssue(t, "labeled", func(m map[string]any) {}).Issue.IsPullRequest {
		t.Error("an issue without pull_request reads as a pull request")
	}
	if !parsedIssue(t, "labeled", func(m map[string]any) { sub(m, "issue")["pull_request"] = map[string]any{"url": "u"} }).Issue.IsPullRequest {
		t.Error("a pull request's issue reads as an issue")
	}
}

// labelAbsent: a labeled event without its label matches no trigger label.
func labelAbsent(t *testing.T) {
	if ev := parsedIssue(t, "labeled", func(m map[string]any) { delete(m, "label") }); ev.Label != "" {
		t.Errorf("label %q", ev.Label)
	}
}

func commentUserNull(t *testing.T) {
	ev, err := repoEvent(t, "issue_comment", "created", func(m map[string]any) { sub(m, "comment")["user"] = nil })
	if err != nil {
		t.Fatal(err)
	}
	if c := ev.(*IssueCommentEvent).Comment; c.Author != "" || c.AuthorID != 0 || c.AuthorType != "" {
		t.Errorf("author %q %d %q", c.Author, c.AuthorID, c.AuthorType)
	}
}
