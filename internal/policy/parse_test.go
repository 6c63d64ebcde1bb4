package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/sast"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// fieldErrors parses doc and returns its field errors; it fails when Parse
// accepts the document or refuses it with another error type.
func fieldErrors(tb testing.TB, doc string) []FieldError {
	tb.Helper()
	p, err := Parse([]byte(doc))
	if err == nil {
		tb.Fatalf("Parse(%.200s) accepted: %+v", doc, p)
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		tb.Fatalf("Parse(%.200s): %T %v, want *ValidationError", doc, err, err)
	}
	if len(ve.Errors) == 0 {
		tb.Fatalf("Parse(%.200s): ValidationError without field errors", doc)
	}
	if !reflect.DeepEqual(p, Policy{}) {
		tb.Fatalf("Parse refused but returned a non-zero policy: %+v", p)
	}
	return ve.Errors
}

func mustParse(tb testing.TB, doc string) Policy {
	tb.Helper()
	p, err := Parse([]byte(doc))
	if err != nil {
		tb.Fatalf("Parse(%.200s): %v", doc, err)
	}
	return p
}

// fixDoc wraps members of features.fix in a document.
func fixDoc(members string) string {
	return `{"features":{"fix":{` + members + `}}}`
}

func sastDoc(members string) string {
	return `{"features":{"sast":{` + members + `}}}`
}

func TestParseRefusesEachField(t *testing.T) {
	t.Parallel()
	long := func(n int) string { return strings.Repeat("a", n) }
	list := func(n int, f func(i int) string) string {
		items := make([]string, n)
		for i := range items {
			items[i] = `"` + f(i) + `"`
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	const fix = "/features/fix"
	tests := []struct {
		name, doc, path string
		code            Code
	}{
		{"version 2", `{"version":2}`, "/version", CodeInvalidEnum},
		{"version 0", `{"version":0}`, "/version", CodeInvalidEnum},
		{"version string", `{"version":"1"}`, "/version", CodeInvalidType},

		{"fix mode unknown", fixDoc(`"mode":"always"`), fix + "/mode", CodeInvalidEnum},
		{"fix mode case", fixDoc(`"mode":"Auto"`), fix + "/mode", CodeInvalidEnum},
		{"fix mode empty", fixDoc(`"mode":""`), fix + "/mode", CodeInvalidEnum},
		{"fix mode number", fixDoc(`"mode":1`), fix + "/mode", CodeInvalidType},
		{"fix mode null", fixDoc(`"mode":null`), fix + "/mode", CodeInvalidType},
		{"fix not object", `{"features":{"fix":[]}}`, fix, CodeInvalidType},

		{"labels not array", fixDoc(`"triggerLabels":"fix"`), fix + "/triggerLabels", CodeInvalidType},
		{"label not string", fixDoc(`"triggerLabels":[1]`), fix + "/triggerLabels/0", CodeInvalidType},
		{"labels too many", fixDoc(`"triggerLabels":` + list(MaxLabels+1, func(i int) string { return fmt.Sprint("l", i) })), fix + "/triggerLabels", CodeTooMany},
		{"label empty", fixDoc(`"triggerLabels":[""]`), fix + "/triggerLabels/0", CodeRequired},
		{"label too long", fixDoc(`"triggerLabels":["` + long(MaxLabelChars+1) + `"]`), fix + "/triggerLabels/0", CodeTooLong},
		{"label padded", fixDoc(`"triggerLabels":[" fix"]`), fix + "/triggerLabels/0", CodeInvalidLabel},
		{"label control", fixDoc(`"triggerLabels":["a\tb"]`), fix + "/triggerLabels/0", CodeInvalidLabel},
		{"label bidi", fixDoc(`"triggerLabels":["a\u202eb"]`), fix + "/triggerLabels/0", CodeInvalidLabel},
		{"label duplicate ignoring case", fixDoc(`"triggerLabels":["Fix","fix"]`), fix + "/triggerLabels/1", CodeDuplicate},

		{"setup too long", fixDoc(`"setupCommand":"` + long(MaxCommandBytes+1) + `"`), fix + "/setupCommand", CodeTooLong},
		{"test NUL", fixDoc(`"testCommand":"make\u0000test"`), fix + "/testCommand", CodeInvalidCommand},
		{"test CR", fixDoc(`"testCommand":"make test\r\n"`), fix + "/testCommand", CodeInvalidCommand},
		{"lint escape", fixDoc(`"lintCommand":"\u001b[31mlint"`), fix + "/lintCommand", CodeInvalidCommand},
		{"lint C1", fixDoc(`"lintCommand":"lint\u0085"`), fix + "/lintCommand", CodeInvalidCommand},
		{"test bidi", fixDoc(`"testCommand":"make test \u2066# x\u2069"`), fix + "/testCommand", CodeInvalidCommand},
		{"test blank", fixDoc(`"testCommand":" \n\t"`), fix + "/testCommand", CodeInvalidCommand},
		{"setup secret", fixDoc(`"setupCommand":"npm ci --token ghp_abcdefghijklmnopqrstuvwxyz0123456789"`), fix + "/setupCommand", CodeSecret},
		{"setup url credentials", fixDoc(`"setupCommand":"pip install -i https://user:hunter22@pypi.example.com/simple x"`), fix + "/setupCommand", CodeSecret},
		{"command not string", fixDoc(`"testCommand":["make","test"]`), fix + "/testCommand", CodeInvalidType},

		{"egress unknown", fixDoc(`"egress":"all"`), fix + "/egress", CodeInvalidEnum},
		{"registries without egress", fixDoc(`"registries":["registry.npmjs.org"]`), fix + "/registries", CodeConflict},
		{"egress without registries", fixDoc(`"egress":"registries","setupCommand":"npm ci"`), fix + "/registries", CodeRequired},
		{"egress without setup", fixDoc(`"egress":"registries","registries":["registry.npmjs.org"]`), fix + "/setupCommand", CodeRequired},
		{"registry IP", fixDoc(`"egress":"registries","setupCommand":"x","registries":["10.0.0.1"]`), fix + "/registries/0", CodeInvalidHost},
		{"registry port", fixDoc(`"egress":"registries","setupCommand":"x","registries":["registry.npmjs.org:443"]`), fix + "/registries/0", CodeInvalidHost},
		{"registry wildcard", fixDoc(`"egress":"registries","setupCommand":"x","registries":["*.npmjs.org"]`), fix + "/registries/0", CodeInvalidHost},
		{"registry upper case", fixDoc(`"egress":"registries","setupCommand":"x","registries":["Registry.npmjs.org"]`), fix + "/registries/0", CodeInvalidHost},
		{"registry single label", fixDoc(`"egress":"registries","setupCommand":"x","registries":["localhost"]`), fix + "/registries/0", CodeInvalidHost},
		{"registry trailing dot", fixDoc(`"egress":"registries","setupCommand":"x","registries":["pypi.org."]`), fix + "/registries/0", CodeInvalidHost},
		{"registry duplicate", fixDoc(`"egress":"registries","setupCommand":"x","registries":["pypi.org","pypi.org"]`), fix + "/registries/1", CodeDuplicate},
		{"registries too many", fixDoc(`"egress":"registries","setupCommand":"x","registries":` + list(MaxRegistries+1, func(i int) string { return fmt.Sprintf("r%d.example.com", i) })), fix + "/registries", CodeTooMany},

		{"denied leading slash", fixDoc(`"deniedPaths":["/etc/**"]`), fix + "/deniedPaths/0", CodeInvalidPattern},
		{"denied dotdot", fixDoc(`"deniedPaths":["src/../x"]`), fix + "/deniedPaths/0", CodeInvalidPattern},
		{"denied dot", fixDoc(`"deniedPaths":["./x"]`), fix + "/deniedPaths/0", CodeInvalidPattern},
		{"denied empty", fixDoc(`"deniedPaths":[""]`), fix + "/deniedPaths/0", CodeInvalidPattern},
		{"denied empty segment", fixDoc(`"deniedPaths":["a//b"]`), fix + "/deniedPaths/0", CodeInvalidPattern},
		{"denied trailing slash", fixDoc(`"deniedPaths":["docs/"]`), fix + "/deniedPaths/0", CodeInvalidPattern},
		{"denied brackets", fixDoc(`"deniedPaths":["[ab].go"]`), fix + "/deniedPaths/0", CodeInvalidPattern},
		{"denied braces", fixDoc(`"deniedPaths":["*.{js,ts}"]`), fix + "/deniedPaths/0", CodeInvalidPattern},
		{"denied backslash", fixDoc(`"deniedPaths":["a\\b"]`), fix + "/deniedPaths/0", CodeInvalidPattern},
		{"denied partial doublestar", fixDoc(`"deniedPaths":["src/**.go"]`), fix + "/deniedPaths/0", CodeInvalidPattern},
		{"denied control", fixDoc(`"deniedPaths":["a\nb"]`), fix + "/deniedPaths/0", CodeInvalidPattern},
		{"denied too long", fixDoc(`"deniedPaths":["` + long(MaxPatternBytes+1) + `"]`), fix + "/deniedPaths/0", CodeTooLong},
		{"denied too many", fixDoc(`"deniedPaths":` + list(MaxPatterns+1, func(i int) string { return fmt.Sprint("p", i) })), fix + "/deniedPaths", CodeTooMany},
		{"denied duplicate ignoring case", fixDoc(`"deniedPaths":["A/**","a/**"]`), fix + "/deniedPaths/1", CodeDuplicate},
		{"allowed dotdot", fixDoc(`"allowedPaths":["../x"]`), fix + "/allowedPaths/0", CodeInvalidPattern},
		{"allowed too many", fixDoc(`"allowedPaths":` + list(MaxPatterns+1, func(i int) string { return fmt.Sprint("p", i) })), fix + "/allowedPaths", CodeTooMany},

		{"allowLockfiles string", fixDoc(`"allowLockfiles":"true"`), fix + "/allowLockfiles", CodeInvalidType},
		{"allowLockfiles number", fixDoc(`"allowLockfiles":1`), fix + "/allowLockfiles", CodeInvalidType},
		{"reviewFixes unknown", fixDoc(`"reviewFixes":"push"`), fix + "/reviewFixes", CodeInvalidEnum},

		{"per issue 0", fixDoc(`"maxRunsPerIssuePerDay":0`), fix + "/maxRunsPerIssuePerDay", CodeOutOfRange},
		{"per issue 21", fixDoc(`"maxRunsPerIssuePerDay":21`), fix + "/maxRunsPerIssuePerDay", CodeOutOfRange},
		{"per issue negative", fixDoc(`"maxRunsPerIssuePerDay":-1`), fix + "/maxRunsPerIssuePerDay", CodeOutOfRange},
		{"per issue float", fixDoc(`"maxRunsPerIssuePerDay":2.5`), fix + "/maxRunsPerIssuePerDay", CodeInvalidType},
		{"per issue 2.0", fixDoc(`"maxRunsPerIssuePerDay":2.0`), fix + "/maxRunsPerIssuePerDay", CodeInvalidType},
		{"per issue exponent", fixDoc(`"maxRunsPerIssuePerDay":2e0`), fix + "/maxRunsPerIssuePerDay", CodeInvalidType},
		{"per issue huge", fixDoc(`"maxRunsPerIssuePerDay":99999999999999999999`), fix + "/maxRunsPerIssuePerDay", CodeOutOfRange},
		{"per day 0", fixDoc(`"maxRunsPerDay":0`), fix + "/maxRunsPerDay", CodeOutOfRange},
		{"per day 501", fixDoc(`"maxRunsPerDay":501`), fix + "/maxRunsPerDay", CodeOutOfRange},

		{"limits not object", fixDoc(`"limits":1`), fix + "/limits", CodeInvalidType},
		{"maxSteps 0", fixDoc(`"limits":{"maxSteps":0}`), fix + "/limits/maxSteps", CodeOutOfRange},
		{"maxSteps 101", fixDoc(`"limits":{"maxSteps":101}`), fix + "/limits/maxSteps", CodeOutOfRange},
		{"maxSandboxRuns 21", fixDoc(`"limits":{"maxSandboxRuns":21}`), fix + "/limits/maxSandboxRuns", CodeOutOfRange},
		{"runWallClock 59", fixDoc(`"limits":{"runWallClockSeconds":59}`), fix + "/limits/runWallClockSeconds", CodeOutOfRange},
		{"maxFiles 0", fixDoc(`"limits":{"maxFiles":0}`), fix + "/limits/maxFiles", CodeOutOfRange},
		{"maxChangedLines 5001", fixDoc(`"limits":{"maxChangedLines":5001}`), fix + "/limits/maxChangedLines", CodeOutOfRange},
		{"cpuMillis 99", fixDoc(`"limits":{"cpuMillis":99}`), fix + "/limits/cpuMillis", CodeOutOfRange},
		{"cpuMillis 16001", fixDoc(`"limits":{"cpuMillis":16001}`), fix + "/limits/cpuMillis", CodeOutOfRange},
		{"memory small", fixDoc(`"limits":{"memoryBytes":1048576}`), fix + "/limits/memoryBytes", CodeOutOfRange},
		{"memory large", fixDoc(`"limits":{"memoryBytes":17179869185}`), fix + "/limits/memoryBytes", CodeOutOfRange},
		{"wallClock 9", fixDoc(`"limits":{"wallClockSeconds":9,"setupSeconds":1}`), fix + "/limits/wallClockSeconds", CodeOutOfRange},
		{"setup 0", fixDoc(`"limits":{"setupSeconds":0}`), fix + "/limits/setupSeconds", CodeOutOfRange},
		{"setup over wall clock", fixDoc(`"limits":{"wallClockSeconds":60,"setupSeconds":61}`), fix + "/limits/setupSeconds", CodeConflict},

		{"sast mode unknown", sastDoc(`"mode":"enforce"`), "/features/sast/mode", CodeInvalidEnum},
		{"scanner unknown", sastDoc(`"scanners":["semgrep"]`), "/features/sast/scanners/0", CodeInvalidEnum},
		{"scanners empty", sastDoc(`"scanners":[]`), "/features/sast/scanners", CodeRequired},
		{"scanner duplicate", sastDoc(`"scanners":["gosec","gosec"]`), "/features/sast/scanners/1", CodeDuplicate},
		{"scanners too many", sastDoc(`"scanners":["ast-grep","gitleaks","bandit","gosec","eslint","ruff","ruff"]`), "/features/sast/scanners", CodeTooMany},
		{"contextLines -1", sastDoc(`"contextLines":-1`), "/features/sast/contextLines", CodeOutOfRange},
		{"contextLines 1001", sastDoc(`"contextLines":1001`), "/features/sast/contextLines", CodeOutOfRange},
		{"maxFindings 0", sastDoc(`"maxFindings":0`), "/features/sast/maxFindings", CodeOutOfRange},
		{"maxFindings 25001", sastDoc(`"maxFindings":25001`), "/features/sast/maxFindings", CodeOutOfRange},
		{"uploadSarif null", sastDoc(`"uploadSarif":null`), "/features/sast/uploadSarif", CodeInvalidType},
		{"profile unknown", sastDoc(`"profile":"strict"`), "/features/sast/profile", CodeInvalidEnum},
		{"profile empty", sastDoc(`"profile":""`), "/features/sast/profile", CodeInvalidEnum},
		{"disabled rule unknown", sastDoc(`"disabledRules":["bandit:B999"]`), "/features/sast/disabledRules/0", CodeInvalidEnum},
		{"disabled rule without tool", sastDoc(`"disabledRules":["B101"]`), "/features/sast/disabledRules/0", CodeInvalidEnum},
		{"disabled rule of another tool", sastDoc(`"disabledRules":["ruff:B101"]`), "/features/sast/disabledRules/0", CodeInvalidEnum},
		{"disabled rule duplicate", sastDoc(`"disabledRules":["bandit:B101","bandit:B101"]`), "/features/sast/disabledRules/1", CodeDuplicate},
		{"disabled rules too many", sastDoc(`"disabledRules":` + list(MaxDisabledRules+1, func(i int) string { return fmt.Sprint("bandit:B", i) })), "/features/sast/disabledRules", CodeTooMany},
		{"test path invalid", sastDoc(`"testPaths":["/abs/**"]`), "/features/sast/testPaths/0", CodeInvalidPattern},
		{"test paths too many", sastDoc(`"testPaths":` + list(MaxPatterns+1, func(i int) string { return fmt.Sprint("p", i) })), "/features/sast/testPaths", CodeTooMany},
		{"byo name with a class prefix", sastDoc(`"byo":["byo:acme"]`), "/features/sast/byo/0", CodeInvalidEnum},
		{"byo name upper case", sastDoc(`"byo":["Acme"]`), "/features/sast/byo/0", CodeInvalidEnum},
		{"byo name a path", sastDoc(`"byo":["../acme"]`), "/features/sast/byo/0", CodeInvalidEnum},
		{"byo name empty", sastDoc(`"byo":[""]`), "/features/sast/byo/0", CodeInvalidEnum},
		{"byo name twice", sastDoc(`"byo":["acme","acme"]`), "/features/sast/byo/1", CodeDuplicate},
		{"byo too many", sastDoc(`"byo":` + list(sast.MaxBYOScanners+1, func(i int) string { return fmt.Sprint("s", i) })), "/features/sast/byo", CodeTooMany},
		{"byo not a list", sastDoc(`"byo":"acme"`), "/features/sast/byo", CodeInvalidType},

		{"acceptance mode unknown", `{"features":{"acceptance":{"mode":"strict"}}}`, "/features/acceptance/mode", CodeInvalidEnum},
		{"acceptance mode auto", `{"features":{"acceptance":{"mode":"auto"}}}`, "/features/acceptance/mode", CodeInvalidEnum},

		{"review mode auto", `{"features":{"review":{"mode":"auto"}}}`, "/features/review/mode", CodeInvalidEnum},
		{"review maxFindings 0", `{"features":{"review":{"maxFindings":0}}}`, "/features/review/maxFindings", CodeOutOfRange},
		{"review maxFindings 101", `{"features":{"review":{"maxFindings":101}}}`, "/features/review/maxFindings", CodeOutOfRange},
		{"review minSeverity", `{"features":{"review":{"minSeverity":"severe"}}}`, "/features/review/minSeverity", CodeInvalidEnum},
		{"review skipAuthors login", `{"features":{"review":{"skipAuthors":["a b"]}}}`, "/features/review/skipAuthors/0", CodeInvalidEnum},
		{"review skipAuthors duplicate", `{"features":{"review":{"skipAuthors":["Bot[bot]","bot[bot]"]}}}`, "/features/review/skipAuthors/1", CodeDuplicate},
		{"review pathFilters pattern", `{"features":{"review":{"pathFilters":["../x"]}}}`, "/features/review/pathFilters/0", CodeInvalidPattern},
		{"review instructions long", `{"features":{"review":{"instructions":"` + strings.Repeat("x", 4097) + `"}}}`, "/features/review/instructions", CodeTooLong},
		{"review instructions bidi", `{"features":{"review":{"instructions":"a\u202eb"}}}`, "/features/review/instructions", CodeInvalidCommand},
		{"review autoReview string", `{"features":{"review":{"autoReview":"yes"}}}`, "/features/review/autoReview", CodeInvalidType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			errs := fieldErrors(t, tt.doc)
			for _, e := range errs {
				if e.Path == tt.path && e.Code == tt.code {
					if e.Message == "" {
						t.Errorf("%s %s: empty message", e.Path, e.Code)
					}
					return
				}
			}
			t.Errorf("want %s %s, got %v", tt.path, tt.code, errs)
		})
	}
}

func TestParseAcceptsBounds(t *testing.T) {
	t.Parallel()
	label50 := strings.Repeat("é", MaxLabelChars) // characters, not bytes
	tests := []struct {
		name, doc string
		check     func(Policy) bool
	}{
		{"empty object", `{}`, func(p Policy) bool { return reflect.DeepEqual(p, Default()) }},
		{"whitespace around", " \n{ }\n ", func(p Policy) bool { return reflect.DeepEqual(p, Default()) }},
		{"label of 50 characters", fixDoc(`"triggerLabels":["` + label50 + `"]`), func(p Policy) bool { return p.Features.Fix.TriggerLabels[0] == label50 }},
		{"label with inner space", fixDoc(`"triggerLabels":["quavon fix"]`), func(p Policy) bool { return len(p.Features.Fix.TriggerLabels) == 1 }},
		{"empty lists are nil", fixDoc(`"triggerLabels":[],"deniedPaths":[]`), func(p Policy) bool {
			return p.Features.Fix.TriggerLabels == nil && p.Features.Fix.DeniedPaths == nil
		}},
		{"multi-line command", fixDoc(`"testCommand":"set -e\n\tmake test\nmake vet"`), func(p Policy) bool { return strings.Count(p.Features.Fix.TestCommand, "\n") == 2 }},
		{"command of 4096 bytes", fixDoc(`"lintCommand":"` + strings.Repeat("x", MaxCommandBytes) + `"`), func(p Policy) bool { return len(p.Features.Fix.LintCommand) == MaxCommandBytes }},
		{"command with shell syntax", fixDoc(`"testCommand":"cd app && go test ./... | tee /tmp/out <in"`), func(p Policy) bool { return p.Features.Fix.TestCommand != "" }},
		{"registries", fixDoc(`"egress":"registries","setupCommand":"npm ci","registries":["registry.npmjs.org","pypi.org"]`), func(p Policy) bool { return len(p.Features.Fix.Registries) == 2 }},
		{"patterns", fixDoc(`"deniedPaths":["**","**/*.snap","a?c/**/d*"],"allowedPaths":["src/**"]`), func(p Policy) bool { return len(p.Features.Fix.DeniedPaths) == 3 }},
		{"pattern of 512 bytes", fixDoc(`"deniedPaths":["` + strings.Repeat("a", MaxPatternBytes) + `"]`), func(p Policy) bool { return true }},
		{"caps at bounds", fixDoc(`"maxRunsPerIssuePerDay":20,"maxRunsPerDay":1`), func(p Policy) bool { return p.Features.Fix.MaxRunsPerIssuePerDay == 20 }},
		{"lowest setup and wall clock", fixDoc(`"limits":{"setupSeconds":1,"wallClockSeconds":10}`), func(p Policy) bool { return p.Features.Fix.Limits.SetupSeconds == 1 }},
		{"setup equals wall clock", fixDoc(`"limits":{"setupSeconds":3600,"wallClockSeconds":3600}`), func(p Policy) bool { return true }},
		{"contextLines 0", sastDoc(`"contextLines":0`), func(p Policy) bool { return p.Features.SAST.ContextLines == 0 }},
		{"one scanner", sastDoc(`"scanners":["gitleaks"]`), func(p Policy) bool {
			return reflect.DeepEqual(p.Features.SAST.Scanners, []sast.Tool{sast.ToolGitleaks})
		}},
		{"profile defaults to review", sastDoc(`"mode":"on"`), func(p Policy) bool { return p.Features.SAST.Profile == sast.ProfileReview }},
		{"audit profile, muted rules, test paths", sastDoc(`"profile":"audit","disabledRules":["bandit:B101","eslint:security/detect-object-injection","gitleaks:github-pat","ast-grep:quavon-python-weak-hash"],"testPaths":["qa/**","**/*_check.py"]`), func(p Policy) bool {
			return p.Features.SAST.Profile == sast.ProfileAudit && len(p.Features.SAST.DisabledRules) == 4 && len(p.Features.SAST.TestPaths) == 2
		}},
		{"byo scanners", sastDoc(`"byo":["acme-lint","corp.sec_2"]`), func(p Policy) bool {
			return reflect.DeepEqual(p.Features.SAST.BYO, []string{"acme-lint", "corp.sec_2"})
		}},
		{"scanners reordered", sastDoc(`"scanners":["ruff","gosec"]`), func(p Policy) bool { return p.Features.SAST.Scanners[0] == sast.ToolRuff }},
		{"every mode on", `{"features":{"fix":{"mode":"auto","reviewFixes":"commit"},"sast":{"mode":"on"},"acceptance":{"mode":"on"}}}`, func(p Policy) bool {
			return p.Features.Fix.Mode == FixAuto && p.Features.Fix.ReviewFixes == ReviewFixesCommit && p.Features.SAST.Mode == ModeOn
		}},
		{"partial object keeps other defaults", fixDoc(`"limits":{"maxSteps":5}`), func(p Policy) bool {
			l := p.Features.Fix.Limits
			return l.MaxSteps == 5 && l.MaxSandboxRuns == DefaultMaxSandboxRuns && l.MemoryBytes == DefaultMemoryBytes
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := mustParse(t, tt.doc)
			if !tt.check(p) {
				t.Errorf("unexpected policy %+v", p)
			}
			if errs := p.Validate(); len(errs) != 0 {
				t.Errorf("Validate after Parse: %v", errs)
			}
		})
	}
}

func TestParseStrictJSON(t *testing.T) {
	t.Parallel()
	deep := `{"features":{"x":` + strings.Repeat("[", 50) + strings.Repeat("]", 50) + `}}`
	tests := []struct {
		name, doc, path string
		code            Code
	}{
		{"unknown top-level", `{"verison":1}`, "/verison", CodeUnknownField},
		{"unknown feature", `{"features":{"lint":{}}}`, "/features/lint", CodeUnknownField},
		{"unknown fix field", fixDoc(`"modes":"auto"`), "/features/fix/modes", CodeUnknownField},
		{"unknown limit", fixDoc(`"limits":{"pids":10}`), "/features/fix/limits/pids", CodeUnknownField},
		{"key case differs", fixDoc(`"Mode":"auto"`), "/features/fix/Mode", CodeUnknownField},
		{"key escaped in pointer", `{"a/b~c":1}`, "/a~1b~0c", CodeUnknownField},
		{"duplicate top-level", `{"version":1,"version":1}`, "/version", CodeDuplicateKey},
		{"duplicate mode", fixDoc(`"mode":"off","mode":"auto"`), "/features/fix/mode", CodeDuplicateKey},
		{"duplicate object", `{"features":{"fix":{},"fix":{"mode":"auto"}}}`, "/features/fix", CodeDuplicateKey},
		{"duplicate unknown", `{"x":1,"x":2}`, "/x", CodeDuplicateKey},
		{"duplicate by escape", fixDoc(`"mode":"off","m\u006fde":"auto"`), "/features/fix/mode", CodeDuplicateKey},
		{"not an object", `[]`, "", CodeInvalidType},
		{"string document", `"{}"`, "", CodeInvalidType},
		{"null document", `null`, "", CodeInvalidType},
		{"empty document", ``, "", CodeInvalidJSON},
		{"syntax error", `{"version":1,}`, "", CodeInvalidJSON},
		{"unterminated", `{"features":{"fix":{`, "", CodeInvalidJSON},
		{"trailing object", `{}{}`, "", CodeInvalidJSON},
		{"trailing garbage", `{} x`, "", CodeInvalidJSON},
		{"comment", `{/* c */}`, "", CodeInvalidJSON},
		{"single quotes", `{'version':1}`, "", CodeInvalidJSON},
		{"invalid UTF-8", "{\"features\":{\"fix\":{\"testCommand\":\"make \xff\"}}}", "", CodeInvalidJSON},
		{"BOM", "\uFEFF{}", "", CodeInvalidJSON},
		{"too deep in unknown field", deep, "/features/x", CodeTooDeep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			errs := fieldErrors(t, tt.doc)
			for _, e := range errs {
				if e.Path == tt.path && e.Code == tt.code {
					return
				}
			}
			t.Errorf("want %q %s, got %v", tt.path, tt.code, errs)
		})
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	t.Parallel()
	errs := fieldErrors(t, `{"features":{"fix":{"mode":"x","egress":"y","bogus":1},"sast":{"maxFindings":0}}}`)
	var got []string
	for _, e := range errs {
		got = append(got, e.Path+" "+string(e.Code))
	}
	// Structural problems first (found while reading), then validation;
	// validation only runs on a well-formed document.
	want := []string{"/features/fix/bogus unknown_field"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("structural: got %v, want %v", got, want)
	}

	errs = fieldErrors(t, `{"features":{"fix":{"mode":"x","egress":"y"},"sast":{"maxFindings":0}}}`)
	got = got[:0]
	for _, e := range errs {
		got = append(got, e.Path+" "+string(e.Code))
	}
	want = []string{"/features/fix/mode invalid_enum", "/features/fix/egress invalid_enum", "/features/sast/maxFindings out_of_range"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("validation: got %v, want %v", got, want)
	}
}

func TestParseCapsErrors(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(`{`)
	for i := range 1000 {
		fmt.Fprintf(&b, `"k%d":1,`, i)
	}
	b.WriteString(`"z":1}`)
	errs := fieldErrors(t, b.String())
	if len(errs) != MaxErrors {
		t.Fatalf("got %d errors, want %d", len(errs), MaxErrors)
	}
	if last := errs[len(errs)-1]; last.Code != CodeTooMany {
		t.Errorf("last error %v, want %s", last, CodeTooMany)
	}

	// The same through a list of wrongly typed entries.
	errs = fieldErrors(t, fixDoc(`"triggerLabels":[`+strings.TrimSuffix(strings.Repeat("1,", 1000), ",")+`]`))
	if len(errs) != MaxErrors {
		t.Fatalf("list: got %d errors, want %d", len(errs), MaxErrors)
	}
}

func TestParseSizeCap(t *testing.T) {
	t.Parallel()
	pad := func(n int) []byte {
		doc := []byte(`{"version":1}`)
		return append(doc, bytes.Repeat([]byte(" "), n-len(doc))...)
	}
	if _, err := Parse(pad(MaxDocumentBytes)); err != nil {
		t.Errorf("document of exactly MaxDocumentBytes: %v", err)
	}
	errs := fieldErrors(t, string(pad(MaxDocumentBytes+1)))
	if len(errs) != 1 || errs[0].Code != CodeTooLarge || errs[0].Path != "" {
		t.Errorf("got %v, want one %s", errs, CodeTooLarge)
	}
}

func TestParseErrorsDoNotEchoCommands(t *testing.T) {
	t.Parallel()
	const tok = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	_, err := Parse([]byte(fixDoc(`"setupCommand":"npm ci --token ` + tok + `"`)))
	if err == nil {
		t.Fatal("accepted a command holding a token")
	}
	if strings.Contains(err.Error(), tok) {
		t.Errorf("error echoes the token: %v", err)
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	d := Default()
	if d.Features.Fix.Mode != FixOff {
		t.Errorf("fix mode %q, want off", d.Features.Fix.Mode)
	}
	if d.Features.Fix.ReviewFixes != ReviewFixesOff || d.Features.Fix.Egress != EgressNone || d.Features.Fix.AllowLockfiles {
		t.Errorf("fix defaults not the safe values: %+v", d.Features.Fix)
	}
	if d.Features.Fix.MaxRunsPerIssuePerDay != 2 || d.Features.Fix.MaxRunsPerDay != 5 {
		t.Errorf("caps %d/%d, want 2/5 (FX10)", d.Features.Fix.MaxRunsPerIssuePerDay, d.Features.Fix.MaxRunsPerDay)
	}
	if d.Features.Acceptance.Mode != ModeShadow {
		t.Errorf("acceptance mode %q, want shadow (AC3)", d.Features.Acceptance.Mode)
	}
	if d.Features.SAST.Mode != ModeShadow || !reflect.DeepEqual(d.Features.SAST.Scanners, sast.Tools) ||
		d.Features.SAST.ContextLines != 3 || d.Features.SAST.MaxFindings != 50 || d.Features.SAST.UploadSarif {
		t.Errorf("sast defaults: %+v", d.Features.SAST)
	}
	if errs := d.Validate(); len(errs) != 0 {
		t.Errorf("Default is invalid: %v", errs)
	}
	// Default hands out fresh slices: a caller's edit never leaks.
	d.Features.SAST.Scanners[0] = "x"
	if Default().Features.SAST.Scanners[0] != sast.Tools[0] || sast.Tools[0] != sast.ToolASTGrep {
		t.Error("Default shares its scanner list")
	}
	if !reflect.DeepEqual(mustParse(t, `{}`), Default()) {
		t.Error("Parse({}) differs from Default()")
	}
	if errs := (Policy{}).Validate(); len(errs) == 0 {
		t.Error("the zero Policy validates; it must not be mistaken for a policy")
	}
}

func TestMarshalGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file string
		p    Policy
	}{
		{"default.json", Default()},
		{"example.json", mustParse(t, docExample(t))},
	} {
		got, err := Marshal(tc.p)
		if err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("testdata", tc.file)
		if *update {
			if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run with -update)", err)
		}
		if !bytes.Equal(got, bytes.TrimSuffix(want, []byte("\n"))) {
			t.Errorf("Marshal differs from %s:\n got %s\nwant %s", golden, got, want)
		}
	}
}

func TestMarshalCanonical(t *testing.T) {
	t.Parallel()
	docs := []string{
		`{}`,
		docExample(t),
		// Same policy, different key order and spacing.
		`{"features":{"acceptance":{"mode":"on"},"fix":{"testCommand":"a && b <c>","mode":"approval"}},"version":1}`,
		`{ "version" : 1 , "features" : { "fix" : { "mode" : "approval" , "testCommand" : "a \u0026\u0026 b \u003cc\u003e" } , "acceptance" : { "mode" : "on" } } }`,
	}
	var outs [][]byte
	for _, doc := range docs {
		p := mustParse(t, doc)
		out, err := Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := Marshal(p)
		if !bytes.Equal(out, again) {
			t.Errorf("Marshal not stable:\n%s\n%s", out, again)
		}
		back := mustParse(t, string(out))
		if !reflect.DeepEqual(back, p) {
			t.Errorf("Parse(Marshal(p)) != p:\n%+v\n%+v", back, p)
		}
		if out2, _ := Marshal(back); !bytes.Equal(out, out2) {
			t.Errorf("Marshal(Parse(Marshal(p))) differs")
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, out); err != nil || !bytes.Equal(compact.Bytes(), out) || bytes.Contains(out, []byte("null")) {
			t.Errorf("not compact, or holds null: %s", out)
		}
		outs = append(outs, out)
	}
	if !bytes.Equal(outs[2], outs[3]) {
		t.Errorf("equal policies, different bytes:\n%s\n%s", outs[2], outs[3])
	}
	if !bytes.Contains(outs[2], []byte(`"a && b <c>"`)) {
		t.Errorf("HTML-escaped: %s", outs[2])
	}
}

func TestMarshalFillsNilListsAndRefusesInvalid(t *testing.T) {
	t.Parallel()
	out, err := Marshal(Default())
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Features struct{ Fix map[string]any }
	}
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"triggerLabels", "registries", "deniedPaths", "allowedPaths"} {
		if l, ok := m.Features.Fix[k].([]any); !ok || len(l) != 0 {
			t.Errorf("%s = %#v, want []", k, m.Features.Fix[k])
		}
	}

	p := Default()
	p.Features.Fix.Mode = "sometimes"
	_, err = Marshal(p)
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Errors[0].Path != "/features/fix/mode" {
		t.Errorf("Marshal of an invalid policy: %v", err)
	}
}

// docExample returns the JSON example of the package doc comment, so the
// documentation cannot drift from the schema.
func docExample(tb testing.TB) string {
	tb.Helper()
	src, err := os.ReadFile("doc.go")
	if err != nil {
		tb.Fatal(err)
	}
	var b strings.Builder
	in := false
	for line := range strings.Lines(string(src)) {
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "//\t{":
			in = true
		case !in:
			continue
		}
		b.WriteString(strings.TrimPrefix(line, "//\t") + "\n")
		if line == "//\t}" {
			return b.String()
		}
	}
	tb.Fatal("no JSON example in doc.go")
	return ""
}

func TestDocExample(t *testing.T) {
	t.Parallel()
	doc := docExample(t)
	p := mustParse(t, doc)
	f := p.Features.Fix
	if f.Mode != FixApproval || f.Egress != EgressRegistries || f.SetupCommand != "npm ci" || len(f.DeniedPaths) != 2 {
		t.Errorf("example parsed to %+v", f)
	}
	// The example claims to spell out every field: its keys are exactly
	// the canonical form's.
	var ex, canon any
	if err := json.Unmarshal([]byte(doc), &ex); err != nil {
		t.Fatal(err)
	}
	out, _ := Marshal(p)
	if err := json.Unmarshal(out, &canon); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ex, canon) {
		t.Errorf("doc example is not the canonical form of itself:\n%s\n%s", doc, out)
	}
}
