// Package check is the acceptance-criteria (AC) check of a review run
// (spec AC1–AC3): the issues table it reads issue text from, the ac_checks
// row of each pull-request head, and the one judge call. The decisions
// themselves (links, admission, criteria, answer decoding, evidence) are
// internal/acceptance's pure functions; this package adds storage, GitHub
// reads and the model.
//
// # The issues table
//
// Text (title, body) enters only from a read through the review app's
// read-only token (Reader.Issue), stored with the repository's visibility
// at that read (StoreRead). Webhooks of either app never carry text in:
// Observe marks a row stale on opened, edited, closed and reopened (the
// next check reads it again), and clears it for good on transferred and
// deleted. A read that GitHub answers with 404, or with an issue of
// another repository (a transfer it redirected), leaves a row with no text
// that is never read again.
//
// # A check
//
// Run, for one head of one pull request:
//
//	stored check of the head?  → it (at most one per head, AC3)
//	links (Resolve)            → none: skipped, no_link
//	rows (read when missing or stale) → Admit: none usable: skipped,
//	                             no_usable_issue or transferred
//	first usable issue with criteria (Extract) → none: skipped, no_criteria
//	no judge model             → completed, no_model, every criterion unclear
//	one judge call (criteria and diff inside llm.Untrusted, answer as
//	AnswerSchema JSON) → DecodeAnswer → Verify against the changed lines
//	                           → completed (invalid_answer: all unclear)
//	call failed (budget, provider) → failed, all unclear
//
// No model is called before a usable issue with at least one criterion is
// found. Nothing here fails the review: the worst verdict is unclear, and
// the caller keeps the review when Run returns an error.
package check
