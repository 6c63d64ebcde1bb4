package sanitise

import (
	"strings"
	"unicode/utf8"
)

// Keep says which end of an over-long code block stays.
type Keep uint8

const (
	// KeepHead keeps the beginning (code, plans).
	KeepHead Keep = iota
	// KeepTail keeps the end (test output: the failures come last).
	KeepTail
)

// CodeBlock returns content as a fenced code block that nothing inside can
// end: the fence is one backtick longer than the longest run of backticks
// in the content (CommonMark: a closing fence must be at least as long as
// the opening one), and at least three. Content is made Clean first.
// lang becomes the info string when it is a plain language name; GitHub's
// special blocks (suggestion, mermaid, geojson, topojson, stl, math) are
// refused, as only Quavon's renderer may suggest a change or draw a diagram.
//
// With maxBytes >= 0 the whole block fits in maxBytes: content is cut at a
// line boundary where one is near, keeping the given end, and cut reports
// it (the caller says so outside the block). When not even an empty block
// fits, CodeBlock returns "" and true.
func CodeBlock(content, lang string, maxBytes int, keep Keep) (block string, cut bool) {
	content = strings.TrimRight(Clean(content), "\n")
	return fence(content, codeLanguage(lang), maxBytes, keep)
}

// Suggestion returns the body of a GitHub suggested change: a fenced block
// with the info string "suggestion" holding the replacement lines. Only the
// renderer calls it, with the typed suggestion of a finding; it is cut like
// CodeBlock, never silently: a suggestion that does not fit is dropped.
func Suggestion(replacement string, maxBytes int) (string, bool) {
	replacement = strings.TrimRight(Clean(replacement), "\n")
	b := fenceWith(replacement, "suggestion")
	if maxBytes >= 0 && len(b) > maxBytes {
		return "", false
	}
	return b, true
}

func fence(content, lang string, maxBytes int, keep Keep) (string, bool) {
	b := fenceWith(content, lang)
	if maxBytes < 0 || len(b) <= maxBytes {
		return b, false
	}
	f := strings.Repeat("`", max(3, longestRun(content, '`')+1))
	room := maxBytes - 2*len(f) - len(lang) - 2
	if room < 0 {
		return "", true
	}
	if keep == KeepTail {
		start := len(content) - room
		for start < len(content) && !utf8.RuneStart(content[start]) {
			start++
		}
		if i := strings.IndexByte(content[start:], '\n'); i >= 0 && i < room/2 {
			start += i + 1
		}
		content = content[start:]
	} else {
		content = truncateUTF8(content, room)
		if i := strings.LastIndexByte(content, '\n'); i >= 0 && i > len(content)/2 {
			content = content[:i]
		}
	}
	b = fenceWith(content, lang)
	if len(b) > maxBytes { // cannot happen: the fence only got shorter
		return "", true
	}
	return b, true
}

func fenceWith(content, lang string) string {
	f := strings.Repeat("`", max(3, longestRun(content, '`')+1))
	if content == "" {
		return f + lang + "\n" + f
	}
	return f + lang + "\n" + content + "\n" + f
}

// specialBlocks are info strings GitHub renders as something other than
// code.
var specialBlocks = map[string]bool{
	"suggestion": true, "mermaid": true, "geojson": true, "topojson": true, "stl": true, "math": true,
}

func codeLanguage(lang string) string {
	lang = strings.TrimSpace(lang)
	if i := strings.IndexAny(lang, " \t"); i >= 0 {
		lang = lang[:i]
	}
	if lang == "" || len(lang) > 32 || specialBlocks[strings.ToLower(lang)] {
		return ""
	}
	for i := 0; i < len(lang); i++ {
		c := lang[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("+-_.#", c) >= 0) {
			return ""
		}
	}
	return lang
}

// Terminal removes terminal control sequences from command output (ANSI
// CSI and OSC sequences, and the other ESC forms), before Clean drops the
// remaining control characters: colour codes would otherwise leave "[31m"
// behind, and an OSC 8 sequence carries a hyperlink.
func Terminal(s string) string {
	if !strings.ContainsRune(s, 0x1b) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == 0x1b && i+1 < len(s) && s[i+1] == '[':
			i = skipCSI(s, i+2)
		case c == 0x1b && i+1 < len(s) && (s[i+1] == ']' || s[i+1] == 'P' || s[i+1] == '_' || s[i+1] == '^'):
			i = skipString(s, i+2)
		case c == 0x1b:
			// ESC, intermediate bytes, one final byte (ESC ( B, ESC 7).
			i++
			for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
				i++
			}
			if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
				i++
			}
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// skipCSI skips parameter and intermediate bytes and the final byte.
func skipCSI(s string, i int) int {
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x3f {
		i++
	}
	if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
		i++
	}
	return i
}

// skipString skips an OSC/DCS/APC/PM string up to BEL or ESC \.
func skipString(s string, i int) int {
	for i < len(s) {
		switch {
		case s[i] == 0x07:
			return i + 1
		case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\':
			return i + 2
		}
		i++
	}
	return i
}
