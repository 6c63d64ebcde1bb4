package github

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// MaxWebhookPayload is GitHub's cap on webhook payloads (25 MB); anything
// larger did not come from GitHub and is refused unparsed.
const MaxWebhookPayload = 25 << 20

// Webhook parse outcomes.
var (
	// ErrUnsupportedEvent: an event or action Quavon does not process; the
	// intake acknowledges it (202) without acting.
	ErrUnsupportedEvent = errors.New("github: unsupported webhook event")
	// ErrPayloadTooLarge: the body exceeds MaxWebhookPayload.
	ErrPayloadTooLarge = errors.New("github: webhook payload too large")
	// ErrInvalidPayload: the body is not a well-formed payload of the event.
	ErrInvalidPayload = errors.New("github: invalid webhook payload")
)

// VerifyWebhookSignature checks header (X-Hub-Signature-256) against the
// HMAC-SHA256 of body under secret. Only the exact form "sha256=<64 hex>"
// is accepted; the comparison is constant time. An empty secret verifies
// nothing.
func VerifyWebhookSignature(secret, body []byte, header string) bool {
	if len(secret) == 0 {
		return false
	}
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok || len(hexSig) != 2*sha256.Size {
		return false
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

// Account is a user or organization as webhooks describe it.
type Account struct {
	ID    int64
	Login string
	Type  string // "User", "Organization", "Bot", "Enterprise"
}

// RepositoryRef is a repository as installation webhooks list it.
type RepositoryRef struct {
	ID       int64
	FullName string
	Private  bool
}

// InstallationEvent is the "installation" event (actions created, deleted,
// suspend, unsuspend, new_permissions_accepted).
type InstallationEvent struct {
	Action              string
	InstallationID      int64
	Account             Account
	Permissions         Permissions
	RepositorySelection string // "all" or "selected"
	// Repositories is present for created (and sometimes deleted).
	Repositories []RepositoryRef
	Sender       Account
}

// InstallationRepositoriesEvent is the "installation_repositories" event
// (actions added, removed).
type InstallationRepositoriesEvent struct {
	Action              string
	InstallationID      int64
	Account             Account
	RepositorySelection string
	Added               []RepositoryRef
	Removed             []RepositoryRef
	Sender              Account
}

// RepositoryEvent is the "repository" event (actions renamed, transferred,
// privatized, publicized, deleted, archived, unarchived).
type RepositoryEvent struct {
	Action         string
	InstallationID int64
	Repository     RepositoryRef
	Owner          Account
	Archived       bool
	Visibility     string
	// FromName is the previous name for renamed.
	FromName string
	// FromOwner is the previous owner's login for transferred.
	FromOwner string
	Sender    Account
}

// WebhookEvents lists the events ParseWebhook parses (X-GitHub-Event
// values), sorted: the closed set of event names metrics may carry.
func WebhookEvents() []string {
	out := make([]string, 0, len(webhookActions))
	for e := range webhookActions {
		out = append(out, e)
	}
	slices.Sort(out)
	return out
}

var webhookActions = map[string][]string{
	"installation":              {"created", "deleted", "suspend", "unsuspend", "new_permissions_accepted"},
	"installation_repositories": {"added", "removed"},
	"repository":                {"renamed", "transferred", "privatized", "publicized", "deleted", "archived", "unarchived"},
	"pull_request":              {"opened", "synchronize", "reopened", "ready_for_review", "closed"},
	"issues":                    {"opened", "edited", "reopened", "labeled", "closed", "transferred", "deleted"},
	"issue_comment":             {"created"},
}

type rawAccount struct {
	ID    int64  `json:"id"`
	Login string `json:"login"`
	Type  string `json:"type"`
}

type rawRepository struct {
	ID            int64      `json:"id"`
	FullName      string     `json:"full_name"`
	Private       bool       `json:"private"`
	Archived      bool       `json:"archived"`
	Visibility    string     `json:"visibility"`
	DefaultBranch string     `json:"default_branch"`
	Owner         rawAccount `json:"owner"`
}

type rawInstallation struct {
	ID                  int64             `json:"id"`
	Account             rawAccount        `json:"account"`
	Permissions         map[string]string `json:"permissions"`
	RepositorySelection string            `json:"repository_selection"`
}

type rawPayload struct {
	Action              string          `json:"action"`
	Installation        rawInstallation `json:"installation"`
	Repositories        []rawRepository `json:"repositories"`
	RepositoriesAdded   []rawRepository `json:"repositories_added"`
	RepositoriesRemoved []rawRepository `json:"repositories_removed"`
	RepositorySelection string          `json:"repository_selection"`
	Repository          *rawRepository  `json:"repository"`
	Sender              rawAccount      `json:"sender"`
	// pull_request, issues and issue_comment.
	Number      int         `json:"number"`
	PullRequest *rawPull    `json:"pull_request"`
	Issue       *rawIssue   `json:"issue"`
	Comment     *rawComment `json:"comment"`
	Label       *rawLabel   `json:"label"`
	Before      string      `json:"before"`
	After       string      `json:"after"`
	Changes     struct {
		NewIssue      *rawIssue      `json:"new_issue"`
		NewRepository *rawRepository `json:"new_repository"`
		Repository    struct {
			Name struct {
				From string `json:"from"`
			} `json:"name"`
		} `json:"repository"`
		Owner struct {
			From struct {
				User         *rawAccount `json:"user"`
				Organization *rawAccount `json:"organization"`
			} `json:"from"`
		} `json:"owner"`
	} `json:"changes"`
}

// ParseWebhook decodes body as event (the X-GitHub-Event header) into
// *InstallationEvent, *InstallationRepositoriesEvent, *RepositoryEvent,
// *PullRequestEvent, *IssuesEvent or *IssueCommentEvent.
// Verify the signature first. Other events and actions return
// ErrUnsupportedEvent; oversize bodies ErrPayloadTooLarge; malformed ones
// ErrInvalidPayload.
func ParseWebhook(event string, body []byte) (any, error) {
	if len(body) > MaxWebhookPayload {
		return nil, fmt.Errorf("github.ParseWebhook %s: %w (%d bytes)", event, ErrPayloadTooLarge, len(body))
	}
	actions, ok := webhookActions[event]
	if !ok {
		return nil, fmt.Errorf("github.ParseWebhook %q: %w", event, ErrUnsupportedEvent)
	}
	var p rawPayload
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("github.ParseWebhook %s: %w: %w", event, ErrInvalidPayload, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("github.ParseWebhook %s: %w: trailing data", event, ErrInvalidPayload)
	}
	if !slices.Contains(actions, p.Action) {
		return nil, fmt.Errorf("github.ParseWebhook %s action %q: %w", event, p.Action, ErrUnsupportedEvent)
	}
	var (
		out any
		err error
	)
	switch event {
	case "installation":
		out, err = parseInstallation(p)
	case "installation_repositories":
		out, err = parseInstallationRepositories(p)
	case "repository":
		out, err = parseRepository(p)
	case "pull_request":
		out, err = parsePullRequestEvent(p)
	case "issues":
		out, err = parseIssuesEvent(p)
	case "issue_comment":
		out, err = parseIssueCommentEvent(p)
	}
	if err != nil {
		return nil, fmt.Errorf("github.ParseWebhook %s %s: %w: %w", event, p.Action, ErrInvalidPayload, err)
	}
	return out, nil
}

func parseInstallation(p rawPayload) (*InstallationEvent, error) {
	acct, err := account(p.Installation.Account, "installation.account")
	if err != nil {
		return nil, err
	}
	if p.Installation.ID <= 0 {
		return nil, errors.New("installation.id missing")
	}
	repos, err := repositoryRefs(p.Repositories, "repositories")
	if err != nil {
		return nil, err
	}
	return &InstallationEvent{
		Action: p.Action, InstallationID: p.Installation.ID, Account: acct,
		Permissions: Permissions(p.Installation.Permissions), RepositorySelection: p.Installation.RepositorySelection,
		Repositories: repos, Sender: Account(p.Sender),
	}, nil
}

func parseInstallationRepositories(p rawPayload) (*InstallationRepositoriesEvent, error) {
	acct, err := account(p.Installation.Account, "installation.account")
	if err != nil {
		return nil, err
	}
	if p.Installation.ID <= 0 {
		return nil, errors.New("installation.id missing")
	}
	added, err := repositoryRefs(p.RepositoriesAdded, "repositories_added")
	if err != nil {
		return nil, err
	}
	removed, err := repositoryRefs(p.RepositoriesRemoved, "repositories_removed")
	if err != nil {
		return nil, err
	}
	if p.Action == "added" && len(added) == 0 || p.Action == "removed" && len(removed) == 0 {
		return nil, fmt.Errorf("no repositories %s", p.Action)
	}
	return &InstallationRepositoriesEvent{
		Action: p.Action, InstallationID: p.Installation.ID, Account: acct,
		RepositorySelection: cmpOr(p.RepositorySelection, p.Installation.RepositorySelection),
		Added:               added, Removed: removed, Sender: Account(p.Sender),
	}, nil
}

func parseRepository(p rawPayload) (*RepositoryEvent, error) {
	if p.Repository == nil {
		return nil, errors.New("repository missing")
	}
	if p.Installation.ID <= 0 {
		return nil, errors.New("installation.id missing")
	}
	refs, err := repositoryRefs([]rawRepository{*p.Repository}, "repository")
	if err != nil {
		return nil, err
	}
	owner, err := account(p.Repository.Owner, "repository.owner")
	if err != nil {
		return nil, err
	}
	ev := &RepositoryEvent{
		Action: p.Action, InstallationID: p.Installation.ID, Repository: refs[0], Owner: owner,
		Archived: p.Repository.Archived, Visibility: visibility(p.Repository.Visibility, p.Repository.Private), Sender: Account(p.Sender),
	}
	switch p.Action {
	case "renamed":
		ev.FromName = p.Changes.Repository.Name.From
		if ev.FromName == "" {
			return nil, errors.New("changes.repository.name.from missing")
		}
	case "transferred":
		from := p.Changes.Owner.From.User
		if from == nil {
			from = p.Changes.Owner.From.Organization
		}
		if from == nil || from.Login == "" {
			return nil, errors.New("changes.owner.from missing")
		}
		ev.FromOwner = from.Login
	}
	return ev, nil
}

func account(a rawAccount, field string) (Account, error) {
	if a.ID <= 0 || a.Login == "" {
		return Account{}, fmt.Errorf("%s: id or login missing", field)
	}
	return Account(a), nil
}

func repositoryRefs(raw []rawRepository, field string) ([]RepositoryRef, error) {
	out := make([]RepositoryRef, 0, len(raw))
	for i, r := range raw {
		if r.ID <= 0 {
			return nil, fmt.Errorf("%s[%d]: id missing", field, i)
		}
		if _, _, err := SplitRepo(r.FullName); err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", field, i, err)
		}
		out = append(out, RepositoryRef{ID: r.ID, FullName: r.FullName, Private: r.Private})
	}
	return out, nil
}

// MinWebhookSecret is the shortest webhook secret quavon-api accepts (and
// quavon doctor asks for).
const MinWebhookSecret = 16
