package acceptance

import (
	"bufio"
	"bytes"
	"html"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	ghtml "github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
)

// newMarkdown returns the CommonMark parser with the GitHub extensions
// that change block structure or hide text: task lists, tables and
// strikethrough. Autolinking of bare URLs is left out: a bare URL stays
// text, which is all ClosingKeywordIssues needs.
func newMarkdown() goldmark.Markdown {
	return goldmark.New(goldmark.WithExtensions(extension.TaskList, extension.Table, extension.Strikethrough))
}

func textReader(src []byte) text.Reader { return text.NewReader(src) }

type textOptions struct {
	// codeSpans keeps the text of `code spans` (criteria quote code; links
	// in code are not links).
	codeSpans bool
	// urls keeps the URL of <autolinks>.
	urls bool
}

// plainText renders inline content as plain text, reusing its buffers
// across calls (one per parse; not for concurrent use).
type plainText struct {
	buf bytes.Buffer
	w   *bufio.Writer
}

// inlineText returns what a reader sees of n's inline content as plain
// text: backslash escapes and character references resolved (through
// goldmark's own writer), line breaks as spaces. Raw HTML (so inline HTML
// comments), images, struck-through text and task-list boxes are left
// out.
func (p *plainText) inlineText(n ast.Node, src []byte, opt textOptions) string {
	if p.w == nil {
		p.w = bufio.NewWriter(&p.buf)
	}
	p.buf.Reset()
	w := p.w
	var walk func(n ast.Node)
	walk = func(n ast.Node) {
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch c := c.(type) {
			case *ast.Text:
				if c.IsRaw() {
					_, _ = w.WriteString(html.EscapeString(string(c.Value(src))))
				} else {
					ghtml.DefaultWriter.Write(w, c.Value(src))
				}
				if c.SoftLineBreak() || c.HardLineBreak() {
					_ = w.WriteByte(' ')
				}
			case *ast.String:
				if c.IsRaw() || c.IsCode() {
					_, _ = w.WriteString(html.EscapeString(string(c.Value)))
				} else {
					ghtml.DefaultWriter.Write(w, c.Value)
				}
			case *ast.CodeSpan:
				if opt.codeSpans {
					walk(c)
				}
			case *ast.AutoLink:
				if opt.urls {
					_, _ = w.WriteString(html.EscapeString(string(c.Label(src))))
				}
			case *ast.RawHTML, *ast.Image, *east.Strikethrough, *east.TaskCheckBox:
				// not text a reader sees as such
			default:
				walk(c)
			}
		}
	}
	walk(n)
	_ = w.Flush()
	return html.UnescapeString(p.buf.String())
}

// blockLines returns the raw source lines of a block (a code block's
// content, a paragraph's lines), each without its line ending.
func blockLines(n ast.Node, src []byte) []string {
	lines := n.Lines()
	out := make([]string, 0, lines.Len())
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		out = append(out, strings.TrimRight(string(seg.Value(src)), "\r\n"))
	}
	return out
}

// Nesting guard limits (see boundNesting).
const (
	maxContainerMarkers = 32
	maxContainerPrefix  = 256
)

// boundNesting returns the prefix of src before the first line whose
// container prefix (the block quote markers, list markers and indentation
// it starts with) holds more than maxContainerMarkers markers or is
// longer than maxContainerPrefix bytes, and whether it cut. It is not a
// parser, only a cost bound: goldmark's work grows with the square of the
// nesting (64 KB of "- - - …" or "> > > …" takes seconds), and no
// real issue nests that deep.
func boundNesting(src []byte) ([]byte, bool) {
	for start := 0; start < len(src); {
		end := bytes.IndexByte(src[start:], '\n')
		if end < 0 {
			end = len(src)
		} else {
			end += start
		}
		if markers, width := containerPrefix(src[start:end]); markers > maxContainerMarkers || width > maxContainerPrefix {
			return src[:start], true
		}
		start = end + 1
	}
	return src, false
}

func containerPrefix(line []byte) (markers, width int) {
	i := 0
	for i < len(line) {
		switch c := line[i]; {
		case c == ' ' || c == '\t':
			i++
		case c == '>':
			markers++
			i++
		case (c == '-' || c == '+' || c == '*') && i+1 < len(line) && (line[i+1] == ' ' || line[i+1] == '\t'):
			markers++
			i += 2
		case c >= '0' && c <= '9':
			j := i
			for j < len(line) && j-i < 9 && line[j] >= '0' && line[j] <= '9' {
				j++
			}
			if j+1 < len(line) && (line[j] == '.' || line[j] == ')') && (line[j+1] == ' ' || line[j+1] == '\t') {
				markers++
				i = j + 2
				continue
			}
			return markers, i
		default:
			return markers, i
		}
	}
	return markers, i
}
