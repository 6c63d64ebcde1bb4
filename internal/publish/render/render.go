package render

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/quavon/quavon/internal/publish/sanitise"
	"github.com/quavon/quavon/internal/sast"
)

// GitHub's limits, in bytes (GitHub counts characters; a byte cap is never
// over it). See sanitise's package doc for the sources.
const (
	MaxBodyBytes         = 65536 // pull request, review and comment bodies
	MaxCheckSummaryBytes = 65535 // check run output.summary
	MaxCheckTitleBytes   = 255
	MaxPRTitleBytes      = 256
)

// Product is the name in every transparency label and commit reference.
const Product = "Quavon"

// Repo is the repository a text is published in.
type Repo struct {
	// Host is "github.com" or a GitHub Enterprise Server host (host[:port]).
	Host  string
	Owner string
	Name  string
}

// Renderer renders bodies for one repository. It holds that repository's
// sanitiser: model and repository text enters a body only through it.
type Renderer struct {
	repo Repo
	san  *sanitise.Sanitiser
}

// New returns a Renderer for repo.
func New(repo Repo) (*Renderer, error) {
	san, err := sanitise.New(sanitise.Policy{Host: repo.Host, Owner: repo.Owner, Repo: repo.Name})
	if err != nil {
		return nil, fmt.Errorf("render.New: %w", err)
	}
	return &Renderer{repo: repo, san: san}, nil
}

// Sanitiser returns the renderer's sanitiser, for Inspect in the publisher's
// final check of a body.
func (r *Renderer) Sanitiser() *sanitise.Sanitiser { return r.san }

// Marker is the hidden idempotency marker of one publish intent. The
// publisher makes it (from the intent); the renderer writes it into the
// body as an HTML comment, or into a commit message as the reference line,
// and reconcile looks for exactly that. Model text can never contain it:
// the sanitiser removes every HTML comment.
type Marker string

var markerRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{7,127}$`)

// ErrMarker is returned for a marker that is not 8 to 128 characters of
// letters, digits, '.', '_' and '-' (no "--", which would end nothing but
// confuses HTML comment parsers).
var ErrMarker = errors.New("render: invalid marker")

// Validate reports whether m can be written.
func (m Marker) Validate() error {
	if !markerRe.MatchString(string(m)) || strings.Contains(string(m), "--") {
		return fmt.Errorf("%w %q", ErrMarker, string(m))
	}
	return nil
}

// Comment is the marker as it appears in a body.
func (m Marker) Comment() string { return "<!-- quavon:intent " + string(m) + " -->" }

// CommitLine is the marker as it appears in a commit message (spec FX17:
// the reference line).
func (m Marker) CommitLine() string { return Product + " reference " + string(m) }

// BodyHasMarker reports whether body (as GitHub returns it) carries m.
// Reconcile must also check the author: a human can copy a marker.
func BodyHasMarker(body string, m Marker) bool {
	return m.Validate() == nil && strings.Contains(body, m.Comment())
}

// CommitHasMarker reports whether a commit message has m's reference line.
func CommitHasMarker(message string, m Marker) bool {
	if m.Validate() != nil {
		return false
	}
	for _, l := range strings.Split(strings.ReplaceAll(message, "\r\n", "\n"), "\n") {
		if strings.TrimRight(l, " ") == m.CommitLine() {
			return true
		}
	}
	return false
}

var (
	shaRe   = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)
	loginRe = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(\[bot\])?$`)
	fpRe    = regexp.MustCompile(`^[0-9a-f]{8,64}$`)
	cweRe   = regexp.MustCompile(`^CWE-[0-9]{1,6}$`)
)

func validSHA(s string) bool { return shaRe.MatchString(s) }

// short is the 7-character form of a commit SHA.
func short(sha string) string { return sha[:7] }

// severity labels, most severe first.
var severities = []sast.Severity{sast.SeverityCritical, sast.SeverityHigh, sast.SeverityMedium, sast.SeverityLow, sast.SeverityInfo}

func severityLabel(s sast.Severity) string {
	switch s {
	case sast.SeverityCritical:
		return "🔴 Critical"
	case sast.SeverityHigh:
		return "🟠 High"
	case sast.SeverityMedium:
		return "🟡 Medium"
	case sast.SeverityLow:
		return "🔵 Low"
	}
	return "⚪ Info"
}

// severityWord is the severity in lower case: "high".
func severityWord(s sast.Severity) string {
	if !s.Valid() {
		return "info"
	}
	return string(s)
}

// code writes Quavon-chosen or repository text (paths, commands, logins,
// rule ids, model names) as a code span of at most max bytes, cut with an
// ellipsis; "—" when there is nothing to show.
func code(s string, max int) string {
	s = strings.TrimSpace(strings.ReplaceAll(sanitise.Clean(s), "\n", " "))
	if len(s) > max {
		s = cut(s, max-len("…")) + "…"
	}
	if c := sanitise.CodeSpan(s); c != "" {
		return c
	}
	return "—"
}

// codeCell is code for a table cell.
func codeCell(s string, max int) string {
	s = strings.TrimSpace(strings.ReplaceAll(sanitise.Clean(s), "\n", " "))
	if len(s) > max {
		s = cut(s, max-len("…")) + "…"
	}
	if c := sanitise.CodeCell(s); c != "" {
		return c
	}
	return "—"
}

// path shows a repository path; a long one keeps its end (the file name).
func path(p string, line int, cell bool) string {
	p = strings.TrimSpace(strings.ReplaceAll(sanitise.Clean(p), "\n", " "))
	if len(p) > maxPathBytes {
		i := len(p) - maxPathBytes + len("…")
		for i < len(p) && !utf8.RuneStart(p[i]) {
			i++
		}
		p = "…" + p[i:]
	}
	if line > 0 {
		p += ":" + strconv.Itoa(line)
	}
	if cell {
		return codeCell(p, maxPathBytes+16)
	}
	return code(p, maxPathBytes+16)
}

func cut(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// duration shows d as "850 ms", "12.3 s" or "4 min 5 s".
func duration(d time.Duration) string {
	switch {
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
	}
	d = d.Round(time.Second)
	return fmt.Sprintf("%d min %d s", int(d.Minutes()), int(d.Seconds())%60)
}

// thousands writes n with thin separators: 12,345.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Caps on what one body shows; each list says how many it left out.
const (
	maxPathBytes     = 200
	maxTitleBytes    = 300  // a finding's title, sanitised
	maxModelBytes    = 100  // a model name
	maxCommandBytes  = 300  // a policy command
	maxDetailBytes   = 300  // a tool's error, a skip reason's detail
	maxPlanBytes     = 8192 // the agent's plan
	maxFindingBytes  = 6144 // a finding's body in an inline comment
	maxSuggestion    = 16384
	maxOutputBytes   = 4096 // the tail of one command's output
	maxRuns          = 6    // command runs shown (the spec's maxSandboxRuns)
	maxListed        = 25   // entries of a list in a body
	maxCriterion     = 400  // an acceptance criterion, sanitised
	maxEvidence      = 5    // locations per criterion
	maxSources       = 6    // badges per finding
	maxCheckFindings = 50   // rows of the findings table in a check run
)

// Byte budgets of the sections of a body; with the fixed parts they keep
// every body under GitHub's limits whatever the input (TestLimits).
const (
	budgetFindings = 24 << 10
	budgetResolved = 6 << 10
	budgetSAST     = 10 << 10
	budgetSkipped  = 4 << 10
	budgetAC       = 16 << 10
	tailReserve    = 80
)

// capRows writes rows 0..n-1, one per line, while they fit in budget bytes
// and number at most limit; tail(rest) replaces the rest.
func capRows(n, limit int, row func(i int) string, budget int, tail func(rest int) string) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i == limit {
			b.WriteString(tail(n - i))
			break
		}
		s := row(i)
		if b.Len()+len(s)+1+tailReserve > budget {
			b.WriteString(tail(n - i))
			break
		}
		b.WriteString(s)
		if i < n-1 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// more ends a capped list.
func more(n int, what string) string {
	return fmt.Sprintf("- *…and %s more.*", thousandsInt(n)+" "+what)
}

func thousandsInt(n int) string { return thousands(int64(n)) }
