package acceptance

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
)

// Source says where a criterion came from.
type Source string

// Criterion sources. Every source but SourceInferred is deterministic:
// the same issue text always gives the same criteria.
const (
	// SourceChecklist: a task-list item ("- [ ] …") anywhere in the body.
	SourceChecklist Source = "checklist"
	// SourceSection: an item (or, in a section without items, a
	// paragraph) under an "Acceptance criteria" / "Definition of Done"
	// heading.
	SourceSection Source = "section"
	// SourceGherkin: a Gherkin scenario, fenced or plain.
	SourceGherkin Source = "gherkin"
	// SourceInferred: extracted by a model from prose (Inferred). Never
	// produced by Extract.
	SourceInferred Source = "inferred"
)

// Criterion is one acceptance criterion. Its text is untrusted issue text:
// the judge sees it only inside llm.Untrusted, and whoever renders it
// sanitises it.
type Criterion struct {
	// ID is stable: the same source, context and text (and position among
	// identical ones) give the same id in every run, wherever the item
	// moves in the issue.
	ID     string `json:"id"`
	Source Source `json:"source"`
	// Text is plain text (no Markdown structure), one line; a Gherkin
	// scenario keeps one line per step.
	Text string `json:"text"`
	// Context is the text of the list items (or sub-heading, or Gherkin
	// feature and rule) the criterion sits under, " › "-separated.
	Context string `json:"context,omitempty"`
	// Section is the heading that named the criteria section, if any.
	Section string `json:"section,omitempty"`
	// Checked is a ticked task-list box.
	Checked bool `json:"checked,omitempty"`
	// Truncated: Text or Context was cut to Limits.MaxCriterionBytes.
	Truncated bool `json:"truncated,omitempty"`
}

// Inferred reports whether a model, not a deterministic form, produced c
// (AC1: such criteria are marked).
func (c Criterion) Inferred() bool { return c.Source == SourceInferred }

// Limits caps extraction. Zero or negative fields take the defaults.
type Limits struct {
	MaxCriteria       int // criteria kept
	MaxCriterionBytes int // bytes of one criterion's Text (and of its Context)
	MaxTotalBytes     int // bytes of all kept Text and Context
	MaxBodyBytes      int // prefix of the issue body that is read
}

// Default limits: enough for any real issue, small enough that one judge
// call stays cheap (AC3).
const (
	DefaultMaxCriteria       = 25
	DefaultMaxCriterionBytes = 1024
	DefaultMaxTotalBytes     = 16 << 10
	// DefaultMaxBodyBytes: GitHub caps an issue body at 65 536
	// characters, at most 4 bytes each.
	DefaultMaxBodyBytes = 1 << 18
	// maxListDepth bounds list nesting that is read; deeper items are
	// counted in Extraction.TooDeep.
	maxListDepth = 16
	// maxSectionNameBytes bounds Criterion.Section.
	maxSectionNameBytes = 128
	contextSeparator    = " › "
)

func (l Limits) withDefaults() Limits {
	if l.MaxCriteria <= 0 {
		l.MaxCriteria = DefaultMaxCriteria
	}
	if l.MaxCriterionBytes <= 0 {
		l.MaxCriterionBytes = DefaultMaxCriterionBytes
	}
	if l.MaxCriterionBytes < 16 {
		l.MaxCriterionBytes = 16 // room for a word and the ellipsis
	}
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = DefaultMaxTotalBytes
	}
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = DefaultMaxBodyBytes
	}
	return l
}

// Extraction is what Extract found.
type Extraction struct {
	Criteria []Criterion `json:"criteria"`
	// Dropped counts criteria found past MaxCriteria or MaxTotalBytes:
	// once one does not fit, every later one is dropped.
	Dropped int `json:"dropped,omitempty"`
	// Truncated counts kept criteria that were cut.
	Truncated int `json:"truncated,omitempty"`
	// BodyTruncated: only a prefix of the body was read: it was longer
	// than MaxBodyBytes, or a line nested block quotes and lists deeper
	// than any real issue does (more than 32 markers or a 256-byte
	// prefix), which would make parsing cost seconds.
	BodyTruncated bool `json:"body_truncated,omitempty"`
	// GherkinErrors counts Gherkin blocks the parser refused (they give no
	// criteria).
	GherkinErrors int `json:"gherkin_errors,omitempty"`
	// TooDeep counts list items nested deeper than read.
	TooDeep int `json:"too_deep,omitempty"`
}

// Found is the number of criteria found, kept or dropped.
func (e Extraction) Found() int { return len(e.Criteria) + e.Dropped }

// Extract returns the acceptance criteria of an issue body, in document
// order, from its deterministic forms (see the package documentation for
// the rules). The body is parsed as CommonMark with GitHub's task lists,
// tables and strikethrough; code blocks (except Gherkin ones), HTML blocks
// and comments and block quotes give nothing.
func Extract(body string, lim Limits) Extraction {
	lim = lim.withDefaults()
	x := extractor{lim: lim, seen: map[string]int{}}
	if len(body) > lim.MaxBodyBytes {
		body = body[:lim.MaxBodyBytes]
		x.out.BodyTruncated = true
	}
	src, cut := boundNesting([]byte(strings.ToValidUTF8(body, "\uFFFD")))
	if cut {
		x.out.BodyTruncated = true
	}
	x.src = src
	doc := newMarkdown().Parser().Parse(textReader(x.src))
	x.document(doc)
	return x.out
}

// Inferred returns model-extracted criteria (one plain-text item each)
// under the same cleaning, ids and caps as Extract, marked
// SourceInferred. The caller uses it only when Extract found nothing.
func Inferred(items []string, lim Limits) Extraction {
	lim = lim.withDefaults()
	x := extractor{lim: lim, seen: map[string]int{}}
	for _, it := range items {
		x.emit(Criterion{Source: SourceInferred, Text: it})
	}
	return x.out
}

type extractor struct {
	lim   Limits
	src   []byte
	out   Extraction
	total int
	full  bool
	seen  map[string]int
	words gherkinWords
	text  plainText
}

// section is a criteria section: opened by a heading (level 1–6) or by a
// pseudo-heading paragraph ("**Acceptance criteria**",
// "Acceptance criteria:"), which holds only the lists and Gherkin right
// after it.
type section struct {
	name   string
	level  int
	pseudo bool
}

// element is one top-level block of a group, or a run of plain Gherkin
// paragraphs.
type element struct {
	node    ast.Node
	gherkin []string
}

type group struct {
	sec      *section
	sub      string // sub-heading inside the section
	elements []element
}

func (x *extractor) document(doc ast.Node) {
	var stack []section
	var pseudo *section
	g := group{}
	current := func() *section {
		if pseudo != nil {
			return pseudo
		}
		if len(stack) > 0 {
			s := stack[len(stack)-1]
			return &s
		}
		return nil
	}
	flush := func() {
		x.group(g)
		g = group{sec: current(), sub: g.sub}
	}
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		switch n.Kind() {
		case ast.KindHeading:
			h := n.(*ast.Heading)
			pseudo = nil
			for len(stack) > 0 && stack[len(stack)-1].level >= h.Level {
				stack = stack[:len(stack)-1]
			}
			title := cleanLine(x.text.inlineText(h, x.src, textOptions{codeSpans: true}))
			sub := ""
			if isCriteriaHeading(title) {
				stack = append(stack, section{name: sectionName(title), level: h.Level})
			} else if len(stack) > 0 {
				sub = title
			}
			x.group(g)
			g = group{sec: current(), sub: sub}
		case ast.KindThematicBreak:
			pseudo = nil
			flush()
		case ast.KindParagraph:
			if lines, last, ok := x.plainGherkin(n); ok {
				g.elements = append(g.elements, element{gherkin: lines})
				n = last
				continue
			}
			if name, shaped := pseudoHeading(&x.text, n, x.src); shaped {
				pseudo = nil
				if isCriteriaHeading(name) {
					pseudo = &section{name: sectionName(name), level: 7, pseudo: true}
				}
				flush()
				continue
			}
			if pseudo != nil {
				pseudo = nil
				flush()
			}
			g.elements = append(g.elements, element{node: n})
		default:
			g.elements = append(g.elements, element{node: n})
		}
	}
	x.group(g)
}

func (x *extractor) group(g group) {
	hasItems := false
	for _, el := range g.elements {
		if el.gherkin != nil {
			hasItems = true
			continue
		}
		switch el.node.Kind() {
		case ast.KindList:
			hasItems = true
		case ast.KindFencedCodeBlock:
			if isGherkinFence(el.node, x.src) {
				hasItems = true
			}
		}
	}
	for _, el := range g.elements {
		if el.gherkin != nil {
			x.gherkin(el.gherkin, g.sec)
			continue
		}
		switch el.node.Kind() {
		case ast.KindList:
			x.list(el.node, g.sec, g.sub, 0)
		case ast.KindFencedCodeBlock:
			if isGherkinFence(el.node, x.src) {
				x.gherkin(blockLines(el.node, x.src), g.sec)
			}
		case ast.KindParagraph:
			// A section written as prose: each paragraph is a criterion.
			if g.sec != nil && !g.sec.pseudo && !hasItems {
				x.emit(Criterion{Source: SourceSection, Text: x.text.inlineText(el.node, x.src, textOptions{codeSpans: true}), Context: g.sub, Section: g.sec.name})
			}
		}
		// Block quotes (quoted replies), HTML blocks and comments, other
		// code blocks, tables: never criteria.
	}
}

// list reads one list. In a section every item is a criterion, except
// that an item with nested items (and no box) is context for them.
// Outside a section only task-list items are criteria; the text of their
// nested plain items is added to theirs.
func (x *extractor) list(list ast.Node, sec *section, ctx string, depth int) {
	if depth >= maxListDepth {
		x.out.TooDeep += countItems(list)
		return
	}
	for it := list.FirstChild(); it != nil; it = it.NextSibling() {
		if it.Kind() != ast.KindListItem {
			continue
		}
		own, box, checked := x.itemText(it)
		var nested []ast.Node
		for c := it.FirstChild(); c != nil; c = c.NextSibling() {
			if c.Kind() == ast.KindList {
				nested = append(nested, c)
			}
		}
		inner := joinContext(ctx, own)
		switch {
		case sec != nil && box:
			x.emit(Criterion{Source: SourceChecklist, Text: own, Context: ctx, Section: sec.name, Checked: checked})
		case sec != nil && (len(nested) == 0 || own == ""):
			x.emit(Criterion{Source: SourceSection, Text: own, Context: ctx, Section: sec.name})
		case sec == nil && box:
			text := own
			if details := x.plainDetails(nested); len(details) > 0 {
				text = own + " — " + strings.Join(details, "; ")
			}
			x.emit(Criterion{Source: SourceChecklist, Text: text, Context: ctx, Checked: checked})
		}
		// Then what the item holds, in order.
		for c := it.FirstChild(); c != nil; c = c.NextSibling() {
			switch {
			case c.Kind() == ast.KindList:
				x.list(c, sec, inner, depth+1)
			case isGherkinFence(c, x.src):
				x.gherkin(blockLines(c, x.src), sec)
			}
		}
	}
}

// itemText returns the text of a list item's own paragraphs (not of its
// nested lists, code or quotes) and its task-list box.
func (x *extractor) itemText(it ast.Node) (text string, box, checked bool) {
	var parts []string
	first := true
	for c := it.FirstChild(); c != nil; c = c.NextSibling() {
		if c.Kind() != ast.KindParagraph && c.Kind() != ast.KindTextBlock {
			continue
		}
		if first {
			if cb, ok := c.FirstChild().(*east.TaskCheckBox); ok {
				box, checked = true, cb.IsChecked
			}
			first = false
		}
		if t := cleanLine(x.text.inlineText(c, x.src, textOptions{codeSpans: true})); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, " "), box, checked
}

// plainDetails returns the text of the items without a box in lists.
func (x *extractor) plainDetails(lists []ast.Node) []string {
	var out []string
	for _, l := range lists {
		for it := l.FirstChild(); it != nil; it = it.NextSibling() {
			if t, box, _ := x.itemText(it); !box && t != "" {
				out = append(out, t)
			}
		}
	}
	return out
}

func countItems(n ast.Node) int {
	c := 0
	_ = ast.Walk(n, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering && n.Kind() == ast.KindListItem {
			c++
		}
		return ast.WalkContinue, nil
	})
	return c
}

// emit cleans, caps, identifies and keeps c, or counts it as dropped.
func (x *extractor) emit(c Criterion) {
	multiline := c.Source == SourceGherkin
	if multiline {
		c.Text = cleanLines(c.Text)
	} else {
		c.Text = cleanLine(c.Text)
	}
	c.Context = cleanLine(c.Context)
	if c.Text == "" {
		return
	}
	if x.full || len(x.out.Criteria) >= x.lim.MaxCriteria {
		x.full = true
		x.out.Dropped++
		return
	}
	key := string(c.Source) + "\x00" + c.Context + "\x00" + c.Text
	occurrence := x.seen[key]
	x.seen[key]++
	c.ID = criterionID(c.Source, c.Context, c.Text, occurrence)
	var cut1, cut2 bool
	c.Text, cut1 = truncate(c.Text, x.lim.MaxCriterionBytes)
	c.Context, cut2 = truncate(c.Context, x.lim.MaxCriterionBytes)
	c.Truncated = cut1 || cut2
	size := len(c.Text) + len(c.Context)
	if x.total+size > x.lim.MaxTotalBytes {
		x.full = true
		x.out.Dropped++
		return
	}
	x.total += size
	if c.Truncated {
		x.out.Truncated++
	}
	x.out.Criteria = append(x.out.Criteria, c)
}

// criterionID is "c-" and 16 hex digits of SHA-256 over the criterion's
// source, context, full text and its occurrence among identical ones.
func criterionID(src Source, ctx, text string, occurrence int) string {
	h := sha256.New()
	h.Write([]byte("quavon-ac-criterion:v1\x00" + string(src) + "\x00" + ctx + "\x00" + text + "\x00" + strconv.Itoa(occurrence)))
	return "c-" + hex.EncodeToString(h.Sum(nil))[:16]
}

func sectionName(title string) string {
	return capBytes(strings.TrimRight(title, ": "), maxSectionNameBytes)
}

// joinContext appends an item's text (without a trailing colon) to ctx.
func joinContext(ctx, own string) string {
	own = strings.TrimRight(own, ": ")
	switch {
	case own == "":
		return ctx
	case ctx == "":
		return own
	}
	return ctx + contextSeparator + own
}

// cleanLine makes s one line of plain text: control and format characters
// (bidi overrides, zero-width characters) removed, white space runs one
// space, trimmed.
func cleanLine(s string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		case unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r):
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// cleanLines is cleanLine per line, empty lines dropped.
func cleanLines(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = cleanLine(l); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// truncate cuts s to at most limit bytes on a rune boundary, ending in
// "…" when there is room for it.
func truncate(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	const ellipsis = "…"
	if limit <= len(ellipsis) {
		cut := max(limit, 0)
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return s[:cut], true
	}
	cut := limit - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimRightFunc(s[:cut], unicode.IsSpace) + ellipsis, true
}

// capBytes is truncate without the report.
func capBytes(s string, max int) string {
	s, _ = truncate(s, max)
	return s
}

// criteriaHeadings are the section names, normalised (normaliseHeading).
var criteriaHeadings = map[string]bool{
	"acceptance criteria":   true,
	"acceptance criterion":  true,
	"acceptance criterias":  true,
	"acceptance conditions": true,
	"acceptance tests":      true,
	"acceptance test":       true,
	"ac":                    true,
	"acs":                   true,
	"definition of done":    true,
	"dod":                   true,
	"done when":             true,
	"done criteria":         true,
	"exit criteria":         true,
	"success criteria":      true,
	"criteria":              true,
}

// isCriteriaHeading reports whether a heading names a criteria section:
// after normaliseHeading it is one of criteriaHeadings.
func isCriteriaHeading(title string) bool {
	return criteriaHeadings[normaliseHeading(title)]
}

// normaliseHeading lower-cases a heading, drops one trailing
// parenthetical ("(draft)"), leading non-letters (emoji, "1.", "✅") and
// punctuation, and makes every run of other characters one space:
// "✅ Acceptance-Criteria:" and "3. Definition of Done (v2)" normalise to
// "acceptance criteria" and "definition of done".
func normaliseHeading(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasSuffix(s, ")") {
		if i := strings.LastIndexByte(s, '('); i > 0 {
			s = s[:i]
		}
	}
	var b strings.Builder
	space := false
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if b.Len() == 0 && !unicode.IsLetter(r) {
				continue
			}
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(r)
			continue
		}
		space = true
	}
	return b.String()
}

// pseudoHeading reports whether paragraph n stands in for a heading: all
// of it emphasised ("**Acceptance criteria**", "*Done when:*"), or one
// short line ending in a colon ("Acceptance criteria:"). It returns the
// text.
func pseudoHeading(pt *plainText, n ast.Node, src []byte) (string, bool) {
	if n.Lines().Len() != 1 {
		return "", false
	}
	text := cleanLine(pt.inlineText(n, src, textOptions{codeSpans: true}))
	if text == "" || len(text) > maxSectionNameBytes {
		return "", false
	}
	first := n.FirstChild()
	if first != nil && first.Kind() == ast.KindEmphasis {
		rest := first.NextSibling()
		if rest == nil {
			return text, true
		}
		if t, ok := rest.(*ast.Text); ok && rest.NextSibling() == nil && strings.TrimSpace(string(t.Value(src))) == ":" {
			return text, true
		}
	}
	return text, strings.HasSuffix(text, ":") && isCriteriaHeading(text)
}
