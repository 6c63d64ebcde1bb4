package patch

import "fmt"

// Default limits (spec §4).
const (
	DefaultMaxFiles        = 10
	DefaultMaxChangedLines = 300
	DefaultMaxFileBytes    = 256 << 10
)

// Limits bound a patch. A zero field means its default; negative fields are
// refused by Validate.
type Limits struct {
	// MaxFiles is the number of files created, modified or deleted.
	MaxFiles int
	// MaxChangedLines counts added plus removed lines over all files, as
	// GitHub's "changes" does (a replaced line counts twice).
	MaxChangedLines int
	// MaxFileBytes bounds the new content of each created or modified file.
	MaxFileBytes int
}

// DefaultLimits are the limits of spec §4.
var DefaultLimits = Limits{MaxFiles: DefaultMaxFiles, MaxChangedLines: DefaultMaxChangedLines, MaxFileBytes: DefaultMaxFileBytes}

// Validate refuses negative limits.
func (l Limits) Validate() error {
	if l.MaxFiles < 0 || l.MaxChangedLines < 0 || l.MaxFileBytes < 0 {
		return fmt.Errorf("patch.Limits: negative limit in %+v", l)
	}
	return nil
}

func (l Limits) withDefaults() Limits {
	if l.MaxFiles == 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	if l.MaxChangedLines == 0 {
		l.MaxChangedLines = DefaultMaxChangedLines
	}
	if l.MaxFileBytes == 0 {
		l.MaxFileBytes = DefaultMaxFileBytes
	}
	return l
}

// fileDelta is what a change does to one file's lines.
type fileDelta struct {
	added, removed int
	addedLines     []addedLine
}

type addedLine struct {
	n    int // 1-based line number in the new content
	text string
}

// computeDelta diffs old and new. maxEdits bounds the Myers search; beyond
// it the counts are an upper bound (see diffLines).
func computeDelta(old, new string, maxEdits int) fileDelta {
	var d fileDelta
	n := 0
	for _, op := range diffLines(splitLines(old), splitLines(new), maxEdits) {
		switch op.kind {
		case opEqual:
			n++
		case opInsert:
			n++
			d.added++
			d.addedLines = append(d.addedLines, addedLine{n: n, text: op.line})
		case opDelete:
			d.removed++
		}
	}
	return d
}

// invisibleInDelta returns the first bidi or zero-width character in the
// added lines, with its line number.
func invisibleInDelta(d fileDelta) (Rule, rune, int) {
	for _, l := range d.addedLines {
		if rule, r := invisibleInLine(l.text, l.n == 1); rule != "" {
			return rule, r, l.n
		}
	}
	return "", 0, 0
}
