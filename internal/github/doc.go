// Package github is Quavon's client for GitHub: GitHub App authentication,
// the read side used by the worker and the API, webhook signature checks and
// webhook payload parsing. The write side lives in internal/github/writer
// so that only the publisher links it.
//
// # Tokens and the broker
//
// No process but the token broker holds an app's private key. The App JWT
// and the minting of installation tokens (for exactly one repository and
// one permission set, checked against the request and revoked when GitHub
// answers otherwise, cached in memory only) live in internal/github/appauth,
// which only cmd/quavon-token-broker links. Everyone else names what they
// need as a TokenSet (SetReviewRead, SetReviewWrite, SetCodeScanning,
// SetFixer: a closed set, never a permission map) and asks a TokenSource,
// in production the broker's client (BrokerClient); the broker grants each
// caller only the sets its role allows (internal/tokenbroker).
//
// A Conn is one GitHub host (REST and GraphQL endpoints, one rate-limit
// Transport) plus the token source; Conn.Clients binds go-github and
// githubv4 clients to one installation, repository and set, asking for the
// token on every request. After a 401 the next request names the refused
// token as stale (TokenDigest), so the broker mints a new one.
// InstallationToken redacts its secret in every fmt and slog form.
//
// # Consumers
//
// NewReader (worker, API, the publisher's re-checks) uses SetReviewRead;
// writer.NewFixer uses SetFixer and writer.NewReviewer SetReviewWrite (plus
// SetCodeScanning for SARIF). Fixer and Reviewer are separate types; neither
// converts into the other. CanTrigger is the CH5 decision on the
// collaborator "permission" field.
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
// repository events, and the repository-level events the worker acts on
// (pull_request opened, synchronize, reopened, ready_for_review, closed;
// issues labeled, closed, transferred, deleted; issue_comment created), at
// most MaxWebhookPayload bytes, into small typed values for the intake in
// quavon-api. Every field Quavon reads is checked; texts over GitHub's own
// limits (titles 256, bodies and comments 65536 characters, 100 labels of
// 50) are refused. FuzzParseWebhook holds the invariants on any input.
package github
