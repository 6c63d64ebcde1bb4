package patch

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// textProblem says why content is not a text file Quavon may write: it must
// be valid UTF-8 without NUL.
func textProblem(s string) (Rule, string) {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return RuleBinary, fmt.Sprintf("content contains NUL at byte %d (binary files are not allowed)", i)
	}
	if !utf8.ValidString(s) {
		return RuleNotUTF8, "content is not valid UTF-8"
	}
	return "", ""
}

// invisibleRune classifies runes that make text read differently from how
// it runs (Trojan Source, CVE-2021-42574) or hide in plain sight.
func invisibleRune(r rune) Rule {
	switch {
	case r == 0x061C, r == 0x200E, r == 0x200F, r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return RuleBidi
	case r >= 0x200B && r <= 0x200D, r >= 0x2060 && r <= 0x2064, r == 0xFEFF, r == 0x180E:
		return RuleZeroWidth
	}
	return ""
}

// invisibleInLine returns the first bidi control or zero-width character of
// line. A byte order mark is allowed only at the very start of the file
// (atFileStart): it is the usual mark of UTF-8 files written on Windows.
func invisibleInLine(line string, atFileStart bool) (Rule, rune) {
	for i, r := range line {
		if r < 0x061C {
			continue
		}
		if rule := invisibleRune(r); rule != "" {
			if r == 0xFEFF && i == 0 && atFileStart {
				continue
			}
			return rule, r
		}
	}
	return "", 0
}
