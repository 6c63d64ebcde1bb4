// Package githubfake is an in-process GitHub emulator for tests: an
// httptest server backed by real git repositories (go-git, in memory) that
// serves the REST and GraphQL endpoints Quavon uses and enforces what GitHub
// enforces, so that a client bug fails a test instead of passing it.
//
// # Wiring a client
//
// REST lives at URL+"/" (go-github: BaseURL and UploadURL both
// srv.URL+"/"), GraphQL at URL+"/graphql" (githubv4.NewEnterpriseClient).
//
// # Scripting a situation
//
// Every GitHub situation the spec names is a few lines of setup:
//
//	s := githubfake.New(t)
//	s.AddOrg("acme")
//	repo := s.AddRepo("acme", "app", githubfake.RepoOptions{Private: true,
//		Files: map[string]string{"go.mod": "module x\n"}})
//	app := s.RegisterApp("quavon-fixer")            // app.ID, app.PrivateKeyPEM, app.WebhookSecret
//	inst := s.Install(app, "acme", map[string]string{"contents": "write", "pull_requests": "write", "issues": "write"})
//	s.SetWebhookURL(app, apiServer.URL+"/webhooks/github")
//
//	s.SetPermission("acme", "app", "alice", "triage")      // CH5: not enough to trigger
//	n := repo.AddIssue(githubfake.IssueOptions{Title: "bug", Author: "alice", Labels: []string{"quavon:fix"}})
//	d, err := s.Deliver(app, "issues", s.IssuesEvent("labeled", inst, repo, n, "alice", "quavon:fix"))
//	_, _ = s.Redeliver(d)                                   // same X-GitHub-Delivery and body
//
//	repo.Commit("main", map[string]string{"a.go": "moved"}, "human push") // base moved under us
//	repo.Protect("main")                                    // classic protection
//	s.SetRules("acme", "app", "quavon/**", []githubfake.Rule{{Type: "required_signatures"}})
//	repo.UpdateIssue(n, func(i *githubfake.Issue) { i.State = "closed" })
//	s.SetSuspended(inst, true)
//	s.InjectFault(githubfake.Fault{Method: "POST", Path: "/repos/{o}/{r}/git/refs", Kind: githubfake.FaultLoseResponse})
//
// and assertions read state back: repo.Ref("quavon/fix-1-0123abcd"),
// repo.Files(ref), repo.CommitInfo(sha) (parents, tree, Verified), repo.Issues(),
// repo.CheckRuns(), repo.Reviews(pr), repo.SARIFUploads(), s.Requests()
// (method, path, token kind, status: e.g. "no write happened").
//
// # Authentication
//
// App JWTs (RS256, iss = app ID as number or string) are checked with
// GitHub's rules: exp in the future and at most 10 minutes ahead, iat not
// more than 60 s ahead, exp-iat at most 10 min + 60 s (GitHub's own recipe
// backdates iat by 60 s). POST /app/installations/{id}/access_tokens
// honours repositories, repository_ids and permissions; asking for any
// permission or repository the installation lacks is 422. Tokens live one
// hour (Advance moves the clock); metadata: read is always included.
// DELETE /installation/token revokes the calling token (204, no permission
// needed); later calls with it are 401 "Bad credentials".
//
// Every call with an installation token is checked against the token's
// repositories and permissions: a private repository outside the token is
// 404, a missing permission 403 "Resource not accessible by integration",
// an expired or revoked token 401 "Bad credentials", a suspended
// installation 403. Public repositories are readable by anyone (as on
// GitHub) but writable only with a covering token. A JWT only reaches the
// /app endpoints and GET /repos/{o}/{r}/installation.
//
// Permissions per endpoint: metadata:read for the repository, collaborator
// permission, branches and rules; administration:read for branch protection;
// contents for git data and contents; issues (or pull_requests for pull
// requests) for issues, labels and comments; pull_requests for pulls and
// reviews (write to create, read to list and get); checks for check runs;
// security_events:write for SARIF; contents:write for createCommitOnBranch.
//
// # Git semantics
//
// Objects are real git objects, so SHAs are the ones GitHub would compute.
// POST git/refs refuses existing refs (422 "Reference already exists");
// PATCH refuses non-fast-forwards without force (422 "Update is not a fast
// forward"). Branch writes also honour protection (Protect refuses every
// update and deletion of that branch, like "require a pull request") and
// rules: creation, update, pull_request, deletion, non_fast_forward, required_signatures,
// required_linear_history (422 "Repository rule violations found"). A ref
// created or updated with an app token lacking workflows: write is refused
// (422 "refusing to allow a GitHub App to create or update workflow ...")
// when it adds, changes or removes a file under .github/workflows/.
// Commits an app creates through the REST API without author/committer, and
// every createCommitOnBranch commit, are reported as verified (GitHub signs
// them); human commits (Repo.Commit) are unsigned.
//
// createCommitOnBranch is a compare-and-swap on expectedHeadOid; a moved
// head is GraphQL error type STALE_DATA, "Expected branch to point to
// \"<oid>\" but it did not.  Pull and try again." and nothing changes. A
// branch under classic protection refuses it with type
// BRANCH_PROTECTION_RULE_VIOLATION, "Changes must be made through a pull
// request." (as recorded from GitHub); rulesets (update, pull_request,
// required_signatures, which GitHub's own signature satisfies, ...) and an
// app without workflows: write touching .github/workflows/ refuse it as
// they refuse a ref write.
// closingIssuesReferences returns the links set with LinkIssue that the
// token can see, including other repositories' issues.
//
// # Pull request reviews
//
// POST pulls/{n}/reviews answers 200 with the review. No event leaves it
// PENDING (one pending review per user; only its author sees it);
// REQUEST_CHANGES and COMMENT need a body; the pull request's author cannot
// approve or request changes on it (422 "Can not approve your own pull
// request"); commit_id defaults to the head and may be an older commit of
// the head repository. Line comments (path, line, side, start_line) must
// sit on a line the diff between the base branch and that commit shows
// (changes plus three lines of context), else 422 "Path could not be
// resolved" / "Line could not be resolved"; a legacy position is taken
// unchecked.
//
// # Lists
//
// GET git/matching-refs/{prefix} lists refs (the legacy GET git/refs is not
// in GitHub's description and not served). The list endpoints
// (installations, installation repositories, issues,
// issue comments, pulls, pull files, reviews, check runs, branch rules) take
// per_page (default 30, at most 100) and page, and answer with GitHub's Link
// header (rel prev, next, last, first; none when one page holds everything),
// so go-github's Response.NextPage works. total_count counts every item.
//
// # Failures and limits
//
// InjectFault: FaultLoseResponse performs the request and closes the
// connection (the write is observable by later reads); Fault5xx,
// FaultSecondaryRateLimit (403, Retry-After, GitHub's documentation_url so
// go-github returns AbuseRateLimitError) and FaultRateLimit (403/429,
// x-ratelimit-remaining 0) answer before doing anything. Every response
// carries x-ratelimit-* headers; successful GETs carry an ETag and answer
// If-None-Match with 304. SARIF must be gzip then base64, at most 10 MB
// compressed (413), else 400.
//
// # Pull request state
//
// Pull requests carry GitHub's merge state, computed from git: the base
// repository keeps refs/pull/<n>/head (a fork's objects copied in) and,
// while the pull request is open and merges cleanly, refs/pull/<n>/merge,
// whose SHA is merge_commit_sha. mergeable and mergeable_state ("clean",
// "dirty", "draft", "blocked"; null and "unknown" once closed) follow; the
// merge is decided path by path. MergePullRequest merges as the merge
// button does (merged, merged_by, merged_at, closed_at); closing through
// the API or UpdateIssue stamps closed_at and closed_by (and state_reason
// "completed" for issues). GET one answers the full pull request, the list
// the shorter simple form (no merged, mergeable or counts), as GitHub does.
// A pull request whose fork was deleted has head.repo null.
//
// # Webhooks
//
// Deliver posts a payload (any JSON value; the builders InstallationEvent,
// InstallationRepositoriesEvent, RepositoryEvent, IssuesEvent,
// IssueCommentEvent and PullRequestEvent build GitHub's shapes from the
// emulator's state) with X-GitHub-Event, X-GitHub-Delivery,
// X-Hub-Signature-256 (Sign) and a GitHub-Hookshot User-Agent. Builders
// carry each action's own fields from the state changes before them:
// edited the changes of the last edit (UpdateIssue, PATCH, EditComment),
// synchronize before/after of the last push to the head, labeled and
// unlabeled the label, suspend suspended_at/suspended_by, transferred the
// new issue and repository (TransferIssue), renamed and transferred
// repositories the old name or owner (Rename, Transfer). Deleted issues and
// comments (DeleteIssue, DeleteComment) can still be described; build an
// "installation deleted" payload before calling Uninstall.
//
// # Automatic delivery
//
// AutoDeliver(app) makes the emulator's own state changes deliver the
// webhooks GitHub would send to app (opening an issue or pull request,
// labelling, commenting, pushing to a head, merging, suspending, ...),
// built by the builders above; see autodeliver.go for the list. Helper
// changes deliver before the helper returns, API writes after the answer
// (WaitDeliveries, Deliveries).
//
// # Git over HTTP
//
// URL/<owner>/<repo>.git serves git fetch and clone (smart HTTP, protocol
// v0: go-git's server side has no v2; shallow fetches with --depth,
// deepening and --unshallow; no filter, deepen-since/-not or side-band)
// with the REST API's token rules: contents:read on a repository in the
// token's scope, public repositories open, suspended installations 403,
// expired tokens 401. Tokens come as Basic "x-access-token:<token>" or a
// bearer header. Refs include refs/pull/<n>/head and /merge. Pushes go
// through Repo.Commit or the git data API.
//
// # Fidelity
//
// With $QUAVON_TEST_GITHUB_DESCRIPTIONS set (scripts/test does; it is
// required under QUAVON_TEST_REQUIRE_SERVICES=1) every answer is checked
// against the documented response of its route's operation (routes carry
// GitHub's operationIds), every error against GitHub's error shapes, and
// every built payload against both webhook descriptions (package apidesc).
// A mismatch fails the test that caused it, in any package. Objects are
// closed: a property GitHub does not define fails unless apidesc.Exceptions
// lists it with its reason. An error status an operation does not describe
// (not listed, or listed without a body) passes only where
// apidesc.ErrorStatuses lists it with its reason (the generic 400, 401, 403
// and 404 of every route; a few operation-specific ones), and then only
// with GitHub's error shape.
package githubfake
