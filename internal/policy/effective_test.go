package policy

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/quavon/quavon/internal/sast"
)

var (
	public  = RepoFacts{Private: false}
	private = RepoFacts{Private: true}
	// today are the sign-offs of the constants as shipped.
	today = signOffs{fix: true, reviewFix: false}
)

func TestResolveUsesTheConstants(t *testing.T) {
	t.Parallel()
	if !FixFeatureSignedOff || ReviewFixSignedOff {
		t.Fatal("sign-off constants changed: update the spec status and these tests together")
	}
	doc := []byte(fixDoc(`"mode":"auto","reviewFixes":"commit"`))
	if got, want := Resolve(doc, private), resolve(doc, private, today); !reflect.DeepEqual(got, want) {
		t.Errorf("Resolve = %+v, want %+v", got, want)
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	all := signOffs{fix: true, reviewFix: true}
	none := signOffs{}
	tests := []struct {
		name       string
		stored     string // "nil" for no policy row
		repo       RepoFacts
		signOffs   signOffs
		fix        FixMode
		review     ReviewFixes
		sast, ac   Mode
		downgrades []Downgrade
	}{
		{"no policy: defaults, fix off", "nil", private, today, FixOff, ReviewFixesOff, ModeShadow, ModeShadow, nil},
		{"no policy on public", "nil", public, today, FixOff, ReviewFixesOff, ModeShadow, ModeShadow, nil},
		{"empty policy", `{}`, private, today, FixOff, ReviewFixesOff, ModeShadow, ModeShadow, nil},
		{"auto on private stays auto", fixDoc(`"mode":"auto"`), private, today, FixAuto, ReviewFixesOff, ModeShadow, ModeShadow, nil},
		{"auto on public becomes approval", fixDoc(`"mode":"auto"`), public, today, FixApproval, ReviewFixesOff, ModeShadow, ModeShadow,
			[]Downgrade{{"/features/fix/mode", "auto", "approval", ReasonPublicRepository}}},
		{"approval on public stays", fixDoc(`"mode":"approval"`), public, today, FixApproval, ReviewFixesOff, ModeShadow, ModeShadow, nil},
		{"review commit not signed off", fixDoc(`"mode":"approval","reviewFixes":"commit"`), private, today, FixApproval, ReviewFixesOff, ModeShadow, ModeShadow,
			[]Downgrade{{"/features/fix/reviewFixes", "commit", "off", ReasonNotSignedOff}}},
		{"review stacked not signed off", fixDoc(`"mode":"auto","reviewFixes":"stacked_pr"`), public, today, FixApproval, ReviewFixesOff, ModeShadow, ModeShadow,
			[]Downgrade{{"/features/fix/mode", "auto", "approval", ReasonPublicRepository}, {"/features/fix/reviewFixes", "stacked_pr", "off", ReasonNotSignedOff}}},
		{"review commit once signed off", fixDoc(`"mode":"approval","reviewFixes":"commit"`), private, all, FixApproval, ReviewFixesCommit, ModeShadow, ModeShadow, nil},
		{"review fixes need fix on", fixDoc(`"mode":"off","reviewFixes":"stacked_pr"`), private, all, FixOff, ReviewFixesOff, ModeShadow, ModeShadow,
			[]Downgrade{{"/features/fix/reviewFixes", "stacked_pr", "off", ReasonFixOff}}},
		{"fix not signed off", fixDoc(`"mode":"auto","reviewFixes":"commit"`), private, signOffs{reviewFix: true}, FixOff, ReviewFixesOff, ModeShadow, ModeShadow,
			[]Downgrade{{"/features/fix/mode", "auto", "off", ReasonNotSignedOff}, {"/features/fix/reviewFixes", "commit", "off", ReasonNotSignedOff}}},
		{"nothing signed off leaves sast and acceptance", `{"features":{"fix":{"mode":"approval"},"sast":{"mode":"on"},"acceptance":{"mode":"off"}}}`, private, none, FixOff, ReviewFixesOff, ModeOn, ModeOff,
			[]Downgrade{{"/features/fix/mode", "approval", "off", ReasonNotSignedOff}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stored []byte
			if tt.stored != "nil" {
				stored = []byte(tt.stored)
			}
			e := resolve(stored, tt.repo, tt.signOffs)
			if e.Invalid != nil {
				t.Fatalf("Invalid: %v", e.Invalid)
			}
			if e.Stored != (stored != nil) {
				t.Errorf("Stored = %v", e.Stored)
			}
			if e.FixMode() != tt.fix || e.FixEnabled() != (tt.fix != FixOff) {
				t.Errorf("fix %q enabled %v, want %q", e.FixMode(), e.FixEnabled(), tt.fix)
			}
			if e.ReviewFixDelivery() != tt.review {
				t.Errorf("review fixes %q, want %q", e.ReviewFixDelivery(), tt.review)
			}
			if e.SASTMode() != tt.sast || e.AcceptanceMode() != tt.ac {
				t.Errorf("sast %q acceptance %q, want %q %q", e.SASTMode(), e.AcceptanceMode(), tt.sast, tt.ac)
			}
			if !reflect.DeepEqual(e.Downgrades, tt.downgrades) {
				t.Errorf("downgrades %+v, want %+v", e.Downgrades, tt.downgrades)
			}
			if errs := e.Policy.Validate(); len(errs) != 0 {
				t.Errorf("effective policy invalid: %v", errs)
			}
		})
	}
}

func TestResolveInvalidIsAllOff(t *testing.T) {
	t.Parallel()
	// Each document turns every feature on (or would) but has one fault.
	docs := map[string]string{
		"syntax":       `{"features":{"fix":{"mode":"auto"},"sast":{"mode":"on"},"acceptance":{"mode":"on"}}`,
		"unknown key":  `{"features":{"fix":{"mode":"auto"},"sast":{"mode":"on"},"acceptance":{"mode":"on"}},"extra":1}`,
		"duplicate":    `{"features":{"fix":{"mode":"auto"},"sast":{"mode":"on"},"acceptance":{"mode":"on"}},"version":1,"version":1}`,
		"invalid enum": `{"features":{"fix":{"mode":"auto","reviewFixes":"commit"},"sast":{"mode":"on"},"acceptance":{"mode":"on","x":1}}}`,
		"out of range": `{"features":{"fix":{"mode":"auto","maxRunsPerDay":0},"sast":{"mode":"on"},"acceptance":{"mode":"on"}}}`,
		"empty bytes":  ``,
		"null":         `null`,
	}
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, s := range []signOffs{today, {fix: true, reviewFix: true}} {
				e := resolve([]byte(doc), private, s)
				var ve *ValidationError
				if !errors.As(e.Invalid, &ve) {
					t.Fatalf("Invalid = %v, want a *ValidationError", e.Invalid)
				}
				if !e.Stored {
					t.Error("Stored = false")
				}
				if e.FixEnabled() || e.FixMode() != FixOff || e.ReviewFixDelivery() != ReviewFixesOff ||
					e.SASTMode() != ModeOff || e.AcceptanceMode() != ModeOff {
					t.Errorf("not all off: fix %q review %q sast %q ac %q", e.FixMode(), e.ReviewFixDelivery(), e.SASTMode(), e.AcceptanceMode())
				}
				if len(e.Downgrades) != 0 {
					t.Errorf("downgrades on an invalid policy: %v", e.Downgrades)
				}
			}
		})
	}
}

func TestResolveZeroValueIsOff(t *testing.T) {
	t.Parallel()
	var e Effective
	if e.FixEnabled() || e.FixMode() != FixOff || e.ReviewFixDelivery() != ReviewFixesOff ||
		e.SASTMode() != ModeOff || e.AcceptanceMode() != ModeOff {
		t.Error("a zero Effective enables something")
	}
}

// The effective features.sast becomes the normaliser's options; the review
// profile is the default, testPaths add to the languages' conventions.
func TestSASTOptions(t *testing.T) {
	t.Parallel()
	e := Resolve(nil, RepoFacts{})
	opt := e.SASTOptions()
	if opt.Profile != sast.ProfileReview || opt.ContextLines != DefaultContextLines || opt.MaxFindings != DefaultMaxFindings ||
		opt.TestPath != nil || len(opt.DisabledRules) != 0 {
		t.Errorf("defaults: %+v", opt)
	}
	e = Resolve([]byte(`{"features":{"sast":{"profile":"audit","disabledRules":["bandit:B101"],"testPaths":["qa/**"]}}}`), RepoFacts{})
	if e.Invalid != nil {
		t.Fatal(e.Invalid)
	}
	opt = e.SASTOptions()
	if opt.Profile != sast.ProfileAudit || !slices.Equal(opt.DisabledRules, []string{"bandit:B101"}) || opt.TestPath == nil ||
		!opt.TestPath("QA/checks/a.py") || opt.TestPath("app/a.py") {
		t.Errorf("stored: %+v", opt)
	}
	if (Effective{}).SASTOptions().Profile != sast.ProfileReview {
		t.Error("a zero Effective is not the review profile")
	}
}
