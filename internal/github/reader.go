package github

import (
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"

	gh "github.com/google/go-github/v75/github"
	"github.com/shurcooL/githubv4"
)

// Reader caps.
const (
	// MaxFileBytes bounds FileContent.
	MaxFileBytes = 10 << 20
	// MaxIssueComments bounds IssueComments (oldest first).
	MaxIssueComments = 500
	// MaxClosingIssues bounds the closingIssuesReferences page.
	MaxClosingIssues = 50
)

// Reader is what the worker (and the API's permission check) may do on one
// repository: read it with the review app's read-only token.
type Reader interface {
	// Repository returns the repository, live.
	Repository(ctx context.Context) (Repository, error)
	// Issue returns issue number (which may be a pull request's issue).
	Issue(ctx context.Context, number int) (Issue, error)
	// IssueComments returns up to MaxIssueComments comments, oldest first.
	IssueComments(ctx context.Context, number int) ([]Comment, error)
	// PullRequest returns pull request number, live.
	PullRequest(ctx context.Context, number int) (PullRequest, error)
	// FileContent returns the file at path on ref (branch, tag or commit
	// SHA); a directory, a symlink GitHub would follow, or a file over
	// MaxFileBytes is refused.
	FileContent(ctx context.Context, path, ref string) ([]byte, error)
	// Tree returns the recursive tree of ref (commit or tree SHA, branch).
	Tree(ctx context.Context, ref string) (Tree, error)
	// ClosingIssueReferences returns the numbers of the issues pull request
	// prNumber will close that belong to this same repository; references
	// to other repositories are dropped (AC2).
	ClosingIssueReferences(ctx context.Context, prNumber int) ([]int, error)
	// CollaboratorPermission returns the "permission" field of
	// GET /repos/{owner}/{repo}/collaborators/{login}/permission ("admin",
	// "write", "read" or "none"). A 404 is ErrNotCollaborator. Decide with
	// CanTrigger, never on role_name.
	CollaboratorPermission(ctx context.Context, login string) (string, error)
	// Collaborator is CollaboratorPermission with the account GitHub
	// answered for (its login and numeric id), so a caller can check that
	// a login still names the identity it knows.
	Collaborator(ctx context.Context, login string) (Collaborator, error)
}

// Collaborator is an account's permission on a repository.
type Collaborator struct {
	// Permission is the "permission" field ("admin", "write", "read",
	// "none"); decide with CanTrigger.
	Permission string
	Login      string
	ID         int64
}

type reader struct {
	c *Clients
}

var _ Reader = (*reader)(nil)

// NewReader returns a Reader for repo ("owner/name") through the review
// app's installationID. It asks for SetReviewRead itself; the caller cannot
// ask for more.
func NewReader(ctx context.Context, conn *Conn, installationID int64, repo string) (Reader, error) {
	c, err := conn.Clients(ctx, installationID, repo, SetReviewRead)
	if err != nil {
		return nil, fmt.Errorf("github.NewReader: %w", err)
	}
	return &reader{c: c}, nil
}

func (r *reader) Repository(ctx context.Context) (Repository, error) {
	repo, _, err := r.c.REST.Repositories.Get(ctx, r.c.Owner, r.c.Name)
	if err != nil {
		return Repository{}, WrapError("github.Repository", err)
	}
	return newRepository(repo), nil
}

func (r *reader) Issue(ctx context.Context, number int) (Issue, error) {
	if number <= 0 {
		return Issue{}, fmt.Errorf("github.Issue: invalid number %d", number)
	}
	i, _, err := r.c.REST.Issues.Get(ctx, r.c.Owner, r.c.Name, number)
	if err != nil {
		return Issue{}, WrapError(fmt.Sprintf("github.Issue %d", number), err)
	}
	return newIssue(i), nil
}

func (r *reader) IssueComments(ctx context.Context, number int) ([]Comment, error) {
	if number <= 0 {
		return nil, fmt.Errorf("github.IssueComments: invalid number %d", number)
	}
	opts := &gh.IssueListCommentsOptions{
		Sort: gh.Ptr("created"), Direction: gh.Ptr("asc"),
		ListOptions: gh.ListOptions{PerPage: 100},
	}
	var out []Comment
	for {
		page, resp, err := r.c.REST.Issues.ListComments(ctx, r.c.Owner, r.c.Name, number, opts)
		if err != nil {
			return nil, WrapError(fmt.Sprintf("github.IssueComments %d", number), err)
		}
		for _, c := range page {
			if len(out) == MaxIssueComments {
				return out, nil
			}
			out = append(out, newComment(c))
		}
		if resp.NextPage == 0 || len(page) == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

func (r *reader) PullRequest(ctx context.Context, number int) (PullRequest, error) {
	if number <= 0 {
		return PullRequest{}, fmt.Errorf("github.PullRequest: invalid number %d", number)
	}
	p, _, err := r.c.REST.PullRequests.Get(ctx, r.c.Owner, r.c.Name, number)
	if err != nil {
		return PullRequest{}, WrapError(fmt.Sprintf("github.PullRequest %d", number), err)
	}
	return NewPullRequest(p), nil
}

func (r *reader) FileContent(ctx context.Context, p, ref string) ([]byte, error) {
	op := fmt.Sprintf("github.FileContent %s@%s", p, ref)
	if err := validRepoPath(p); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if err := validRef(ref); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	file, dir, _, err := r.c.REST.Repositories.GetContents(ctx, r.c.Owner, r.c.Name, p, &gh.RepositoryContentGetOptions{Ref: ref})
	if err != nil {
		return nil, WrapError(op, err)
	}
	switch {
	case file == nil || dir != nil:
		return nil, fmt.Errorf("%s: not a file", op)
	case file.GetType() != "file":
		return nil, fmt.Errorf("%s: not a regular file (%s)", op, file.GetType())
	case file.GetPath() != p:
		// GitHub answers for a symlink with its target's content and path.
		return nil, fmt.Errorf("%s: resolved to %q (symlink)", op, file.GetPath())
	case file.GetSize() > MaxFileBytes:
		return nil, fmt.Errorf("%s: %w: %d bytes", op, ErrTooLarge, file.GetSize())
	}
	if file.GetEncoding() == "none" || (file.Content == nil && file.GetSize() > 0) {
		// Files over 1 MB come without content; the blob API serves them.
		b, _, err := r.c.REST.Git.GetBlobRaw(ctx, r.c.Owner, r.c.Name, file.GetSHA())
		if err != nil {
			return nil, WrapError(op, err)
		}
		if len(b) > MaxFileBytes {
			return nil, fmt.Errorf("%s: %w", op, ErrTooLarge)
		}
		return b, nil
	}
	s, err := file.GetContent()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if len(s) > MaxFileBytes {
		return nil, fmt.Errorf("%s: %w", op, ErrTooLarge)
	}
	return []byte(s), nil
}

func (r *reader) Tree(ctx context.Context, ref string) (Tree, error) {
	op := fmt.Sprintf("github.Tree %s", ref)
	if err := validRef(ref); err != nil {
		return Tree{}, fmt.Errorf("%s: %w", op, err)
	}
	t, _, err := r.c.REST.Git.GetTree(ctx, r.c.Owner, r.c.Name, ref, true)
	if err != nil {
		return Tree{}, WrapError(op, err)
	}
	out := Tree{SHA: t.GetSHA(), Truncated: t.GetTruncated(), Entries: make([]TreeEntry, 0, len(t.Entries))}
	for _, e := range t.Entries {
		out.Entries = append(out.Entries, TreeEntry{Path: e.GetPath(), Mode: e.GetMode(), Type: e.GetType(), SHA: e.GetSHA(), Size: e.GetSize()})
	}
	return out, nil
}

func (r *reader) ClosingIssueReferences(ctx context.Context, prNumber int) ([]int, error) {
	op := fmt.Sprintf("github.ClosingIssueReferences %d", prNumber)
	if prNumber <= 0 {
		return nil, fmt.Errorf("%s: invalid number", op)
	}
	var q struct {
		Repository struct {
			DatabaseID  int64 `graphql:"databaseId"`
			PullRequest struct {
				ClosingIssuesReferences struct {
					Nodes []struct {
						Number     int
						Repository struct {
							DatabaseID int64 `graphql:"databaseId"`
						}
					}
				} `graphql:"closingIssuesReferences(first: $first)"`
			} `graphql:"pullRequest(number: $number)"`
		} `graphql:"repository(owner: $owner, name: $name)"`
	}
	vars := map[string]any{
		"owner":  githubv4.String(r.c.Owner),
		"name":   githubv4.String(r.c.Name),
		"number": githubv4.Int(prNumber),
		"first":  githubv4.Int(MaxClosingIssues),
	}
	if err := r.c.GraphQL.Query(ctx, &q, vars); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	repoID := q.Repository.DatabaseID
	if repoID == 0 {
		return nil, fmt.Errorf("%s: %w: repository id missing", op, ErrNotFound)
	}
	var out []int
	for _, n := range q.Repository.PullRequest.ClosingIssuesReferences.Nodes {
		if n.Repository.DatabaseID == repoID && n.Number > 0 {
			out = append(out, n.Number)
		}
	}
	return out, nil
}

var loginPattern = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$`)

func (r *reader) CollaboratorPermission(ctx context.Context, login string) (string, error) {
	c, err := r.Collaborator(ctx, login)
	return c.Permission, err
}

func (r *reader) Collaborator(ctx context.Context, login string) (Collaborator, error) {
	op := fmt.Sprintf("github.CollaboratorPermission %s", login)
	if !loginPattern.MatchString(login) {
		// Includes "name[bot]": app bots never trigger (FX1).
		return Collaborator{}, fmt.Errorf("%s: %w: invalid login", op, ErrNotCollaborator)
	}
	p, _, err := r.c.REST.Repositories.GetPermissionLevel(ctx, r.c.Owner, r.c.Name, login)
	if err != nil {
		err = WrapError(op, err)
		if errors.Is(err, ErrNotFound) {
			return Collaborator{}, fmt.Errorf("%w: %w", ErrNotCollaborator, err)
		}
		return Collaborator{}, err
	}
	return Collaborator{Permission: p.GetPermission(), Login: p.GetUser().GetLogin(), ID: p.GetUser().GetID()}, nil
}

// validRepoPath refuses absolute, empty, unclean or dot-dot paths.
func validRepoPath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "." || p == ".." ||
		strings.HasPrefix(p, "../") || strings.ContainsAny(p, "\x00?#\\") {
		return fmt.Errorf("invalid path %q", p)
	}
	return nil
}

var refPattern = regexp.MustCompile(`^[A-Za-z0-9._/-]{1,255}$`)

// validRef accepts branch names, tags and SHAs without URL metacharacters.
func validRef(ref string) error {
	if !refPattern.MatchString(ref) || strings.Contains(ref, "..") || strings.HasPrefix(ref, "/") || strings.HasSuffix(ref, "/") {
		return fmt.Errorf("invalid ref %q", ref)
	}
	return nil
}
