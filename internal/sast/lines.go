package sast

// Line accounting: one definition of a file's lines, shared by the change
// (ChangedLineRanges), the changed-line filter and every tool's reported
// line numbers (Normalise maps them onto it). Nothing here reads git's
// attributes, configuration or binary detection: it works on blob bytes.
//
// Quavon's lines are the lines of Text(blob) split after each "\n"; a
// "\r\n" ends one line, a lone "\r", U+2028 and U+2029 end none. That is
// how git, GitHub and most scanners number lines. A tool whose numbering
// also ends lines elsewhere (Python at a lone "\r", JavaScript at "\r",
// U+2028 and U+2029) counts a superset of these ends, so each of its lines
// lies within exactly one Quavon line and maps onto it exactly.

import (
	"bytes"
	"regexp"
	"strings"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/encoding/unicode/utf32"
)

// Text is the content of a blob as the scanners get it and as its lines
// are counted: a file that starts with a UTF-32 or UTF-16 byte order mark
// is decoded to UTF-8 (its lines stay where they were; invalid sequences
// become U+FFFD), every other file is returned as stored. enc names the
// decoding ("" when there was none).
func Text(blob []byte) (text []byte, enc string) {
	var e encoding.Encoding
	switch {
	case bytes.HasPrefix(blob, []byte{0xFF, 0xFE, 0, 0}):
		e, enc = utf32.UTF32(utf32.LittleEndian, utf32.ExpectBOM), "UTF-32LE"
	case bytes.HasPrefix(blob, []byte{0, 0, 0xFE, 0xFF}):
		e, enc = utf32.UTF32(utf32.BigEndian, utf32.ExpectBOM), "UTF-32BE"
	case bytes.HasPrefix(blob, []byte{0xFF, 0xFE}):
		e, enc = unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM), "UTF-16LE"
	case bytes.HasPrefix(blob, []byte{0xFE, 0xFF}):
		e, enc = unicode.UTF16(unicode.BigEndian, unicode.ExpectBOM), "UTF-16BE"
	default:
		return blob, ""
	}
	out, err := e.NewDecoder().Bytes(blob)
	if err != nil { // the decoders replace rather than fail; be safe anyway
		return blob, ""
	}
	return out, enc
}

// Terminators is a set of line ends a tool counts. "\n" (and so "\r\n")
// is in every set.
type Terminators uint8

// Line ends beyond "\n".
const (
	// TermCR: a "\r" not followed by "\n" ends a line (Python, JavaScript).
	TermCR Terminators = 1 << iota
	// TermUnicode: U+2028 and U+2029 end a line (JavaScript).
	TermUnicode
)

// Line-numbering conventions of the tools.
const (
	// LinesLF is Quavon's own numbering, and git's, gitleaks', Go's and
	// tree-sitter's (ast-grep).
	LinesLF Terminators = 0
	// LinesPython is CPython's (universal newlines): "\n", "\r\n", "\r".
	LinesPython = TermCR
	// LinesJS is ECMAScript's LineTerminatorSequence.
	LinesJS = TermCR | TermUnicode
)

// lineStarts returns the byte offset at which each line of text begins
// under t (the first is 0). A text that ends with a line end has no
// further, empty line.
func lineStarts(text []byte, t Terminators) []int {
	starts := []int{0}
	for i := 0; i < len(text); i++ {
		end := 0
		switch c := text[i]; {
		case c == '\n':
			end = i + 1
		case c == '\r' && t&TermCR != 0 && (i+1 == len(text) || text[i+1] != '\n'):
			end = i + 1
		case c == 0xE2 && t&TermUnicode != 0 && i+2 < len(text) && text[i+1] == 0x80 && (text[i+2] == 0xA8 || text[i+2] == 0xA9):
			end = i + 3
		}
		if end > 0 && end < len(text) {
			starts = append(starts, end)
		}
		if end > 0 {
			i = end - 1
		}
	}
	return starts
}

// lineAt returns the 1-based line of starts that holds byte offset off.
func lineAt(starts []int, off int) int {
	lo, hi := 0, len(starts)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if starts[mid] <= off {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo + 1
}

// lineMap maps one tool's line numbers in one file onto Quavon's.
type lineMap struct {
	ours, theirs []int
	// why is set when the tool's numbering cannot be reconciled at all.
	why string
}

func newLineMap(text []byte, t Terminators, why string) *lineMap {
	m := &lineMap{ours: lineStarts(text, LinesLF), why: why}
	if t == LinesLF {
		m.theirs = m.ours
	} else {
		m.theirs = lineStarts(text, t)
	}
	return m
}

// line maps the tool's line n; ok is false when there is no such line.
// exact says the tool's line starts where Quavon's does (so columns still
// hold).
func (m *lineMap) line(n int) (ours int, exact, ok bool) {
	if m.why != "" || n < 1 || n > len(m.theirs) {
		return 0, false, false
	}
	off := m.theirs[n-1]
	ours = lineAt(m.ours, off)
	return ours, m.ours[ours-1] == off, true
}

// pythonCookie is PEP 263's encoding declaration.
var pythonCookie = regexp.MustCompile(`^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)`)

// pythonSafeCodecs are the codecs (normalised: lower case, "_" as "-")
// that decode "\n" and "\r" bytes, and only them, to line ends; under any
// other declared codec (utf-7, utf-16, unicode-escape, EBCDIC pages …)
// Python's line numbers cannot be mapped onto the file's bytes.
var pythonSafeCodecs = func() map[string]bool {
	m := map[string]bool{}
	for _, c := range strings.Fields(`utf-8 utf8 utf-8-sig u8 utf ascii us-ascii 646 latin-1 latin1 l1
		iso-8859-1 iso8859-1 iso-8859-2 iso-8859-3 iso-8859-4 iso-8859-5 iso-8859-6 iso-8859-7
		iso-8859-8 iso-8859-9 iso-8859-10 iso-8859-13 iso-8859-14 iso-8859-15 iso-8859-16
		cp1250 cp1251 cp1252 cp1253 cp1254 cp1255 cp1256 cp1257 cp1258 windows-1250 windows-1251
		windows-1252 windows-1253 windows-1254 windows-1255 windows-1256 windows-1257 windows-1258
		cp437 cp850 cp852 cp866 koi8-r koi8-u mac-roman macroman shift-jis sjis cp932 ms932
		euc-jp euc-kr gbk gb2312 gb18030 big5 cp949 cp950`) {
		m[c] = true
	}
	return m
}()

// pythonNumbering is bandit's and Ruff's: CPython's universal newlines
// after decoding with the file's declared codec (a UTF-8 byte order mark
// or, on one of the first two lines, a coding cookie).
func pythonNumbering(text []byte) (Terminators, string) {
	first := text
	for i := 0; i < 2; i++ {
		line := first
		if j := bytes.IndexAny(first, "\r\n"); j >= 0 {
			line, first = first[:j], bytes.TrimLeft(first[j:], "\r\n")
		} else {
			first = nil
		}
		if m := pythonCookie.FindSubmatch(line); m != nil {
			codec := strings.ReplaceAll(strings.ToLower(string(m[1])), "_", "-")
			if !pythonSafeCodecs[codec] {
				return LinesPython, "Python reads this file as " + clip(codec, 40) + ", so its line numbers cannot be mapped onto the file"
			}
			break
		}
		// The cookie may be on line 2 only if line 1 is a comment or blank.
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			break
		}
	}
	return LinesPython, ""
}
