package web

import (
	"html/template"
	"strconv"
	"strings"
)

// Diff views of the approval page, chosen by ?view= (a plain link: no
// script). Every view shows the same parsed, escaped lines.
const (
	viewUnified = "unified"
	viewSplit   = "split"
	viewPlain   = "plain"
)

// diffView reads ?view=: unknown values are the default (unified).
func diffView(raw string) string {
	switch raw {
	case viewSplit, viewPlain:
		return raw
	}
	return viewUnified
}

// splitRows writes the side-by-side table rows of a file's lines: context
// on both sides, each run of deletions beside the run of additions that
// follows it (paired in order; the longer run's rest faces an empty cell),
// hunk headers and notes across the row. Every HTML field is escaped
// already (renderDiff); classes are our own constants. On narrow screens
// the stylesheet stacks the two sides.
func splitRows(lines []diffLine) template.HTML {
	var b strings.Builder
	num := func(n int) string {
		if n == 0 {
			return ""
		}
		return strconv.Itoa(n)
	}
	side := func(l *diffLine, old bool) {
		if l == nil {
			b.WriteString(`<td class="ln empty"></td><td class="code empty"></td>`)
			return
		}
		n := l.New
		if old {
			n = l.Old
		}
		b.WriteString(`<td class="ln ` + l.Kind + `">` + num(n) + `</td><td class="code ` + l.Kind + `">`)
		b.WriteString(string(l.HTML))
		b.WriteString("</td>")
	}
	for i := 0; i < len(lines); {
		l := &lines[i]
		switch l.Kind {
		case "hunk", "note":
			b.WriteString(`<tr class="` + l.Kind + `"><td colspan="4">`)
			b.WriteString(string(l.HTML))
			b.WriteString("</td></tr>\n")
			i++
			continue
		case "ctx":
			b.WriteString(`<tr class="ctx">`)
			side(l, true)
			side(l, false)
			b.WriteString("</tr>\n")
			i++
			continue
		}
		// A change: the deletions, then the additions right after them.
		var dels, adds []*diffLine
		for i < len(lines) && lines[i].Kind == "del" {
			dels = append(dels, &lines[i])
			i++
		}
		for i < len(lines) && lines[i].Kind == "add" {
			adds = append(adds, &lines[i])
			i++
		}
		if len(dels) == 0 && len(adds) == 0 { // no other kinds; never loop
			i++
			continue
		}
		for j := 0; j < max(len(dels), len(adds)); j++ {
			var d, a *diffLine
			if j < len(dels) {
				d = dels[j]
			}
			if j < len(adds) {
				a = adds[j]
			}
			b.WriteString(`<tr class="chg">`)
			side(d, true)
			side(a, false)
			b.WriteString("</tr>\n")
		}
	}
	return template.HTML(b.String())
}
