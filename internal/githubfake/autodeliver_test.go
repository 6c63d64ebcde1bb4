package githubfake_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/githubfake"
)

type received struct {
	event, action string
	payload       map[string]any
}

// receiver is a webhook endpoint that checks signatures with Quavon's own
// verifier and records what arrives.
type receiver struct {
	mu     sync.Mutex
	secret string
	got    []received
	srv    *httptest.Server
}

func newReceiver(t *testing.T, secret string) *receiver {
	rc := &receiver{secret: secret}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !github.VerifyWebhookSignature([]byte(rc.secret), body, r.Header.Get("X-Hub-Signature-256")) {
			t.Errorf("bad signature on %s", r.Header.Get("X-GitHub-Event"))
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Errorf("payload: %v", err)
		}
		action, _ := m["action"].(string)
		rc.mu.Lock()
		rc.got = append(rc.got, received{r.Header.Get("X-GitHub-Event"), action, m})
		rc.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// take returns what arrived since the last call as "event.action".
func (rc *receiver) take() ([]string, []received) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var names []string
	for _, g := range rc.got {
		names = append(names, g.event+"."+g.action)
	}
	got := rc.got
	rc.got = nil
	return names, got
}

func TestAutoDeliver(t *testing.T) {
	w := newWorld(t)
	s, repo := w.s, w.repo
	rc := newReceiver(t, w.app.WebhookSecret)
	s.SetWebhookURL(w.app, rc.srv.URL)
	// Another app, installed but not auto-delivered, and an installation
	// that does not cover acme/app: neither hears anything.
	quiet := s.RegisterApp("quiet")
	qrc := newReceiver(t, quiet.WebhookSecret)
	s.SetWebhookURL(quiet, qrc.srv.URL)
	s.Install(quiet, "acme", map[string]string{"issues": "read"})
	s.AutoDeliver(w.app)

	expect := func(step string, want ...string) []received {
		t.Helper()
		s.WaitDeliveries()
		names, got := rc.take()
		if fmt.Sprint(names) != fmt.Sprint(want) {
			t.Fatalf("%s: delivered %v, want %v", step, names, want)
		}
		return got
	}

	n := repo.AddIssue(githubfake.IssueOptions{Title: "Bug", Author: "alice", Labels: []string{"quavon:fix"}})
	got := expect("an issue opened with a label", "issues.opened", "issues.labeled")
	if l := got[1].payload["label"].(map[string]any)["name"]; l != "quavon:fix" || got[1].payload["sender"].(map[string]any)["login"] != "alice" {
		t.Errorf("labeled at creation: label %v sender %v", l, got[1].payload["sender"])
	}
	cid := repo.AddComment(n, "bob", "@quavon-fixer fix")
	got = expect("a comment", "issue_comment.created")
	if got[0].payload["comment"].(map[string]any)["id"] != float64(cid) {
		t.Errorf("comment id %v", got[0].payload["comment"])
	}

	repo.Commit("feature", map[string]string{"src/a.go": "package a\n\nfunc A() {}\n"}, "work")
	expect("a push to a branch without a pull request")
	pr := repo.AddPullRequest(githubfake.PullRequestOptions{Title: "Feature", Author: "alice", Head: "feature"})
	expect("a pull request", "pull_request.opened")
	before := repo.Ref("feature")
	after := repo.Commit("feature", map[string]string{"b.go": "package a\n"}, "more")
	got = expect("a push to its head", "pull_request.synchronize")
	if got[0].payload["before"] != before || got[0].payload["after"] != after {
		t.Errorf("synchronize before/after = %v/%v, want %s/%s", got[0].payload["before"], got[0].payload["after"], before, after)
	}

	// Writes through the API deliver too, after the answer.
	tok := s.InstallationToken(w.inst, nil)
	if status, body := w.do(t, httpCall{"POST", fmt.Sprintf("/repos/acme/app/issues/%d/labels", n), tok, map[string]any{"labels": []string{"triaged"}}}); status != 200 {
		t.Fatalf("add label: %d %s", status, body)
	}
	got = expect("a label added through the API", "issues.labeled")
	if got[0].payload["sender"].(map[string]any)["login"] != "quavon-fixer[bot]" {
		t.Errorf("sender %v", got[0].payload["sender"])
	}
	if status, _ := w.do(t, httpCall{"PATCH", fmt.Sprintf("/repos/acme/app/pulls/%d", pr), tok, map[string]any{"title": "Feature, renamed"}}); status != 200 {
		t.Fatal("edit pull request")
	}
	got = expect("a pull request edited through the API", "pull_request.edited")
	if got[0].payload["changes"].(map[string]any)["title"].(map[string]any)["from"] != "Feature" {
		t.Errorf("edited changes %v", got[0].payload["changes"])
	}

	repo.UpdateIssue(n, func(i *githubfake.Issue) { i.State = "closed" })
	expect("an issue closed", "issues.closed")
	if _, err := repo.MergePullRequest(pr, "alice"); err != nil {
		t.Fatal(err)
	}
	got = expect("a merge", "pull_request.closed")
	if got[0].payload["pull_request"].(map[string]any)["merged"] != true {
		t.Error("the merged pull request's closed event says merged false")
	}

	// A suspended installation hears only its suspension.
	s.SetSuspended(w.inst, true)
	expect("suspended", "installation.suspend")
	repo.AddIssue(githubfake.IssueOptions{Title: "while suspended", Author: "alice"})
	expect("an issue while suspended")
	s.SetSuspended(w.inst, false)
	expect("unsuspended", "installation.unsuspend")

	s.SetInstallationRepos(w.inst, []string{"acme/app"})
	expect("a repository removed", "installation_repositories.removed")
	repo.SetArchived(true)
	expect("archived", "repository.archived")

	if names, _ := qrc.take(); len(names) != 0 {
		t.Errorf("an app without AutoDeliver heard %v", names)
	}
	for _, d := range s.Deliveries() {
		if d.StatusCode != http.StatusAccepted || d.Err != nil {
			t.Errorf("delivery %s %s: %d %v", d.Event, d.ID, d.StatusCode, d.Err)
		}
	}
}
