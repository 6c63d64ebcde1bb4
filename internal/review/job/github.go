package job

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/quavon/quavon/internal/acceptance/check"
	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/gitrepo"
)

// GitHub fetches and reads pull requests with the review app's read-only
// token (github.SetReviewRead) from the broker.
type GitHub struct {
	Conn   *github.Conn
	Tokens github.TokenSource
	Cache  *gitrepo.Cache
	// GitURL is the clone URL of a repository (https://HOST/OWNER/NAME.git).
	GitURL func(r Repo) string
}

var _ Fetcher = (*GitHub)(nil)
var _ PullRequests = (*GitHub)(nil)

// Fetch fetches the pull request's head (refs/pull/N/head, which also
// serves pull requests from forks: nothing of the fork is trusted or
// differs) and its base branch into the tenant's cached bare repository.
func (g *GitHub) Fetch(ctx context.Context, tenant string, repo Repo, pr int, baseRef string) (*gitrepo.Repo, string, func(), error) {
	if repo.InstallationID <= 0 {
		return nil, "", nil, errors.New("the review app is not installed on the repository")
	}
	tok, err := g.Tokens.Token(ctx, github.TokenRequest{InstallationID: repo.InstallationID, Repo: repo.FullName(), Set: github.SetReviewRead})
	if err != nil {
		return nil, "", nil, fmt.Errorf("a read token: %w", err)
	}
	h, err := g.Cache.Open(ctx, gitrepo.Key{Tenant: tenant, Host: repo.Host, Owner: repo.Owner, Name: repo.Name})
	if err != nil {
		return nil, "", nil, err
	}
	n := strconv.Itoa(pr)
	base := "refs/quavon/pr/" + n + "/base"
	specs := []string{"+refs/pull/" + n + "/head:refs/quavon/pr/" + n + "/head", "+refs/heads/" + baseRef + ":" + base}
	if err := h.Fetch(ctx, g.GitURL(repo), tok.Secret(), specs, gitrepo.FetchOptions{}); err != nil {
		h.Close()
		return nil, "", nil, err
	}
	tip, err := h.ResolveCommit(ctx, base)
	if err != nil {
		h.Close()
		return nil, "", nil, err
	}
	return h.Repo, tip, func() { h.Close() }, nil
}

// Text reads the pull request's title and body live.
func (g *GitHub) Text(ctx context.Context, repo Repo, pr int) (string, string, error) {
	r, err := github.NewReader(ctx, g.Conn, repo.InstallationID, repo.FullName())
	if err != nil {
		return "", "", err
	}
	p, err := r.PullRequest(ctx, pr)
	if err != nil {
		return "", "", err
	}
	return p.Title, p.Body, nil
}

// ErrNoComment: the comment is gone (deleted, or past the first
// github.MaxIssueComments).
var ErrNoComment = errors.New("the comment is not there")

// Comment reads comment id of pull request pr, live.
func (g *GitHub) Comment(ctx context.Context, repo Repo, pr int, id int64) (github.Comment, error) {
	r, err := github.NewReader(ctx, g.Conn, repo.InstallationID, repo.FullName())
	if err != nil {
		return github.Comment{}, err
	}
	cs, err := r.IssueComments(ctx, pr)
	if err != nil {
		return github.Comment{}, err
	}
	for _, c := range cs {
		if c.ID == id {
			return c, nil
		}
	}
	return github.Comment{}, ErrNoComment
}

// Permission is login's permission on the repository, live ("admin",
// "write", "read", "none").
func (g *GitHub) Permission(ctx context.Context, repo Repo, login string) (string, error) {
	r, err := github.NewReader(ctx, g.Conn, repo.InstallationID, repo.FullName())
	if err != nil {
		return "", err
	}
	p, err := r.CollaboratorPermission(ctx, login)
	if errors.Is(err, github.ErrNotCollaborator) {
		return "none", nil
	}
	return p, err
}

// PullRequest reads pull request pr, live.
func (g *GitHub) PullRequest(ctx context.Context, repo Repo, pr int) (github.PullRequest, error) {
	r, err := github.NewReader(ctx, g.Conn, repo.InstallationID, repo.FullName())
	if err != nil {
		return github.PullRequest{}, err
	}
	return r.PullRequest(ctx, pr)
}

// Issues is the acceptance check's reader of repo: the review app's
// read-only token (Deps.Issues).
func (g *GitHub) Issues(ctx context.Context, repo Repo) (check.Reader, error) {
	return github.NewReader(ctx, g.Conn, repo.InstallationID, repo.FullName())
}
