package review

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/quavon/quavon/internal/sast"
)

// Candidate is a finding as the model reported it (report_finding): every
// field is model output, derived from untrusted pull request content.
type Candidate struct {
	Path      string `json:"path"`
	StartLine int    `json:"startLine"`
	EndLine   int    `json:"endLine"`
	Severity  string `json:"severity"`
	Category  string `json:"category"`
	Title     string `json:"title"`
	Body      string `json:"body"`
	Quote     string `json:"quote"`
}

// Categories are the closed set of a model finding's category.
var Categories = []string{"bug", "security", "performance", "concurrency", "error-handling", "reliability", "maintainability"}

// MaxFindingLines bounds the lines one model finding may span.
const MaxFindingLines = 60

// DropReason says why a model finding was not kept (dropped_unverified).
type DropReason string

// Drop reasons.
const (
	DropSeverity  DropReason = "severity"        // not one of Severities
	DropCategory  DropReason = "category"        // not one of Categories
	DropTitle     DropReason = "title"           // empty
	DropNotInDiff DropReason = "not_in_diff"     // the path is not a changed file of the pull request
	DropLines     DropReason = "lines"           // lines outside the file, reversed, or too many
	DropUnchanged DropReason = "unchanged_lines" // no line of the range is a changed (RIGHT side) line
	DropQuote     DropReason = "quote"           // the quote is not the file's text at those lines
)

// VerifyError is a dropped candidate and why.
type VerifyError struct{ Reason DropReason }

func (e *VerifyError) Error() string { return "finding dropped: " + string(e.Reason) }

// Verify keeps a model finding only when it is about this pull request's
// change: its path is a changed file, its lines exist and meet a changed
// line (changed: the head side's added and modified lines), and its quote
// is the file's text at those lines after whitespace normalisation. read
// returns the head version of a changed file. Severity and category are
// closed sets. The result is a Finding with a line-independent fingerprint
// (path, category and the normalised quote), so the same problem keeps
// its fingerprint when lines move and loses it when the quoted code
// changes.
func Verify(c Candidate, changed sast.ChangedLines, read func(path string) ([]byte, bool)) (Finding, error) {
	drop := func(r DropReason) (Finding, error) { return Finding{}, &VerifyError{Reason: r} }
	if !slices.Contains(Severities, c.Severity) {
		return drop(DropSeverity)
	}
	if !slices.Contains(Categories, c.Category) {
		return drop(DropCategory)
	}
	if strings.TrimSpace(c.Title) == "" {
		return drop(DropTitle)
	}
	if _, ok := changed[c.Path]; !ok {
		return drop(DropNotInDiff)
	}
	if c.EndLine == 0 {
		c.EndLine = c.StartLine
	}
	if c.StartLine < 1 || c.EndLine < c.StartLine || c.EndLine-c.StartLine >= MaxFindingLines {
		return drop(DropLines)
	}
	data, ok := read(c.Path)
	if !ok {
		return drop(DropNotInDiff)
	}
	text, _ := sast.Text(data)
	lines := bytes.SplitAfter(text, []byte("\n"))
	if n := len(lines); n > 0 && len(lines[n-1]) == 0 {
		lines = lines[:n-1]
	}
	if c.EndLine > len(lines) {
		return drop(DropLines)
	}
	if !changed.Contains(c.Path, c.StartLine, c.EndLine, 0) {
		return drop(DropUnchanged)
	}
	quote := NormaliseSpace(c.Quote)
	if len(quote) < 3 || len(c.Quote) > MaxQuoteBytes {
		return drop(DropQuote)
	}
	at := NormaliseSpace(string(bytes.Join(lines[c.StartLine-1:c.EndLine], nil)))
	if !strings.Contains(at, quote) {
		return drop(DropQuote)
	}
	return Finding{
		Fingerprint: LLMFingerprint(c.Path, c.Category, quote),
		Source:      SourceLLM,
		Path:        c.Path,
		StartLine:   c.StartLine,
		EndLine:     c.EndLine,
		Severity:    c.Severity,
		Category:    c.Category,
		Title:       c.Title,
		Body:        c.Body,
		Quote:       c.Quote,
	}, nil
}

// NormaliseSpace collapses every run of white space to one space and trims
// the ends.
func NormaliseSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// LLMFingerprint is a model finding's fingerprint: independent of its
// lines, its wording and its severity.
func LLMFingerprint(path, category, normalisedQuote string) string {
	h := sha256.New()
	for _, part := range []string{"quavon-llm-v1", path, category, normalisedQuote} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// Dropped counts dropped candidates by reason.
type Dropped map[DropReason]int

// Total is the number of dropped candidates.
func (d Dropped) Total() int {
	n := 0
	for _, v := range d {
		n += v
	}
	return n
}

func (d Dropped) String() string {
	var parts []string
	for _, r := range slices.Sorted(func(yield func(DropReason) bool) {
		for k := range d {
			if !yield(k) {
				return
			}
		}
	}) {
		parts = append(parts, fmt.Sprintf("%s=%d", r, d[r]))
	}
	return strings.Join(parts, " ")
}
