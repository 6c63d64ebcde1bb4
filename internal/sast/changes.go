package sast

import (
	"bytes"
	"slices"
	"time"

	"github.com/go-git/go-git/v5/utils/diff"
	"github.com/sergi/go-diff/diffmatchpatch"
)

// Bounds of ChangedLineRanges.
const (
	// diffTimeout bounds the line diff of one file; past it the diff
	// library marks what it has not compared as changed (never less).
	diffTimeout = 5 * time.Second
	// maxDiffLines bounds the distinct lines of the two versions (the
	// library encodes each as one rune); beyond it every line is changed.
	maxDiffLines = 1 << 20
)

// ChangedLineRanges returns the lines of head (Quavon's lines of
// Text(head), see lines.go) that are not lines of base in a line diff of
// the two versions: the added and modified lines, merged into ranges. A
// nil base (a new file) makes every line of head changed. It reads only
// the two blobs: no attribute, configuration or binary detection of git's
// has a say, and a blob git would call binary is diffed like any other.
func ChangedLineRanges(base, head []byte) []LineRange {
	h, _ := Text(head)
	if len(h) == 0 {
		return nil
	}
	all := []LineRange{{1, len(lineStarts(h, LinesLF))}}
	if base == nil {
		return all
	}
	b, _ := Text(base)
	if bytes.Equal(b, h) {
		return nil
	}
	if bytes.Count(b, []byte("\n"))+bytes.Count(h, []byte("\n")) >= maxDiffLines {
		return all
	}
	var out []LineRange
	line := 1
	for _, d := range diff.DoWithTimeout(string(b), string(h), diffTimeout) {
		n := countLines(d.Text)
		switch d.Type {
		case diffmatchpatch.DiffEqual:
			line += n
		case diffmatchpatch.DiffInsert:
			if n > 0 {
				out = append(out, LineRange{line, line + n - 1})
			}
			line += n
		}
	}
	return mergeRanges(out)
}

// countLines counts the lines of s, a run of whole lines of a diff (the
// last may lack its "\n").
func countLines(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			n++
		}
	}
	if len(s) > 0 && s[len(s)-1] != '\n' {
		n++
	}
	return n
}

// LineRange is an inclusive range of 1-based line numbers.
type LineRange struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// ChangedLines maps a path (relative to the repository root, clean) to
// the sorted, merged ranges of lines added or modified in the head
// version. A file that was deleted, or only lost lines, has no entry.
type ChangedLines map[string][]LineRange

// Contains reports whether any line of [start, end] lies within context
// lines of a changed line of p.
func (c ChangedLines) Contains(p string, start, end, context int) bool {
	for _, r := range c[p] {
		if start <= r.End+context && end >= r.Start-context {
			return true
		}
	}
	return false
}

// mergeRanges sorts ranges and merges overlapping and adjacent ones.
func mergeRanges(rs []LineRange) []LineRange {
	slices.SortFunc(rs, func(a, b LineRange) int { return a.Start - b.Start })
	var out []LineRange
	for _, r := range rs {
		if n := len(out); n > 0 && r.Start <= out[n-1].End+1 {
			out[n-1].End = max(out[n-1].End, r.End)
			continue
		}
		out = append(out, r)
	}
	return out
}
