// Package publisher is quavon-publisher's work: it publishes one pending
// output (pending_outputs) to GitHub through internal/github/writer, the
// only package that writes there, with the review app's write tokens from
// the broker. It publishes the review outputs of review runs (a review, a
// check run, a SARIF upload); fix outputs (fix_pr, fix_commit) are left
// untouched until their publication is built (Publish refuses them with
// OutcomeNotHandled).
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
// Nothing inserts a fix_pr output's publish job when it becomes ready or
// approved: SweepFix (run by the periodic sweep when fix publication is
// on) asks for each one; the job's uniqueness keeps one per output.
package publisher
