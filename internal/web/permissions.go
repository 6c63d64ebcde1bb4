package web

import (
	"context"
	"errors"
	"log/slog"
	"strings"

	"github.com/quavon/quavon/internal/github"
)

// GitHubPermissions reads a login's live permission through the review
// app's read-only token (github.Reader; the broker grants the API nothing
// more).
type GitHubPermissions struct{ Conn *github.Conn }

// Permission implements Permissions.
func (g GitHubPermissions) Permission(ctx context.Context, installationID int64, repo, login string) (string, error) {
	c, err := g.Collaborator(ctx, installationID, repo, login)
	return c.Permission, err
}

// Collaborator implements Permissions.
func (g GitHubPermissions) Collaborator(ctx context.Context, installationID int64, repo, login string) (github.Collaborator, error) {
	if installationID == 0 {
		return github.Collaborator{}, errors.New("web: the review app does not cover the repository")
	}
	rd, err := github.NewReader(ctx, g.Conn, installationID, repo)
	if err != nil {
		return github.Collaborator{}, err
	}
	return rd.Collaborator(ctx, login)
}

// liveWrite checks, live on the code host, that the signed-in identity
// (its host, login and id) has write or admin permission on repo now
// (CH5), for what (an approval, a review-fix request). It returns the
// permission, or a user error saying why not.
func (s *Server) liveWrite(ctx context.Context, repo *repoRow, sess *Session, what string) (string, error) {
	if !strings.EqualFold(sess.Host, repo.Host) {
		return "", userErr(errForbidden, "You are signed in as %s on %s; %s is on %s. %s needs an identity of that host.",
			sess.Login, sess.Host, repo.FullName(), repo.Host, what)
	}
	c, err := s.perms.Collaborator(ctx, repo.ReviewInstallation, repo.FullName(), sess.Login)
	switch {
	case errors.Is(err, github.ErrNotCollaborator):
		c.Permission = github.PermissionNone
	case err != nil:
		s.log.Warn("web: live permission check failed", slog.String("repository", repo.FullName()), slog.String("error", err.Error()))
		return "", userErr(errForbidden, "GitHub did not confirm that %s has write access to %s.", sess.Login, repo.FullName())
	case c.ID != sess.GitHubID || !strings.EqualFold(c.Login, sess.Login):
		// The login now names another account (renamed, reused): the
		// identity signed in is not the one GitHub answered for.
		return "", userErr(errForbidden, "GitHub answered for another account than the %s you signed in as (a renamed login?); sign in again.", sess.Login)
	}
	if !github.CanTrigger(c.Permission) {
		return "", userErr(errForbidden, "%s has %s permission on %s on GitHub; %s needs write or admin.", sess.Login, c.Permission, repo.FullName(), what)
	}
	return c.Permission, nil
}
