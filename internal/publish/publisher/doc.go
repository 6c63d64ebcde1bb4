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
//	fix_not_handled           a fix output: left untouched (issue 22)
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
package publisher
