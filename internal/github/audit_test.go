package github

import (
	"encoding/json"
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
