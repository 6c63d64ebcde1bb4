package sanitise

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// fuzzSeeds are the hostile shapes the golden files also cover.
var fuzzSeeds = []string{
	"Hello @octocat, cc @acme/security ＠ｆｕｌｌ ﹫small",
	"see other/repo#12, other/repo@abc1234 and #3",
	"Fixes #1\nfixes: #2\nCLOSES GH-3\nresolved other/repo#4\nDuplicate of #5",
	"![x](https://evil.example/p.png) [a](https://evil.example) <https://evil.example> www.evil.example",
	"[r]: https://evil.example\n\n[ref][r] [ok](https://github.com/acme/app/blob/main/x.go)",
	"<img src=x onerror=alert(1)> <!-- hidden --> <details><summary>s</summary>x</details>",
	"```\n``` \nbreak out\n````\n",
	"/approve\n!merge\nbors r+",
	"a\u202ebidi\u200bzero\u2066x\u2069\ufeff\U000e0041",
	"> > > > > > > > > > deep @x",
	"| a | b |\n|---|---|\n| `x\\|y` | @z |",
	"*@*user **fix**es #1 [@x](https://github.com/acme/app/)",
	"1. one\n2) two\n- three\n+ four\n\n* * *\n\nsetext\n===",
	"\\@escaped &commat;entity &#64;num &#x40;hex fi&#120;es #9",
}

func FuzzMarkdown(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, 4096)
		f.Add(s, 80)
	}
	s := testSanitiser(f)
	f.Fuzz(func(t *testing.T, in string, max int) {
		max = MinBytes + abs(max)%(8<<10)
		out, st := s.MarkdownStats(in, max)
		if st.Guard {
			t.Fatalf("the output failed Inspect and was replaced:\ninput %q", in)
		}
		checkInvariants(t, s, in, out, max)
	})
}

func FuzzInline(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, 200)
	}
	s := testSanitiser(f)
	f.Fuzz(func(t *testing.T, in string, max int) {
		max = MinBytes + abs(max)%1024
		for _, out := range []string{s.Inline(in, max), s.Cell(in, max)} {
			if out == "(removed)" {
				t.Fatalf("guard tripped for %q", in)
			}
			if strings.ContainsAny(out, "\n\r") {
				t.Fatalf("Inline wrote a line break: %q", out)
			}
			checkInvariants(t, s, in, out, max)
		}
	})
}

func FuzzCodeBlock(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, "go", 200, true)
	}
	s := testSanitiser(f)
	f.Fuzz(func(t *testing.T, content, lang string, max int, tail bool) {
		max = abs(max) % 4096
		keep := KeepHead
		if tail {
			keep = KeepTail
		}
		block, cut := CodeBlock(content, lang, max, keep)
		if len(block) > max {
			t.Fatalf("block of %d bytes over %d", len(block), max)
		}
		if block == "" {
			return
		}
		// Exactly one block, a fenced code block, holding the content
		// (or the kept part of it) exactly.
		src := []byte(block + "\n\nafter")
		doc := s.md.Parser().Parse(text.NewReader(src))
		fc, ok := doc.FirstChild().(*ast.FencedCodeBlock)
		if !ok || doc.ChildCount() != 2 {
			t.Fatalf("not one fenced block followed by a paragraph: %q", block)
		}
		var got strings.Builder
		for i := range fc.Lines().Len() {
			seg := fc.Lines().At(i)
			got.Write(seg.Value(src))
		}
		want := strings.TrimRight(Clean(content), "\n")
		g := strings.TrimSuffix(got.String(), "\n")
		if !cut && g != want || cut && keep == KeepHead && !strings.HasPrefix(want, g) ||
			cut && keep == KeepTail && !strings.HasSuffix(want, g) {
			t.Fatalf("content changed (cut %v):\n got %q\nwant %q", cut, g, want)
		}
		if r := s.Inspect(block); r.Invisible > 0 || r.Suggestions > 0 {
			t.Fatalf("%v", r.Problems())
		}
	})
}

// checkInvariants holds for every output of the sanitiser, whatever came in.
func checkInvariants(t *testing.T, s *Sanitiser, in, out string, max int) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("invalid UTF-8 from %q", in)
	}
	if len(out) > max {
		t.Fatalf("%d bytes over the cap %d from %q", len(out), max, in)
	}
	if p := s.Inspect(out).Problems(); len(p) > 0 {
		t.Fatalf("problems %v\ninput  %q\noutput %q", p, in, out)
	}
}

func abs(n int) int {
	if n < 0 {
		if n == -n { // MinInt
			return 0
		}
		return -n
	}
	return n
}

func testSanitiser(tb testing.TB) *Sanitiser {
	tb.Helper()
	s, err := New(Policy{Host: "github.com", Owner: "acme", Repo: "app"})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
