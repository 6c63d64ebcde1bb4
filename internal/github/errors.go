package github

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	gh "github.com/google/go-github/v75/github"
)

// Outcomes callers branch on, matched with errors.Is.
var (
	// ErrNotFound: GitHub answered 404 (the object does not exist or the
	// token cannot see it; GitHub does not distinguish the two).
	ErrNotFound = errors.New("github: not found")
	// ErrNotCollaborator: the user has no permission record on the
	// repository (404 from the collaborator permission endpoint); CH5 refuses.
	ErrNotCollaborator = errors.New("github: not a collaborator")
	// ErrForbidden: GitHub answered 401 or 403 without a rate limit: the
	// token lacks the permission or the repository.
	ErrForbidden = errors.New("github: forbidden")
	// ErrConflict: GitHub refused a write as inconsistent with the current
	// state (409, or 422 such as "Reference already exists" or "Update is
	// not a fast forward").
	ErrConflict = errors.New("github: conflict")
	// ErrTooLarge: a response or an upload exceeds a Quavon or GitHub cap.
	ErrTooLarge = errors.New("github: too large")
	// ErrTokenMismatch: GitHub minted an installation token whose
	// permissions or repositories differ from the request; it is discarded.
	ErrTokenMismatch = errors.New("github: minted token does not match the request")
	// ErrRateLimited: a primary or secondary rate limit would need a longer
	// wait than allowed, or persisted through the retries.
	ErrRateLimited = errors.New("github: rate limited")
)

// RateLimitError is returned (wrapped) when the transport gives up on a rate
// limit. errors.Is(err, ErrRateLimited) holds for it.
type RateLimitError struct {
	// Secondary is true for a secondary (abuse) rate limit.
	Secondary bool
	// RetryAt is when GitHub said the request may be retried.
	RetryAt time.Time
	// StatusCode is GitHub's status (403 or 429).
	StatusCode int
}

func (e *RateLimitError) Error() string {
	kind := "primary"
	if e.Secondary {
		kind = "secondary"
	}
	return fmt.Sprintf("github: %s rate limit (status %d), retry at %s", kind, e.StatusCode, e.RetryAt.UTC().Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrRateLimited) true.
func (e *RateLimitError) Is(target error) bool { return target == ErrRateLimited }

// WrapError prefixes err with the operation and, for GitHub error responses,
// adds the matching sentinel (ErrNotFound, ErrForbidden, ErrConflict) so
// callers can branch with errors.Is while the original error stays available
// to errors.As.
func WrapError(op string, err error) error {
	if err == nil {
		return nil
	}
	var er *gh.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		if s := statusSentinel(er.Response.StatusCode); s != nil {
			return fmt.Errorf("%s: %w: %w", op, s, err)
		}
	}
	return fmt.Errorf("%s: %w", op, err)
}

func statusSentinel(status int) error {
	switch status {
	case http.StatusNotFound:
		return ErrNotFound
	case http.StatusUnauthorized, http.StatusForbidden:
		return ErrForbidden
	case http.StatusConflict, http.StatusUnprocessableEntity:
		return ErrConflict
	}
	return nil
}
