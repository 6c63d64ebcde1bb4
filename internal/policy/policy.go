package policy

import "github.com/quavon/quavon/internal/sast"

// SchemaVersion is the only document version this package reads and writes.
const SchemaVersion = 1

// FixMode says whether and how the fix agent may run on a repository.
type FixMode string

// Fix modes.
const (
	// FixOff: the fix agent never runs. The default for every repository.
	FixOff FixMode = "off"
	// FixApproval: patches are published only after a maintainer approves
	// the exact diff in the dashboard.
	FixApproval FixMode = "approval"
	// FixAuto: patches are published without approval; private and
	// internal repositories only (downgraded to approval on public ones).
	FixAuto FixMode = "auto"
)

// Egress is the network the setup step of a fix sandbox job gets.
type Egress string

// Egress values; they match sandbox.EgressMode.
const (
	EgressNone       Egress = "none"
	EgressRegistries Egress = "registries"
)

// ReviewFixes is the delivery of fixes requested on a review run.
type ReviewFixes string

// Review fix deliveries.
const (
	ReviewFixesOff ReviewFixes = "off"
	// ReviewFixesStackedPR: a draft PR into the pull request's head branch.
	ReviewFixesStackedPR ReviewFixes = "stacked_pr"
	// ReviewFixesCommit: one fast-forward commit on the head branch of a
	// same-repository pull request (FX13).
	ReviewFixesCommit ReviewFixes = "commit"
)

// Mode switches the deterministic scanners and the acceptance-criteria check.
type Mode string

// Modes.
const (
	ModeOff Mode = "off"
	// ModeShadow: run and store results, publish nothing.
	ModeShadow Mode = "shadow"
	ModeOn     Mode = "on"
)

// Policy is a repository policy document. Obtain one from [Default] or
// [Parse]; the zero value is not a valid policy. Empty lists are nil.
type Policy struct {
	Version  int      `json:"version"`
	Features Features `json:"features"`
}

// Features groups the per-feature settings.
type Features struct {
	Review     Review     `json:"review"`
	Fix        Fix        `json:"fix"`
	SAST       SAST       `json:"sast"`
	Acceptance Acceptance `json:"acceptance"`
}

// Review configures the pull-request review (the LLM reviewer; the
// scanners and the acceptance check have their own sections). It is set
// only through the API: repository files are never read as configuration.
type Review struct {
	Mode Mode `json:"mode"`
	// AutoReview reviews on opened, reopened, synchronize and
	// ready_for_review; without it only "@<review-app> review" does.
	AutoReview bool `json:"autoReview"`
	// ReviewDrafts reviews draft pull requests automatically too.
	ReviewDrafts bool `json:"reviewDrafts"`
	// SkipAuthors are logins whose pull requests are not reviewed
	// automatically (e.g. "dependabot[bot]"), matched case-insensitively.
	SkipAuthors []string `json:"skipAuthors"`
	// PathFilters are path patterns (see [MatchPath]) left out of the LLM
	// review; they are listed as skipped.
	PathFilters []string `json:"pathFilters"`
	// Instructions are the maintainers' own words to the reviewer
	// (trusted: only API callers with the right role set them).
	Instructions string `json:"instructions"`
	// MaxFindings caps the inline comments of one review (the rest are
	// counted in the summary).
	MaxFindings int `json:"maxFindings"`
	// MinSeverity drops findings below it.
	MinSeverity sast.Severity `json:"minSeverity"`
}

// Fix configures the Issue→Draft PR fix agent and review fixes.
type Fix struct {
	Mode FixMode `json:"mode"`
	// TriggerLabels start a fix when added to an issue; empty means only
	// the "@<app> fix" comment does.
	TriggerLabels []string `json:"triggerLabels"`
	// SetupCommand runs on the unmodified base tree before the agent's
	// edits are applied; it is the only step that may have egress.
	SetupCommand string `json:"setupCommand"`
	// TestCommand and LintCommand back the agent's run_tests and
	// run_linter tools; each runs as /bin/sh -c <command> in the sandbox.
	TestCommand string `json:"testCommand"`
	LintCommand string `json:"lintCommand"`
	Egress      Egress `json:"egress"`
	// Registries are the host names the setup step may reach when Egress
	// is registries, further intersected with the instance allowlist.
	Registries []string `json:"registries"`
	// DeniedPaths add to the built-in off-limits paths; AllowedPaths,
	// when not empty, restrict edits to matching paths. See [MatchPath].
	DeniedPaths    []string    `json:"deniedPaths"`
	AllowedPaths   []string    `json:"allowedPaths"`
	AllowLockfiles bool        `json:"allowLockfiles"`
	ReviewFixes    ReviewFixes `json:"reviewFixes"`
	// Caps on fix runs; the tenant cap applies on top.
	MaxRunsPerIssuePerDay int       `json:"maxRunsPerIssuePerDay"`
	MaxRunsPerDay         int       `json:"maxRunsPerDay"`
	Limits                FixLimits `json:"limits"`
}

// FixLimits bound one fix run. The sandbox job limits are clamped further
// by the runner's ceiling (SANDBOX_LIMIT_CEILING).
type FixLimits struct {
	// Agent loop (spec §4).
	MaxSteps            int   `json:"maxSteps"`
	MaxSandboxRuns      int   `json:"maxSandboxRuns"`
	RunWallClockSeconds int64 `json:"runWallClockSeconds"`
	MaxFiles            int   `json:"maxFiles"`
	MaxChangedLines     int   `json:"maxChangedLines"`
	// Each sandbox job (run_tests, run_linter); names as in sandbox.Limits.
	CPUMillis        int64 `json:"cpuMillis"`
	MemoryBytes      int64 `json:"memoryBytes"`
	WallClockSeconds int64 `json:"wallClockSeconds"`
	SetupSeconds     int64 `json:"setupSeconds"`
}

// SAST configures the deterministic scanners on reviews.
type SAST struct {
	Mode     Mode        `json:"mode"`
	Scanners []sast.Tool `json:"scanners"`
	// ContextLines widens the changed lines a finding may sit on.
	ContextLines int  `json:"contextLines"`
	MaxFindings  int  `json:"maxFindings"`
	UploadSarif  bool `json:"uploadSarif"`
	// Profile chooses the findings posted on reviews: "review" (default)
	// or "audit" (everything); see sast.Profile.
	Profile sast.Profile `json:"profile"`
	// DisabledRules mutes rules ("tool:rule", each one a rule the
	// scanners can emit) on this repository, in every profile.
	DisabledRules []string `json:"disabledRules"`
	// TestPaths are path patterns of test files beyond the languages'
	// conventions (sast.IsTestPath); the review profile applies its
	// reduced rule set to them.
	TestPaths []string `json:"testPaths"`
	// BYO names the instance's bring-your-own scanner images (byo:<name>
	// in the runner's image lockfile) to run besides the scanners; a name
	// the instance does not allow is reported missing, with the reason.
	BYO []string `json:"byo"`
}

// Acceptance configures the acceptance-criteria check on reviews.
type Acceptance struct {
	Mode Mode `json:"mode"`
}

// Defaults. Every one is also the value a stored document gets for a field
// it omits.
const (
	DefaultReviewMode        = ModeOn
	DefaultAutoReview        = true
	DefaultReviewMaxFindings = 20
	DefaultMinSeverity       = sast.SeverityInfo

	DefaultFixMode               = FixOff
	DefaultEgress                = EgressNone
	DefaultReviewFixes           = ReviewFixesOff
	DefaultMaxRunsPerIssuePerDay = 2
	DefaultMaxRunsPerDay         = 5

	DefaultMaxSteps            = 30
	DefaultMaxSandboxRuns      = 6
	DefaultRunWallClockSeconds = 20 * 60
	DefaultMaxFiles            = 10
	DefaultMaxChangedLines     = 300
	DefaultCPUMillis           = 2000
	DefaultMemoryBytes         = 2 << 30
	DefaultWallClockSeconds    = 600
	DefaultSetupSeconds        = 300

	DefaultSASTMode     = ModeShadow
	DefaultContextLines = 3
	DefaultMaxFindings  = 50
	DefaultSASTProfile  = sast.ProfileReview

	DefaultAcceptanceMode = ModeShadow
)

// Default returns the policy of a repository that has none stored: fix
// off, scanners (all of them) and acceptance check in shadow mode.
func Default() Policy {
	return Policy{
		Version: SchemaVersion,
		Features: Features{
			Review: Review{
				Mode:        DefaultReviewMode,
				AutoReview:  DefaultAutoReview,
				MaxFindings: DefaultReviewMaxFindings,
				MinSeverity: DefaultMinSeverity,
			},
			Fix: Fix{
				Mode:                  DefaultFixMode,
				Egress:                DefaultEgress,
				ReviewFixes:           DefaultReviewFixes,
				MaxRunsPerIssuePerDay: DefaultMaxRunsPerIssuePerDay,
				MaxRunsPerDay:         DefaultMaxRunsPerDay,
				Limits: FixLimits{
					MaxSteps:            DefaultMaxSteps,
					MaxSandboxRuns:      DefaultMaxSandboxRuns,
					RunWallClockSeconds: DefaultRunWallClockSeconds,
					MaxFiles:            DefaultMaxFiles,
					MaxChangedLines:     DefaultMaxChangedLines,
					CPUMillis:           DefaultCPUMillis,
					MemoryBytes:         DefaultMemoryBytes,
					WallClockSeconds:    DefaultWallClockSeconds,
					SetupSeconds:        DefaultSetupSeconds,
				},
			},
			SAST: SAST{
				Mode:         DefaultSASTMode,
				Scanners:     append([]sast.Tool(nil), sast.Tools...),
				ContextLines: DefaultContextLines,
				MaxFindings:  DefaultMaxFindings,
				Profile:      DefaultSASTProfile,
			},
			Acceptance: Acceptance{Mode: DefaultAcceptanceMode},
		},
	}
}

// off is the policy applied in place of one that fails to parse or
// validate: every feature off.
func off() Policy {
	p := Default()
	p.Features.Review.Mode = ModeOff
	p.Features.Fix.Mode = FixOff
	p.Features.Fix.ReviewFixes = ReviewFixesOff
	p.Features.SAST.Mode = ModeOff
	p.Features.Acceptance.Mode = ModeOff
	return p
}
