package acceptance

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

var testRepo = Repo{ID: 4242, Owner: "acme", Name: "widgets", Host: "github.com"}

// GitHub's nine keywords, in the three spellings its docs show (lower,
// capitalised, upper), with and without a colon: every one links.
func TestClosingKeywordsMatrix(t *testing.T) {
	t.Parallel()
	for _, kw := range []string{"close", "closes", "closed", "fix", "fixes", "fixed", "resolve", "resolves", "resolved"} {
		for _, spelled := range []string{kw, strings.ToUpper(kw[:1]) + kw[1:], strings.ToUpper(kw), mixedCase(kw)} {
			for _, colon := range []string{"", ":"} {
				for _, ws := range []string{" ", "\t", "  "} {
					body := fmt.Sprintf("This PR %s%s%s#12 for real.", spelled, colon, ws)
					if got := ClosingKeywordIssues(body, testRepo); !slices.Equal(got, []int{12}) {
						t.Errorf("%q: %v, want [12]", body, got)
					}
				}
			}
		}
	}
}

func mixedCase(s string) string {
	b := []byte(s)
	for i := range b {
		if i%2 == 1 {
			b[i] -= 'a' - 'A'
		}
	}
	return string(b)
}

func TestClosingKeywordForms(t *testing.T) {
	t.Parallel()
	cases := []struct {
		body string
		want []int
	}{
		// GitHub's own examples.
		{"Closes #10", []int{10}},
		{"CLOSES #10", []int{10}},
		{"Closes: #10", []int{10}},
		{"CLOSES: #10", []int{10}},
		{"Resolves #10, resolves #123, resolves octo-org/octo-repo#100", []int{10, 123}},
		// Punctuation around the reference.
		{"Fixes #12.", []int{12}},
		{"Fixes #12, and more", []int{12}},
		{"(fixes #12)", []int{12}},
		{"fixes #12; closes #13!", []int{12, 13}},
		{"Fixes #12#13", []int{12}},
		{"- Fixes #7\n- Closes #8", []int{7, 8}},
		{"# Fixes #7", []int{7}},
		{"**Fixes** #5", []int{5}},
		{"Fixes\n#5", []int{5}},
		{"Fixes #5 and fixes #5 again", []int{5}},
		{"> Fixes #5", []int{5}},
		{"Fixes [#5](https://github.com/acme/widgets/issues/5)", []int{5}},
		// GH-N is the same repository's issue.
		{"Fixes GH-7", []int{7}},
		{"fixes gh-7", []int{7}},
		{"Fixes GH-7x", nil},
		// Full URLs of the same repository.
		{"Fixes https://github.com/acme/widgets/issues/9", []int{9}},
		{"Fixes https://GitHub.com/ACME/Widgets/issues/9.", []int{9}},
		{"Fixes https://github.com/acme/widgets/issues/9#issuecomment-1", []int{9}},
		{"Fixes <https://github.com/acme/widgets/issues/9>", []int{9}},
		{"Fixes https://github.com/acme/widgets/pull/9", nil},
		{"Fixes https://github.com/acme/widgets/issues/9/", nil},
		{"Fixes https://github.com/acme/widgets/issues/9?x=1", nil},
		{"Fixes https://github.com/acme/gadgets/issues/9", nil},
		{"Fixes https://github.com/evil/widgets/issues/9", nil},
		{"Fixes https://github.example.com/acme/widgets/issues/9", nil},
		{"Fixes https://github.com.evil.com/acme/widgets/issues/9", nil},
		{"Fixes https://user@github.com/acme/widgets/issues/9", nil},
		{"Fixes https://github.com:443/acme/widgets/issues/9", nil},
		{"Fixes http://github.com/acme/widgets/issues/9", nil},
		{"Fixes https://github.com/acme/widgets/issues/%39", nil},
		// Foreign or prefixed references: ignored, even the same repository.
		{"Fixes other/repo#12", nil},
		{"Fixes acme/widgets#12", nil},
		{"Fixes acme/gadgets#12 and closes #3", []int{3}},
		// Not keywords, not whole words, no white space.
		{"prefixes #12", nil},
		{"unfixed #12", nil},
		{"fixing #12", nil},
		{"fix_ #12", nil},
		{"_fixes #12", nil},
		{"éfixes #12", nil},
		{"fixes#12", nil},
		{"fixes:#12", nil},
		{"fixes : #12", nil},
		{"fix issue #12", nil},
		{"ﬁxes #12", nil},   // ligature, not ASCII "fi"
		{"cloſes #12", nil}, // long s folds to s in Unicode, not here
		{"#12", nil},
		{"See #12", nil},
		// Bad numbers.
		{"Fixes #0", nil},
		{"Fixes #012", nil},
		{"Fixes #1234567890", nil},
		{"Fixes #12abc", nil},
		{"Fixes #12-3", nil},
		{"Fixes #12/3", nil},
		{"Fixes #", nil},
		// Not what a reader sees.
		{"`fixes #5`", nil},
		{"```\nfixes #5\n```", nil},
		{"    fixes #5", nil},
		{"<!-- fixes #5 -->", nil},
		{"text <!-- fixes #5 --> more", nil},
		{"<div>\nfixes #5\n</div>", nil},
		{"~~fixes #5~~", nil},
	}
	for _, c := range cases {
		if got := ClosingKeywordIssues(c.body, testRepo); !slices.Equal(got, c.want) {
			t.Errorf("%q: %v, want %v", c.body, got, c.want)
		}
	}
}

func TestClosingKeywordURLNeedsHost(t *testing.T) {
	t.Parallel()
	noHost := testRepo
	noHost.Host = ""
	if got := ClosingKeywordIssues("Fixes https://github.com/acme/widgets/issues/9", noHost); got != nil {
		t.Fatalf("URL without a configured host: %v", got)
	}
	ghes := testRepo
	ghes.Host = "git.corp.example"
	if got := ClosingKeywordIssues("Fixes https://git.corp.example/acme/widgets/issues/9 fixes https://github.com/acme/widgets/issues/8", ghes); !slices.Equal(got, []int{9}) {
		t.Fatalf("GHES host: %v", got)
	}
}

func TestClosingKeywordBodyCap(t *testing.T) {
	t.Parallel()
	body := "Fixes #1\n" + strings.Repeat("x", MaxPRBodyBytes) + "\nFixes #2"
	if got := ClosingKeywordIssues(body, testRepo); !slices.Equal(got, []int{1}) {
		t.Fatalf("%v: a keyword past the cap was read", got)
	}
}

func TestBranchIssue(t *testing.T) {
	t.Parallel()
	cases := []struct {
		branch string
		want   int
	}{
		{"123-fix-login", 123},
		{"feature/123-fix-login", 123},
		{"user/fix/45-x", 45},
		{"refs/heads/7-a", 7},
		{"12-3-4", 12},
		{"fix-123", 0},
		{"123", 0},
		{"123-", 0},
		{"0123-x", 0},
		{"feature/123/fix", 0},
		{"123-x/other", 0},
		{"quavon/fix-12-abcdef01", 0},
		{"1234567890-x", 0},
		{"-12-x", 0},
		{"", 0},
		{"１２-x", 0}, // full-width digits
	}
	for _, c := range cases {
		n, ok := BranchIssue(c.branch)
		if ok != (c.want != 0) || n != c.want {
			t.Errorf("%q: %d %v, want %d", c.branch, n, ok, c.want)
		}
	}
}

func TestSameRepositoryClosing(t *testing.T) {
	t.Parallel()
	refs := []ClosingReference{
		{RepositoryID: 4242, Owner: "acme", Name: "widgets", Number: 1},
		{RepositoryID: 9999, Owner: "acme", Name: "widgets", Number: 2},  // same name, other repository (renamed away)
		{RepositoryID: 4242, Owner: "acme", Name: "old-name", Number: 3}, // the repository under an old name
		{Owner: "ACME", Name: "Widgets", Number: 4},                      // no id: names decide
		{Owner: "other", Name: "widgets", Number: 5},
		{RepositoryID: 9999, Owner: "other", Name: "repo", Number: 6},
		{RepositoryID: 4242, Number: 1},
		{RepositoryID: 4242, Number: 0},
		{RepositoryID: 4242, Number: -3},
	}
	if got := SameRepositoryClosing(refs, testRepo); !slices.Equal(got, []int{1, 3, 4}) {
		t.Fatalf("%v, want [1 3 4]", got)
	}
	noID := testRepo
	noID.ID = 0
	if got := SameRepositoryClosing(refs, noID); !slices.Equal(got, []int{1, 2, 4}) {
		t.Fatalf("without our id: %v, want [1 2 4]", got)
	}
	if got := SameRepositoryClosing(refs, Repo{}); got != nil {
		t.Fatalf("zero repository: %v", got)
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	pr := PullRequest{
		Body:       "Fixes #3 and closes #5. Also fixes other/repo#7.",
		HeadBranch: "feature/5-thing",
		Closing: []ClosingReference{
			{RepositoryID: 4242, Number: 3},
			{RepositoryID: 1, Owner: "other", Name: "repo", Number: 7},
			{RepositoryID: 4242, Number: 8},
		},
	}
	got := Resolve(pr, testRepo)
	want := []Link{
		{Number: 3, Sources: []LinkSource{LinkClosingReference, LinkKeyword}},
		{Number: 8, Sources: []LinkSource{LinkClosingReference}},
		{Number: 5, Sources: []LinkSource{LinkKeyword, LinkBranch}},
	}
	if fmt.Sprint(got.Issues) != fmt.Sprint(want) || got.Dropped != 0 {
		t.Fatalf("%+v, want %+v", got, want)
	}
	if !slices.Equal(got.Numbers(), []int{3, 8, 5}) {
		t.Fatalf("numbers %v", got.Numbers())
	}
}

func TestResolveCap(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := 1; i <= MaxLinkedIssues+5; i++ {
		fmt.Fprintf(&b, "Fixes #%d\n", i)
	}
	b.WriteString("Fixes #15\n") // repeated past the cap: counted once
	got := Resolve(PullRequest{Body: b.String(), HeadBranch: "14-x"}, testRepo)
	if len(got.Issues) != MaxLinkedIssues || got.Dropped != 5 {
		t.Fatalf("%d issues, %d dropped", len(got.Issues), got.Dropped)
	}
	if got.Issues[0].Number != 1 || got.Issues[MaxLinkedIssues-1].Number != MaxLinkedIssues {
		t.Fatalf("order %v", got.Numbers())
	}
}

func TestResolveNothing(t *testing.T) {
	t.Parallel()
	got := Resolve(PullRequest{Body: "Refactor only. See #3.", HeadBranch: "refactor"}, testRepo)
	if len(got.Issues) != 0 || got.Dropped != 0 {
		t.Fatalf("%+v", got)
	}
}
