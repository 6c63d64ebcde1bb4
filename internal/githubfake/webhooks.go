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
		m["repository"] = s.repoJSON(r, nil)
		if r.Owner.Type == "Organization" {
			m["organization"] = map[string]any{"login": r.Owner.Login, "id": r.Owner.ID, "node_id": nodeID("O", r.Owner.ID)}
		}
	}
	m["sender"] = s.sender(sender)
	return m
}

func shortRepo(r *Repo) map[string]any {
	return map[string]any{"id": r.ID, "node_id": nodeID("R", r.ID), "name": r.Name, "full_name": r.FullName(), "private": r.Private}
}

// InstallationEvent builds an "installation" payload (created, deleted,
// suspend, unsuspend, new_permissions_accepted).
func (s *Server) InstallationEvent(action string, in *Installation, sender string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	repos := []any{}
	for _, r := range s.installationRepos(in) {
		repos = append(repos, shortRepo(r))
	}
	m := map[string]any{"action": action, "installation": s.installationJSON(in), "repositories": repos, "requester": nil}
	m["sender"] = s.sender(sender)
	return m
}

// InstallationRepositoriesEvent builds "installation_repositories" (added or
// removed) for repos ("owner/name").
func (s *Server) InstallationRepositoriesEvent(action string, in *Installation, sender string, repos ...string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
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
	return m
}

// RepositoryEvent builds "repository" (renamed, transferred, privatized,
// publicized, deleted, ...) with GitHub's changes object, e.g.
// {"repository": {"name": {"from": "old"}}} for renamed.
func (s *Server) RepositoryEvent(action string, in *Installation, r *Repo, sender string, changes map[string]any) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string]any{"action": action}
	if changes != nil {
		m["changes"] = changes
	}
	return s.withContext(m, in, r, sender)
}

// IssuesEvent builds "issues" for issue number (opened, labeled, edited,
// closed, ...); label names the label for labeled/unlabeled.
func (s *Server) IssuesEvent(action string, in *Installation, r *Repo, number int, sender, label string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string]any{"action": action, "issue": s.issueJSON(r, s.mustIssue(r, number))}
	if label != "" {
		m["label"] = s.labelJSON(r, label)
	}
	return s.withContext(m, in, r, sender)
}

// IssueCommentEvent builds "issue_comment" for comment id on issue number.
func (s *Server) IssueCommentEvent(action string, in *Installation, r *Repo, number int, commentID int64, sender string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.mustIssue(r, number)
	m := map[string]any{"action": action, "issue": s.issueJSON(r, is)}
	for _, cm := range is.Comments {
		if cm.ID == commentID {
			m["comment"] = s.commentJSON(r, is, cm)
		}
	}
	if m["comment"] == nil {
		s.tb.Fatalf("githubfake: IssueCommentEvent: no comment %d on #%d", commentID, number)
	}
	return s.withContext(m, in, r, sender)
}

// PullRequestEvent builds "pull_request" for pull request number.
func (s *Server) PullRequestEvent(action string, in *Installation, r *Repo, number int, sender string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.mustIssue(r, number)
	if is.PullRequest == nil {
		s.tb.Fatalf("githubfake: PullRequestEvent: #%d is not a pull request", number)
	}
	m := map[string]any{"action": action, "number": number, "pull_request": s.pullJSON(r, is)}
	return s.withContext(m, in, r, sender)
}

func (s *Server) mustIssue(r *Repo, n int) *Issue {
	is := r.issues[n]
	if is == nil {
		s.tb.Fatalf("githubfake: no #%d in %s", n, r.FullName())
	}
	return is
}
