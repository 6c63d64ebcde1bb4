package githubfake

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Delivery is one webhook delivery attempt.
type Delivery struct {
	ID         string // X-GitHub-Delivery
	Event      string // X-GitHub-Event
	App        *App
	Body       []byte
	Header     http.Header // request headers sent
	StatusCode int         // receiver's answer
	Response   []byte      // receiver's body (first 64 KiB)
	Err        error       // automatic deliveries: why posting failed
}

// Sign returns the X-Hub-Signature-256 value of body under secret.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Deliver posts event with payload (any JSON value, or raw []byte) to the
// app's webhook URL, signed with its secret, as GitHub's Hookshot does.
func (s *Server) Deliver(app *App, event string, payload any) (Delivery, error) {
	var body []byte
	switch p := payload.(type) {
	case []byte:
		body = p
	case json.RawMessage:
		body = p
	default:
		var err error
		if body, err = json.Marshal(payload); err != nil {
			return Delivery{}, fmt.Errorf("githubfake.Deliver %s: %w", event, err)
		}
	}
	return s.send(Delivery{ID: newUUID(), Event: event, App: app, Body: body})
}

// Redeliver sends d again with the same delivery id and body, as a
// redelivery from the app settings page does.
func (s *Server) Redeliver(d Delivery) (Delivery, error) {
	return s.send(Delivery{ID: d.ID, Event: d.Event, App: d.App, Body: d.Body})
}

func (s *Server) send(d Delivery) (Delivery, error) {
	s.mu.Lock()
	url, secret, appID := d.App.webhookURL, d.App.WebhookSecret, d.App.ID
	s.mu.Unlock()
	if url == "" {
		return d, fmt.Errorf("githubfake.Deliver %s: app %s has no webhook URL", d.Event, d.App.Slug)
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(d.Body))
	if err != nil {
		return d, fmt.Errorf("githubfake.Deliver %s: %w", d.Event, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "GitHub-Hookshot/fake")
	req.Header.Set("X-GitHub-Event", d.Event)
	req.Header.Set("X-GitHub-Delivery", d.ID)
	req.Header.Set("X-GitHub-Hook-ID", strconv.FormatInt(appID, 10))
	req.Header.Set("X-GitHub-Hook-Installation-Target-Type", "integration")
	req.Header.Set("X-GitHub-Hook-Installation-Target-ID", strconv.FormatInt(appID, 10))
	req.Header.Set("X-Hub-Signature-256", Sign(secret, d.Body))
	d.Header = req.Header.Clone()
	resp, err := s.client.Do(req)
	if err != nil {
		return d, fmt.Errorf("githubfake.Deliver %s: %w", d.Event, err)
	}
	defer resp.Body.Close()
	d.StatusCode = resp.StatusCode
	d.Response, _ = io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return d, nil
}

// --- payload builders: built from the emulator's state so ids match ---

// checkPayload holds a built payload to GitHub's webhook descriptions.
func (s *Server) checkPayload(event string, m map[string]any) map[string]any {
	if s.desc == nil {
		return m
	}
	b, err := json.Marshal(m)
	if err == nil {
		err = s.desc.CheckWebhook(event, b)
	}
	if err != nil {
		s.tb.Errorf("githubfake: the %s %v payload does not match GitHub's webhook descriptions: %v\npayload: %.3000s", event, m["action"], err, b)
	}
	return m
}

func (s *Server) installationRef(in *Installation) map[string]any {
	if in == nil {
		return nil
	}
	return map[string]any{"id": in.ID, "node_id": nodeID("MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9u", in.ID)}
}

func (s *Server) sender(login string) map[string]any {
	return s.userJSON(s.account(login, "User"))
}

func (s *Server) withContext(m map[string]any, in *Installation, r *Repo, sender string) map[string]any {
	if in != nil {
		m["installation"] = s.installationRef(in)
	}
	if r != nil {
		m["repository"] = s.hookRepoJSON(r)
		if r.Owner.Type == "Organization" {
			m["organization"] = s.orgJSON(r.Owner)
		}
	}
	m["sender"] = s.sender(sender)
	return m
}

// hookRepoJSON is the repository of webhook payloads: the REST shape plus
// custom_properties, which webhooks always carry.
func (s *Server) hookRepoJSON(r *Repo) map[string]any {
	m := s.repoJSON(r, nil)
	m["custom_properties"] = map[string]any{}
	return m
}

// hookPullJSON is a webhook's pull_request: the full pull request with
// webhook repositories in head and base.
func (s *Server) hookPullJSON(r *Repo, in *Issue) map[string]any {
	m := s.pullJSON(r, in)
	for _, side := range []string{"head", "base"} {
		b := m[side].(map[string]any)
		if b["repo"] != nil {
			repo := r
			if side == "head" {
				repo = r.prHeadRepo(in.PullRequest)
			}
			b["repo"] = s.hookRepoJSON(repo)
		}
	}
	return m
}

// hookIssueJSON is a webhook's issue: the REST issue without closed_by,
// which webhook payloads do not carry.
func (s *Server) hookIssueJSON(r *Repo, in *Issue) map[string]any {
	m := s.issueJSON(r, in)
	delete(m, "closed_by")
	return m
}

func shortRepo(r *Repo) map[string]any {
	return map[string]any{"id": r.ID, "node_id": nodeID("R", r.ID), "name": r.Name, "full_name": r.FullName(), "private": r.Private}
}

// InstallationEvent builds an "installation" payload (created, deleted,
// suspend, unsuspend, new_permissions_accepted). For suspend the
// installation carries suspended_at and suspended_by (the sender, unless
// SetSuspended recorded the suspension), as GitHub sends them.
func (s *Server) InstallationEvent(action string, in *Installation, sender string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.installationEvent(action, in, sender)
}

func (s *Server) installationEvent(action string, in *Installation, sender string) map[string]any {
	repos := []any{}
	for _, r := range s.installationRepos(in) {
		repos = append(repos, shortRepo(r))
	}
	inst := s.installationJSON(in)
	switch action {
	case "suspend":
		if !in.Suspended {
			inst["suspended_at"] = timeOrNil(s.now())
			inst["suspended_by"] = s.sender(sender)
		}
	case "unsuspend":
		inst["suspended_at"], inst["suspended_by"] = nil, nil
	}
	m := map[string]any{"action": action, "installation": inst}
	if action == "created" || action == "deleted" {
		m["repositories"] = repos
	}
	m["sender"] = s.sender(sender)
	return s.checkPayload("installation", m)
}

// InstallationRepositoriesEvent builds "installation_repositories" (added or
// removed) for repos ("owner/name").
func (s *Server) InstallationRepositoriesEvent(action string, in *Installation, sender string, repos ...string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.installationRepositoriesEvent(action, in, sender, repos...)
}

func (s *Server) installationRepositoriesEvent(action string, in *Installation, sender string, repos ...string) map[string]any {
	list := []any{}
	for _, n := range repos {
		if r := s.repos[strings.ToLower(n)]; r != nil {
			list = append(list, shortRepo(r))
		}
	}
	sel := "all"
	if in.Repos != nil {
		sel = "selected"
	}
	m := map[string]any{"action": action, "installation": s.installationJSON(in), "repository_selection": sel,
		"repositories_added": []any{}, "repositories_removed": []any{}, "requester": nil}
	if action == "removed" {
		m["repositories_removed"] = list
	} else {
		m["repositories_added"] = list
	}
	m["sender"] = s.sender(sender)
	return s.checkPayload("installation_repositories", m)
}

// RepositoryEvent builds "repository" (renamed, transferred, privatized,
// publicized, archived, unarchived, deleted, ...). changes nil takes
// GitHub's changes object from the last Rename or Transfer:
// {"repository": {"name": {"from": "old"}}} for renamed,
// {"owner": {"from": {"user"|"organization": ...}}} for transferred.
func (s *Server) RepositoryEvent(action string, in *Installation, r *Repo, sender string, changes map[string]any) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.repositoryEvent(action, in, r, sender, changes)
}

func (s *Server) repositoryEvent(action string, in *Installation, r *Repo, sender string, changes map[string]any) map[string]any {
	m := map[string]any{"action": action}
	if changes == nil {
		switch {
		case action == "renamed" && r.prevName != "":
			changes = map[string]any{"repository": map[string]any{"name": map[string]any{"from": r.prevName}}}
		case action == "transferred" && r.prevOwner != nil:
			key := "user"
			if r.prevOwner.Type == "Organization" {
				key = "organization"
			}
			from := s.userJSON(r.prevOwner)
			if key == "organization" {
				from = s.orgJSON(r.prevOwner)
			}
			changes = map[string]any{"owner": map[string]any{"from": map[string]any{key: from}}}
		}
	}
	if changes != nil {
		m["changes"] = changes
	}
	m = s.withContext(m, in, r, sender)
	// The payload shows the repository after the action, whether or not
	// the test changed the emulator's state first.
	repo := m["repository"].(map[string]any)
	switch action {
	case "publicized":
		repo["private"], repo["visibility"] = false, "public"
	case "privatized":
		repo["private"], repo["visibility"] = true, "private"
	case "archived":
		repo["archived"] = true
	case "unarchived":
		repo["archived"] = false
	}
	return s.checkPayload("repository", m)
}

// IssuesEvent builds "issues" for issue number (opened, edited, labeled,
// unlabeled, closed, reopened, transferred, deleted, ...); label names the
// label for labeled and unlabeled. edited carries the changes of the last
// edit, transferred the issue and repository it moved to (TransferIssue);
// build deleted after DeleteIssue.
func (s *Server) IssuesEvent(action string, in *Installation, r *Repo, number int, sender, label string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.issuesEvent(action, in, r, number, sender, label)
}

func (s *Server) issuesEvent(action string, in *Installation, r *Repo, number int, sender, label string) map[string]any {
	is := s.mustIssue(r, number)
	m := map[string]any{"action": action, "issue": s.hookIssueJSON(r, is)}
	switch action {
	case "labeled", "unlabeled":
		if label == "" {
			s.tb.Fatalf("githubfake: IssuesEvent %s: no label", action)
		}
		m["label"] = s.labelJSON(r, label)
	case "edited":
		m["changes"] = changesJSON(is.lastEdit)
	case "transferred":
		if is.movedTo == nil {
			s.tb.Fatalf("githubfake: IssuesEvent transferred: #%d was not transferred (TransferIssue)", number)
		}
		to := is.movedTo
		m["changes"] = map[string]any{"new_issue": s.hookIssueJSON(to.repo, to.repo.issues[to.number]), "new_repository": s.hookRepoJSON(to.repo)}
	}
	return s.checkPayload("issues", s.withContext(m, in, r, sender))
}

// changesJSON renders an edit's previous values as GitHub's changes object.
func changesJSON(prev map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range prev {
		out[k] = map[string]any{"from": v}
	}
	return out
}

// IssueCommentEvent builds "issue_comment" (created, edited, deleted) for
// comment id on issue number; edited carries the comment's previous body.
func (s *Server) IssueCommentEvent(action string, in *Installation, r *Repo, number int, commentID int64, sender string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.issueCommentEvent(action, in, r, number, commentID, sender)
}

func (s *Server) issueCommentEvent(action string, in *Installation, r *Repo, number int, commentID int64, sender string) map[string]any {
	is := s.mustIssue(r, number)
	m := map[string]any{"action": action, "issue": s.hookIssueJSON(r, is)}
	for _, cm := range append(slices.Clone(is.Comments), is.deletedComments...) {
		if cm.ID == commentID {
			m["comment"] = s.commentJSON(r, is, cm)
			if action == "edited" {
				m["changes"] = map[string]any{"body": map[string]any{"from": cm.prevBody}}
			}
		}
	}
	if m["comment"] == nil {
		s.tb.Fatalf("githubfake: IssueCommentEvent: no comment %d on #%d", commentID, number)
	}
	return s.checkPayload("issue_comment", s.withContext(m, in, r, sender))
}

// PullRequestEvent builds "pull_request" for pull request number (opened,
// edited, synchronize, reopened, ready_for_review, converted_to_draft,
// closed, ...): synchronize carries before and after (the head before and
// after the last push to it), edited the changes of the last edit.
func (s *Server) PullRequestEvent(action string, in *Installation, r *Repo, number int, sender string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pullRequestEvent(action, in, r, number, sender, "")
}

func (s *Server) pullRequestEvent(action string, in *Installation, r *Repo, number int, sender, label string) map[string]any {
	is := s.mustIssue(r, number)
	if is.PullRequest == nil {
		s.tb.Fatalf("githubfake: PullRequestEvent: #%d is not a pull request", number)
	}
	m := map[string]any{"action": action, "number": number, "pull_request": s.hookPullJSON(r, is)}
	switch action {
	case "synchronize":
		pr := is.PullRequest
		after := r.prHeadSHA(pr)
		before := pr.prevHead
		if before == "" {
			before = after
		}
		m["before"], m["after"] = before, after
	case "edited":
		m["changes"] = changesJSON(is.lastEdit)
	case "labeled", "unlabeled":
		m["label"] = s.labelJSON(r, label)
	}
	return s.checkPayload("pull_request", s.withContext(m, in, r, sender))
}

func (s *Server) mustIssue(r *Repo, n int) *Issue {
	is := r.issues[n]
	if is == nil {
		is = r.deleted[n]
	}
	if is == nil {
		s.tb.Fatalf("githubfake: no #%d in %s", n, r.FullName())
	}
	return is
}
