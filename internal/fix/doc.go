// Package fix holds the fix runs: their store (fix_runs, fix_run_steps), the
// state machine below, the daily caps (spec FX10, AdmitRun) and the capped,
// secret-redacted test output tails stored on a run (DT5, SB10), and the
// eligibility of a trigger (Admit: FX1, FX10, CH5). The agent loop is
// internal/fix/fixagent, the execution of an admitted run
// internal/fix/fixrun and the worker's job around it internal/fix/fixjob:
// they move runs only through this package, which
// links neither the agent nor the model layer (quavon-api reads runs
// through it).
//
// # States
//
// A fix run is made queued by the trigger (a label, an "@<app> fix" comment
// or a review-fix request in the dashboard) and then moves only along these
// edges:
//
//	queued            → running            the worker admitted it (FX1, FX10) and the agent starts
//	                  → ineligible         refused before any model call: actor, caps, mode, already running
//	                  → failed             it never started (its job was abandoned, the subject went away)
//	running           → awaiting_approval  a validated patch waits for a maintainer (mode approval)
//	                  → publishing         a validated patch goes straight to the publisher (mode auto)
//	                  → failed             limits, budget, no patch, interrupted by shutdown, head moved
//	awaiting_approval → approved           a maintainer approved exactly this patch
//	                  → rejected           a maintainer rejected it
//	                  → expired            nobody decided in time, or its issue or pull request went away
//	approved          → publishing         the publisher claimed it
//	                  → failed             the publisher refused before claiming
//	publishing        → published          one draft PR, or one commit, exists
//	                  → failed             a §7/§7b re-check refused, or GitHub did
//
// ineligible, failed, rejected, expired and published are terminal: a
// terminal run is never moved again (Transition returns ErrTerminal, and a
// trigger in the database refuses it whoever asks). Every move is a
// compare-and-set on the current state, so two workers racing on one run
// cannot both move it. Terminal states other than published carry a
// reason (a stable code such as already_running, cap_issue, shutdown) and
// an optional human detail, redacted and capped.
//
// # Review fixes
//
// A review fix (subject pull_request, spec §7b) names its review run and
// the findings to fix. Create refuses ids that are not findings of that
// run of the same pull request, or that are not published (posted) or
// pending publication (new, with the run's review output ready or
// approved), or whose fingerprint is dismissed (FixableFindings). Its
// delivery is fix_runs.delivery: stacked_pr, or commit only with
// fix.reviewFixes: commit; its base (base_sha, base_ref,
// head_repo_external_id) is the reviewed head of the pull request.
//
// At most one run per issue (or pull request) is running at a time: a
// unique partial index on running runs makes Start fail with
// ErrAlreadyRunning instead of a check-then-insert race.
//
// # Patch
//
// A running run records its patch once (RecordPatch): the changes with
// their base blob ids, the unified diff the approval preview shows, and
// patch.PatchSHA256 of the changes, computed here so a caller cannot store
// a hash of something else. awaiting_approval, approved, publishing and
// published need a patch and a base commit.
//
// # Test output
//
// Test and lint results keep only the tail of stdout and stderr, after
// secret.Redact ran over the whole output (a tail cut first could hold half
// a secret no pattern recognises), starting at a line boundary, and capped
// so that all tails of one run together are at most MaxTailBytes.
package fix
