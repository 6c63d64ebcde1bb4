package sanitise

import (
	"sort"
	"strings"
	"unicode"
)

// neutralise puts into code spans the parts of the text that GitHub would
// act on: mentions, cross-repository references, closing keywords, bare
// URLs and commands at the start of a line. GitHub's filters work on the
// text nodes of the rendered HTML and skip <code> (see doc.go), so a code
// span keeps the characters visible and makes them inert. Backslash escapes
// would not do: they vanish in rendering, before those filters run.
//
// The rules look at the block as the reader sees it: the text of all items
// in order, markup left out, so a mention or reference split by emphasis or
// by something the sanitiser removed is still found.
func neutralise(items []item) []item {
	items = mergeText(items)
	var p []rune   // the block's plain text
	var own []int  // index of the text item each rune belongs to; -1 if none
	var offs []int // rune offset inside that item
	for i, it := range items {
		switch it.kind {
		case itText:
			k := 0
			for _, r := range it.s {
				p, own, offs = append(p, r), append(own, i), append(offs, k)
				k++
			}
		case itCode, itAtom:
			// Neither a word nor a space: GitHub ends a text node here.
			p, own, offs = append(p, 0), append(own, -1), append(offs, 0)
		case itBreak, itHard:
			p, own, offs = append(p, '\n'), append(own, -1), append(offs, 0)
		}
	}
	var spans [][2]int
	// mark puts p[a:b] in code, one piece per text item it spans.
	mark := func(a, b int) {
		for a < b {
			e := a + 1
			for e < b && own[e] == own[a] {
				e++
			}
			if own[a] >= 0 {
				spans = append(spans, [2]int{a, e})
			}
			a = e
		}
	}
	n := len(p)
	same := func(i, j int) bool { return j < n && own[j] == own[i] }

	for i := 0; i < n; i++ {
		if own[i] < 0 {
			continue
		}
		r := p[i]
		switch {
		case isAt(r):
			// Every @ goes into code with the name after it: GitHub's own
			// pattern needs a non-word character before the @, but "foo"
			// and "@bar" may come from different nodes, and an address
			// like a@b.example is a mailto autolink on GitHub anyway.
			j := i + 1
			for same(i, j) && nameRune(p[j]) {
				j++
			}
			for j-1 > i && fold(p[j-1]) == '.' {
				j--
			}
			mark(i, j)
		case isHash(r) && i+1 < n && same(i, i+1) && isDigit(p[i+1]) && i > 0 && nameRune(p[i-1]):
			// owner/repo#12 (and anything#12): a reference to another
			// repository. "#12" after a space or punctuation is this
			// repository's and stays a link.
			j := i + 1
			for same(i, j) && isDigit(p[j]) {
				j++
			}
			mark(i, j)
		}
	}

	// Words: URLs GitHub would autolink, closing keywords, commands.
	for i := 0; i < n; {
		if own[i] < 0 || isSpace(p[i]) {
			i++
			continue
		}
		j := i
		for same(i, j) && !isSpace(p[j]) {
			j++
		}
		word := foldLower(p[i:j])
		if strings.Contains(word, "://") || strings.Contains(word, "www.") {
			mark(i, j)
		}
		if lineStart(p, i) && (word[0] == '/' || word[0] == '!' || word == "bors") {
			// Slash commands (/approve, /merge), bang commands and bors
			// are read by bots from the raw text of a comment.
			mark(i, j)
		}
		i = j
	}
	for i := 0; i < n; {
		if own[i] < 0 || !unicode.IsLetter(p[i]) {
			i++
			continue
		}
		// A word may run across items: "**fix**es #1" reads "fixes #1".
		j := i
		for j < n && own[j] >= 0 && unicode.IsLetter(p[j]) {
			j++
		}
		// Only letters bind on the left: what comes before may be put in
		// code by another rule and then no longer be a word.
		if (i == 0 || !isLetter(p[i-1])) && (j == n || !wordRune(p[j])) && keywordFollowedByReference(p, i, j) {
			mark(i, j)
		}
		i = j
	}
	if len(spans) == 0 {
		return items
	}
	return wrap(items, spans, own, offs)
}

func wordRune(r rune) bool { return r != 0 && (isLetter(r) || isDigit(r) || fold(r) == '_') }

// lineStart reports whether p[i] is the first non-blank character of a line.
func lineStart(p []rune, i int) bool {
	for k := i - 1; k >= 0; k-- {
		switch p[k] {
		case '\n':
			return true
		case ' ', '\t':
			continue
		}
		return false
	}
	return true
}

func foldLower(rs []rune) string {
	var b strings.Builder
	for _, r := range rs {
		b.WriteRune(unicode.ToLower(fold(r)))
	}
	return b.String()
}

// closingKeywords are GitHub's closing keywords (docs: "Linking a pull
// request to an issue"; matched without regard to case), plus the -ing
// forms other forges accept: a superset costs only a code span.
var closingKeywords = map[string]bool{
	"close": true, "closes": true, "closed": true, "closing": true,
	"fix": true, "fixes": true, "fixed": true, "fixing": true,
	"resolve": true, "resolves": true, "resolved": true, "resolving": true,
}

// keywordFollowedByReference reports whether p[i:j] is a closing keyword
// (or "duplicate" of "duplicate of", GitHub's duplicate marker in comments)
// that is followed, after an optional colon and blanks, by anything but a
// plain word: "#12", "GH-12", "owner/repo#12", a URL, a link, code, or the
// end of the block (the next block could start with the reference).
func keywordFollowedByReference(p []rune, i, j int) bool {
	w := foldLower(p[i:j])
	dup := w == "duplicate"
	if !dup && !closingKeywords[w] {
		return false
	}
	if j+1 < len(p) && fold(p[j]) == '-' && unicode.IsLetter(p[j+1]) {
		return false // a compound word: fix-ups, closed-form
	}
	k := skipBlank(p, j)
	if k < len(p) && fold(p[k]) == ':' {
		k = skipBlank(p, k+1)
	}
	if dup {
		e := k
		for e < len(p) && unicode.IsLetter(p[e]) {
			e++
		}
		if foldLower(p[k:e]) != "of" {
			return false
		}
		k = skipBlank(p, e)
	}
	if k >= len(p) || !unicode.IsLetter(p[k]) {
		return true
	}
	for e := k; e < len(p) && !isSpace(p[e]); e++ {
		switch f := fold(p[e]); {
		case f == '#' || f == '/' || f == '@' || f == ':' || f == 0 || isDigit(p[e]):
			return true
		}
	}
	return false
}

func skipBlank(p []rune, k int) int {
	for k < len(p) && isSpace(p[k]) {
		k++
	}
	return k
}

// wrap turns the marked rune ranges of text items into code items.
func wrap(items []item, spans [][2]int, own, offs []int) []item {
	sort.Slice(spans, func(a, b int) bool { return spans[a][0] < spans[b][0] })
	merged := spans[:1]
	for _, s := range spans[1:] {
		last := &merged[len(merged)-1]
		if s[0] <= last[1] && own[s[0]] == own[last[0]] {
			last[1] = max(last[1], s[1])
		} else {
			merged = append(merged, s)
		}
	}
	// Per item, the rune ranges to put in code.
	byItem := map[int][][2]int{}
	for _, s := range merged {
		it := own[s[0]]
		byItem[it] = append(byItem[it], [2]int{offs[s[0]], offs[s[1]-1] + 1})
	}
	out := make([]item, 0, len(items)+2*len(merged))
	for i, it := range items {
		rs, ok := byItem[i]
		if !ok {
			out = append(out, it)
			continue
		}
		runes := []rune(it.s)
		at := 0
		for _, r := range rs {
			if r[0] > at {
				out = append(out, item{itText, string(runes[at:r[0]])})
			}
			out = append(out, item{itCode, string(runes[r[0]:r[1]])})
			at = r[1]
		}
		if at < len(runes) {
			out = append(out, item{itText, string(runes[at:])})
		}
	}
	return out
}
