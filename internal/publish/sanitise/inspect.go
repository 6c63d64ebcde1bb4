package sanitise

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// Report is what Inspect found in Markdown that GitHub would act on. It is
// the check behind the sanitiser (its output must come back empty), the
// fuzz targets and the renderers' tests, and what the publisher can run on
// a whole body before it posts: there, the renderer's own marker comment
// and its one closing line are the only entries expected.
//
// The checks are deliberately stricter than GitHub: any @ outside code is a
// mention, any URL-looking word outside code is a link.
type Report struct {
	Mentions     []string // @ in text outside code, in any spelling
	ForeignLinks []string // links, autolinks and URL-like words outside the repository
	Images       []string
	HTML         []string // raw HTML, comments included
	ClosingRefs  []string // a closing keyword (or "duplicate of") before a reference
	CrossRefs    []string // owner/repo#n and similar outside code
	Commands     []string // a line of text starting with / or !
	Suggestions  int      // ```suggestion blocks
	Invisible    int      // Invisible characters, code included
	InvalidUTF8  bool
}

// Problems lists every finding of r, one line each.
func (r Report) Problems() []string {
	var p []string
	add := func(kind string, xs []string) {
		for _, x := range xs {
			p = append(p, kind+": "+x)
		}
	}
	add("mention", r.Mentions)
	add("foreign link", r.ForeignLinks)
	add("image", r.Images)
	add("html", r.HTML)
	add("closing reference", r.ClosingRefs)
	add("cross-repository reference", r.CrossRefs)
	add("command", r.Commands)
	if r.Suggestions > 0 {
		p = append(p, fmt.Sprintf("suggestion blocks: %d", r.Suggestions))
	}
	if r.Invisible > 0 {
		p = append(p, fmt.Sprintf("invisible characters: %d", r.Invisible))
	}
	if r.InvalidUTF8 {
		p = append(p, "invalid UTF-8")
	}
	return p
}

var (
	// GitHub's closing keywords (and the -ing forms), an optional colon,
	// then a reference in any form GitHub links: #n, GH-n, owner/repo#n,
	// or an issue URL. Matched on folded, lower-cased text.
	closingRe = regexp.MustCompile(`(?:^|[^\pL\pN_])((?:close[sd]?|closing|fix(?:e[sd]|ing)?|resolve[sd]?|resolving|duplicate\s+of)(?:(?:\s*:\s*|\s+)(?:#\d+|gh-\d+|https?://\S*|www\.\S*|[\pL\pN_.-]+/[\pL\pN_.-]+#\d+)|#\d+))`)
	crossRe   = regexp.MustCompile(`[\pL\pN_.-]+/[\pL\pN_.-]+[#@]\pN`)
)

// Inspect parses md as GitHub Flavored Markdown and reports what GitHub
// would turn into a notification, a link, an image, HTML, a closing
// reference, a cross-repository reference or a bot command.
func (s *Sanitiser) Inspect(md string) Report {
	var r Report
	if !utf8.ValidString(md) {
		r.InvalidUTF8 = true
		md = strings.ToValidUTF8(md, "\uFFFD")
	}
	for _, c := range md {
		if Invisible(c) {
			r.Invisible++
		}
	}
	src := []byte(md)
	doc := s.md.Parser().Parse(text.NewReader(src))
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Image:
			r.Images = append(r.Images, literal(n.Destination, false))
		case *ast.HTMLBlock:
			r.HTML = append(r.HTML, strings.TrimSpace(blockText(n, src)))
		case *ast.RawHTML:
			var b strings.Builder
			for i := range n.Segments.Len() {
				seg := n.Segments.At(i)
				b.Write(seg.Value(src))
			}
			r.HTML = append(r.HTML, b.String())
		case *ast.Link:
			if _, ok := s.allowedURL(literal(n.Destination, false)); !ok {
				r.ForeignLinks = append(r.ForeignLinks, literal(n.Destination, false))
			}
		case *ast.AutoLink:
			u := string(n.URL(src))
			if _, ok := s.allowedURL(u); !ok || n.AutoLinkType != ast.AutoLinkURL {
				r.ForeignLinks = append(r.ForeignLinks, u)
			}
		case *ast.CodeSpan:
			return ast.WalkSkipChildren, nil
		case *ast.FencedCodeBlock:
			if strings.EqualFold(string(n.Language(src)), "suggestion") {
				r.Suggestions++
			}
		case *ast.Text:
			for _, w := range strings.Fields(literal(n.Value(src), n.IsRaw())) {
				if lw := foldLower([]rune(w)); strings.Contains(lw, "://") || strings.Contains(lw, "www.") {
					r.ForeignLinks = append(r.ForeignLinks, w)
				}
			}
		case *ast.Paragraph, *ast.TextBlock, *ast.Heading, *east.TableCell:
			r.inspectText(plainText(n, src, false), plainText(n, src, true))
		}
		return ast.WalkContinue, nil
	})
	return r
}

// plainText is the text of a block's inline content as GitHub's filters see
// it: code spans become a NUL (a boundary, never a word), line breaks a
// newline, autolinks their URL when urls is set (a closing keyword accepts
// an issue URL) and a NUL otherwise (mentions are not looked for in links).
func plainText(n ast.Node, src []byte, urls bool) string {
	var b strings.Builder
	var walk func(ast.Node)
	walk = func(p ast.Node) {
		for c := p.FirstChild(); c != nil; c = c.NextSibling() {
			switch c := c.(type) {
			case *ast.Text:
				b.WriteString(literal(c.Value(src), c.IsRaw()))
				if c.SoftLineBreak() || c.HardLineBreak() {
					b.WriteByte('\n')
				}
			case *ast.String:
				b.WriteString(literal(c.Value, c.IsRaw() || c.IsCode()))
			case *ast.CodeSpan:
				b.WriteByte(0)
			case *ast.AutoLink:
				if urls {
					b.WriteString(string(c.URL(src)))
				} else {
					b.WriteByte(0)
				}
			case *ast.RawHTML:
			default:
				walk(c)
			}
		}
	}
	walk(n)
	return b.String()
}

func (r *Report) inspectText(t, withURLs string) {
	for _, c := range t {
		if isAt(c) {
			r.Mentions = append(r.Mentions, snippet(t))
			break
		}
	}
	for _, m := range closingRe.FindAllStringSubmatch(foldLower([]rune(withURLs)), -1) {
		r.ClosingRefs = append(r.ClosingRefs, m[1])
	}
	f := foldLower([]rune(t))
	for _, m := range crossRe.FindAllString(f, -1) {
		r.CrossRefs = append(r.CrossRefs, m)
	}
	for _, line := range strings.Split(t, "\n") {
		line = strings.TrimLeft(line, " \t")
		if line == "" {
			continue
		}
		if c, _ := utf8.DecodeRuneInString(line); fold(c) == '/' || fold(c) == '!' ||
			strings.EqualFold(strings.SplitN(line, " ", 2)[0], "bors") {
			r.Commands = append(r.Commands, line)
		}
	}
}

func snippet(t string) string {
	if len(t) > 80 {
		t = truncateUTF8(t, 80) + "…"
	}
	return strings.ReplaceAll(t, "\x00", "`…`")
}

func blockText(n ast.Node, src []byte) string {
	var b strings.Builder
	l := n.Lines()
	for i := range l.Len() {
		seg := l.At(i)
		b.Write(seg.Value(src))
	}
	if h, ok := n.(*ast.HTMLBlock); ok && h.HasClosure() {
		b.Write(h.ClosureLine.Value(src))
	}
	return b.String()
}
