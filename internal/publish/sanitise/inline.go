package sanitise

import (
	"strings"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
)

// The inline content of one block is first turned into a flat list of
// items: literal text, literal code, and markup Quavon writes itself. Text
// is merged across everything the sanitiser drops (raw HTML, foreign links,
// images), so that "@<b></b>user" or "fix<i></i>es #1" are judged as the
// reader will see them, then neutralised, then escaped on output.
type itemKind uint8

const (
	itText  itemKind = iota // literal text; escaped when written
	itCode                  // literal code; written as a code span
	itOpen                  // opening markup: "*", "**", "~~", "["
	itClose                 // closing markup: "*", "**", "~~", "](url)"
	itAtom                  // markup complete in itself: "<url>", "[x] "
	itBreak                 // soft line break
	itHard                  // hard line break
)

type item struct {
	kind itemKind
	s    string
}

func appendText(out []item, s string) []item {
	if s == "" {
		return out
	}
	return append(out, item{itText, s})
}

// mergeText joins adjacent text items (appendText leaves them apart, so
// that flattening stays linear).
func mergeText(items []item) []item {
	out := items[:0]
	for i := 0; i < len(items); {
		if items[i].kind != itText {
			out = append(out, items[i])
			i++
			continue
		}
		j := i + 1
		for j < len(items) && items[j].kind == itText {
			j++
		}
		if j == i+1 {
			out = append(out, items[i])
		} else {
			var b strings.Builder
			for _, it := range items[i:j] {
				b.WriteString(it.s)
			}
			out = append(out, item{itText, b.String()})
		}
		i = j
	}
	return out
}

// inlines flattens the inline children of parent.
func (c *conv) inlines(parent ast.Node, out []item) []item {
	for n := parent.FirstChild(); n != nil; n = n.NextSibling() {
		switch n := n.(type) {
		case *ast.Text:
			out = appendText(out, literal(n.Value(c.src), n.IsRaw()))
			if n.HardLineBreak() {
				out = append(out, item{kind: itHard})
			} else if n.SoftLineBreak() {
				out = append(out, item{kind: itBreak})
			}
		case *ast.String:
			out = appendText(out, literal(n.Value, n.IsRaw() || n.IsCode()))
		case *ast.CodeSpan:
			var b strings.Builder
			for t := n.FirstChild(); t != nil; t = t.NextSibling() {
				if t, ok := t.(*ast.Text); ok {
					b.Write(t.Segment.Value(c.src))
				}
			}
			// A blank code span writes nothing, so it must not count as
			// something written either.
			if code := strings.ReplaceAll(Clean(b.String()), "\n", " "); strings.Trim(code, " ") != "" {
				out = append(out, item{itCode, code})
			}
		case *ast.Emphasis:
			d := "*"
			if n.Level >= 2 {
				d = "**"
			}
			out = append(out, item{itOpen, d})
			out = c.inlines(n, out)
			out = append(out, item{itClose, d})
		case *east.Strikethrough:
			out = append(out, item{itOpen, "~~"})
			out = c.inlines(n, out)
			out = append(out, item{itClose, "~~"})
		case *ast.Link:
			if u, ok := c.s.allowedURL(literal(n.Destination, false)); ok && !c.inLink {
				c.inLink = true
				out = append(out, item{itOpen, "["})
				out = c.inlines(n, out)
				out = append(out, item{itClose, "](" + u + ")"})
				c.inLink = false
			} else {
				c.stats.Links++
				out = c.inlines(n, out)
			}
		case *ast.Image:
			// The alt text stays, as text: a tracking pixel or a picture
			// of a fake button must not load.
			c.stats.Images++
			out = c.inlines(n, out)
		case *ast.AutoLink:
			if n.AutoLinkType == ast.AutoLinkURL && !c.inLink {
				if u, ok := c.s.allowedURL(Clean(string(n.URL(c.src)))); ok {
					out = append(out, item{itAtom, "<" + u + ">"})
					continue
				}
			}
			c.stats.Links++
			// Shown, never linked: GitHub does not autolink inside code.
			out = append(out, item{itCode, Clean(string(n.Label(c.src)))})
		case *ast.RawHTML:
			c.stats.HTML++
		case *east.TaskCheckBox:
			if n.IsChecked {
				out = append(out, item{itAtom, "[x] "})
			} else {
				out = append(out, item{itAtom, "[ ] "})
			}
		default:
			out = c.inlines(n, out)
		}
	}
	return out
}

// tidy drops markup that lost its content (an emphasis around a removed
// image would otherwise print as "****"), turns a link without text into an
// autolink and drops line breaks at the ends.
func tidy(items []item) []item {
	for changed := true; changed; {
		changed = false
		for i := 0; i < len(items); i++ {
			it := items[i]
			if it.kind != itText || strings.TrimSpace(it.s) != "" {
				continue
			}
			if it.s == "" || (i > 0 && items[i-1].kind == itOpen) || (i+1 < len(items) && items[i+1].kind == itClose) {
				items = append(items[:i], items[i+1:]...)
				changed = true
				i--
			}
		}
		for i := 0; i+1 < len(items); i++ {
			a, b := items[i], items[i+1]
			if a.kind != itOpen || b.kind != itClose {
				continue
			}
			if a.s == "[" {
				items[i] = item{itAtom, "<" + strings.TrimSuffix(strings.TrimPrefix(b.s, "]("), ")") + ">"}
				items = append(items[:i+1], items[i+2:]...)
			} else {
				items = append(items[:i], items[i+2:]...)
			}
			changed = true
		}
	}
	for len(items) > 0 && (items[0].kind == itBreak || items[0].kind == itHard) {
		items = items[1:]
	}
	for len(items) > 0 && (items[len(items)-1].kind == itBreak || items[len(items)-1].kind == itHard) {
		items = items[:len(items)-1]
	}
	return items
}

// writeMode says where inline content goes.
type writeMode uint8

const (
	modeBlock   writeMode = iota // a paragraph: line breaks kept
	modeLine                     // one line: a heading or a title
	modeCell                     // a GFM table cell: one line, pipes escaped even in code
	modeHeading                  // an ATX heading: one line, '#' escaped too
)

// ellipsis ends inline content that was cut.
const ellipsis = "…"

// writer serialises items. Every literal character goes through escape, so
// no text can turn into Markdown, HTML or a GFM extension; markup is only
// what Quavon emits.
type writer struct {
	b         strings.Builder
	mode      writeMode
	lineStart bool // nothing but spaces written on this line yet
	digits    bool // only ASCII digits written on this line yet
}

// writeItems writes items within budget bytes (< 0: no limit) and reports
// whether it had to cut. Open markup is always closed.
func writeItems(items []item, mode writeMode, budget int) (string, bool) {
	items = joinCode(tidy(items))
	w := &writer{mode: mode, lineStart: true, digits: true}
	var open []string // closers still owed
	owed := 0
	fits := func(n int) bool { return budget < 0 || w.b.Len()+n+owed+len(ellipsis) <= budget }
	cut := false
	for i, it := range items {
		switch it.kind {
		case itText:
			s := it.s
			if i > 0 && items[i-1].kind == itOpen {
				s = strings.TrimLeft(s, " \t")
			}
			if i+1 < len(items) && (items[i+1].kind == itClose || items[i+1].kind == itBreak || items[i+1].kind == itHard) {
				s = strings.TrimRight(s, " \t")
			}
			if !w.text(s, fits) {
				cut = true
			}
		case itCode:
			cs := codeSpan(it.s, mode == modeCell)
			if cs == "" {
				continue
			}
			if !fits(len(cs)) {
				cut = true
				break
			}
			w.raw(cs)
		case itOpen:
			closer := it.s
			if closer == "[" {
				// The closer of a link is its destination; find it.
				closer = matchingClose(items, i)
			}
			if !fits(len(it.s) + len(closer)) {
				cut = true
				break
			}
			w.raw(it.s)
			open = append(open, closer)
			owed += len(closer)
		case itClose:
			if len(open) == 0 {
				continue
			}
			c := open[len(open)-1]
			open = open[:len(open)-1]
			owed -= len(c)
			w.raw(c)
		case itAtom:
			if mode != modeBlock && strings.HasPrefix(it.s, "[") {
				// A task box away from the start of a list item is text.
				if !w.text(it.s, fits) {
					cut = true
				}
				break
			}
			if !fits(len(it.s)) {
				cut = true
				break
			}
			w.raw(it.s)
		case itBreak, itHard:
			if mode != modeBlock {
				if !fits(1) {
					cut = true
					break
				}
				w.raw(" ")
				continue
			}
			br := "\n"
			if it.kind == itHard {
				br = "\\\n"
			}
			if !fits(len(br)) {
				cut = true
				break
			}
			w.b.WriteString(br)
			w.lineStart, w.digits = true, true
		}
		if cut {
			break
		}
	}
	if cut {
		w.b.WriteString(ellipsis)
	}
	for j := len(open) - 1; j >= 0; j-- {
		w.b.WriteString(open[j])
	}
	out := w.b.String()
	if mode != modeBlock {
		out = strings.TrimSpace(out)
	} else {
		out = strings.TrimRight(out, " \t")
	}
	return out, cut
}

// joinCode merges adjacent code items: two code spans written side by side
// would run their backtick strings together ("`a“b`") and end elsewhere.
func joinCode(items []item) []item {
	out := items[:0]
	for _, it := range items {
		if n := len(out); n > 0 && it.kind == itCode && out[n-1].kind == itCode {
			out[n-1].s += it.s
			continue
		}
		out = append(out, it)
	}
	return out
}

// matchingClose finds the closer of the link opened at items[i].
func matchingClose(items []item, i int) string {
	depth := 0
	for j := i; j < len(items); j++ {
		switch items[j].kind {
		case itOpen:
			depth++
		case itClose:
			depth--
			if depth == 0 {
				return items[j].s
			}
		}
	}
	return "]()"
}

func (w *writer) raw(s string) {
	if s == "" {
		return
	}
	w.b.WriteString(s)
	w.lineStart, w.digits = false, false
}

// text writes literal text, escaped, rune by rune while it fits.
func (w *writer) text(s string, fits func(int) bool) bool {
	var tmp [utf8.UTFMax + 1]byte
	for _, r := range s {
		if r == '\n' || r == '\r' {
			r = ' '
		}
		if w.lineStart && (r == ' ' || r == '\t') {
			continue // leading blanks could make an indented code block
		}
		buf := tmp[:0]
		if w.needsEscape(r) {
			buf = append(buf, '\\')
		}
		buf = utf8.AppendRune(buf, r)
		if !fits(len(buf)) {
			return false
		}
		w.b.Write(buf)
		w.digits = w.digits && r >= '0' && r <= '9'
		w.lineStart = false
	}
	return true
}

// needsEscape reports whether r, written next, needs a backslash: always
// for the characters that open inline constructs (emphasis, code, links,
// images, autolinks, HTML, entities, strikethrough, tables, math), and at
// the start of a line for the ones that open blocks (headings, quotes,
// lists, setext underlines, thematic breaks, ordered list numbers).
func (w *writer) needsEscape(r rune) bool {
	switch r {
	case '\\', '`', '*', '_', '[', ']', '<', '>', '&', '|', '~', '$', '!':
		return true
	case '#':
		return w.lineStart || w.mode == modeHeading
	case '-', '+', '=':
		return w.lineStart
	case '.', ')':
		return w.digits && !w.lineStart
	}
	return false
}

// codeSpan writes s as a code span whose backtick string is longer than any
// run of backticks inside, so that it ends exactly where Quavon says.
func codeSpan(s string, cell bool) string {
	s = strings.ReplaceAll(Clean(s), "\n", " ")
	if strings.Trim(s, " ") == "" {
		return ""
	}
	if cell {
		// GFM splits table cells at '|' even inside code spans; "\|" is
		// the escape it honours there.
		s = strings.ReplaceAll(s, "|", "\\|")
	}
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	if s[0] == '`' || s[0] == ' ' || s[len(s)-1] == '`' || s[len(s)-1] == ' ' {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// CodeSpan returns s (made Clean, on one line) as an inline code span that
// nothing inside can end early: the way to show paths, commands, rule ids
// and logins. GitHub neither mentions, links nor references inside code.
// It returns "" for text that is empty or blank.
func CodeSpan(s string) string { return codeSpan(s, false) }

// CodeCell is CodeSpan for a GFM table cell.
func CodeCell(s string) string { return codeSpan(s, true) }

func longestRun(s string, c byte) int {
	best, cur := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			cur++
			best = max(best, cur)
		} else {
			cur = 0
		}
	}
	return best
}
