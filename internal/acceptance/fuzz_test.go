package acceptance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func issueSeeds(f *testing.F) []string {
	f.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "issues", "*.md"))
	if err != nil || len(files) == 0 {
		f.Fatalf("issue fixtures: %v", err)
	}
	var out []string
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// FuzzExtract: any body gives criteria within the caps, with valid,
// distinct ids, clean one-line text (Gherkin: clean lines), the same way
// every time.
func FuzzExtract(f *testing.F) {
	for _, s := range issueSeeds(f) {
		f.Add(s)
		f.Add(s[:len(s)/2])
	}
	for _, s := range []string{
		"", "- [ ] a", "## Acceptance criteria\n- a\n", "```gherkin\nScenario: a\n  Given b\n```",
		"Scenario: a\nGiven b\n", "> - [ ] q", "<!--\n- [ ] h\n-->", "**Definition of Done**\n1. x",
		"- [ ] a\n  - b\n    - [x] c", "Given a\nThen b", "| a |\n|---|\n| - [ ] b |",
	} {
		f.Add(s)
	}
	lim := Limits{MaxCriteria: 8, MaxCriterionBytes: 64, MaxTotalBytes: 300, MaxBodyBytes: 64 << 10}
	f.Fuzz(func(t *testing.T, body string) {
		e := Extract(body, lim)
		checkExtraction(t, e, lim)
		if again := Extract(body, lim); !reflect.DeepEqual(e, again) {
			t.Fatal("not deterministic")
		}
	})
}

func checkExtraction(t *testing.T, e Extraction, lim Limits) {
	t.Helper()
	if len(e.Criteria) > lim.MaxCriteria || e.Dropped < 0 || e.Truncated > len(e.Criteria) {
		t.Fatalf("%d criteria, %d dropped, %d truncated", len(e.Criteria), e.Dropped, e.Truncated)
	}
	total := 0
	ids := map[string]bool{}
	for _, c := range e.Criteria {
		if !idPattern.MatchString(c.ID) || ids[c.ID] {
			t.Fatalf("id %q", c.ID)
		}
		ids[c.ID] = true
		switch c.Source {
		case SourceChecklist, SourceSection, SourceGherkin:
		default:
			t.Fatalf("source %q", c.Source)
		}
		if c.Text == "" || len(c.Text) > lim.MaxCriterionBytes || len(c.Context) > lim.MaxCriterionBytes || len(c.Section) > maxSectionNameBytes {
			t.Fatalf("sizes %d %d %d", len(c.Text), len(c.Context), len(c.Section))
		}
		total += len(c.Text) + len(c.Context)
		for _, s := range []string{c.Text, c.Context, c.Section} {
			if !utf8.ValidString(s) {
				t.Fatalf("invalid UTF-8 %q", s)
			}
			for _, r := range s {
				if r == '\n' && c.Source == SourceGherkin && s == c.Text {
					continue
				}
				if unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) {
					t.Fatalf("control or format character %U in %q", r, s)
				}
			}
		}
	}
	if total > lim.MaxTotalBytes {
		t.Fatalf("total %d", total)
	}
}

// FuzzClosingKeywordIssues: any PR body gives distinct, valid numbers.
func FuzzClosingKeywordIssues(f *testing.F) {
	for _, s := range []string{
		"Fixes #1", "closes: #2, resolves GH-3", "Fixes https://github.com/acme/widgets/issues/4#x", "fixes acme/widgets#5",
		"`fixes #6`", "<!-- fixes #7 -->", "FIXED:\t#8.", "fix #9abc", "résolves #10",
	} {
		f.Add(s, "123-branch")
	}
	f.Fuzz(func(t *testing.T, body, branch string) {
		got := Resolve(PullRequest{Body: body, HeadBranch: branch}, testRepo)
		if len(got.Issues) > MaxLinkedIssues {
			t.Fatalf("%d issues", len(got.Issues))
		}
		seen := map[int]bool{}
		for _, l := range got.Issues {
			if !validNumber(l.Number) || seen[l.Number] || len(l.Sources) == 0 {
				t.Fatalf("%+v", got)
			}
			seen[l.Number] = true
		}
	})
}

// FuzzDecodeAnswer: the decoder never panics; what it accepts is within
// the caps, survives a round trip, and never verifies as met without
// evidence on the diff.
func FuzzDecodeAnswer(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "answers", "*.json"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	for _, s := range invalidAnswers {
		f.Add([]byte(s))
	}
	f.Add([]byte(validAnswer))
	lim := AnswerLimits{MaxBytes: 16 << 10, MaxJudgements: 8, MaxEvidence: 4}
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := DecodeAnswer(raw, lim)
		if err != nil {
			if a.Criteria != nil {
				t.Fatal("criteria with an error")
			}
			return
		}
		if len(a.Criteria) > lim.MaxJudgements {
			t.Fatalf("%d judgements", len(a.Criteria))
		}
		ids := map[string]bool{}
		var criteria []Criterion
		for _, j := range a.Criteria {
			if ids[j.ID] || j.ID == "" || len(j.ID) > MaxIDBytes || !j.Status.valid() || len(j.Evidence) > lim.MaxEvidence {
				t.Fatalf("%+v", j)
			}
			ids[j.ID] = true
			for _, l := range j.Evidence {
				if l.Path == "" || len(l.Path) > MaxPathBytes || (l.StartLine != 0 && (l.StartLine < 1 || l.EndLine < l.StartLine || l.EndLine > MaxLine)) || (l.StartLine == 0 && l.EndLine != 0) {
					t.Fatalf("%+v", l)
				}
			}
			criteria = append(criteria, Criterion{ID: j.ID, Source: SourceChecklist, Text: j.Reason})
		}
		again, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		b, err := DecodeAnswer(again, AnswerLimits{MaxBytes: 4 * len(again), MaxJudgements: lim.MaxJudgements, MaxEvidence: lim.MaxEvidence})
		if err != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, a, b)
		}
		v := Verify(criteria, a, testDiff, VerifyOptions{})
		for _, d := range v.Verdicts {
			if d.Status == StatusMet && (len(d.Evidence) == 0 || d.Rejected != 0) {
				t.Fatalf("met without standing evidence: %+v", d)
			}
			for _, l := range d.Evidence {
				if _, changed := testDiff.Files[l.Path]; !changed && !strings.HasSuffix(l.Path, "_test.go") {
					t.Fatalf("evidence outside the diff kept: %+v", l)
				}
			}
			if len(d.Reason) > DefaultMaxReasonBytes || strings.ContainsAny(d.Reason, "\n\r\t\x00") {
				t.Fatalf("reason %q", d.Reason)
			}
		}
	})
}
