package github

import (
	"time"

	gh "github.com/google/go-github/v75/github"
)

// Repository is the part of a repository Quavon decides on.
type Repository struct {
	ID            int64
	NodeID        string
	Owner         string
	Name          string
	FullName      string
	DefaultBranch string
	Private       bool
	// Visibility is "public", "private" or "internal".
	Visibility string
	Archived   bool
	Fork       bool
}

// Issue is an issue or, when IsPullRequest, a pull request's issue view.
type Issue struct {
	Number        int
	Title         string
	Body          string
	State         string // "open" or "closed"
	Author        string
	AuthorID      int64
	IsPullRequest bool
	Locked        bool
	Labels        []string
	// RepositoryURL is the API URL of the issue's repository: a read that
	// GitHub redirected (a transferred issue) names another repository.
	RepositoryURL string
}

// Comment is an issue or pull request conversation comment.
type Comment struct {
	ID         int64
	Body       string
	Author     string
	AuthorID   int64
	AuthorType string // "User", "Bot" or "Organization"
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// PullRequest is the part of a pull request the worker and publisher check.
type PullRequest struct {
	Number   int
	NodeID   string
	State    string // "open" or "closed"
	Draft    bool
	Merged   bool
	Title    string
	Body     string
	Author   string
	AuthorID int64
	HeadRef  string
	HeadSHA  string
	// HeadRepoID is the head repository's id; 0 when GitHub reports none
	// (deleted fork), which callers must treat as a fork (FX7, FX13).
	HeadRepoID int64
	HeadRepo   string // full name, "" when missing
	BaseRef    string
	BaseSHA    string
	HTMLURL    string
}

// TreeEntry is one entry of a git tree listing.
type TreeEntry struct {
	Path string
	Mode string // "100644", "100755", "040000", "160000", "120000"
	Type string // "blob", "tree", "commit"
	SHA  string
	Size int
}

// Tree is a recursive tree listing. Truncated is GitHub's flag for listings
// over its limits; callers must not treat a truncated tree as complete.
type Tree struct {
	SHA       string
	Entries   []TreeEntry
	Truncated bool
}

// NewPullRequest converts go-github's pull request, from GET one (the full
// form) or a list (the simple form). The simple form has no "merged": a
// pull request is merged when either says so, since merged_at is set
// exactly when it was merged.
func NewPullRequest(p *gh.PullRequest) PullRequest {
	pr := PullRequest{
		Number: p.GetNumber(), NodeID: p.GetNodeID(), State: p.GetState(), Draft: p.GetDraft(),
		Merged: p.GetMerged() || p.MergedAt != nil, Title: p.GetTitle(), Body: p.GetBody(),
		Author: p.GetUser().GetLogin(), AuthorID: p.GetUser().GetID(),
		HeadRef: p.GetHead().GetRef(), HeadSHA: p.GetHead().GetSHA(),
		BaseRef: p.GetBase().GetRef(), BaseSHA: p.GetBase().GetSHA(), HTMLURL: p.GetHTMLURL(),
	}
	if r := p.GetHead().GetRepo(); r != nil {
		pr.HeadRepoID = r.GetID()
		pr.HeadRepo = r.GetFullName()
	}
	return pr
}

func newRepository(r *gh.Repository) Repository {
	return Repository{
		ID: r.GetID(), NodeID: r.GetNodeID(), Owner: r.GetOwner().GetLogin(), Name: r.GetName(),
		FullName: r.GetFullName(), DefaultBranch: r.GetDefaultBranch(), Private: r.GetPrivate(),
		Visibility: visibility(r.GetVisibility(), r.GetPrivate()), Archived: r.GetArchived(), Fork: r.GetFork(),
	}
}

// visibility is the repository's visibility; GitHub's descriptions make
// the field optional (older GitHub Enterprise Server versions omit it), so
// without it private decides: a private repository is never reported as
// public.
func visibility(v string, private bool) string {
	switch {
	case v != "":
		return v
	case private:
		return "private"
	}
	return "public"
}

func newIssue(i *gh.Issue) Issue {
	is := Issue{
		Number: i.GetNumber(), Title: i.GetTitle(), Body: i.GetBody(), State: i.GetState(),
		Author: i.GetUser().GetLogin(), AuthorID: i.GetUser().GetID(),
		IsPullRequest: i.IsPullRequest(), Locked: i.GetLocked(), RepositoryURL: i.GetRepositoryURL(),
	}
	for _, l := range i.Labels {
		is.Labels = append(is.Labels, l.GetName())
	}
	return is
}

func newComment(c *gh.IssueComment) Comment {
	return Comment{
		ID: c.GetID(), Body: c.GetBody(), Author: c.GetUser().GetLogin(), AuthorID: c.GetUser().GetID(),
		AuthorType: c.GetUser().GetType(), CreatedAt: c.GetCreatedAt().Time, UpdatedAt: c.GetUpdatedAt().Time,
	}
}
