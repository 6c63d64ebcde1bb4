package web

import (
	"context"
	"errors"

	"github.com/quavon/quavon/internal/github"
)

// GitHubPermissions reads a login's live permission through the review
// app's read-only token (github.Reader; the broker grants the API nothing
// more).
type GitHubPermissions struct{ Conn *github.Conn }

// Permission implements Permissions.
func (g GitHubPermissions) Permission(ctx context.Context, installationID int64, repo, login string) (string, error) {
	if installationID == 0 {
		return "", errors.New("web: the review app does not cover the repository")
	}
	rd, err := github.NewReader(ctx, g.Conn, installationID, repo)
	if err != nil {
		return "", err
	}
	return rd.CollaboratorPermission(ctx, login)
}
