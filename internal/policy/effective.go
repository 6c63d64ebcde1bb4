package policy

import (
	"slices"

	"github.com/quavon/quavon/internal/sast"
)

// Sign-off gates of the threat analysis (spec, status paragraph). They are
// constants on purpose: changing one is a reviewed code change, never
// configuration.
const (
	// FixFeatureSignedOff (FIX_FEATURE_SIGNED_OFF): repositories may opt in
	// to fix.mode other than off. When false, fix is off everywhere.
	FixFeatureSignedOff = true
	// ReviewFixSignedOff (REVIEW_FIX_SIGNED_OFF): review fixes (scope row
	// "Review fixes", FX13–FX17, §7b) await the maintainer's sign-off.
	// While false, review fixes are off whatever the stored policy says.
	ReviewFixSignedOff = false
)

// RepoFacts are the facts about a repository that change its effective
// policy.
type RepoFacts struct {
	// Private is true for private and internal repositories; auto
	// publication is allowed only there.
	Private bool
}

// Reason says why a stored setting does not apply.
type Reason string

// Downgrade reasons.
const (
	// ReasonPublicRepository: fix.mode auto on a public repository (FX6).
	ReasonPublicRepository Reason = "public_repository"
	// ReasonNotSignedOff: the feature awaits its threat-analysis sign-off.
	ReasonNotSignedOff Reason = "not_signed_off"
	// ReasonFixOff: review fixes need fix.mode approval or auto.
	ReasonFixOff Reason = "fix_off"
)

// Downgrade records one stored setting the effective policy overrides, for
// the dashboard to explain.
type Downgrade struct {
	Path   string `json:"path"` // JSON pointer, as in FieldError
	From   string `json:"from"`
	To     string `json:"to"`
	Reason Reason `json:"reason"`
}

// Effective is the policy that applies to a repository. Read it through
// its methods; the fix, SAST and acceptance code do nothing else with it.
type Effective struct {
	// Policy is what applies: the stored policy (or the defaults) after
	// every downgrade, or every feature off when Invalid is set.
	Policy Policy
	// Stored is true when the repository has a policy row.
	Stored bool
	// Invalid is why the stored policy was not applied (a
	// *ValidationError). A policy that fails to parse or validate is
	// never applied in part: every feature is off.
	Invalid error
	// Downgrades lists the stored settings that do not apply, in schema
	// order.
	Downgrades []Downgrade
}

// Resolve computes the effective policy of a repository from its stored
// policy document (nil when it has none: the defaults apply).
func Resolve(stored []byte, repo RepoFacts) Effective {
	return resolve(stored, repo, signOffs{fix: FixFeatureSignedOff, reviewFix: ReviewFixesSignedOff()})
}

// signOffs carries the sign-off constants, so tests can cover both values.
type signOffs struct{ fix, reviewFix bool }

func resolve(stored []byte, repo RepoFacts, s signOffs) Effective {
	e := Effective{Policy: Default(), Stored: stored != nil}
	if stored != nil {
		p, err := Parse(stored)
		if err != nil {
			return Effective{Policy: off(), Stored: true, Invalid: err}
		}
		e.Policy = p
	}
	f := &e.Policy.Features.Fix
	down := func(p string, from, to string, r Reason) {
		e.Downgrades = append(e.Downgrades, Downgrade{Path: p, From: from, To: to, Reason: r})
	}
	switch {
	case f.Mode != FixOff && !s.fix:
		down("/features/fix/mode", string(f.Mode), string(FixOff), ReasonNotSignedOff)
		f.Mode = FixOff
	case f.Mode == FixAuto && !repo.Private:
		down("/features/fix/mode", string(f.Mode), string(FixApproval), ReasonPublicRepository)
		f.Mode = FixApproval
	}
	switch {
	case f.ReviewFixes == ReviewFixesOff:
	case !s.fix || !s.reviewFix:
		down("/features/fix/reviewFixes", string(f.ReviewFixes), string(ReviewFixesOff), ReasonNotSignedOff)
		f.ReviewFixes = ReviewFixesOff
	case f.Mode == FixOff:
		down("/features/fix/reviewFixes", string(f.ReviewFixes), string(ReviewFixesOff), ReasonFixOff)
		f.ReviewFixes = ReviewFixesOff
	}
	return e
}

// The accessors map anything outside their enum to off, so a zero
// Effective enables nothing.

// FixMode is the effective fix mode: off, approval, or auto (private
// repositories only).
func (e Effective) FixMode() FixMode {
	return known(e.Policy.Features.Fix.Mode, FixOff, FixApproval, FixAuto)
}

// FixEnabled reports whether the fix agent may run on issues at all.
func (e Effective) FixEnabled() bool { return e.FixMode() != FixOff }

// ReviewFixDelivery is the effective delivery of review fixes: off while
// review fixes are not signed off, while fix is off, or when the policy
// says so.
func (e Effective) ReviewFixDelivery() ReviewFixes {
	return known(e.Policy.Features.Fix.ReviewFixes, ReviewFixesOff, ReviewFixesStackedPR, ReviewFixesCommit)
}

// ReviewMode is the effective mode of the LLM review.
func (e Effective) ReviewMode() Mode {
	return known(e.Policy.Features.Review.Mode, ModeOff, ModeShadow, ModeOn)
}

// SASTMode is the effective mode of the deterministic scanners.
func (e Effective) SASTMode() Mode {
	return known(e.Policy.Features.SAST.Mode, ModeOff, ModeShadow, ModeOn)
}

// SASTOptions are the normalisation options of the effective policy's
// features.sast: context, cap, profile, muted rules and test paths (the
// languages' conventions plus testPaths).
func (e Effective) SASTOptions() sast.Options {
	s := e.Policy.Features.SAST
	opt := sast.Options{
		ContextLines: s.ContextLines, MaxFindings: s.MaxFindings,
		Profile:       known(s.Profile, sast.ProfileReview, sast.ProfileAudit),
		DisabledRules: slices.Clone(s.DisabledRules),
	}
	if pats := slices.Clone(s.TestPaths); len(pats) > 0 {
		opt.TestPath = func(p string) bool {
			return slices.ContainsFunc(pats, func(pat string) bool { return MatchPath(pat, p) })
		}
	}
	return opt
}

// AcceptanceMode is the effective mode of the acceptance-criteria check.
func (e Effective) AcceptanceMode() Mode {
	return known(e.Policy.Features.Acceptance.Mode, ModeOff, ModeShadow, ModeOn)
}

// known returns v when it is one of values, else values[0] (off).
func known[T comparable](v T, values ...T) T {
	for _, k := range values {
		if v == k {
			return v
		}
	}
	return values[0]
}
