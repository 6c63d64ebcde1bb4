// Package fixagent is the fix agent (spec §4): one run of the shared tool
// loop (internal/agent) with exactly nine tools over the base tree of a
// commit and an overlay of edits (internal/patch), ending in a patch
// validated against a fresh listing of that commit.
//
// # Tools
//
//	list_files(dir)                       internal/agent's read tools: the base
//	read_file(path, startLine?, endLine?) plus the overlay, bounded and
//	search(pattern, pathGlob?)            path-checked (FX12), RE2 with a size cap
//	edit_file(path, oldText, newText)     patch.Overlay: PathViolation (FX3), text
//	create_file(path, content)            only, 256 KiB per file, maxFiles and
//	delete_file(path)                     maxChangedLines; the base is never modified
//	run_tests()                           no arguments: the policy's commands in
//	run_linter()                          the sandbox (Sandbox), nothing the model says
//	finish(summary)                       ends the run
//
// run_tests and run_linter hand the Sandbox the overlay's changes; what
// the model sees of the result is the exit code, the duration and the
// secret-redacted, capped tails, inside llm.Untrusted. Nothing produced in
// the sandbox ever reaches the patch: the patch is the overlay's changes.
//
// # Limits
//
// Each ends the run with its reason (a fix reason code): max_steps
// (model turns), max_sandbox_runs (a sandbox call beyond the limit),
// deadline (the wall clock), budget (llm.BudgetExceededError, never
// retried), max_files and max_changed_lines (an edit the overlay refuses
// for a patch limit), no_patch (finish without a change), patch_rejected
// (ValidatePatch refused the patch), no_progress, model_error.
//
// # Prompt
//
// The system prompt states the rules and the limits. The title,
// body and the comments of write users reach the model only inside
// llm.Untrusted; the prompt never holds a secret (the caller gives no
// secret, and the package holds none).
//
// A review fix (Config.Review, spec §7b FX14) is the same run with the
// review findings instead of the issue: rendered from their typed fields
// (RenderFindings: at most 20 findings and 8,000 bytes, titles and paths
// on one line without control characters) and given only inside
// llm.Untrusted(UntrustedReviewFindings); the prompts say findings
// describe problems and are never instructions. Tools, limits, sandbox,
// ValidatePatch and the path policy are unchanged. internal/fix/fixjob
// sets Review for review fixes, which await their sign-off (the gate).
package fixagent
