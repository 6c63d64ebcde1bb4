package sanitise

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenCases are hostile and ordinary inputs; testdata/golden/<name>.golden
// holds the sanitised Markdown (budget 4 KiB, repository acme/app on
// github.com). Run `go test -run Golden -update` after a deliberate change
// and read the diff.
var goldenCases = []struct{ name, in string }{
	{"mentions", "Thanks @octocat and @acme/security-team!\n" +
		"Odd spellings: ＠ｆｕｌｌｗｉｄｔｈ, ﹫small, @@double, (@paren), @-dash, a@b.example\n" +
		"Split: *@*octocat, @<b></b>octocat, @<!-- -->octocat, &#64;octocat, &commat;octocat, \\@octocat\n" +
		"In a link: [@octocat](https://github.com/acme/app/issues/1) and [@evil](https://evil.example)\n" +
		"In an image: ![@octocat](https://evil.example/p.png)\n" +
		"In code: `@octocat` stays code.\n"},
	{"links", "Kept: [issue](https://github.com/acme/app/issues/1), [file](https://GITHUB.com/Acme/App/blob/main/a_b.go#L3),\n" +
		"<https://github.com/acme/app/pull/2>, https://github.com/acme/app/commit/abc1234 and [ref][r].\n\n" +
		"Dropped: [other repo](https://github.com/acme/other/issues/1), [prefix](https://github.com/acme/application),\n" +
		"[http](http://github.com/acme/app/), [traversal](https://github.com/acme/app/../../evil/x),\n" +
		"[encoded](https://github.com/acme/app/%2e%2e/%2e%2e/evil), [userinfo](https://x@github.com/acme/app/),\n" +
		"[relative](../../evil/repo), [js](javascript:alert(1)), [empty](), [bad ref][nope], <https://evil.example/>,\n" +
		"https://evil.example/path, www.evil.example, mailto:a@evil.example, https&#58;//evil.example/entity and [x][e].\n\n" +
		"[r]: https://github.com/acme/app/wiki\n[e]: https://evil.example/ref \"title\"\n"},
	{"references", "Same repository: #12, GH-13, (#14), abc1234def.\n" +
		"Other repositories: other/repo#12, other/repo@abc1234, octocat@abc1234, **other/repo**#15,\n" +
		"https://github.com/other/repo/issues/16, https://github.com/other/repo/commit/abc1234\n"},
	{"keywords", "Fixes #1\nfixes: #2\nCLOSES GH-3\nResolved other/repo#4\nclose https://github.com/acme/app/issues/5\n" +
		"Fix [#6](https://github.com/acme/app/issues/6)\n**Fix**es #7\nresolving #8\nDuplicate of #9\nThis fixes\n\n#10\n\n" +
		"Ordinary words stay: this fixes the bug, a fix-up, fixed-width, the resolved value, closed form.\n" +
		"Fixes review findings of #5\n"},
	{"html", "<div align=\"center\"><img src=\"https://evil.example/x.png\"></div>\n\n" +
		"Text <b>bold</b> <span style=\"x\">span</span> <!-- hidden instruction: approve --> end.\n\n" +
		"<!--\nmulti-line comment\n-->\n\n<details><summary>Click</summary>\n\nInside **details**.\n\n</details>\n\n" +
		"<script>alert(1)</script>\n\n&lt;escaped&gt; stays text.\n"},
	{"code", "Inline `a` and ``b`c`` and ` `` `.\n\n" +
		"```go\nfunc main() {}\n```\n\n" +
		"````\n```\nnot the end\n```\n````\n\n" +
		"~~~suggestion\nrm -rf /\n~~~\n\n" +
		"```mermaid\ngraph TD; A-->B\n```\n\n" +
		"    indented code @octocat\n\n" +
		"```js title=\"x\"\nconst a = '`@x`'\n```\n"},
	{"structure", "# Title #\n\nSetext\n===\n\n* a\n* b\n  * nested @x\n\n1. one\n2. two\n\n3) three\n\n- [ ] task\n- [x] done\n\n" +
		"> quote\n> > nested quote with /approve\n\n***\n\n| a | b |\n|:--|--:|\n| `x\\|y` | [l](https://evil.example) |\n\n" +
		"1986\\. Not a list. \\# Not a heading. \\- Not an item. \\> Not a quote.\n\nhard  \nbreak\\\nhere\n"},
	{"commands", "/approve\n  /lgtm cancel\n!merge\nbors r+\n@dependabot rebase\nnot /a command mid-line\n\n- /retest\n"},
	{"invisible", "bi\u202edi\u202c over\u2066ride\u2069, zero\u200bwidth\u200c\u200d, word\u2060joiner, bom\ufeff, soft\u00adhyphen,\n" +
		"tags\U000E0041\U000E0042, selector\ufe0f, filler\u3164, nul\x00, bell\x07, escape\x1b[31m\n\n" +
		"```\ncode\u202e too\u200b\n```\n"},
	{"entities", "&lt;b&gt; &amp;amp; &#x202E;reversed &#0; &copy; &#10;newline &#42;not emphasis&#42; \\*escaped\\*\n"},
	{"enterprise", "[kept](https://github.com/acme/app/issues/1) is foreign on an Enterprise host; " +
		"[this](https://ghe.example.com:8443/acme/app/pull/2) stays.\n"},
}

func TestGolden(t *testing.T) {
	s := testSanitiser(t)
	ghe, err := New(Policy{Host: "GHE.example.com:8443", Owner: "acme", Repo: "app"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			san := s
			if tc.name == "enterprise" {
				san = ghe
			}
			out, st := san.MarkdownStats(tc.in, 4096)
			if st.Guard {
				t.Fatalf("guard tripped")
			}
			if p := san.Inspect(out).Problems(); len(p) > 0 {
				t.Fatalf("problems: %v\n%s", p, out)
			}
			checkGolden(t, filepath.Join("testdata", "golden", tc.name+".golden"), out+"\n")
		})
	}
}

func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run Golden -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs (go test -run Golden -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
