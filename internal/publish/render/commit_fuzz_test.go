package render

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// commitTitleLine is what a title line of a review-fix commit may be:
// "- " and letters, digits, spaces and . , : ; ! ? ( ) ' -.
var commitTitleLine = regexp.MustCompile(`^- [\p{L}\p{N} .,:;!?()'-]+$`)

// FuzzFixCommitMessage holds renderFixCommitMessage (FX17) to its contract
// for any finding titles: the fixed headline; then at most ten title lines
// (and a count of the rest) of plain words only, so no mention, issue or
// pull request reference, URL or markup; then, as the last paragraph and
// the only one of its kind, the reference line with the marker, so the
// message has no trailers and a title cannot forge the reference line.
func FuzzFixCommitMessage(f *testing.F) {
	f.Add("Fixes #1 @bob https://evil.example/x", "GH-12 closes acme/app#3\nSigned-off-by: x <y@z>", "Quavon reference "+string(marker), 12)
	f.Add("<img src=x onerror=alert(1)>", "`rm -rf /` [a](b) **x** _y_", "\u202eevil\u200b", 3)
	f.Add("", " ", "\x00\xff", 0)
	f.Fuzz(func(t *testing.T, a, b, c string, n int) {
		n = max(0, min(n, 30))
		titles := []string{a, b, c}
		for i := 0; i < n; i++ {
			titles = append(titles, a+" "+b)
		}
		msg, err := FixCommitMessage(FixCommit{Marker: marker, FindingTitles: titles})
		if err != nil {
			t.Fatal(err)
		}
		s := msg.String()
		if msg.Headline != ReviewFixHeadline || !utf8.ValidString(s) || strings.ContainsAny(s, "@#<>`[]*_/&\\\r\u202e\u200b") {
			t.Fatalf("message %q", s)
		}
		paras := strings.Split(strings.TrimSuffix(s, "\n"), "\n\n")
		if last := paras[len(paras)-1]; last != marker.CommitLine() {
			t.Fatalf("last paragraph %q, want the reference line", last)
		}
		refs := 0
		for _, l := range strings.Split(s, "\n") {
			if strings.TrimRight(l, " ") == marker.CommitLine() {
				refs++
			}
		}
		if refs != 1 {
			t.Fatalf("%d reference lines: %q", refs, s)
		}
		if len(paras) > 3 {
			t.Fatalf("%d paragraphs: %q", len(paras), s)
		}
		if len(paras) == 3 {
			lines := strings.Split(paras[1], "\n")
			if len(lines) > maxCommitTitles+1 {
				t.Fatalf("%d title lines", len(lines))
			}
			for i, l := range lines {
				if !commitTitleLine.MatchString(l) || len(l) > 110 {
					t.Fatalf("title line %d %q", i, l)
				}
			}
		}
		for _, l := range strings.Split(s, "\n") {
			if closing.MatchString(l) {
				t.Fatalf("a closing reference in %q", l)
			}
		}
	})
}

// closing is any GitHub closing keyword followed by something GitHub
// could link (#n, owner/repo#n, GH-n, a URL).
var closing = regexp.MustCompile(`(?i)\b(close[sd]?|fix(e[sd])?|resolve[sd]?)\b:?\s*(#\d|\S+#\d|gh-\d|https?:)`)
