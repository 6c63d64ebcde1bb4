package sanitise

import (
	"bufio"
	"bytes"
	"html"
	"strings"
	"unicode"
	"unicode/utf8"

	gmhtml "github.com/yuin/goldmark/renderer/html"
	"golang.org/x/text/width"
)

// Invisible reports whether r is a character the sanitiser removes from every
// output, code included: format characters (Unicode category Cf: the bidi
// embeddings, overrides and isolates behind "Trojan Source", zero-width
// space/joiners, word joiner, BOM, soft hyphen, the tag characters used to
// smuggle text past readers), control characters other than newline and tab,
// line and paragraph separators, variation selectors (which can carry
// arbitrary invisible bytes), the combining grapheme joiner and the Hangul
// fillers that render as nothing. Emoji joined with ZWJ fall apart into their
// parts; that is the price of showing reviewers exactly what is there.
func Invisible(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
		return true
	case r < 0xa0:
		return false
	case unicode.Is(unicode.Cf, r), unicode.Is(unicode.Zl, r), unicode.Is(unicode.Zp, r):
		return true
	case r >= 0xfe00 && r <= 0xfe0f, r >= 0xe0100 && r <= 0xe01ef, r >= 0x180b && r <= 0x180f:
		return true // variation selectors, Mongolian free variation selectors
	case r == 0x034f, r == 0x115f, r == 0x1160, r == 0x3164, r == 0xffa0:
		return true // combining grapheme joiner, Hangul fillers
	}
	return false
}

// Clean makes s valid UTF-8 (invalid bytes become U+FFFD), turns CR LF and
// lone CR into LF and drops every Invisible character. It is the first step
// of everything the sanitiser does, and what code blocks get instead of the
// Markdown treatment.
func Clean(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	if !strings.ContainsFunc(s, Invisible) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if Invisible(r) {
			return -1
		}
		return r
	}, s)
}

// fold maps a rune to the ASCII character it is a compatibility variant of
// (full-width ＠ and ＃, the small forms ﹫ and ﹟, full-width letters and
// digits), so that look-alike spellings are judged like the real thing.
func fold(r rune) rune {
	if r < utf8.RuneSelf {
		return r
	}
	switch r {
	case '\uFE6B':
		return '@'
	case '\uFE5F':
		return '#'
	case '\uFE56':
		return '?'
	case '\uFE57':
		return '!'
	case '\uFE55':
		return ':'
	case '\uFE63':
		return '-'
	case '\uFE52':
		return '.'
	}
	if k := width.LookupRune(r).Kind(); k == width.EastAsianFullwidth {
		if n := width.Narrow.String(string(r)); utf8.RuneCountInString(n) == 1 {
			if a, _ := utf8.DecodeRuneInString(n); a < utf8.RuneSelf {
				return a
			}
		}
	}
	return r
}

// isAt reports an @ in any spelling GitHub or a reader might take for one.
func isAt(r rune) bool { return fold(r) == '@' }

// isHash reports a # in any spelling.
func isHash(r rune) bool { return fold(r) == '#' }

func isSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || unicode.IsSpace(r) }

func isDigit(r rune) bool { f := fold(r); return f >= '0' && f <= '9' || unicode.IsDigit(r) }

func isLetter(r rune) bool { return unicode.IsLetter(r) || unicode.IsMark(r) }

// nameRune reports characters that may continue a user, team, owner or
// repository name after an @ or before a #: generous on purpose.
func nameRune(r rune) bool {
	f := fold(r)
	return isLetter(r) || isDigit(r) || f == '-' || f == '_' || f == '.' || f == '/'
}

// literal is the text a goldmark Text or String value stands for: backslash
// escapes removed, entity and numeric character references resolved, exactly
// as goldmark's own HTML writer resolves them (its output is HTML-escaped, so
// the stdlib unescapes that again). Raw values are taken as they are.
func literal(value []byte, raw bool) string {
	if raw {
		return Clean(string(value))
	}
	if bytes.IndexByte(value, '\\') < 0 && bytes.IndexByte(value, '&') < 0 {
		return strings.ReplaceAll(Clean(string(value)), "\n", " ")
	}
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	gmhtml.DefaultWriter.Write(w, value)
	_ = w.Flush()
	// A reference may produce characters that Clean removes (&#x202E;) or
	// a line break (&#10;); neither may reach the output as such.
	return strings.ReplaceAll(Clean(html.UnescapeString(buf.String())), "\n", " ")
}
