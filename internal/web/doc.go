// Package web is the dashboard quavon-api serves: GitHub sign-in, the
// repositories and their effective policy, review runs and their findings,
// fix runs, the approval of the exact patch, and the audit log. Pages are
// server-rendered html/template with plain forms; there is no JavaScript.
//
// # Sign-in
//
// The review app's OAuth web flow (user-to-server) with state and PKCE
// (S256, golang.org/x/oauth2): /auth/login sets a short-lived login cookie
// holding the state, the PKCE verifier and the local return path, and
// redirects to GitHub; /auth/callback checks the state against the cookie
// (constant time), exchanges the code with the verifier, reads GET /user
// once and drops the user token. The identity (host, login, id) is looked
// up with quavon_route_identity (the one way to find a tenant without one);
// an unknown identity is refused. An identity with roles in several
// tenants chooses one (tenants.go): the confirmed identity waits in
// web_sign_ins (hashed random cookie, ten minutes, one use), the chooser
// posts a plain form, and the chosen tenant is checked again against the
// tenants offered (403 otherwise). Switching tenants later is a new session there and
// the old one revoked. The return path is a local path only
// (no scheme, host, "//", backslash or control character).
//
// # Sessions
//
// web_sessions rows, found by the SHA-256 of the cookie value
// (<tenant hex>.<32 random bytes>); idle and absolute expiry; a new
// session at every sign-in (the browser's previous one is revoked: no
// fixation); sign-out revokes. The cookie is __Host-quavon-session,
// HttpOnly, Secure, SameSite=Lax, Path=/ (InsecureCookies, for plain-http
// development only, drops Secure and the __Host- prefix and logs a
// warning).
//
// # Requests that change state
//
// Every POST passes the standard library's http.CrossOriginProtection
// (Sec-Fetch-Site, else Origin against Host) and carries a per-session
// form token (SHA-256 of the session cookie under its own domain string,
// compared in constant time), for browsers that send neither header.
//
// # Roles
//
// Pages of a repository need repo:review or repo:manage on it; the policy
// editor needs repo:manage; approving, rejecting and finding feedback need
// repo:review, and an approval also re-checks, live on GitHub, that the
// signed-in identity has write or admin permission on the repository:
// the identity's host is the repository's, and GitHub's answer is for the
// same login and account id as the session's (liveWrite).
//
// # Review fixes
//
// "Apply fixes" and "Fix" on a review run (spec §7b, FX13, FX14, FX17)
// are refused with 403 and the reason while policy.ReviewFixesSignedOff()
// is false, as shipped. With the gate lifted they need repo:manage,
// fix.reviewFixes not off in the effective policy (the page and the 403
// say why it is off), a same-repository pull request (a missing head
// repository id counts as a fork), findings of that run that are
// published or pending publication and not dismissed (fix.FixableFindings;
// "Apply fixes" takes the 20 most severe), and liveWrite. The queued run
// (subject pull_request, trigger dashboard, the policy's delivery, or
// stacked_pr when asked for), its fix_run job (fix.RunJob) and the audit
// entry repository.review_fix.request are one transaction; the worker
// checks the head, the fork and the permission again before the agent.
//
// Instance admins (Config.Admins, from QUAVON_WEB_ADMINS: host and numeric
// id; never from a table a tenant writes or from repository content) see
// /admin/grants and grant or revoke roles in every tenant through
// repos.ChangeGrant, audited in that tenant with their identity; anyone
// else gets 403 there and no link (admin.go).
//
// # Approval
//
// The fix run page shows the stored diff (syntax highlighted with chroma;
// unified, side by side or plain text by a link's ?view=),
// PatchSHA256, the base commit, the executed paths (patch.ExecutedPaths)
// with their reasons, the CI-secrets banner, the delivery and the expiry.
// The approve and reject forms carry the output's payload hash and every
// bound hash (patch, base, head, policy) as shown; publish.Decide refuses
// when any differs from what is stored (409), and the page refuses when
// the repository's effective policy no longer hashes to the bound policy
// hash (409). The decision, the fix run's move and the audit entry are one
// transaction.
//
// # Headers
//
// Content-Security-Policy without inline script or style ("default-src
// 'none'; style-src 'self'; img-src 'self'; form-action 'self';
// frame-ancestors 'none'; base-uri 'none'"), nosniff, no referrer, no
// caching of pages. Stylesheets are embedded (embed); nothing is loaded
// from a third party.
package web
