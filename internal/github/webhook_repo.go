package github

import (
	"errors"
	"fmt"
	"regexp"
	"time"
	"unicode/utf8"
)

// The repository-level events the worker acts on: pull_request, issues and
// issue_comment. Their text fields come from anyone who can open an issue
// or comment and are parsed as hostile: every field Quavon reads is
// checked, and texts longer than GitHub itself allows are refused (such a
// payload did not come from GitHub).

// GitHub's own limits on what users write, in characters (code points).
const (
	MaxTitleChars     = 256
	MaxBodyChars      = 65536
	MaxLabelChars     = 50
	MaxLabelsPerIssue = 100
	// maxRefBytes bounds branch names (git allows long ones; GitHub's
	// payloads never come near).
	maxRefBytes = 1024
)

// EventRepository is the repository a repository-level event is about.
type EventRepository struct {
	ID            int64
	FullName      string
	Private       bool
	Visibility    string // public, private, internal
	DefaultBranch string
	Archived      bool
}

// PullRequestEvent is the "pull_request" event (actions opened,
// synchronize, reopened, ready_for_review, closed).
type PullRequestEvent struct {
	Action         string
	InstallationID int64
	Repository     EventRepository
	Number         int
	PullRequest    PullRequest
	// Before and After are the head before and after the push
	// (synchronize only).
	Before, After string
	Sender        Account
}

// IssuesEvent is the "issues" event (actions opened, edited, reopened, labeled, closed, transferred,
// deleted).
type IssuesEvent struct {
	Action         string
	InstallationID int64
	Repository     EventRepository
	Issue          Issue
	// Label is the label added (labeled only).
	Label string
	// NewRepository and NewNumber say where a transferred issue went.
	NewRepository RepositoryRef
	NewNumber     int
	Sender        Account
}

// IssueCommentEvent is the "issue_comment" event (action created) on an
// issue or a pull request (Issue.IsPullRequest).
type IssueCommentEvent struct {
	Action         string
	InstallationID int64
	Repository     EventRepository
	Issue          Issue
	Comment        Comment
	Sender         Account
}

type rawRef struct {
	Ref  string         `json:"ref"`
	SHA  string         `json:"sha"`
	Repo *rawRepository `json:"repo"`
}

type rawPull struct {
	Number   int         `json:"number"`
	NodeID   string      `json:"node_id"`
	State    string      `json:"state"`
	Draft    bool        `json:"draft"`
	Merged   bool        `json:"merged"`
	MergedAt *string     `json:"merged_at"`
	Title    string      `json:"title"`
	Body     *string     `json:"body"`
	User     *rawAccount `json:"user"`
	Head     rawRef      `json:"head"`
	Base     rawRef      `json:"base"`
	HTMLURL  string      `json:"html_url"`
}

type rawLabel struct {
	Name string `json:"name"`
}

type rawIssue struct {
	Number      int         `json:"number"`
	Title       string      `json:"title"`
	Body        *string     `json:"body"`
	State       string      `json:"state"`
	Locked      bool        `json:"locked"`
	User        *rawAccount `json:"user"`
	Labels      []rawLabel  `json:"labels"`
	PullRequest *struct{}   `json:"pull_request"`
}

type rawComment struct {
	ID        int64       `json:"id"`
	Body      *string     `json:"body"`
	User      *rawAccount `json:"user"`
	CreatedAt string      `json:"created_at"`
	UpdatedAt string      `json:"updated_at"`
}

var (
	commitRE = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)
	// accountTypes are the sender and user types GitHub's descriptions
	// allow.
	accountTypes = map[string]bool{"User": true, "Bot": true, "Organization": true, "Mannequin": true, "Enterprise": true}
)

// ValidCommit reports whether s is a full commit id (SHA-1 or SHA-256).
func ValidCommit(s string) bool { return commitRE.MatchString(s) }

func eventRepository(p rawPayload) (EventRepository, error) {
	if p.Repository == nil {
		return EventRepository{}, errors.New("repository missing")
	}
	if p.Installation.ID <= 0 {
		return EventRepository{}, errors.New("installation.id missing")
	}
	refs, err := repositoryRefs([]rawRepository{*p.Repository}, "repository")
	if err != nil {
		return EventRepository{}, err
	}
	r := p.Repository
	if len(r.DefaultBranch) > maxRefBytes {
		return EventRepository{}, errors.New("repository.default_branch too long")
	}
	return EventRepository{ID: refs[0].ID, FullName: refs[0].FullName, Private: r.Private,
		Visibility: visibility(r.Visibility, r.Private), DefaultBranch: r.DefaultBranch, Archived: r.Archived}, nil
}

// actor checks a user or sender: a positive id, a login of at most 100
// bytes, and one of GitHub's account types.
func actor(a rawAccount, field string) (Account, error) {
	if a.ID <= 0 || a.Login == "" || len(a.Login) > 100 || !utf8.ValidString(a.Login) {
		return Account{}, fmt.Errorf("%s: id or login missing or invalid", field)
	}
	if !accountTypes[a.Type] {
		return Account{}, fmt.Errorf("%s.type %q", field, a.Type)
	}
	return Account(a), nil
}

// authorOf checks the user who wrote a pull request, issue or comment. The
// webhook descriptions let GitHub send null there (a deleted account, shown
// as "ghost") and leave the type out: a null author is the zero Account,
// which matches no login and no id and so carries no author rights; a
// missing type stays empty. An author that is present must otherwise be
// well formed.
func authorOf(a *rawAccount, field string) (Account, error) {
	if a == nil {
		return Account{}, nil
	}
	if a.Type == "" {
		if a.ID <= 0 || a.Login == "" || len(a.Login) > 100 || !utf8.ValidString(a.Login) {
			return Account{}, fmt.Errorf("%s: id or login missing or invalid", field)
		}
		return Account(*a), nil
	}
	return actor(*a, field)
}

// text checks a user-written text against GitHub's limit.
func text(s *string, max int, field string) (string, error) {
	if s == nil {
		return "", nil
	}
	if !utf8.ValidString(*s) {
		return "", fmt.Errorf("%s: not UTF-8", field)
	}
	if n := utf8.RuneCountInString(*s); n > max {
		return "", fmt.Errorf("%s: %d characters, GitHub allows %d", field, n, max)
	}
	return *s, nil
}

func ref(r rawRef, field string) error {
	switch {
	case r.Ref == "" || len(r.Ref) > maxRefBytes || !utf8.ValidString(r.Ref):
		return fmt.Errorf("%s.ref missing or invalid", field)
	case !ValidCommit(r.SHA):
		return fmt.Errorf("%s.sha %q is not a commit id", field, clipped(r.SHA))
	}
	return nil
}

func clipped(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

func parsePullRequestEvent(p rawPayload) (*PullRequestEvent, error) {
	repo, err := eventRepository(p)
	if err != nil {
		return nil, err
	}
	sender, err := actor(p.Sender, "sender")
	if err != nil {
		return nil, err
	}
	raw := p.PullRequest
	if raw == nil {
		return nil, errors.New("pull_request missing")
	}
	if p.Number <= 0 || raw.Number != p.Number {
		return nil, fmt.Errorf("number %d and pull_request.number %d", p.Number, raw.Number)
	}
	author, err := authorOf(raw.User, "pull_request.user")
	if err != nil {
		return nil, err
	}
	if raw.State != "open" && raw.State != "closed" {
		return nil, fmt.Errorf("pull_request.state %q", raw.State)
	}
	if err := ref(raw.Head, "pull_request.head"); err != nil {
		return nil, err
	}
	if err := ref(raw.Base, "pull_request.base"); err != nil {
		return nil, err
	}
	title, err := text(&raw.Title, MaxTitleChars, "pull_request.title")
	if err != nil {
		return nil, err
	}
	body, err := text(raw.Body, MaxBodyChars, "pull_request.body")
	if err != nil {
		return nil, err
	}
	pr := PullRequest{
		Number: raw.Number, NodeID: raw.NodeID, State: raw.State, Draft: raw.Draft, Merged: raw.Merged || raw.MergedAt != nil,
		Title: title, Body: body, Author: author.Login, AuthorID: author.ID, HeadRef: raw.Head.Ref, HeadSHA: raw.Head.SHA,
		BaseRef: raw.Base.Ref, BaseSHA: raw.Base.SHA, HTMLURL: raw.HTMLURL,
	}
	// A head repository that is gone (a deleted fork) is null: HeadRepoID
	// stays 0, which counts as a fork.
	if h := raw.Head.Repo; h != nil {
		refs, err := repositoryRefs([]rawRepository{*h}, "pull_request.head.repo")
		if err != nil {
			return nil, err
		}
		pr.HeadRepoID, pr.HeadRepo = refs[0].ID, refs[0].FullName
	}
	if b := raw.Base.Repo; b == nil || b.ID != repo.ID {
		return nil, errors.New("pull_request.base.repo is not the event's repository")
	}
	ev := &PullRequestEvent{Action: p.Action, InstallationID: p.Installation.ID, Repository: repo, Number: p.Number,
		PullRequest: pr, Sender: sender}
	switch p.Action {
	case "synchronize":
		if !ValidCommit(p.Before) || !ValidCommit(p.After) {
			return nil, errors.New("synchronize: before and after must be commit ids")
		}
		ev.Before, ev.After = p.Before, p.After
	case "closed":
		if raw.State != "closed" {
			return nil, errors.New("closed: pull_request.state is not closed")
		}
	}
	return ev, nil
}

func issue(raw *rawIssue, field string) (Issue, error) {
	if raw == nil {
		return Issue{}, fmt.Errorf("%s missing", field)
	}
	if raw.Number <= 0 {
		return Issue{}, fmt.Errorf("%s.number missing", field)
	}
	// The issues descriptions leave state out of some actions (labeled,
	// transferred, deleted): "" means the payload did not say; readers
	// that need it read the issue live.
	if raw.State != "" && raw.State != "open" && raw.State != "closed" {
		return Issue{}, fmt.Errorf("%s.state %q", field, raw.State)
	}
	author, err := authorOf(raw.User, field+".user")
	if err != nil {
		return Issue{}, err
	}
	title, err := text(&raw.Title, MaxTitleChars, field+".title")
	if err != nil {
		return Issue{}, err
	}
	body, err := text(raw.Body, MaxBodyChars, field+".body")
	if err != nil {
		return Issue{}, err
	}
	if len(raw.Labels) > MaxLabelsPerIssue {
		return Issue{}, fmt.Errorf("%s: %d labels, GitHub allows %d", field, len(raw.Labels), MaxLabelsPerIssue)
	}
	is := Issue{Number: raw.Number, Title: title, Body: body, State: raw.State, Author: author.Login, AuthorID: author.ID,
		IsPullRequest: raw.PullRequest != nil, Locked: raw.Locked}
	for i, l := range raw.Labels {
		name, err := label(l, fmt.Sprintf("%s.labels[%d]", field, i))
		if err != nil {
			return Issue{}, err
		}
		is.Labels = append(is.Labels, name)
	}
	return is, nil
}

func label(l rawLabel, field string) (string, error) {
	if l.Name == "" || !utf8.ValidString(l.Name) || utf8.RuneCountInString(l.Name) > MaxLabelChars {
		return "", fmt.Errorf("%s.name missing or over %d characters", field, MaxLabelChars)
	}
	return l.Name, nil
}

func parseIssuesEvent(p rawPayload) (*IssuesEvent, error) {
	repo, err := eventRepository(p)
	if err != nil {
		return nil, err
	}
	sender, err := actor(p.Sender, "sender")
	if err != nil {
		return nil, err
	}
	is, err := issue(p.Issue, "issue")
	if err != nil {
		return nil, err
	}
	ev := &IssuesEvent{Action: p.Action, InstallationID: p.Installation.ID, Repository: repo, Issue: is, Sender: sender}
	switch p.Action {
	case "labeled":
		// The description makes label optional: without one, Label stays
		// "" and matches no trigger label.
		if p.Label != nil {
			if ev.Label, err = label(*p.Label, "label"); err != nil {
				return nil, err
			}
		}
	case "closed":
		if is.State != "closed" {
			return nil, errors.New("closed: issue.state is not closed")
		}
	case "transferred":
		to, newIssue := p.Changes.NewRepository, p.Changes.NewIssue
		if to == nil || newIssue == nil || newIssue.Number <= 0 {
			return nil, errors.New("transferred: changes.new_repository and changes.new_issue missing")
		}
		refs, err := repositoryRefs([]rawRepository{*to}, "changes.new_repository")
		if err != nil {
			return nil, err
		}
		ev.NewRepository, ev.NewNumber = refs[0], newIssue.Number
	}
	return ev, nil
}

func parseIssueCommentEvent(p rawPayload) (*IssueCommentEvent, error) {
	repo, err := eventRepository(p)
	if err != nil {
		return nil, err
	}
	sender, err := actor(p.Sender, "sender")
	if err != nil {
		return nil, err
	}
	is, err := issue(p.Issue, "issue")
	if err != nil {
		return nil, err
	}
	c := p.Comment
	if c == nil || c.ID <= 0 {
		return nil, errors.New("comment missing")
	}
	author, err := authorOf(c.User, "comment.user")
	if err != nil {
		return nil, err
	}
	body, err := text(c.Body, MaxBodyChars, "comment.body")
	if err != nil {
		return nil, err
	}
	comment := Comment{ID: c.ID, Body: body, Author: author.Login, AuthorID: author.ID, AuthorType: author.Type}
	if comment.CreatedAt, err = timestamp(c.CreatedAt, "comment.created_at"); err != nil {
		return nil, err
	}
	if comment.UpdatedAt, err = timestamp(c.UpdatedAt, "comment.updated_at"); err != nil {
		return nil, err
	}
	return &IssueCommentEvent{Action: p.Action, InstallationID: p.Installation.ID, Repository: repo, Issue: is,
		Comment: comment, Sender: sender}, nil
}

func timestamp(s, field string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %q is not an RFC 3339 time", field, clipped(s))
	}
	return t, nil
}
