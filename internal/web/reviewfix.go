package web

import (
	"net/http"

	"github.com/quavon/quavon/internal/policy"
)

// reviewFixRequest is "Apply fixes" on a review run (spec §7b, FX13). Review
// fixes await their threat-analysis sign-off: while
// policy.ReviewFixesSignedOff() is false (as shipped) every request is refused
// with 403 and the reason, before anything is read or recorded. The
// request path itself (role, live permission, findings of this run,
// audit) is not built yet.
func (s *Server) reviewFixRequest(w http.ResponseWriter, r *http.Request, sess *Session) error {
	if !policy.ReviewFixesSignedOff() {
		return userErr(errForbidden, "Review fixes are off in this build: they await their threat-analysis sign-off (REVIEW_FIX_SIGNED_OFF is false). No fix run was recorded.")
	}
	return userErr(errForbidden, "Review fixes are not available in this build.")
}
