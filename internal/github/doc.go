// Package github is Quavon's client for GitHub: GitHub App authentication,
// the read side used by the worker and the API, webhook signature checks and
// webhook payload parsing. The write side lives in internal/github/writer
// so that only the publisher links it.
//
// # App authentication
//
// An App signs RS256 JWTs (iat backdated 60 s for clock skew, exp 9 minutes
// ahead, iss = app id) with golang-jwt and exchanges them for installation
// tokens with POST /app/installations/{id}/access_tokens. Every token is
// minted for exactly one repository (repositories: [name]) and exactly one
// named permission set (FixerPermissions, ReviewReadPermissions,
// ReviewWritePermissions, CodeScanningPermissions). The answer is verified:
// if GitHub's permissions differ from the request in any way, or the
// repository is not the one asked for (the request carries the name only,
// so another account's installation could answer with its own repository of
// that name), the token is revoked and refused with ErrTokenMismatch.
//
// Tokens are cached in process memory only, per (installation, repository,
// permission set), until TokenRefreshMargin before expires_at, and dropped
// on a 401. They are never written to disk, so there is no sealed cache and
// QUAVON_ENCRYPTION_KEY plays no part here. InstallationToken redacts its
// secret in every fmt and slog form.
//
// # Consumers
//
// NewReader (worker, API) mints ReviewReadPermissions; writer.NewFixer mints
// FixerPermissions and writer.NewReviewer ReviewWritePermissions (plus
// CodeScanningPermissions for SARIF). A consumer cannot choose a wider set.
// CanTrigger is the CH5 decision on the collaborator "permission" field.
//
// # Transport
//
// Both the REST (go-github) and the GraphQL (githubv4) client run over one
// Transport: it waits out primary and secondary rate limits within a bound,
// retries 502/503/504 for GET/HEAD only with exponential backoff and jitter,
// never retries a write after a server error or a lost response (the caller
// reconciles), and answers repeated GETs from an in-memory ETag cache keyed
// by credentials (GitHub does not count 304s against the rate limit).
// GraphQL queries are POSTs and are therefore not retried on 5xx either.
//
// # Webhooks
//
// VerifyWebhookSignature checks X-Hub-Signature-256 in constant time;
// ParseWebhook turns installation, installation_repositories and
// repository events (at most MaxWebhookPayload bytes) into small typed
// values for the intake in quavon-api.
package github
