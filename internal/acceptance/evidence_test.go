package acceptance

import (
	"strings"
	"testing"
)

var testDiff = Diff{
	Files: map[string]FileChange{
		"api/users.go":      {Lines: []LineRange{{Start: 10, End: 12}, {Start: 30, End: 30}, {Start: 37, End: 40}}},
		"api/users_test.go": {Lines: []LineRange{{Start: 1, End: 80}}},
		"old/legacy.go":     {Deleted: true},
		"docs/api.md":       {Lines: nil}, // only lost lines
	},
	TestFiles: map[string]int{"api/store_test.go": 120, "api/helpers.go": 50},
}

func crit(id, text string) Criterion { return Criterion{ID: id, Source: SourceChecklist, Text: text} }

func verifyOne(c Criterion, j Judgement) Verdict {
	return Verify([]Criterion{c}, Answer{Criteria: []Judgement{j}}, testDiff, VerifyOptions{}).Verdicts[0]
}

func TestVerifyLocations(t *testing.T) {
	t.Parallel()
	plain := crit("c-1", "GET /users/{id} returns 404 for a missing user")
	aboutTests := crit("c-1", "Unit tests cover the missing-user case")
	cases := []struct {
		name string
		c    Criterion
		loc  Location
		ok   bool
	}{
		{"changed lines", plain, Location{Path: "api/users.go", StartLine: 10, EndLine: 12}, true},
		{"one changed line", plain, Location{Path: "api/users.go", StartLine: 30, EndLine: 30}, true},
		{"context around a change", plain, Location{Path: "api/users.go", StartLine: 7, EndLine: 15}, true},
		{"too much context before", plain, Location{Path: "api/users.go", StartLine: 6, EndLine: 12}, false},
		{"too much context after", plain, Location{Path: "api/users.go", StartLine: 10, EndLine: 16}, false},
		{"context only, no changed line", plain, Location{Path: "api/users.go", StartLine: 13, EndLine: 15}, false},
		{"two hunks within context of each other", plain, Location{Path: "api/users.go", StartLine: 30, EndLine: 40}, true},
		{"two hunks far apart", plain, Location{Path: "api/users.go", StartLine: 10, EndLine: 30}, false},
		{"whole file", plain, Location{Path: "api/users.go"}, true},
		{"unchanged lines of a changed file", plain, Location{Path: "api/users.go", StartLine: 100, EndLine: 120}, false},
		{"file outside the diff", plain, Location{Path: "SECURITY.md"}, false},
		{"lines outside the diff", plain, Location{Path: "main.go", StartLine: 1, EndLine: 3}, false},
		{"deleted file", plain, Location{Path: "old/legacy.go"}, true},
		{"lines of a deleted file", plain, Location{Path: "old/legacy.go", StartLine: 1, EndLine: 1}, false},
		{"file that only lost lines", plain, Location{Path: "docs/api.md"}, true},
		{"lines of a file that only lost lines", plain, Location{Path: "docs/api.md", StartLine: 1}, false},
		{"leading ./", plain, Location{Path: "./api/users.go"}, false},
		{"absolute", plain, Location{Path: "/api/users.go"}, false},
		{"dot-dot", plain, Location{Path: "api/../api/users.go"}, false},
		{"escape", plain, Location{Path: "../api/users.go"}, false},
		{"backslash", plain, Location{Path: "api\\users.go"}, false},
		{"case", plain, Location{Path: "API/users.go"}, false},
		{"git prefix", plain, Location{Path: "b/api/users.go"}, false},
		{"NUL", plain, Location{Path: "api/users.go\x00"}, false},
		{"bad range", plain, Location{Path: "api/users.go", StartLine: 12, EndLine: 10}, false},
		{"negative start", plain, Location{Path: "api/users.go", StartLine: -1, EndLine: 10}, false},
		// Test criteria may cite listed, unchanged test files.
		{"test criterion, listed test file", aboutTests, Location{Path: "api/store_test.go"}, true},
		{"test criterion, listed test file lines", aboutTests, Location{Path: "api/store_test.go", StartLine: 100, EndLine: 120}, true},
		{"test criterion, past the file's end", aboutTests, Location{Path: "api/store_test.go", StartLine: 100, EndLine: 121}, false},
		{"test criterion, listed file that is not a test", aboutTests, Location{Path: "api/helpers.go"}, false},
		{"test criterion, unlisted test file", aboutTests, Location{Path: "api/other_test.go"}, false},
		{"plain criterion, listed test file", plain, Location{Path: "api/store_test.go"}, false},
		{"test criterion, changed test file lines", aboutTests, Location{Path: "api/users_test.go", StartLine: 5, EndLine: 9}, true},
	}
	for _, c := range cases {
		v := verifyOne(c.c, Judgement{ID: "c-1", Status: StatusMet, Evidence: []Location{c.loc}})
		want := StatusUnclear
		if c.ok {
			want = StatusMet
		}
		if v.Status != want || (c.ok != (len(v.Evidence) == 1)) || (c.ok == (v.Rejected == 1)) {
			t.Errorf("%s: %+v", c.name, v)
		}
		if !c.ok && v.Note != NoteOutsideDiff {
			t.Errorf("%s: note %q", c.name, v.Note)
		}
	}
}

func TestVerifyStatuses(t *testing.T) {
	t.Parallel()
	good := []Location{{Path: "api/users.go", StartLine: 10, EndLine: 12}}
	bad := []Location{{Path: "SECURITY.md"}}
	mixed := append(append([]Location(nil), good...), bad...)
	c := crit("c-1", "x")
	cases := []struct {
		name    string
		j       Judgement
		status  Status
		note    Note
		nVerify int
	}{
		{"met with evidence", Judgement{ID: "c-1", Status: StatusMet, Evidence: good}, StatusMet, "", 1},
		{"met without evidence", Judgement{ID: "c-1", Status: StatusMet}, StatusUnclear, NoteNoEvidence, 0},
		{"met with one bad location", Judgement{ID: "c-1", Status: StatusMet, Evidence: mixed}, StatusUnclear, NoteOutsideDiff, 1},
		{"unmet without evidence", Judgement{ID: "c-1", Status: StatusUnmet}, StatusUnmet, "", 0},
		{"unmet with evidence", Judgement{ID: "c-1", Status: StatusUnmet, Evidence: good}, StatusUnmet, "", 1},
		{"unmet with bad evidence", Judgement{ID: "c-1", Status: StatusUnmet, Evidence: bad}, StatusUnclear, NoteOutsideDiff, 0},
		{"unclear", Judgement{ID: "c-1", Status: StatusUnclear, Evidence: good}, StatusUnclear, "", 1},
		{"invalid status", Judgement{ID: "c-1", Status: "passed", Evidence: good}, StatusUnclear, NoteNoAnswer, 1},
	}
	for _, tc := range cases {
		v := verifyOne(c, tc.j)
		if v.Status != tc.status || v.Note != tc.note || len(v.Evidence) != tc.nVerify || v.Claimed != tc.j.Status || v.CriterionID != "c-1" {
			t.Errorf("%s: %+v", tc.name, v)
		}
	}
}

func TestVerifyAnswerCoverage(t *testing.T) {
	t.Parallel()
	criteria := []Criterion{crit("c-1", "a"), crit("c-2", "b"), crit("c-3", "c")}
	ans := Answer{Criteria: []Judgement{
		{ID: "c-3", Status: StatusUnmet},
		{ID: "c-9", Status: StatusMet, Evidence: []Location{{Path: "api/users.go"}}},
		{ID: "c-1", Status: StatusMet, Evidence: []Location{{Path: "api/users.go"}}},
		{ID: "c-1", Status: StatusUnmet}, // a repeat (DecodeAnswer refuses it): the first counts
	}}
	got := Verify(criteria, ans, testDiff, VerifyOptions{})
	if len(got.Verdicts) != 3 || got.Unknown != 1 {
		t.Fatalf("%+v", got)
	}
	want := []struct {
		id     string
		status Status
		note   Note
	}{{"c-1", StatusMet, ""}, {"c-2", StatusUnclear, NoteNoAnswer}, {"c-3", StatusUnmet, ""}}
	for i, w := range want {
		if v := got.Verdicts[i]; v.CriterionID != w.id || v.Status != w.status || v.Note != w.note {
			t.Errorf("verdict %d: %+v", i, v)
		}
	}
	if met, unmet, unclear := got.Counts(); met != 1 || unmet != 1 || unclear != 1 {
		t.Fatalf("counts %d %d %d", met, unmet, unclear)
	}
	// A refused answer is verified as the empty one: all unclear.
	empty := Verify(criteria, Answer{}, testDiff, VerifyOptions{})
	if met, unmet, unclear := empty.Counts(); met != 0 || unmet != 0 || unclear != 3 {
		t.Fatalf("empty answer: %+v", empty)
	}
}

func TestVerifyContextOption(t *testing.T) {
	t.Parallel()
	c := crit("c-1", "x")
	j := Judgement{ID: "c-1", Status: StatusMet, Evidence: []Location{{Path: "api/users.go", StartLine: 5, EndLine: 12}}}
	if v := Verify([]Criterion{c}, Answer{Criteria: []Judgement{j}}, testDiff, VerifyOptions{ContextLines: 5}).Verdicts[0]; v.Status != StatusMet {
		t.Fatalf("context 5: %+v", v)
	}
	if v := verifyOne(c, j); v.Status != StatusUnclear {
		t.Fatalf("default context: %+v", v)
	}
}

func TestVerifyReason(t *testing.T) {
	t.Parallel()
	c := crit("c-1", "x")
	long := strings.Repeat("é", 1000)
	v := verifyOne(c, Judgement{ID: "c-1", Status: StatusUnclear, Reason: "line one\nline two\t\x1b[31mred\x07 \u202eevil\u200b " + long})
	if strings.ContainsAny(v.Reason, "\n\t\x1b\x07\u202e\u200b") || len(v.Reason) > DefaultMaxReasonBytes || !strings.HasPrefix(v.Reason, "line one line two [31mred evil é") || !strings.HasSuffix(v.Reason, "…") {
		t.Fatalf("reason %q (%d bytes)", v.Reason, len(v.Reason))
	}
	v = Verify([]Criterion{c}, Answer{Criteria: []Judgement{{ID: "c-1", Status: StatusUnclear, Reason: "abcdefghijklmnopqrstuvwxyz"}}}, testDiff, VerifyOptions{MaxReasonBytes: 10}).Verdicts[0]
	if len(v.Reason) > 10 {
		t.Fatalf("MaxReasonBytes 10: %q", v.Reason)
	}
}

func TestAboutTests(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]bool{
		"Unit tests cover the new endpoint":  true,
		"It is tested against Postgres 15":   true,
		"Add a TEST for the parser":          true,
		"unit-tests pass":                    true,
		"Coverage does not drop":             true,
		"The decoder has a fuzz target":      true,
		"The latest release is used":         false,
		"Attestation is signed":              false,
		"Contest entries are listed":         false,
		"The API returns 404":                false,
		"Testimonials are shown on the page": false,
	} {
		if got := AboutTests(Criterion{Text: text}); got != want {
			t.Errorf("%q: %v", text, got)
		}
	}
	if !AboutTests(Criterion{Text: "covers the empty case", Context: "Tests"}) {
		t.Error("context not read")
	}
}

func TestIsTestPath(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]bool{
		"internal/acceptance/link_test.go": true,
		"internal/acceptance/link.go":      false,
		"tests/test_api.py":                true,
		"pkg/test_api.py":                  true,
		"pkg/api_test.py":                  true,
		"pkg/api.py":                       false,
		"src/user.test.ts":                 true,
		"src/user.spec.jsx":                true,
		"src/user.ts":                      false,
		"src/__tests__/user.js":            true,
		"spec/models/user_spec.rb":         true,
		"app/models/user.rb":               false,
		"src/test/java/UserTest.java":      true,
		"src/main/java/UserTests.java":     true,
		"src/main/java/User.java":          false,
		"app/UserTest.kt":                  true,
		"App.Tests/UserTests.cs":           true,
		"tests/Unit/UserTest.php":          true,
		"features/login.feature":           true,
		"internal/x/testdata/in.json":      true,
		"e2e/login.js":                     true,
		"Test/readme.md":                   true,
		"contest/main.go":                  false,
		"latest/main.go":                   false,
		"attest.go":                        false,
	} {
		if got := IsTestPath(p); got != want {
			t.Errorf("%q: %v", p, got)
		}
	}
}
