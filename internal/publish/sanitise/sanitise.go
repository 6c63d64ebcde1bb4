package sanitise

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// Policy is what the sanitiser needs to know about where the text will be
// shown: the repository whose links may stay.
type Policy struct {
	// Host is the GitHub host, as in https://<host>/<owner>/<repo>/:
	// "github.com", or a GitHub Enterprise Server host (with a port if
	// it is not 443).
	Host  string
	Owner string
	Repo  string
}

var (
	hostRe  = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:[0-9]{1,5})?$`)
	ownerRe = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,38})$`)
	repoRe  = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)
)

// Validate reports why p cannot be used.
func (p Policy) Validate() error {
	switch {
	case !hostRe.MatchString(strings.ToLower(p.Host)) || len(p.Host) > 253:
		return fmt.Errorf("sanitise: host %q is not a host name", p.Host)
	case !ownerRe.MatchString(p.Owner):
		return fmt.Errorf("sanitise: owner %q is not a GitHub account name", p.Owner)
	case !repoRe.MatchString(p.Repo) || p.Repo == "." || p.Repo == "..":
		return fmt.Errorf("sanitise: repository %q is not a GitHub repository name", p.Repo)
	}
	return nil
}

// Sanitiser turns untrusted Markdown (model output, scanner messages, issue
// text) into Markdown that is safe to publish in one repository. It is safe
// for concurrent use.
type Sanitiser struct {
	host, owner, repo string
	md                goldmark.Markdown
}

// New returns a Sanitiser for p.
func New(p Policy) (*Sanitiser, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &Sanitiser{
		host: strings.ToLower(p.Host), owner: p.Owner, repo: p.Repo,
		// GitHub Flavored Markdown as GitHub parses it: tables,
		// strikethrough, task lists and bare-URL autolinks (so that bare
		// URLs are judged like links). Raw HTML is parsed, then dropped.
		md: goldmark.New(goldmark.WithExtensions(extension.GFM)),
	}, nil
}

// Limits.
const (
	// MinBytes is the smallest budget Markdown and Inline accept; smaller
	// ones are raised to it.
	MinBytes = 64
	// maxInputBytes is how much input is parsed at all; the rest is cut.
	// Below that, a call parses at most inputFactor times its output
	// budget (plus inputSlack): more could not be shown anyway, unless it
	// is mostly HTML, which is removed.
	maxInputBytes = 256 << 10
	inputFactor   = 4
	inputSlack    = 4 << 10
	// maxDepth is how deeply containers (quotes, lists) may nest before
	// their content is shown as plain text.
	maxDepth = 8
	// maxNestingMarkers is how many containers one line may open before
	// the whole input is shown as plain text without parsing: goldmark
	// takes time quadratic in that depth (50 000 "> " take seconds).
	maxNestingMarkers = 32
	// maxLineBytes is the longest line parsed: goldmark scans the rest of
	// the line for every "(" after "]", quadratic in the line's length.
	// Longer lines are broken at a space (a soft line break renders as
	// one) or, without a space, inside a word.
	maxLineBytes = 1 << 10
)

func wrapLongLines(src []byte, limit int) []byte {
	var out []byte
	done := 0 // src[:done] is in out (when out != nil)
	lineStart := 0
	for i := 0; i <= len(src); i++ {
		if i < len(src) && src[i] != '\n' {
			if i-lineStart < limit {
				continue
			}
			// The line is too long at i: break at the last space in its
			// second half, else at the rune boundary before i.
			cut := bytes.LastIndexByte(src[lineStart+limit/2:i], ' ')
			if cut >= 0 {
				cut += lineStart + limit/2
			} else {
				cut = i
				for cut > lineStart && !utf8.RuneStart(src[cut]) {
					cut--
				}
			}
			out = append(out, src[done:cut]...)
			out = append(out, '\n')
			if src[cut] == ' ' {
				cut++
			}
			done, lineStart = cut, cut
			continue
		}
		lineStart = i + 1
	}
	if out == nil {
		return src
	}
	return append(out, src[done:]...)
}

// CutNotice ends Markdown that was longer than its budget.
const CutNotice = "*(Shortened by Quavon: the text was longer than the limit.)*"

// RemovedNotice replaces text the sanitiser could not make safe. It is a
// guard that tests and fuzzing keep unused.
const RemovedNotice = "*(Removed by Quavon: the text could not be made safe to show.)*"

// Stats counts what the sanitiser took out.
type Stats struct {
	Links, Images, HTML int
	Cut                 bool
	// Guard is set when the output failed the final Inspect and was
	// replaced by RemovedNotice.
	Guard bool
}

// conv holds the state of one conversion.
type conv struct {
	s      *Sanitiser
	src    []byte
	stats  Stats
	inLink bool
	depth  int
	second map[*ast.List]bool // lists written with the second set of markers
}

// parse parses at most what a budget of maxBytes can use. Input nested
// too deeply to parse in reasonable time becomes a document of plain
// paragraphs, one per run of lines, never parsed as Markdown.
func (s *Sanitiser) parse(in string, maxBytes int) (*conv, ast.Node, bool) {
	cut := false
	if limit := min(maxInputBytes, inputFactor*maxBytes+inputSlack); len(in) > limit {
		in, cut = truncateUTF8(in, limit), true
	}
	src := wrapLongLines([]byte(Clean(in)), maxLineBytes)
	c := &conv{s: s, src: src}
	if deepNesting(src) {
		return c, plainDocument(src), cut
	}
	return c, s.md.Parser().Parse(text.NewReader(src)), cut
}

// plainDocument is src as paragraphs of raw text lines.
func plainDocument(src []byte) ast.Node {
	doc := ast.NewDocument()
	var para *ast.Paragraph
	start := 0
	for start <= len(src) {
		end := bytes.IndexByte(src[start:], '\n')
		if end < 0 {
			end = len(src)
		} else {
			end += start
		}
		if bytes.TrimSpace(src[start:end]) == nil || len(bytes.TrimSpace(src[start:end])) == 0 {
			para = nil
		} else {
			if para == nil {
				para = ast.NewParagraph()
				doc.AppendChild(doc, para)
			} else {
				para.LastChild().(*ast.Text).SetSoftLineBreak(true)
			}
			para.AppendChild(para, ast.NewRawTextSegment(text.NewSegment(start, end)))
		}
		start = end + 1
	}
	return doc
}

// deepNesting reports input with a line that opens more than
// maxNestingMarkers block quotes or list items at once.
func deepNesting(src []byte) bool {
	for len(src) > 0 {
		line := src
		if i := bytes.IndexByte(src, '\n'); i >= 0 {
			line, src = src[:i], src[i+1:]
		} else {
			src = nil
		}
		if nestingMarkers(line) > maxNestingMarkers {
			return true
		}
	}
	return false
}

func nestingMarkers(line []byte) int {
	n := 0
	for i := 0; i < len(line) && n <= maxNestingMarkers; {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			i++
		case c == '>':
			n, i = n+1, i+1
		case (c == '-' || c == '*' || c == '+') && i+1 < len(line) && (line[i+1] == ' ' || line[i+1] == '\t'):
			n, i = n+1, i+2
		case c >= '0' && c <= '9':
			j := i
			for j < len(line) && j-i < 10 && line[j] >= '0' && line[j] <= '9' {
				j++
			}
			if j == len(line) || line[j] != '.' && line[j] != ')' {
				return n
			}
			n, i = n+1, j+1
		default:
			return n
		}
	}
	return n
}

// Markdown sanitises untrusted Markdown into at most maxBytes bytes of
// block-level Markdown. The result is a sequence of complete blocks (every
// fence, list and quote closed), so a renderer may put its own blocks after
// it, separated by a blank line.
//
// What leaves: images (their alt text stays as text), HTML including
// comments, links and autolinks outside https://<host>/<owner>/<repo>/,
// link reference definitions, invisible and bidi characters. What is made
// inert (put in code): @mentions and team mentions in every spelling,
// cross-repository references, closing keywords before a reference, bare
// URLs, slash and bot commands at the start of a line. Everything else is
// escaped, so only Quavon's own markup is markup.
func (s *Sanitiser) Markdown(in string, maxBytes int) string {
	out, _ := s.MarkdownStats(in, maxBytes)
	return out
}

// MarkdownStats is Markdown, also returning what was removed.
func (s *Sanitiser) MarkdownStats(in string, maxBytes int) (out string, st Stats) {
	maxBytes = max(maxBytes, MinBytes)
	defer func() {
		if recover() != nil {
			out, st = RemovedNotice, Stats{Guard: true}
		}
	}()
	c, doc, cut := s.parse(in, maxBytes)
	out = c.document(doc, maxBytes, cut)
	st = c.stats
	if len(out) > maxBytes || len(s.Inspect(out).Problems()) > 0 {
		return RemovedNotice, Stats{Guard: true}
	}
	return out, st
}

// Inline sanitises untrusted Markdown into one line of inline Markdown of at
// most maxBytes bytes, for titles and list entries: blocks are joined with
// spaces, and the same rules as Markdown apply. Text that was cut ends in
// "…".
func (s *Sanitiser) Inline(in string, maxBytes int) string {
	return s.line(in, maxBytes, modeLine)
}

// Cell is Inline for a GFM table cell.
func (s *Sanitiser) Cell(in string, maxBytes int) string {
	return s.line(in, maxBytes, modeCell)
}

func (s *Sanitiser) line(in string, maxBytes int, mode writeMode) (out string) {
	maxBytes = max(maxBytes, MinBytes)
	defer func() {
		if recover() != nil {
			out = "(removed)"
		}
	}()
	c, doc, cut := s.parse(in, maxBytes)
	items := c.flatten(doc, nil)
	if cut {
		items = append(items, item{itText, " " + ellipsis})
	}
	out, _ = writeItems(neutralise(items), mode, maxBytes)
	if len(out) > maxBytes || strings.ContainsRune(out, '\n') || len(s.Inspect(out).Problems()) > 0 {
		return "(removed)"
	}
	return out
}

// flatten collects the inline content of every block below n, blocks
// separated by a break (written as a space on one line).
func (c *conv) flatten(n ast.Node, out []item) []item {
	for b := n.FirstChild(); b != nil; b = b.NextSibling() {
		before := len(out)
		switch b := b.(type) {
		case *ast.Paragraph, *ast.TextBlock, *ast.Heading, *east.TableCell:
			out = c.inlines(b, out)
		case *ast.FencedCodeBlock, *ast.CodeBlock:
			out = append(out, item{itCode, strings.ReplaceAll(strings.TrimRight(c.lines(b), "\n"), "\n", " ")})
		case *ast.HTMLBlock:
			c.stats.HTML++
		case *ast.LinkReferenceDefinition, *ast.ThematicBreak:
		default:
			out = c.flatten(b, out)
		}
		if len(out) > before && out[len(out)-1].kind != itBreak {
			out = append(out, item{kind: itBreak})
		}
	}
	return out
}

// document writes the top-level blocks while they fit, cutting the first
// that does not at a safe place.
func (c *conv) document(doc ast.Node, maxBytes int, cut bool) string {
	budget := maxBytes - len(CutNotice) - 2
	var b strings.Builder
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		blk := c.block(n)
		if blk == "" {
			continue
		}
		sep := 0
		if b.Len() > 0 {
			sep = 2
		}
		if b.Len()+sep+len(blk) <= budget {
			if sep > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(blk)
			continue
		}
		cut = true
		if room := budget - b.Len() - sep; room >= 16 {
			if part := c.blockWithin(n, room); part != "" {
				if sep > 0 {
					b.WriteString("\n\n")
				}
				b.WriteString(part)
			}
		}
		break
	}
	if cut {
		c.stats.Cut = true
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(CutNotice)
	}
	return b.String()
}

// block writes one block; "" when nothing of it remains.
func (c *conv) block(n ast.Node) string {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		out, _ := writeItems(neutralise(c.inlines(n, nil)), modeBlock, -1)
		return out
	case *ast.Heading:
		out, _ := writeItems(neutralise(c.inlines(n, nil)), modeHeading, -1)
		if out == "" {
			return ""
		}
		return strings.Repeat("#", min(max(n.Level, 1), 6)) + " " + out
	case *ast.ThematicBreak:
		return "***"
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		out, _ := CodeBlock(c.lines(n), c.language(n), -1, KeepHead)
		return out
	case *ast.HTMLBlock:
		c.stats.HTML++
		return ""
	case *ast.LinkReferenceDefinition:
		return ""
	case *ast.Blockquote:
		if c.depth >= maxDepth {
			return c.plain(n, -1)
		}
		c.depth++
		inner := c.blocks(n, "\n\n")
		c.depth--
		if inner == "" {
			return ""
		}
		return prefixLines(inner, "> ", ">")
	case *ast.List:
		if c.depth >= maxDepth {
			return c.plain(n, -1)
		}
		c.depth++
		defer func() { c.depth-- }()
		return c.list(n)
	case *east.Table:
		return c.table(n)
	}
	return c.plain(n, -1)
}

// blocks writes the children of n, separated by sep.
func (c *conv) blocks(n ast.Node, sep string) string {
	var parts []string
	for ch := n.FirstChild(); ch != nil; ch = ch.NextSibling() {
		if s := c.block(ch); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, sep)
}

// list writes a list. Consecutive lists alternate their markers, as
// CommonMark would otherwise join them.
func (c *conv) list(n *ast.List) string {
	ordered := n.IsOrdered()
	bullet, delim := "-", "."
	// Parity of a chain of sibling lists, remembered as they are written.
	prev, ok := n.PreviousSibling().(*ast.List)
	second := ok && prev.IsOrdered() == ordered && !c.second[prev]
	if c.second == nil {
		c.second = map[*ast.List]bool{}
	}
	c.second[n] = second
	if second {
		bullet, delim = "*", ")"
	}
	sep := "\n"
	if !n.IsTight {
		sep = "\n\n"
	}
	start := min(max(n.Start, 0), 999_999_000)
	var items []string
	i := 0
	for li := n.FirstChild(); li != nil; li = li.NextSibling() {
		marker := bullet
		if ordered {
			marker = strconv.Itoa(start+i) + delim
		}
		i++
		body := c.listItem(li, n.IsTight)
		if body == "" {
			items = append(items, marker)
			continue
		}
		pad := strings.Repeat(" ", len(marker)+1)
		items = append(items, marker+" "+prefixRest(body, pad))
	}
	return strings.Join(items, sep)
}

func (c *conv) listItem(li ast.Node, tight bool) string {
	var b strings.Builder
	var last ast.Node
	for ch := li.FirstChild(); ch != nil; ch = ch.NextSibling() {
		s := c.block(ch)
		if s == "" {
			continue
		}
		if b.Len() > 0 {
			// Only a nested list may follow a line of a tight item
			// directly; anything else after a blank line.
			_, isList := ch.(*ast.List)
			_, lastText := last.(*ast.TextBlock)
			if tight && isList && lastText {
				b.WriteString("\n")
			} else {
				b.WriteString("\n\n")
			}
		}
		b.WriteString(s)
		last = ch
	}
	return b.String()
}

func (c *conv) table(t *east.Table) string {
	var rows [][]string
	cols := 0
	for r := t.FirstChild(); r != nil; r = r.NextSibling() {
		var row []string
		for cell := r.FirstChild(); cell != nil; cell = cell.NextSibling() {
			s, _ := writeItems(neutralise(c.inlines(cell, nil)), modeCell, -1)
			row = append(row, s)
		}
		cols = max(cols, len(row))
		rows = append(rows, row)
	}
	if len(rows) == 0 || cols == 0 {
		return ""
	}
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("|")
		for i := range cols {
			v := ""
			if i < len(cells) {
				v = cells[i]
			}
			b.WriteString(" " + v + " |")
		}
	}
	line(rows[0])
	b.WriteString("\n|")
	for i := range cols {
		a := east.AlignNone
		if i < len(t.Alignments) {
			a = t.Alignments[i]
		}
		switch a {
		case east.AlignLeft:
			b.WriteString(" :--- |")
		case east.AlignRight:
			b.WriteString(" ---: |")
		case east.AlignCenter:
			b.WriteString(" :---: |")
		default:
			b.WriteString(" --- |")
		}
	}
	for _, r := range rows[1:] {
		b.WriteString("\n")
		line(r)
	}
	return b.String()
}

// plain writes the text of n (and everything below it) as one paragraph:
// for containers nested too deeply, unknown blocks, and blocks cut to fit.
func (c *conv) plain(n ast.Node, budget int) string {
	items := c.flatten(n, nil)
	if len(items) == 0 {
		items = c.inlines(n, nil)
	}
	out, _ := writeItems(neutralise(items), modeBlock, budget)
	return out
}

// blockWithin writes n in at most budget bytes.
func (c *conv) blockWithin(n ast.Node, budget int) string {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		out, _ := writeItems(neutralise(c.inlines(n, nil)), modeBlock, budget)
		return out
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		out, _ := CodeBlock(c.lines(n), c.language(n), budget, KeepHead)
		return out
	case *ast.Heading:
		if budget <= 8 {
			return ""
		}
		out, _ := writeItems(neutralise(c.inlines(n, nil)), modeHeading, budget-8)
		if out == "" {
			return ""
		}
		return strings.Repeat("#", min(max(n.Level, 1), 6)) + " " + out
	}
	return c.plain(n, budget)
}

// lines is the content of a code block, as written (code is literal).
func (c *conv) lines(n ast.Node) string {
	var b strings.Builder
	l := n.Lines()
	for i := range l.Len() {
		seg := l.At(i)
		b.Write(seg.Value(c.src))
	}
	return b.String()
}

func (c *conv) language(n ast.Node) string {
	f, ok := n.(*ast.FencedCodeBlock)
	if !ok || f.Info == nil {
		return ""
	}
	return string(f.Language(c.src))
}

func prefixLines(s, prefix, blank string) string {
	ls := strings.Split(s, "\n")
	for i, l := range ls {
		if l == "" {
			ls[i] = blank
		} else {
			ls[i] = prefix + l
		}
	}
	return strings.Join(ls, "\n")
}

// prefixRest indents every line but the first (blank lines stay blank).
func prefixRest(s, pad string) string {
	ls := strings.Split(s, "\n")
	for i := 1; i < len(ls); i++ {
		if ls[i] != "" {
			ls[i] = pad + ls[i]
		}
	}
	return strings.Join(ls, "\n")
}

func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
