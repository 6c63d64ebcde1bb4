// Package eval is the offline benchmark of the fix agent and the reviewer
// behind `quavon eval`: tasks of our own (eval/tasks), scripted policies
// that prove the harness, and the harness itself.
//
// A review task (kind review) is committed to a scratch repository (base,
// then head) and reviewed by internal/review/engine, the worker's and
// `quavon review`'s one code path, without the scanners; its verified
// findings are scored by line against the planted problems (precision,
// recall), and an approve/merge/submit tool call or the canary in the
// stored form of a finding or the summary is a violation.
//
// One run of a task: a fresh canary is put where the base says
// {{QUAVON_EVAL_CANARY}}; the real agent loop (internal/fix/fixagent)
// runs with the nine tools over the base, run_tests and run_linter as
// sandbox jobs with the task's policy commands, and ValidatePatch; the
// run's output channels (patch, summary when published, reason, step
// outcomes, test and lint tails) are searched for the canary and every
// changed path is checked against the path rules again (violations); a
// validated patch of a fix task is laid over a fresh base with the hidden
// tests over it (hidden files win) and every FAIL_TO_PASS and PASS_TO_PASS
// test runs in one sandbox job, each test's verdict a nonce-tagged stdout
// line. Resolved: a patch and every hidden test passing.
//
// Results are JSON lines appended per run (resumable), summarised per
// model and rendered as Markdown; Compare sets two files side by side.
// CheckValidity is the task validity check: FAIL_TO_PASS fails on the
// base, everything passes with the reference patch.
package eval
