package policy

import (
	"reflect"
	"testing"

	"github.com/quavon/quavon/internal/sast"
)

func TestDiff(t *testing.T) {
	t.Parallel()
	old := Default()
	if got := Diff(old, Default()); len(got) != 0 {
		t.Errorf("Diff of equal policies: %v", got)
	}

	new := Default()
	new.Features.Fix.Mode = FixApproval
	new.Features.Fix.TriggerLabels = []string{"quavon:fix"}
	new.Features.Fix.AllowLockfiles = true
	new.Features.Fix.Limits.MemoryBytes = 1 << 30
	new.Features.SAST.Scanners = []sast.Tool{sast.ToolGosec}
	new.Features.Acceptance.Mode = ModeOn
	want := []Change{
		{"/features/fix/mode", "off", "approval"},
		{"/features/fix/triggerLabels", []string{}, []string{"quavon:fix"}},
		{"/features/fix/allowLockfiles", false, true},
		{"/features/fix/limits/memoryBytes", int64(DefaultMemoryBytes), int64(1 << 30)},
		{"/features/sast/scanners", []string{"ast-grep", "gitleaks", "bandit", "gosec", "eslint", "ruff"}, []string{"gosec"}},
		{"/features/acceptance/mode", "shadow", "on"},
	}
	if got := Diff(old, new); !reflect.DeepEqual(got, want) {
		t.Errorf("Diff:\n got %#v\nwant %#v", got, want)
	}
	// Reversed, the same paths with old and new swapped.
	rev := Diff(new, old)
	for i, c := range rev {
		if c.Path != want[i].Path || !reflect.DeepEqual(c.Old, want[i].New) || !reflect.DeepEqual(c.New, want[i].Old) {
			t.Errorf("reverse %d: %#v", i, c)
		}
	}
}

func TestDiffNilAndEmptyListsAreEqual(t *testing.T) {
	t.Parallel()
	a, b := Default(), Default()
	b.Features.Fix.DeniedPaths = []string{}
	if got := Diff(a, b); len(got) != 0 {
		t.Errorf("nil vs empty: %v", got)
	}
}

func TestDiffCoversEveryField(t *testing.T) {
	t.Parallel()
	// Every leaf of a parsed document that differs everywhere from the
	// defaults shows up once, so a field added to the schema is audited.
	p := mustParse(t, `{"features":{
		"review":{"mode":"shadow","autoReview":false,"reviewDrafts":true,"skipAuthors":["dependabot[bot]"],
			"pathFilters":["docs/**"],"instructions":"Prefer small functions.","maxFindings":5,"minSeverity":"medium"},
		"fix":{"mode":"auto","triggerLabels":["a"],"setupCommand":"s","testCommand":"t","lintCommand":"l",
			"egress":"registries","registries":["pypi.org"],"deniedPaths":["d"],"allowedPaths":["a"],
			"allowLockfiles":true,"reviewFixes":"commit","maxRunsPerIssuePerDay":3,"maxRunsPerDay":6,
			"limits":{"maxSteps":1,"maxSandboxRuns":1,"runWallClockSeconds":60,"maxFiles":1,"maxChangedLines":1,
				"cpuMillis":100,"memoryBytes":67108864,"wallClockSeconds":10,"setupSeconds":1}},
		"sast":{"mode":"on","scanners":["ruff"],"contextLines":0,"maxFindings":1,"uploadSarif":true,
			"profile":"audit","disabledRules":["bandit:B101"],"testPaths":["qa/**"],"byo":["acme-lint"]},
		"acceptance":{"mode":"on"}}}`)
	got := Diff(Default(), p)
	leaves := countLeaves(reflect.TypeOf(Policy{})) - 1 // version cannot differ
	if len(got) != leaves {
		t.Errorf("%d changes, want one per field (%d): %v", len(got), leaves, got)
	}
}

func countLeaves(t reflect.Type) int {
	if t.Kind() != reflect.Struct {
		return 1
	}
	n := 0
	for i := range t.NumField() {
		n += countLeaves(t.Field(i).Type)
	}
	return n
}
