// Package publisher is quavon-publisher's work: it publishes one pending
// output (pending_outputs) to GitHub through internal/github/writer, the
// only package that writes there, with the review app's and the Fixer
// app's write tokens from the broker. It publishes the review outputs of
// review runs (a review, a check run, a SARIF upload) and, with
// Config.Fix, the fix outputs of fix runs (fix_pr: issue fixes and stacked
// review fixes; fix_commit: review fixes delivered as one commit); without
// Config.Fix those are left untouched (OutcomeNotHandled).
//
// # One output, one write, exactly once
//
// Every output has one publish intent (publish.EnsureIntent), keyed
// kind:{repositoryId}:{runId} and carrying a random marker. Publish runs
// in two transactions:
//
//  1. decide: read the output, its run, repository, installation and
//     policy, and re-check what spec §7 asks at publish time (below). A
//     refusal ends an intent no attempt has claimed (cancelled or failed,
//     with the reason); otherwise the intent is claimed (attempts + 1)
//     and that is committed before anything is written, so a crash after
//     it is known to the next attempt.
//  2. write: lock the intent row (FOR UPDATE, held until the result is
//     recorded, so two publishers never write the same intent at once). If
//     any earlier attempt claimed it, reconcile first: the review by its
//     hidden marker and the review app's bot login, the check run by its
//     external_id (the marker) and the app, the SARIF upload by the
//     analysis category carrying the marker. Found: record it, write
//     nothing. Not found (or a first attempt): write once and record the
//     external id in the same transaction.
//
// A write whose response is lost is never repeated in the same attempt:
// the attempt's error is recorded on the intent (it stays in flight) and
// the job fails; River's retry reconciles. A refusal discovered on a later
// attempt still reconciles first: a write that exists is recorded as
// published, and only a write that does not exist is failed with the
// reason.
//
// # Re-checks at publish time (reason codes)
//
//	fix_not_handled           a fix output without Config.Fix: left untouched
//	not_signed_off            a review fix (a fix_commit output, or a fix_pr of a pull_request run) while
//	                          policy.ReviewFixSignedOff is false: output and run failed, nothing written
//	superseded                a newer run of the pull request exists, or the run was cancelled as superseded
//	run_ended                 the run is not completed (cancelled, failed, closed pull request)
//	policy_off                the stored policy fails to parse, or a part the run published under is no longer on
//	sarif_off                 sast.uploadSarif is off or the scanners are not on
//	repository_archived       the repository is archived
//	repository_not_covered    the review app's installation no longer covers the repository
//	installation_missing      the installation is gone
//	installation_suspended    the installation is suspended
//	code_scanning_not_granted the installation has not approved security_events: write (SC3)
//	github_refused            GitHub refused the write for good (422, 404, 403)
//
// Reviews are always event COMMENT (the writer has no other event); check
// runs conclude success (no new findings, nothing incomplete) or neutral,
// never failure: the acceptance check never fails them.
//
// # Spacing
//
// Content-creating writes of one installation are spaced by a minimum
// interval (GitHub's guidance: no concurrent writes, at least a second
// between them). A job whose repository wrote within the interval is
// snoozed rather than waited for, so one repository's backlog never
// holds a worker while other repositories' jobs wait.
//
// # Fix pull requests (spec §7, FX5–FX9, FX11)
//
// A fix_pr output becomes one bot branch quavon/fix-<issue>-<first 8 hex of
// the intent's marker>, holding one commit whose only parent is the bound
// base and whose tree is the base tree with the patch applied, and one
// draft pull request into the default branch whose body the renderer
// writes from typed fields (exactly one "Fixes #<issue>", the marker). The
// intent is fix_pr:{repositoryId}:{fixRunId}. The decide transaction
// re-checks what the database knows and moves the run from approved to
// publishing when it claims the intent; the write transaction re-checks
// on GitHub, then writes with as few calls as GitHub allows: a tree with
// inline content (a blob per file only above 8 MiB of content), the
// commit, the ref (POST git/refs: never an existing ref, never force),
// the pull request. Every refusal ends the intent, the output and the run
// failed with its reason (the dashboard's fix-run page shows it):
//
//	invalid_payload           the payload does not decode, or its base is not the bound base
//	fix_run_mismatch          the run is not this repository's issue fix on that base
//	fix_run_not_approved      the run is not approved or publishing (rejected, expired, ...)
//	patch_changed             the stored patch no longer hashes to the bound patch
//	policy_invalid            the stored policy fails to parse (= off)
//	fix_off                   the policy's fix mode is off
//	policy_changed            the output binds policy verdicts (policy.VerdictsSHA256) that are no longer the effective ones
//	approval_required         published without approval, but the effective mode is not auto (public repository)
//	repository_archived, repository_not_covered (review app's reader)
//	fixer_not_installed       no Fixer installation covers the repository
//	fixer_suspended           the Fixer installation is suspended
//	fixer_permission_missing  it lacks contents:write or pull_requests:write
//	base_branch_changed       the default branch is no longer the run's base branch
//	issue_closed, issue_transferred, issue_is_pull_request
//	actor_not_permitted       the trigger actor's live permission is not admin or write (CH5)
//	base_moved                ValidatePatch against a fresh listing of the base branch: a base blob differs
//	secret_in_patch           the secret scan (gitleaks and Quavon's patterns) hit an added line
//	patch_rejected            any other ValidatePatch rule (path policy: workflows, lockfiles, ...)
//	secret_in_body            the rendered title or body matched the secret scan
//	rule_blocks               a repository rule other than deletion, non_fast_forward,
//	                          required_linear_history, required_signatures (unknown types block)
//	signature_unverified      required_signatures applies and GitHub reports the commit unverified
//	branch_protected          the bot branch exists and is protected
//	branch_exists             the bot branch exists and is not exactly this intent's commit
//
// Reconcile: on every attempt after the first, a pull request whose head is
// the bot branch, whose author is "<Fixer slug>[bot]" and whose body has
// the marker is the intent's write: recorded, nothing written. An existing
// bot branch is reused only when it holds one commit whose parent is the
// base and whose tree equals the patch tree (a retry of the same intent:
// trees are content-addressed, so the tree is created again to compare).
// Lost responses and crashes after the ref or the pull request therefore
// end in exactly one branch and one pull request.
//
// # Review fixes (spec §7 item 4, §7b, FX13–FX17)
//
// While policy.ReviewFixesSignedOff() is false (as shipped), every review
// fix (a fix_commit output, or a fix_pr of a pull_request run) ends failed
// with not_signed_off and nothing is written. With the gate lifted (only
// tests can: policy.LiftReviewFixGate):
//
// Delivery stacked_pr (a fix_pr output of a pull_request run, delivery
// stacked_pr): the issue-fix path above with the reviewed head as the base
// commit and the pull request's head branch as the base of the draft pull
// request. The bot branch is quavon/fix-<pr>-<8 hex>; the body is
// render.ReviewFixPullRequest (the plain line "Fixes review findings of
// #<pr>", no closing keyword at all).
//
// Delivery commit (a fix_commit output, only with fix.reviewFixes
// commit): one commit on the pull request's head branch through GraphQL
// createCommitOnBranch with expectedHeadOid = the reviewed head, so GitHub
// applies it only as a fast-forward of exactly that head. Never force,
// never a second commit: once it landed, the head is no longer the
// expected one. The message is render.FixCommitMessage (fixed headline, at
// most ten finding titles reduced to plain words, the reference line with
// the marker, no trailers), secret-scanned. The intent is
// fix_commit:{repositoryId}:{fixRunId}.
//
// Both re-read live before writing: the repository (not archived; the
// head branch is not its default branch), the pull request (open, its
// head repository is the repository itself, a missing one counting as a
// fork, its head branch still the run's), the trigger actor's permission,
// the patch against a fresh listing of the reviewed head commit, and the
// rules of the branch written (as FX7); a commit also needs the head
// branch unprotected. Reasons, besides those above:
//
//	review_fixes_off     fix.reviewFixes is off (stacked_pr) or not commit (commit)
//	default_branch       the head branch is the live default branch
//	pull_request_closed  the pull request is closed or merged
//	pull_request_gone    the pull request is not in the repository any more
//	fork                 the head repository is not the repository (or is gone)
//	head_branch_changed  the pull request's head branch is not the run's (or no longer exists)
//	branch_protected     the head branch is protected (commit)
//	head_moved           createCommitOnBranch refused the compare-and-swap (the author pushed);
//	                     the dashboard offers a stacked pull request instead
//	secret_in_message    the rendered commit message matched the secret scan
//
// A refused compare-and-swap is final: the run fails with head_moved and
// the job is not retried.
//
// Reconcile of a commit: on every attempt after the first, the head
// branch's head is read. Still the reviewed head: nothing was written, the
// attempt writes (createCommitOnBranch's compare-and-swap makes a second
// commit impossible). A head whose single parent is the reviewed head and
// whose message has the intent's reference line: this intent's commit,
// recorded without writing. Any other head: refused (head_moved).
//
// The marker-copy case (spec §8 residual risk): the reference line is
// plain text in a commit message. A user with write access who copies it
// into a commit of their own, made directly on the reviewed head after an
// attempt whose outcome is unknown, makes the reconcile record that commit
// as the fix's: the run reads published, though the patch was never
// pushed (TestPublishReviewFixCommitMarkerCopy). The patch is never pushed
// twice and nothing is written on top of the copied commit; the damage is
// a wrong "published" status, and that user could push anything to the
// branch anyway.
//
// Nothing inserts a fix output's publish job when it becomes ready or
// approved: SweepFix (run by the periodic sweep when fix publication is
// on) asks for each one; the job's uniqueness keeps one per output.
package publisher
