// Package policy is the repository policy: its schema, strict parsing with
// field-level errors, canonical serialisation, the diff for the audit log
// and the effective policy the features obey.
//
// # Document
//
// A policy is a JSON object of at most 64 KiB. Every field is optional and
// takes its default when omitted; keys are case-sensitive; unknown keys,
// duplicate keys, null and non-integer numbers are errors. A complete
// document, with every default except where noted:
//
//	{
//	  "version": 1,
//	  "features": {
//	    "review": {
//	      "mode": "on",
//	      "autoReview": true,
//	      "reviewDrafts": false,
//	      "skipAuthors": [],
//	      "pathFilters": [],
//	      "instructions": "",
//	      "maxFindings": 20,
//	      "minSeverity": "info"
//	    },
//	    "fix": {
//	      "mode": "approval",
//	      "triggerLabels": ["quavon:fix"],
//	      "setupCommand": "npm ci",
//	      "testCommand": "npm test",
//	      "lintCommand": "npm run lint",
//	      "egress": "registries",
//	      "registries": ["registry.npmjs.org"],
//	      "deniedPaths": ["migrations/**", "**/*.snap"],
//	      "allowedPaths": [],
//	      "allowLockfiles": false,
//	      "reviewFixes": "off",
//	      "maxRunsPerIssuePerDay": 2,
//	      "maxRunsPerDay": 5,
//	      "limits": {
//	        "maxSteps": 30,
//	        "maxSandboxRuns": 6,
//	        "runWallClockSeconds": 1200,
//	        "maxFiles": 10,
//	        "maxChangedLines": 300,
//	        "cpuMillis": 2000,
//	        "memoryBytes": 2147483648,
//	        "wallClockSeconds": 600,
//	        "setupSeconds": 300
//	      }
//	    },
//	    "sast": {
//	      "mode": "shadow",
//	      "scanners": ["ast-grep", "gitleaks", "bandit", "gosec", "eslint", "ruff"],
//	      "contextLines": 3,
//	      "maxFindings": 50,
//	      "uploadSarif": false,
//	      "profile": "review",
//	      "disabledRules": ["eslint:security/detect-non-literal-fs-filename"],
//	      "testPaths": ["qa/**"],
//	      "byo": ["acme-lint"]
//	    },
//	    "acceptance": {
//	      "mode": "shadow"
//	    }
//	  }
//	}
//
// The example differs from the defaults in fix.mode (default "off"),
// triggerLabels, the three commands, egress (default "none"), registries,
// deniedPaths, sast.disabledRules, sast.testPaths and sast.byo (default []).
//
// # Fields
//
// version: 1, the only version.
//
// features.review (the pull-request review by the model):
//   - mode: "off" | "shadow" (run and store, publish nothing) | "on"
//     (default).
//   - autoReview: true (default) reviews on opened, reopened, synchronize
//     and ready_for_review; false leaves only "@<review-app> review" (a
//     write or admin user's command, always a full review).
//   - reviewDrafts: false (default) skips draft pull requests
//     automatically; the command still reviews them.
//   - skipAuthors: up to 100 logins (e.g. "dependabot[bot]") whose pull
//     requests are not reviewed automatically, case-insensitive.
//   - pathFilters: up to 100 path patterns (below) left out of the model's
//     review and listed as skipped; the scanners still scan them.
//     Lockfiles, generated and vendored files are always left out.
//   - instructions: up to 4096 bytes of the maintainers' own guidance to
//     the reviewer (trusted: set only through the API; no control or
//     bidirectional characters but newline and tab).
//   - maxFindings: 1..100, default 20: inline comments per review, most
//     severe first; the summary counts the rest.
//   - minSeverity: "critical" | "high" | "medium" | "low" | "info"
//     (default): findings below it are not kept.
//
// features.fix (the fix agent and review fixes):
//   - mode: "off" (default for every repository) | "approval" | "auto".
//     auto publishes without approval on private and internal
//     repositories and is downgraded to approval on public ones.
//   - triggerLabels: up to 20 labels of 1..50 printable characters, no
//     leading or trailing space, unique ignoring case. Empty: only the
//     "@<app> fix" comment triggers.
//   - setupCommand, testCommand, lintCommand: "" (none) or a command run as
//     /bin/sh -c <command> in the sandbox: at most 4096 bytes of UTF-8, no
//     control characters other than tab and newline, no bidirectional
//     controls, not blank, nothing that looks like a credential.
//     setupCommand runs on the unmodified base tree; it is the only step
//     that may have egress.
//   - egress: "none" (default) | "registries". registries needs a
//     setupCommand and at least one registry.
//   - registries: up to 16 unique lowercase, fully qualified host names (no
//     IP literal, port, wildcard or trailing dot); only with egress
//     registries. The instance allowlist applies on top.
//   - deniedPaths, allowedPaths: up to 100 unique path patterns each (see
//     below). deniedPaths add to the built-in off-limits paths, which no
//     policy can lift; a non-empty allowedPaths restricts edits to matching
//     paths.
//   - allowLockfiles: false (default) keeps lockfiles off-limits.
//   - reviewFixes: "off" (default) | "stacked_pr" | "commit". Effective only
//     once review fixes are signed off and fix.mode is not off.
//   - maxRunsPerIssuePerDay: 1..20, default 2. maxRunsPerDay: 1..500,
//     default 5. The tenant's daily cap applies on top; the lowest wins.
//   - limits: the fix agent's loop: maxSteps 1..100 (30), maxSandboxRuns
//     1..20 (6), runWallClockSeconds 60..3600 (1200), maxFiles 1..100 (10),
//     maxChangedLines 1..5000 (300); each sandbox job: cpuMillis
//     100..16000 (2000), memoryBytes 64 MiB..16 GiB (2 GiB),
//     wallClockSeconds 10..3600 (600), setupSeconds 1..3600 (300, at most
//     wallClockSeconds). The runner clamps job limits to its ceiling.
//
// features.sast (the deterministic scanners on reviews):
//   - mode: "off" | "shadow" (default: run and store, publish nothing) |
//     "on".
//   - scanners: 1..6 unique names of ast-grep, gitleaks, bandit, gosec,
//     eslint, ruff; default all six. To scan nothing, set mode off.
//   - contextLines: 0..1000, default 3. maxFindings: 1..25000, default 50.
//   - uploadSarif: false (default); true also needs the code_scanning
//     feature of the installation.
//   - profile: "review" (default: what is worth a maintainer's minute; the
//     rule tables of rules/README.md drop or downgrade audit hints and
//     apply a reduced rule set to test files) | "audit" (every finding, at
//     its weakness's severity).
//   - disabledRules: up to 200 unique "tool:rule" names (e.g.
//     "bandit:B608", "eslint:security/detect-object-injection",
//     "gitleaks:generic-api-key"), each a rule the scanners can emit
//     (sast.KnownRuleName); their findings are left out in every profile.
//     Changes are audited like every policy change ([Diff]).
//   - testPaths: up to 100 unique path patterns (below) of test files
//     beyond the languages' conventions (sast.IsTestPath: *_test.go,
//     test_*.py, *.test.js, tests/, testdata/, __tests__/ …).
//   - byo: up to 8 unique names of bring-your-own scanner images (default
//     []). Each runs as image class byo:<name> in its own sandbox job of
//     the scanners job's shape (same snapshot, no network, no higher
//     limits) and its SARIF joins the findings as tool "byo:<name>". The
//     instance decides which names may run: one missing from the worker's
//     QUAVON_SAST_BYO_SCANNERS, or from the runner's image lockfile, is
//     not run and is reported as a missing scanner with the reason (the
//     policy itself stays valid, as it does when an instance changes).
//
// features.acceptance (the acceptance-criteria check):
//   - mode: "off" | "shadow" (default: checked and stored in ac_checks,
//     shown nowhere) | "on" (also in the review's outputs: the table in
//     the check run, the counts in the review summary). The check never
//     fails because of AC.
//
// # Path patterns
//
// A pattern is matched against a repository path relative to the root,
// case-insensitively, segment by segment:
//
//	src/*.go      * is any run of characters within one segment (not /)
//	src/?.go      ? is one character within one segment
//	src/**/x.go   ** is a whole segment only: zero or more segments
//
// Patterns are anchored at the repository root: "*.snap" matches only
// top-level files; "**/*.snap" matches at any depth; "docs/**" matches
// everything under docs. Not allowed: a leading or trailing /, empty, .
// or .. segments, ** inside a segment, and the characters \ [ ] { }. At
// most 512 bytes. [MatchPath] implements the matching.
//
// # Effective policy
//
// [Resolve] turns a stored document into the [Effective] policy:
//
//   - no stored document: the defaults (fix off, scanners and acceptance
//     check in shadow mode);
//   - a document that fails to parse or validate: every feature off (fix,
//     review fixes, scanners, acceptance check), with the reason in
//     Effective.Invalid; never applied in part;
//   - fix.mode auto on a public repository: approval;
//   - FixFeatureSignedOff false: fix off;
//   - ReviewFixSignedOff false (today; see gate.go for the lift tests use), or fix off: review fixes off.
//
// Each override is listed in Effective.Downgrades for the dashboard.
//
// # Storage
//
// [Marshal] writes the canonical form (compact, every field, schema order),
// so stored documents, ETags and [Diff] for the audit log agree.
package policy
