package sanitise

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
	"golang.org/x/text/unicode/norm"
)

func TestPolicyValidate(t *testing.T) {
	for _, p := range []Policy{
		{Host: "", Owner: "a", Repo: "b"},
		{Host: "github.com/x", Owner: "a", Repo: "b"},
		{Host: "github.com", Owner: "", Repo: "b"},
		{Host: "github.com", Owner: "a/b", Repo: "c"},
		{Host: "github.com", Owner: "-a", Repo: "b"},
		{Host: "github.com", Owner: "a", Repo: ".."},
		{Host: "github.com", Owner: "a", Repo: "b c"},
		{Host: "user@github.com", Owner: "a", Repo: "b"},
	} {
		if _, err := New(p); err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
	for _, p := range []Policy{
		{Host: "github.com", Owner: "acme", Repo: "app"},
		{Host: "GHE.Example.com:8443", Owner: "a-b", Repo: "x.y_z-1"},
	} {
		if _, err := New(p); err != nil {
			t.Errorf("%+v: %v", p, err)
		}
	}
}

// TestAllowedURL is the repository-prefix rule on its own (Inspect uses the
// same function, so this table is what keeps it honest).
func TestAllowedURL(t *testing.T) {
	s := testSanitiser(t)
	for in, want := range map[string]string{
		"https://github.com/acme/app":                      "https://github.com/acme/app",
		"https://github.com/acme/app/":                     "https://github.com/acme/app/",
		"https://github.com/acme/app/issues/1":             "https://github.com/acme/app/issues/1",
		"HTTPS://GitHub.COM/ACME/App/pull/2":               "https://github.com/ACME/App/pull/2",
		"https://github.com/acme/app/blob/main/a.go#L1-L3": "https://github.com/acme/app/blob/main/a.go#L1-L3",
		"https://github.com/acme/app/x?b=2&a=1":            "https://github.com/acme/app/x?a=1&b=2",
		"https://github.com/acme/app/a(b)":                 "https://github.com/acme/app/a%28b%29",
		"https://github.com/acme/app/./x/../y":             "https://github.com/acme/app/y",
		"https://github.com/acme/app/a%20b":                "https://github.com/acme/app/a%20b",
	} {
		got, ok := s.allowedURL(in)
		if !ok || got != want {
			t.Errorf("%q: got %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{
		"", "http://github.com/acme/app/", "https://github.com/acme/application", "https://github.com/acme",
		"https://github.com/acme/other/issues/1", "https://github.com/other/app", "https://github.com/acme/app/../other",
		"https://github.com/acme/app/%2e%2e/%2e%2e/evil", "https://github.com/acme/app/..%2f..%2fevil",
		"https://x@github.com/acme/app/", "https://github.com:443/acme/app/", "https://github.com./acme/app/",
		"https://www.github.com/acme/app/", "https://evil.example/acme/app/", "https://github.com.evil.example/acme/app/",
		"https://github.com\\@evil.example/acme/app/", "https://github.com/acme/app/\\..\\..\\evil",
		"//github.com/acme/app/", "/acme/app/issues/1", "../../other/repo", "#anchor", "javascript:alert(1)",
		"data:text/html,x", "https://github.com/acme/app/\x00", "https://github.com/acme/app/ x", "https://github.com/acme/app/\u202e",
		"https:github.com/acme/app/", "https:/github.com/acme/app/", "mailto:a@github.com", "https://github.com/user-attachments/assets/1",
	} {
		if got, ok := s.allowedURL(in); ok {
			t.Errorf("%q allowed as %q", in, got)
		}
	}
}

// hrefs parses Markdown and returns every link, autolink and image target.
func hrefs(t *testing.T, s *Sanitiser, md string) []string {
	t.Helper()
	src := []byte(md)
	var out []string
	_ = ast.Walk(s.md.Parser().Parse(text.NewReader(src)), func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			switch n := n.(type) {
			case *ast.Link:
				out = append(out, string(n.Destination))
			case *ast.Image:
				out = append(out, "image:"+string(n.Destination))
			case *ast.AutoLink:
				out = append(out, string(n.URL(src)))
			}
		}
		return ast.WalkContinue, nil
	})
	return out
}

func TestLinksKeptOnlyUnderTheRepository(t *testing.T) {
	s := testSanitiser(t)
	in := "[a](https://github.com/acme/app/issues/1) [b](https://evil.example) ![c](https://github.com/acme/app/x.png) " +
		"<https://evil.example/> https://github.com/acme/app/pull/3 https://evil.example/bare [d][r] [e][f] " +
		"[g](<https://evil.example/a b>) [h](https://github.com/acme/app/../../evil/x) " +
		// Entities hide a URL from goldmark's autolinker, not from GitHub's.
		"https&#58;//evil.example/entity www&#46;evil.example\n\n" +
		"[r]: https://github.com/acme/app/wiki\n[f]: https://evil.example/ref\n"
	out := s.Markdown(in, 4096)
	got := strings.Join(hrefs(t, s, out), " ")
	want := "https://github.com/acme/app/issues/1 https://github.com/acme/app/pull/3 https://github.com/acme/app/wiki"
	if got != want {
		t.Fatalf("links %q, want %q\n%s", got, want, out)
	}
	if strings.Contains(out, "](https://evil") || strings.Contains(out, "<https://evil") {
		t.Fatalf("a foreign link survived:\n%s", out)
	}
}

func TestMentionsNeutralised(t *testing.T) {
	s := testSanitiser(t)
	for _, in := range []string{
		"@octocat", "hi @octocat!", "@acme/team", "＠octocat", "﹫octocat", "@＠octocat", "*@*octocat", "@<b></b>octocat",
		"@<!-- x -->octocat", "&#64;octocat", "&commat;octocat", "\\@octocat", "[@octocat](https://github.com/acme/app/)",
		"[@octocat](https://evil.example)", "![@octocat](x)", "| a |\n|---|\n| @octocat |", "# @octocat", "> @octocat",
		"- @octocat", "~~@octocat~~", "**@octocat**", "x@octocat", "@\u200boctocat", "@\u202eoctocat",
	} {
		out := s.Markdown(in, 4096)
		if r := s.Inspect(out); len(r.Mentions) > 0 {
			t.Errorf("%q → %q: live mention", in, out)
		}
		// The name stays readable, inside code.
		if !strings.Contains(out, "octocat") && !strings.Contains(out, "team") {
			t.Errorf("%q → %q: the name is gone", in, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if i := strings.IndexAny(line, "@＠﹫"); i >= 0 && strings.Count(line[:i], "`")%2 == 0 {
				t.Errorf("%q → %q: @ outside a code span", in, out)
			}
		}
	}
}

func TestClosingKeywordsNeutralised(t *testing.T) {
	s := testSanitiser(t)
	for _, kw := range []string{"close", "closes", "closed", "fix", "fixes", "fixed", "resolve", "resolves", "resolved"} {
		for _, spelling := range []string{kw, strings.ToUpper(kw), strings.ToUpper(kw[:1]) + kw[1:]} {
			for _, ref := range []string{" #12", ": #12", " GH-12", " acme/app#12", " other/repo#12",
				" https://github.com/acme/app/issues/12", " [#12](https://github.com/acme/app/issues/12)", " **#12**", "\n#12"} {
				in := "This " + spelling + ref + " now."
				out := s.Markdown(in, 4096)
				if r := s.Inspect(out); len(r.ClosingRefs) > 0 {
					t.Errorf("%q → %q: %v", in, out, r.ClosingRefs)
				}
				if !strings.Contains(out, "`"+spelling+"`") {
					t.Errorf("%q → %q: keyword not in code", in, out)
				}
			}
		}
	}
	// Plain words and the stacked pull request's own line stay as they are.
	for _, in := range []string{"This fixes the bug.", "a fix-up", "Fixes review findings of #5", "closed form"} {
		if out := s.Markdown(in, 4096); out != in {
			t.Errorf("%q → %q", in, out)
		}
	}
}

func TestCrossRepositoryReferencesNeutralised(t *testing.T) {
	s := testSanitiser(t)
	for _, in := range []string{"other/repo#12", "see other/repo#12.", "other/repo@abc1234", "o/r*#1*", "o/r＃1",
		"https://github.com/other/repo/issues/1", "github.com/other/repo#1"} {
		out := s.Markdown(in, 4096)
		r := s.Inspect(out)
		if len(r.CrossRefs)+len(r.ForeignLinks)+len(r.Mentions) > 0 {
			t.Errorf("%q → %q: %v", in, out, r.Problems())
		}
	}
	// This repository's references stay links.
	if out := s.Markdown("See #12 and GH-13 (#14).", 4096); out != "See #12 and GH-13 (#14)." {
		t.Errorf("same-repository references changed: %q", out)
	}
}

func TestHTMLAndImagesRemoved(t *testing.T) {
	s := testSanitiser(t)
	in := "<img src=x onerror=alert(1)>\n\n![alt](https://github.com/acme/app/x.png)\n\na <b>b</b> <!-- c -->\n\n<!--\nd\n-->\n\n" +
		"<details><summary>e</summary>\n\nf\n\n</details>\n\n<?php x ?>\n\n<![CDATA[ g ]]>\n"
	out, st := s.MarkdownStats(in, 4096)
	r := s.Inspect(out)
	if len(r.HTML) > 0 || len(r.Images) > 0 || strings.Contains(out, "<") {
		t.Fatalf("html or image left: %v\n%s", r.Problems(), out)
	}
	if st.Images != 1 || st.HTML == 0 {
		t.Errorf("stats %+v", st)
	}
	if strings.Contains(out, "onerror") || strings.Contains(out, "c -->") || strings.Contains(out, "\nd\n") {
		t.Errorf("removed content shows:\n%s", out)
	}
}

func TestCommandsNeutralised(t *testing.T) {
	s := testSanitiser(t)
	for _, in := range []string{"/approve", "  /merge", "text\n/lgtm", "!deploy", "bors r+", "- /retest", "> /approve", "／approve"} {
		out := s.Markdown(in, 4096)
		if r := s.Inspect(out); len(r.Commands) > 0 {
			t.Errorf("%q → %q: %v", in, out, r.Commands)
		}
		for _, line := range strings.Split(out, "\n") {
			l := strings.TrimLeft(line, " ->")
			if strings.HasPrefix(l, "/") || strings.HasPrefix(l, "!") || strings.HasPrefix(l, "bors") || strings.HasPrefix(l, "／") {
				t.Errorf("%q → %q: a line still starts with a command", in, out)
			}
		}
	}
}

func TestInvisibleCharactersRemoved(t *testing.T) {
	s := testSanitiser(t)
	// Listed one by one, not through Invisible: the table is the contract.
	bad := []rune{0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069, 0x200e, 0x200f, 0x061c,
		0x200b, 0x200c, 0x200d, 0x2060, 0xfeff, 0x00ad, 0x180e, 0xe0001, 0xe0041, 0xe007f, 0xfe0f, 0xe0100,
		0x2028, 0x2029, 0x0000, 0x0007, 0x001b, 0x007f, 0x0085, 0x3164, 0x115f, 0x034f}
	for _, r := range bad {
		for _, in := range []string{"a" + string(r) + "b", "`a" + string(r) + "b`", "```\na" + string(r) + "b\n```"} {
			out := s.Markdown(in, 4096)
			if strings.ContainsRune(out, r) {
				t.Errorf("U+%04X survives in %q", r, out)
			}
			if !strings.Contains(out, "ab") {
				t.Errorf("U+%04X: %q lost the text around it: %q", r, in, out)
			}
		}
		if !Invisible(r) {
			t.Errorf("Invisible(U+%04X) = false", r)
		}
	}
	for _, r := range []rune{'a', ' ', '\n', '\t', 'é', '中', '😀', '\u00a0'} {
		if Invisible(r) {
			t.Errorf("Invisible(%q) = true", r)
		}
	}
}

// TestFoldCoversCompatibilityForms makes sure every character that
// Unicode's compatibility decomposition turns into @ or # (or a letter or
// digit that forms a name) is taken for one.
func TestFoldCoversCompatibilityForms(t *testing.T) {
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		n := norm.NFKC.String(string(r))
		switch n {
		case "@":
			if !isAt(r) {
				t.Errorf("U+%04X folds to @ but isAt is false", r)
			}
		case "#":
			if !isHash(r) {
				t.Errorf("U+%04X folds to # but isHash is false", r)
			}
		}
	}
}

func TestFencesCannotBeBrokenOutOf(t *testing.T) {
	s := testSanitiser(t)
	for _, content := range []string{"```", "````\n```", "a\n```\n<img src=x>\n```", "~~~\n```````", "`", "```js"} {
		block, _ := CodeBlock(content, "go", -1, KeepHead)
		md := block + "\n\n@after <b>x</b>"
		src := []byte(md)
		doc := s.md.Parser().Parse(text.NewReader(src))
		if doc.ChildCount() != 2 || doc.FirstChild().Kind() != ast.KindFencedCodeBlock {
			t.Errorf("%q: the block ended early:\n%s", content, md)
		}
	}
	// The same through Markdown: a code block of the input cannot end
	// Quavon's fence either.
	out := s.Markdown("````\n```\n@octocat\n```\n````", 4096)
	if r := s.Inspect(out); len(r.Mentions) > 0 || !strings.HasPrefix(out, "````\n") {
		t.Errorf("%q", out)
	}
}

func TestCap(t *testing.T) {
	s := testSanitiser(t)
	long := strings.Repeat("A paragraph with @octocat and [a link](https://github.com/acme/app/issues/1).\n\n", 400)
	code := "```\n" + strings.Repeat("code line @x\n", 1000) + "```\n\nafter the code"
	for _, in := range []string{long, code, strings.Repeat("word ", 10000), "- " + strings.Repeat("item ", 5000),
		"| a |\n|---|\n" + strings.Repeat("| cell |\n", 2000)} {
		for _, max := range []int{MinBytes, 100, 1000, 4096} {
			out, st := s.MarkdownStats(in, max)
			if len(out) > max || !st.Cut || !strings.HasSuffix(out, CutNotice) {
				t.Errorf("max %d: %d bytes, cut %v, %q…", max, len(out), st.Cut, truncateUTF8(out, 60))
			}
			if p := s.Inspect(out).Problems(); len(p) > 0 {
				t.Errorf("max %d: %v", max, p)
			}
			// Whatever was cut, the notice is a paragraph of its own,
			// not code: no fence was left open.
			src := []byte(out)
			doc := s.md.Parser().Parse(text.NewReader(src))
			if last := doc.LastChild(); last == nil || last.Kind() != ast.KindParagraph {
				t.Errorf("max %d: the notice is not a paragraph:\n%s", max, out)
			}
		}
	}
	if out := s.Markdown("short", 4096); out != "short" {
		t.Errorf("short text changed: %q", out)
	}
	if got := s.Inline(strings.Repeat("long title ", 100), 80); len(got) > 80 || !strings.HasSuffix(got, ellipsis) {
		t.Errorf("Inline cap: %q", got)
	}
}

// TestPathologicalInputs are the shapes goldmark parses in quadratic time;
// bounded input keeps them cheap, and the invariants still hold.
func TestPathologicalInputs(t *testing.T) {
	s := testSanitiser(t)
	for _, unit := range []string{"> ", "1. ", "- > ", "[a](", "[", "*a ", "**x**", "<a ", "a<!--", "`a", "|a|\n", "a\n", "\\"} {
		in := strings.Repeat(unit, maxInputBytes/len(unit))
		out, st := s.MarkdownStats(in, 64<<10)
		if st.Guard || len(out) > 64<<10 {
			t.Errorf("%q: guard %v, %d bytes", unit, st.Guard, len(out))
		}
		checkInvariants(t, s, "", out, 64<<10)
	}
}

func TestInline(t *testing.T) {
	s := testSanitiser(t)
	for in, want := range map[string]string{
		"Use `strings.Builder` here":                  "Use `strings.Builder` here",
		"**SQL** injection via @user\n\nsecond block": "**SQL** injection via `@user` second block",
		"# Heading\n- item one\n- item two":           "Heading item one item two",
		"fixes #3 <b>x</b> ![i](y)":                   "`fixes` #3 x i",
		"a | b":                                       "a \\| b",
		"```\ncode\nblock\n```":                       "`code block`",
		"- [ ] task":                                  "\\[ \\] task",
	} {
		if got := s.Inline(in, 200); got != want {
			t.Errorf("Inline(%q) = %q, want %q", in, got, want)
		}
	}
	if got := s.Cell("`a|b` c|d", 200); got != "`a\\|b` c\\|d" {
		t.Errorf("Cell: %q", got)
	}
}

func TestCodeSpan(t *testing.T) {
	for in, want := range map[string]string{
		"a":        "`a`",
		"a`b":      "``a`b``",
		"`a":       "`` `a ``",
		" a ":      "`  a  `",
		"a\nb":     "`a b`",
		"":         "",
		"   ":      "",
		"a\u202eb": "`ab`",
	} {
		if got := CodeSpan(in); got != want {
			t.Errorf("CodeSpan(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTerminal(t *testing.T) {
	in := "\x1b[31mred\x1b[0m \x1b]8;;https://evil.example\x07link\x1b]8;;\x07 \x1b(Bok\x1b"
	if got := Clean(Terminal(in)); got != "red link ok" {
		t.Errorf("%q", got)
	}
}

func TestCodeBlockCut(t *testing.T) {
	content := strings.Repeat("line\n", 100) + "LAST FAILURE"
	b, cut := CodeBlock(content, "text", 120, KeepTail)
	if !cut || len(b) > 120 || !strings.Contains(b, "LAST FAILURE") || !strings.HasSuffix(b, "\n```") {
		t.Errorf("tail: cut %v %q", cut, b)
	}
	b, cut = CodeBlock(content, "text", 120, KeepHead)
	if !cut || len(b) > 120 || strings.Contains(b, "LAST") || !strings.HasPrefix(b, "```text\nline\n") {
		t.Errorf("head: cut %v %q", cut, b)
	}
	if b, cut := CodeBlock("x", "", 4, KeepHead); b != "" || !cut {
		t.Errorf("too small: %q %v", b, cut)
	}
	for _, lang := range []string{"suggestion", "SUGGESTION", "mermaid", "geojson", "topojson", "stl", "math", "a`b", "a b"} {
		if b, _ := CodeBlock("x", lang, -1, KeepHead); !strings.HasPrefix(b, "```\n") && !strings.HasPrefix(b, "```a\n") {
			t.Errorf("language %q kept: %q", lang, b)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	s := testSanitiser(t)
	done := make(chan string)
	for i := range 8 {
		go func() {
			out := ""
			for range 50 {
				out = s.Markdown(fuzzSeeds[i%len(fuzzSeeds)], 2048)
			}
			done <- out
		}()
	}
	for range 8 {
		<-done
	}
}
