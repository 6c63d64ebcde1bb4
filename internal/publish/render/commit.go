package render

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/quavon/quavon/internal/publish/sanitise"
)

// CommitMessage is a rendered commit message: the headline and the body,
// as createCommitOnBranch takes them; String joins them for the git data
// API.
type CommitMessage struct {
	Headline string
	Body     string
}

func (m CommitMessage) String() string {
	if m.Body == "" {
		return m.Headline + "\n"
	}
	return m.Headline + "\n\n" + m.Body + "\n"
}

// ReviewFixHeadline is the fixed headline of a review-fix commit (FX17).
const ReviewFixHeadline = "Apply review fixes from " + Product

// maxCommitTitles is how many finding titles a review-fix commit lists.
const maxCommitTitles = 10

// FixCommit is what a review-fix commit message is rendered from: the
// commit on the pull request's head branch (delivery commit) or on the
// stacked bot branch.
type FixCommit struct {
	Marker Marker
	// FindingTitles are the titles of the findings the patch addresses
	// (untrusted: model or scanner text).
	FindingTitles []string
}

// FixCommitMessage renders a review-fix commit message (spec FX17,
// renderFixCommitMessage): a fixed headline, at most ten finding titles
// reduced to letters, digits and basic punctuation (so no mention, issue
// reference, link or markup can form), and the reference line with the
// marker. It has no trailers: the last paragraph is the reference line,
// which is not "Key: value".
func FixCommitMessage(in FixCommit) (CommitMessage, error) {
	if err := in.Marker.Validate(); err != nil {
		return CommitMessage{}, fmt.Errorf("render.FixCommitMessage: %w", err)
	}
	var titles []string
	for _, t := range in.FindingTitles {
		if p := plainWords(t, 100); p != "" {
			titles = append(titles, "- "+p)
		}
	}
	lines := titles[:min(len(titles), maxCommitTitles)]
	if rest := len(titles) - len(lines); rest > 0 {
		lines = append(lines, "- and "+plural(rest, "more finding", "more findings"))
	}
	body := in.Marker.CommitLine()
	if len(lines) > 0 {
		body = strings.Join(lines, "\n") + "\n\n" + body
	}
	return CommitMessage{Headline: ReviewFixHeadline, Body: body}, nil
}

// IssueFix is what the commit of an issue fix is rendered from.
type IssueFix struct {
	Issue  int
	Marker Marker
}

// IssueFixCommitMessage renders the one commit of an issue fix (spec §7
// item 7). It names the issue without a closing keyword: the pull request
// body's single "Fixes" line is the one that closes it.
func IssueFixCommitMessage(in IssueFix) (CommitMessage, error) {
	if in.Issue <= 0 {
		return CommitMessage{}, fmt.Errorf("render.IssueFixCommitMessage: issue number %d", in.Issue)
	}
	if err := in.Marker.Validate(); err != nil {
		return CommitMessage{}, fmt.Errorf("render.IssueFixCommitMessage: %w", err)
	}
	return CommitMessage{
		Headline: Product + ": draft change for issue #" + strconv.Itoa(in.Issue),
		Body:     in.Marker.CommitLine(),
	}, nil
}

// plainWords reduces untrusted text to letters, digits, spaces and the
// punctuation . , : ; ! ? ( ) ' - and caps it at max bytes. Everything else
// (@, #, /, <, `, *, _, [, ], &, invisible characters) becomes a space, so no
// mention, reference, URL, HTML or Markdown survives; "GH-12" becomes
// "GH 12", the one reference that needs none of those characters.
func plainWords(s string, max int) string {
	rs := []rune(sanitise.Clean(s))
	var b strings.Builder
	space := true
	for i, r := range rs {
		keep := unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune(".,:;!?()'-", r)
		if r == '-' && i >= 2 && unicode.ToLower(rs[i-2]) == 'g' && unicode.ToLower(rs[i-1]) == 'h' &&
			(i == 2 || !unicode.IsLetter(rs[i-3]) && !unicode.IsDigit(rs[i-3])) && i+1 < len(rs) && unicode.IsDigit(rs[i+1]) {
			keep = false // GH-12
		}
		if keep {
			b.WriteRune(r)
			space = false
		} else if !space {
			b.WriteByte(' ')
			space = true
		}
	}
	out := strings.Join(strings.Fields(b.String()), " ")
	if len(out) > max {
		out = strings.TrimRight(cut(out, max-3), " ") + "..."
	}
	return out
}
