package sast

import (
	"cmp"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Profile chooses which findings a report keeps.
type Profile string

// Profiles.
const (
	// ProfileReview is what is posted on pull requests (the default): the
	// rule tables' treatments apply (audit hints dropped or downgraded,
	// a reduced rule set in test files).
	ProfileReview Profile = "review"
	// ProfileAudit is everything, at the weaknesses' severities: for
	// `quavon scan --profile audit`, SARIF uploads and the dashboard.
	ProfileAudit Profile = "audit"
)

// Profiles lists the profiles, the default first.
var Profiles = []Profile{ProfileReview, ProfileAudit}

// Valid reports whether p is a profile ("" is not; it means the default
// only in Options).
func (p Profile) Valid() bool { return slices.Contains(Profiles, p) }

// testDirs are directory names that hold tests or their fixtures in the
// languages the scanners cover.
var testDirs = map[string]bool{
	"test": true, "tests": true, "testdata": true, "testing_data": true, "__tests__": true,
	"__mocks__": true, "__fixtures__": true, "fixtures": true, "spec": true, "e2e": true,
}

// jsTestFile matches JavaScript and TypeScript test files by name.
var jsTestFile = regexp.MustCompile(`\.(test|spec|e2e)\.(js|jsx|mjs|cjs|ts|tsx|mts|cts)$`)

// IsTestPath reports whether p (a repository path) is a test by its
// language's conventions: Go's *_test.go and testdata/; Python's
// test_*.py, *_test.py, tests.py and conftest.py; JavaScript's and
// TypeScript's *.test.*, *.spec.*; and any file beneath a test, tests,
// testdata, __tests__, __mocks__, __fixtures__, fixtures, spec or e2e
// directory. Case-insensitive.
func IsTestPath(p string) bool {
	p = strings.ToLower(p)
	dir, base := path.Split(p)
	for _, seg := range strings.Split(strings.TrimSuffix(dir, "/"), "/") {
		if testDirs[seg] {
			return true
		}
	}
	switch {
	case strings.HasSuffix(base, "_test.go"):
		return true
	case strings.HasSuffix(base, ".py") || strings.HasSuffix(base, ".pyi"):
		stem := strings.TrimSuffix(strings.TrimSuffix(base, ".py"), ".pyi")
		return strings.HasPrefix(stem, "test_") || strings.HasSuffix(stem, "_test") || stem == "tests" || stem == "conftest"
	}
	return jsTestFile.MatchString(base)
}

// muteReason says why the profile leaves f out ("" keeps it) and the
// severity it keeps it at. line is the first line of f's statement.
func (o Options) muteReason(f Finding, line string) (string, Severity) {
	if slices.Contains(o.DisabledRules, QualifiedRule(f.Tool, f.RuleID)) {
		return "disabled by the repository's policy", f.Severity
	}
	if o.Profile == ProfileAudit {
		return "", f.Severity
	}
	rc, ok := Classify(f.Tool, f.RuleID)
	if !ok {
		return "", f.Severity
	}
	t, why := rc.Review, rc.Reason
	if o.isTest(f.Path) && rc.InTests != Keep {
		t, why = rc.InTests, rc.TestReason
	}
	switch t {
	case Drop:
		return why, f.Severity
	case Downgrade:
		return "", SeverityLow
	}
	if f.hint != "" {
		return f.hint, f.Severity
	}
	if len(rc.DropOnLine) > 0 && hasWord(line, rc.DropOnLine) {
		return rc.LineReason, f.Severity
	}
	return "", f.Severity
}

// isTest reports whether p is a test file (conventions or the caller's).
func (o Options) isTest(p string) bool {
	return IsTestPath(p) || (o.TestPath != nil && o.TestPath(p))
}

// hasWord reports whether line holds one of words as a whole word, ignoring
// case.
func hasWord(line string, words []string) bool {
	fields := strings.FieldsFunc(strings.ToLower(line), func(r rune) bool {
		return !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
	for _, w := range words {
		if slices.Contains(fields, w) {
			return true
		}
	}
	return false
}

// ValidateDisabledRules returns the entries of rules that name no rule the
// shipped tools can emit.
func ValidateDisabledRules(rules []string) []string {
	var bad []string
	for _, r := range rules {
		if _, _, ok := ParseQualifiedRule(r); !ok {
			bad = append(bad, r)
		}
	}
	return bad
}

// Group is the findings of one weakness that start on the same line of
// the same file, from one or more tools: one finding for a reader.
type Group struct {
	// Weakness is the members' weakness ("" for a rule the tables do not
	// know: such a finding is a group of its own).
	Weakness WeaknessID `json:"weakness,omitempty"`
	// Severity is the most severe member's.
	Severity  Severity `json:"severity"`
	Path      string   `json:"path"`
	StartLine int      `json:"startLine"`
	// Tools lists every tool that reported it (scanner table order);
	// Rules every rule, qualified ("tool:rule"), sorted.
	Tools []Tool   `json:"tools"`
	Rules []string `json:"rules"`
	// Findings are the members, most severe first (in input order among
	// equals); the first is the one to show.
	Findings []Finding `json:"findings"`
}

// subsumedBy lists, for a broad weakness, the specific ones that say the
// same about a line and more: a finding of the broad one joins a group of
// a specific one on its line (gosec's G204 "command with a variable"
// beside G702 "command injection" is one finding).
var subsumedBy = map[WeaknessID][]WeaknessID{
	"process-start":           {"command-injection", "argument-injection"},
	"dynamic-module-load":     {"code-injection"},
	"dynamic-property-access": {"prototype-pollution"},
}

// GroupFindings joins findings of the same weakness that start on the
// same line of the same file into one Group listing every tool (a finding
// of a broad weakness joins a group of a weakness that subsumes it, see
// subsumedBy). Groups come in the order of their first member (a
// Report's order: most severe first). This is the one place findings from several tools are joined:
// `quavon scan` and the review runs use it.
func GroupFindings(fs []Finding) []Group {
	type key struct {
		path     string
		line     int
		weakness WeaknessID
		rule     string
	}
	present := map[key]bool{}
	for _, f := range fs {
		present[key{f.Path, f.StartLine, f.Weakness, ""}] = true
	}
	at := map[key]int{}
	var out []Group
	for _, f := range fs {
		k := key{f.Path, f.StartLine, f.Weakness, ""}
		for _, w := range subsumedBy[f.Weakness] {
			if present[key{f.Path, f.StartLine, w, ""}] {
				k.weakness = w
				break
			}
		}
		if f.Weakness == "" {
			k.rule = QualifiedRule(f.Tool, f.RuleID)
		}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, Group{Weakness: k.weakness, Severity: f.Severity, Path: f.Path, StartLine: f.StartLine})
		}
		g := &out[i]
		g.Findings = append(g.Findings, f)
		if severityRank[f.Severity] < severityRank[g.Severity] {
			g.Severity = f.Severity
		}
		if !slices.Contains(g.Tools, f.Tool) {
			g.Tools = append(g.Tools, f.Tool)
		}
		if r := QualifiedRule(f.Tool, f.RuleID); !slices.Contains(g.Rules, r) {
			g.Rules = append(g.Rules, r)
		}
	}
	for i := range out {
		slices.SortStableFunc(out[i].Findings, func(a, b Finding) int {
			return cmp.Compare(severityRank[a.Severity], severityRank[b.Severity])
		})
		slices.SortFunc(out[i].Tools, func(a, b Tool) int { return cmp.Compare(toolIndex(a), toolIndex(b)) })
		slices.Sort(out[i].Rules)
	}
	return out
}

func toolIndex(t Tool) int {
	for i, s := range scanners {
		if s.Tool == t {
			return i
		}
	}
	return len(scanners)
}
