package acceptance

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// summary renders criteria as "source [section] context › text" lines
// ("x" marks a ticked box) for compact expectations.
func summary(e Extraction) []string {
	var out []string
	for _, c := range e.Criteria {
		s := string(c.Source)
		if c.Checked {
			s += " x"
		}
		if c.Section != "" {
			s += " [" + c.Section + "]"
		}
		if c.Context != "" {
			s += " " + c.Context + " ›"
		}
		out = append(out, s+" "+strings.ReplaceAll(c.Text, "\n", " / "))
	}
	return out
}

func expectCriteria(t *testing.T, name, body string, want ...string) Extraction {
	t.Helper()
	e := Extract(body, Limits{})
	if got := summary(e); !slices.Equal(got, want) {
		t.Errorf("%s:\n got %q\nwant %q", name, got, want)
	}
	return e
}

func TestExtractChecklists(t *testing.T) {
	t.Parallel()
	expectCriteria(t, "anywhere", "Intro text.\n\n- [ ] one\n- [x] two\n* [X] three\n+ [ ] four\n\n1. [ ] five\n2) [ ] six\n\nMore prose.\n\n## Notes\n\n- [ ] seven\n- not a box\n",
		"checklist one", "checklist x two", "checklist x three", "checklist four", "checklist five", "checklist six", "checklist seven")
	expectCriteria(t, "loose list", "- [ ] one\n\n- [ ] two\n\n  second paragraph of two\n",
		"checklist one", "checklist two second paragraph of two")
	expectCriteria(t, "not boxes", "- [] no\n- [ ]\n- [y] no\n\n[ ] no list\n")
	expectCriteria(t, "inline markup", "- [ ] `GET /users/{id}` returns **404** for a [missing](https://x.test) user &amp; logs \\*once\\*\n",
		"checklist GET /users/{id} returns 404 for a missing user & logs *once*")
}

func TestExtractNested(t *testing.T) {
	t.Parallel()
	expectCriteria(t, "checklist with details and sub-boxes",
		"- [ ] Login works\n  - with password\n  - with SSO\n  - [ ] sub-box\n    - deeper detail\n- Backend\n  - [ ] migrations run\n",
		"checklist Login works — with password; with SSO",
		"checklist Login works › sub-box — deeper detail",
		"checklist Backend › migrations run")
	expectCriteria(t, "section: parents are context",
		"## Acceptance criteria\n- Login:\n  - with password\n  - with SSO\n    1. and MFA\n- [ ] boxed parent\n  - child\n- leaf\n",
		"section [Acceptance criteria] Login › with password",
		"section [Acceptance criteria] Login › with SSO › and MFA",
		"checklist [Acceptance criteria] boxed parent",
		"section [Acceptance criteria] boxed parent › child",
		"section [Acceptance criteria] leaf")
}

func TestExtractHeadingsEveryLevel(t *testing.T) {
	t.Parallel()
	for level := 1; level <= 6; level++ {
		h := strings.Repeat("#", level)
		body := fmt.Sprintf("%s Acceptance criteria\n- a\n- b\n%s Other\n- c\n", h, h)
		expectCriteria(t, h, body, "section [Acceptance criteria] a", "section [Acceptance criteria] b")
		// A deeper heading stays inside the section and gives context.
		if level < 6 {
			body = fmt.Sprintf("%s Definition of Done\n%s# API\n- a\n%s Next\n- c\n", h, h, h)
			expectCriteria(t, h+" nested", body, "section [Definition of Done] API › a")
		}
	}
	expectCriteria(t, "setext 1", "Acceptance criteria\n===\n- a\n", "section [Acceptance criteria] a")
	expectCriteria(t, "setext 2", "Definition of done\n---\n- a\n\nOther\n---\n- b\n", "section [Definition of done] a")
	expectCriteria(t, "higher heading closes", "### Acceptance criteria\n- a\n## Notes\n- b\n#### more\n- c\n", "section [Acceptance criteria] a")
	expectCriteria(t, "nested criteria headings",
		"## Acceptance criteria\n### Definition of done\n- a\n### Notes\n- b\n## Out\n- c\n",
		"section [Definition of done] a", "section [Acceptance criteria] Notes › b")
}

func TestExtractHeadingVariants(t *testing.T) {
	t.Parallel()
	for _, h := range []string{
		"Acceptance criteria", "Acceptance Criteria:", "ACCEPTANCE CRITERIA", "acceptance-criteria",
		"✅ Acceptance criteria", "3. Acceptance criteria", "Acceptance criteria (draft)", "Acceptance criterion",
		"**Acceptance criteria**", "Acceptance tests", "Acceptance conditions", "AC", "ACs",
		"Definition of Done", "Definition-of-Done", "DoD", "Done when", "Done criteria", "Exit criteria",
		"Success criteria", "Criteria", "🎯 Definition of done (v2)",
	} {
		e := Extract("## "+h+"\n- the item\n", Limits{})
		if len(e.Criteria) != 1 || e.Criteria[0].Text != "the item" || e.Criteria[0].Source != SourceSection {
			t.Errorf("%q: %q", h, summary(e))
		}
	}
	for _, h := range []string{
		"Acceptance criteria are unclear", "Background", "Requirements", "Tasks", "Not acceptance criteria", "Criteria for later",
	} {
		if e := Extract("## "+h+"\n- the item\n", Limits{}); len(e.Criteria) != 0 {
			t.Errorf("%q: %q", h, summary(e))
		}
	}
}

func TestExtractPseudoHeadings(t *testing.T) {
	t.Parallel()
	expectCriteria(t, "bold", "**Acceptance criteria**\n- a\n- b\n\nSome prose.\n\n- c\n",
		"section [Acceptance criteria] a", "section [Acceptance criteria] b")
	expectCriteria(t, "bold with colon outside", "**Definition of Done**:\n1. a\n", "section [Definition of Done] a")
	expectCriteria(t, "plain with colon", "Acceptance criteria:\n- a\n\n---\n- b\n", "section [Acceptance criteria] a")
	expectCriteria(t, "another bold closes", "*Acceptance criteria*\n- a\n\n**Notes**\n- b\n", "section [Acceptance criteria] a")
	expectCriteria(t, "plain without colon is prose", "Acceptance criteria\n\n- a\n")
	expectCriteria(t, "bold inside a sentence", "The **acceptance criteria** are below.\n- a\n")
	expectCriteria(t, "bold inside a real section does not end it", "## Acceptance criteria\n**Backend**\n- a\n", "section [Acceptance criteria] a")
}

func TestExtractProseSection(t *testing.T) {
	t.Parallel()
	expectCriteria(t, "paragraphs", "## Acceptance criteria\nThe API returns 404\nfor a missing user.\n\nThe error is logged once.\n\n## Notes\nNot this.\n",
		"section [Acceptance criteria] The API returns 404 for a missing user.",
		"section [Acceptance criteria] The error is logged once.")
	expectCriteria(t, "intro paragraph with a list is not a criterion", "## Acceptance criteria\nThe following must hold:\n- a\n", "section [Acceptance criteria] a")
}

func TestExtractGherkinFenced(t *testing.T) {
	t.Parallel()
	body := "## Behaviour\n\n```gherkin\n@export\nFeature: Export\n  Background:\n    Given a report\n\n  Scenario: CSV\n    When I export as CSV\n    Then a file is written\n\n  Rule: PDFs are signed\n    Scenario Outline: export as <fmt>\n      When I export as <fmt>\n      Then the file is signed\n      Examples:\n        | fmt |\n        | pdf |\n```\n"
	expectCriteria(t, "feature", body,
		"gherkin Feature: Export › Scenario: CSV / Given a report / When I export as CSV / Then a file is written",
		"gherkin Feature: Export › Rule: PDFs are signed › Scenario Outline: export as <fmt> / Given a report / When I export as <fmt> / Then the file is signed / Examples: / | fmt | / | pdf |")
	expectCriteria(t, "no Feature line, other tags", "~~~Cucumber\nScenario: a\n  Given b\n  Then c\n~~~\n\n```feature\nScenario: d\n  * e\n```\n",
		"gherkin Scenario: a / Given b / Then c", "gherkin Scenario: d / * e")
	expectCriteria(t, "tables and doc strings", "```gherkin\nScenario: t\n  Given users:\n    | name |\n    | ann  |\n  Then the log says\n    \"\"\"\n    hello\n    \"\"\"\n```\n",
		"gherkin Scenario: t / Given users: / | name | / | ann | / Then the log says / hello")
	expectCriteria(t, "in a section", "## Acceptance criteria\n```gherkin\nScenario: a\n  Given b\n```\n", "gherkin [Acceptance criteria] Scenario: a / Given b")
	expectCriteria(t, "in a list item", "- [ ] behaves:\n  ```gherkin\n  Scenario: a\n    Given b\n  ```\n", "checklist behaves:", "gherkin Scenario: a / Given b")
	e := expectCriteria(t, "parse error", "```gherkin\nScenario: a\n  Given b\n    | x | y |\n    | z |\n```\n")
	if e.GherkinErrors != 1 {
		t.Errorf("gherkin errors %d", e.GherkinErrors)
	}
	expectCriteria(t, "other language header", "```gherkin\n# language: de\nFunktionalität: Export\n  Szenario: CSV\n    Angenommen ein Bericht\n    Dann eine Datei\n```\n",
		"gherkin Funktionalität: Export › Szenario: CSV / Angenommen ein Bericht / Dann eine Datei")
}

func TestExtractGherkinPlain(t *testing.T) {
	t.Parallel()
	expectCriteria(t, "feature and scenarios", "Feature: Login\n\nScenario: good password\n  Given a user\n  When they log in\n  Then they see the dashboard\n\nScenario: bad password\nGiven a user\nThen they see an error\n\nAfter the scenarios.\n",
		"gherkin Feature: Login › Scenario: good password / Given a user / When they log in / Then they see the dashboard",
		"gherkin Feature: Login › Scenario: bad password / Given a user / Then they see an error")
	expectCriteria(t, "bare steps", "Given a user\nWhen they log in\nThen they see the dashboard\n", "gherkin Scenario / Given a user / When they log in / Then they see the dashboard")
	expectCriteria(t, "given without then is prose", "Given the time we have, we should ship it.\n")
	expectCriteria(t, "tags first", "@smoke\nScenario: s\n  Given a\n", "gherkin Scenario: s / Given a")
	expectCriteria(t, "indented is code", "Intro.\n\n    Scenario: s\n      Given a\n")
}

func TestExtractFencesThatLookLikeCriteria(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		"```\n## Acceptance criteria\n- [ ] forged\n```\n",
		"```markdown\n- [ ] forged\n```\n",
		"~~~md\n## Definition of Done\n- forged\n~~~\n",
		"````\n```gherkin\nScenario: forged\n  Given x\n```\n````\n",
		"Intro.\n\n    - [ ] forged (indented code)\n",
		"- item\n\n  ```\n  - [ ] forged in an item's fence\n  ```\n",
		"```text\nScenario: forged\n  Given x\n  Then y\n```\n",
		"`- [ ] forged in a code span`\n",
		"| a | b |\n|---|---|\n| - [ ] forged | x |\n",
	} {
		if e := Extract(body, Limits{}); len(e.Criteria) != 0 {
			t.Errorf("%q: %q", body, summary(e))
		}
	}
}

func TestExtractHTML(t *testing.T) {
	t.Parallel()
	expectCriteria(t, "comment block", "<!--\n## Acceptance criteria\n- [ ] hidden\n\n- [ ] still hidden\n-->\n- [ ] visible\n", "checklist visible")
	expectCriteria(t, "inline comment", "- [ ] visible <!-- hidden --> text\n", "checklist visible text")
	expectCriteria(t, "details without blank lines is HTML", "<details>\n- [ ] in the HTML block\n</details>\n")
	expectCriteria(t, "details with Markdown inside", "<details>\n<summary>More</summary>\n\n- [ ] rendered as a list\n\n</details>\n", "checklist rendered as a list")
	expectCriteria(t, "unterminated comment is text", "- [ ] visible <!-- not closed\n", "checklist visible <!-- not closed")
	expectCriteria(t, "raw html checkbox", "<input type=\"checkbox\"> not a task\n")
}

func TestExtractQuotedReplies(t *testing.T) {
	t.Parallel()
	expectCriteria(t, "quoted section and boxes",
		"On Tue, Ann wrote:\n> ## Acceptance criteria\n> - [ ] quoted box\n> - quoted item\n\n- [ ] real box\n",
		"checklist real box")
	expectCriteria(t, "quote in a list item", "- [ ] real\n  > - [ ] quoted inside\n", "checklist real")
	expectCriteria(t, "quoted gherkin", "> Scenario: quoted\n> Given a\n> Then b\n")
	expectCriteria(t, "heading in a quote opens nothing", "> ## Acceptance criteria\n\n- a\n")
	expectCriteria(t, "nested quotes", ">> - [ ] deep\n")
}

func TestExtractStrikethroughAndCleaning(t *testing.T) {
	t.Parallel()
	expectCriteria(t, "struck", "- [ ] ~~removed~~\n- [ ] keep ~~old~~ new\n", "checklist keep new")
	expectCriteria(t, "control and format characters", "- [ ] a\x01b\u202ec\u200bd\ufeff e\n", "checklist abcd e")
	e := Extract("- [ ] caf\xe9 \xff\n", Limits{})
	if len(e.Criteria) != 1 || !utf8.ValidString(e.Criteria[0].Text) {
		t.Fatalf("invalid UTF-8: %q", summary(e))
	}
	expectCriteria(t, "NUL", "- [ ] a\x00b\n", "checklist a\ufffdb")
}

func TestExtractCaps(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := 0; b.Len() < DefaultMaxBodyBytes+1000; i++ {
		fmt.Fprintf(&b, "- [ ] item %d\n", i)
	}
	huge := b.String()
	e := Extract(huge, Limits{})
	if !e.BodyTruncated || len(e.Criteria) != DefaultMaxCriteria || e.Dropped < 15000 || e.Found() != len(e.Criteria)+e.Dropped {
		t.Fatalf("huge issue: truncated %v, %d kept, %d dropped", e.BodyTruncated, len(e.Criteria), e.Dropped)
	}
	if e.Criteria[0].Text != "item 0" || e.Criteria[DefaultMaxCriteria-1].Text != fmt.Sprintf("item %d", DefaultMaxCriteria-1) {
		t.Fatalf("not the first items: %q", summary(e))
	}

	long := "- [ ] " + strings.Repeat("é", 2000) + "\n- [ ] short\n"
	e = Extract(long, Limits{})
	if len(e.Criteria) != 2 || e.Truncated != 1 || !e.Criteria[0].Truncated || len(e.Criteria[0].Text) > DefaultMaxCriterionBytes ||
		!strings.HasSuffix(e.Criteria[0].Text, "…") || !utf8.ValidString(e.Criteria[0].Text) {
		t.Fatalf("long criterion: %d bytes, truncated %d", len(e.Criteria[0].Text), e.Truncated)
	}

	b.Reset()
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&b, "- [ ] %03d %s\n", i, strings.Repeat("x", 996))
	}
	e = Extract(b.String(), Limits{})
	if len(e.Criteria) != 16 || e.Dropped != 4 {
		t.Fatalf("total cap: %d kept, %d dropped", len(e.Criteria), e.Dropped)
	}
	total := 0
	for _, c := range e.Criteria {
		total += len(c.Text) + len(c.Context)
	}
	if total > DefaultMaxTotalBytes {
		t.Fatalf("total %d", total)
	}

	e = Extract("- [ ] a\n- [ ] b\n- [ ] c\n", Limits{MaxCriteria: 2})
	if len(e.Criteria) != 2 || e.Dropped != 1 {
		t.Fatalf("MaxCriteria 2: %q dropped %d", summary(e), e.Dropped)
	}
	e = Extract("- [ ] a\n- [ ] b\n", Limits{MaxBodyBytes: 8})
	if !e.BodyTruncated || len(e.Criteria) != 1 {
		t.Fatalf("MaxBodyBytes 8: %q", summary(e))
	}
}

func TestExtractDeepNesting(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "%s- [ ] level %d\n", strings.Repeat("  ", i), i)
	}
	e := Extract(b.String(), Limits{})
	if len(e.Criteria) != maxListDepth || e.TooDeep != 40-maxListDepth {
		t.Fatalf("%d criteria, %d too deep", len(e.Criteria), e.TooDeep)
	}
}

// goldmark's cost grows with the square of container nesting (64 KB of
// "- - - …" took 13 s): such lines end what is read.
func TestExtractNestingGuard(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{
		strings.Repeat("> ", 50000),
		strings.Repeat("- ", 50000),
		strings.Repeat("1. ", 50000),
		strings.Repeat("> - ", 20),
		strings.Repeat(" ", maxContainerPrefix+1),
	} {
		e := Extract("- [ ] before\n"+prefix+"[ ] x\n- [ ] after\n", Limits{})
		if !e.BodyTruncated || !slices.Equal(summary(e), []string{"checklist before"}) {
			t.Errorf("%.20q…: truncated %v, %q", prefix, e.BodyTruncated, summary(e))
		}
		if got := ClosingKeywordIssues("Fixes #1\n"+prefix+"fixes #2\nfixes #3", testRepo); !slices.Equal(got, []int{1}) {
			t.Errorf("%.20q…: PR body read past the guard: %v", prefix, got)
		}
	}
	// Real nesting passes.
	e := Extract(strings.Repeat("> ", 3)+"quoted\n\n"+"- a\n  - b\n    - [ ] c\n"+strings.Repeat(" ", 40)+"text\n* * *\n", Limits{})
	if e.BodyTruncated || len(e.Criteria) != 1 {
		t.Fatalf("real nesting: %+v", e)
	}
}

var idPattern = regexp.MustCompile(`^c-[0-9a-f]{16}$`)

func TestCriterionIDs(t *testing.T) {
	t.Parallel()
	a := Extract("- [ ] one\n- [ ] two\n- [ ] one\n## Acceptance criteria\n- one\n", Limits{})
	b := Extract("Some new intro.\n\n## Acceptance criteria\n- one\n\n## Other\n- [ ] two\n- [ ] one\n- [x] one\n", Limits{})
	ids := map[string]bool{}
	for _, c := range a.Criteria {
		if !idPattern.MatchString(c.ID) || ids[c.ID] {
			t.Fatalf("id %q bad or repeated in %+v", c.ID, a.Criteria)
		}
		ids[c.ID] = true
	}
	// Moved items keep their ids; the repeated "one" boxes are told apart
	// by occurrence; a section item differs from a box with the same text.
	byText := func(e Extraction) map[string]string {
		m := map[string]string{}
		for _, c := range e.Criteria {
			m[string(c.Source)+c.Text+c.ID] = c.ID
		}
		return m
	}
	ma, mb := byText(a), byText(b)
	if len(ma) != 4 || len(mb) != 4 {
		t.Fatalf("%v %v", ma, mb)
	}
	for k := range ma {
		if _, ok := mb[k]; !ok {
			t.Fatalf("id of %q changed when the issue was edited around it", k)
		}
	}
	if again := Extract("- [ ] one\n- [ ] two\n- [ ] one\n## Acceptance criteria\n- one\n", Limits{}); fmt.Sprint(again) != fmt.Sprint(a) {
		t.Fatal("not deterministic")
	}
}

func TestInferred(t *testing.T) {
	t.Parallel()
	e := Inferred([]string{"The API returns 404", "", "  \n ", strings.Repeat("x", 5000), "The API returns 404"}, Limits{})
	if len(e.Criteria) != 3 || e.Truncated != 1 {
		t.Fatalf("%+v", e)
	}
	for _, c := range e.Criteria {
		if !c.Inferred() || c.Source != SourceInferred || !idPattern.MatchString(c.ID) {
			t.Fatalf("%+v", c)
		}
	}
	if e.Criteria[0].ID == e.Criteria[2].ID {
		t.Fatal("repeated inferred text shares an id")
	}
	for _, c := range Extract("- [ ] a\n## AC\n- b\n```gherkin\nScenario: c\n```\n", Limits{}).Criteria {
		if c.Inferred() {
			t.Fatalf("deterministic criterion marked inferred: %+v", c)
		}
	}
}

func TestNormaliseHeading(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"✅ Acceptance-Criteria:":     "acceptance criteria",
		"3. Definition of Done (v2)": "definition of done",
		"  DoD  ":                    "dod",
		"Acceptance criteria (draft": "acceptance criteria draft",
		"(only a parenthetical)":     "only a parenthetical",
		"":                           "",
	} {
		if got := normaliseHeading(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

func TestExtractGherkinPlainRuns(t *testing.T) {
	t.Parallel()
	expectCriteria(t, "header alone, steps after a blank line", "Scenario: a\n\nGiven b\nThen c\n",
		"gherkin Scenario: a / Given b / Then c")
	expectCriteria(t, "two bare scenarios", "Given a\nThen b\n\nGiven c\nThen d\n",
		"gherkin Scenario / Given a / Then b", "gherkin Scenario / Given c / Then d")
	expectCriteria(t, "steps continue after a blank line", "Scenario: a\nGiven b\n\nWhen c\nThen d\n",
		"gherkin Scenario: a / Given b / When c / Then d")
	expectCriteria(t, "examples paragraph", "Scenario Outline: a <x>\nGiven <x>\n\nExamples:\n| x |\n| 1 |\n",
		"gherkin Scenario Outline: a <x> / Given <x> / Examples: / | x | / | 1 |")
}
