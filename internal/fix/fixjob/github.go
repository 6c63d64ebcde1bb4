package fixjob

import (
	"context"
	"errors"
	"fmt"

	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/gitrepo"
)

// GitHub reads issues and fetches base branches with the review app's
// read-only token (github.SetReviewRead) from the broker: the worker holds
// no other token.
type GitHub struct {
	Conn   *github.Conn
	Tokens github.TokenSource
	Cache  *gitrepo.Cache
	// GitURL is the clone URL of a repository (https://HOST/OWNER/NAME.git).
	GitURL func(r Repo) string
}

var _ Source = (*GitHub)(nil)

// Reader is the repository's read-only GitHub reader.
func (g *GitHub) Reader(ctx context.Context, repo Repo) (github.Reader, error) {
	if repo.InstallationID <= 0 {
		return nil, errors.New("the review app is not installed on the repository: the worker cannot read it")
	}
	return github.NewReader(ctx, g.Conn, repo.InstallationID, repo.FullName())
}

// FetchBase fetches branch into the tenant's cached bare repository (the
// hardened cache: no hooks, no filters, no submodules, the token never on
// disk) and returns the repository and the branch's tip.
func (g *GitHub) FetchBase(ctx context.Context, tenant string, repo Repo, branch string) (*gitrepo.Repo, string, func(), error) {
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
	ref := "refs/quavon/fix/base"
	if err := h.Fetch(ctx, g.GitURL(repo), tok.Secret(), []string{"+refs/heads/" + branch + ":" + ref}, gitrepo.FetchOptions{}); err != nil {
		h.Close()
		return nil, "", nil, err
	}
	tip, err := h.ResolveCommit(ctx, ref)
	if err != nil {
		h.Close()
		return nil, "", nil, err
	}
	return h.Repo, tip, func() { h.Close() }, nil
}
