package acceptance

import (
	"strconv"
	"strings"

	gherkin "github.com/cucumber/gherkin/go/v42"
	messages "github.com/cucumber/messages/go/v34"
	"github.com/yuin/goldmark/ast"
)

// gherkinFenceLanguages are the info strings of fenced code blocks read as
// Gherkin (compared case-insensitively).
var gherkinFenceLanguages = map[string]bool{"gherkin": true, "cucumber": true, "feature": true}

func isGherkinFence(n ast.Node, src []byte) bool {
	f, ok := n.(*ast.FencedCodeBlock)
	return ok && gherkinFenceLanguages[strings.ToLower(string(f.Language(src)))]
}

// English Gherkin keywords that start plain (unfenced) Gherkin, taken from
// the parser's own dialect so they never disagree with it.
type gherkinWords struct {
	structure []string // "Feature:", "Scenario:", "Background:", "Rule:", …
	steps     []string // "Given ", "When ", …, without "* " (a Markdown list)
	given     []string
	then      []string
}

func englishGherkin() gherkinWords {
	d := gherkin.DialectsBuiltin().GetDialect(gherkin.DefaultDialect)
	var w gherkinWords
	for _, k := range [][]string{d.FeatureKeywords(), d.RuleKeywords(), d.BackgroundKeywords(), d.ScenarioKeywords(), d.ScenarioOutlineKeywords(), d.ExamplesKeywords()} {
		for _, kw := range k {
			w.structure = append(w.structure, kw+":")
		}
	}
	for _, kw := range d.StepKeywords() {
		if strings.TrimSpace(kw) != "*" {
			w.steps = append(w.steps, kw)
		}
	}
	w.given = d.Keywords["given"]
	w.then = d.Keywords["then"]
	return w
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if p != "* " && strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// plainGherkin reports whether paragraph n starts a run of plain Gherkin:
// its first line (after tags) starts with a Gherkin structure keyword
// ("Feature:", "Scenario:", …), or it is steps that start with Given and
// include a Then. Following paragraphs that start with a structure or step
// keyword or a table row belong to the run, except that a Given after a
// paragraph of steps starts the next run. It returns the run's source
// lines and its last paragraph.
func (x *extractor) plainGherkin(n ast.Node) ([]string, ast.Node, bool) {
	if x.words.structure == nil {
		x.words = englishGherkin()
	}
	w := x.words
	lines := blockLines(n, x.src)
	first := firstNonTag(lines)
	if first < 0 {
		return nil, nil, false
	}
	head := strings.TrimSpace(lines[first])
	switch {
	case hasAnyPrefix(head, w.structure):
	case hasAnyPrefix(head, w.given) && anyLine(lines, w.then):
		// Bare steps: the parser needs a scenario around them.
		lines = append([]string{"Scenario:"}, lines...)
	default:
		return nil, nil, false
	}
	last, prev := n, lines
	for next := n.NextSibling(); next != nil && next.Kind() == ast.KindParagraph; next = next.NextSibling() {
		l := blockLines(next, x.src)
		i := firstNonTag(l)
		if i < 0 {
			break
		}
		h := strings.TrimSpace(l[i])
		switch {
		case hasAnyPrefix(h, w.structure), strings.HasPrefix(h, "|"):
		case hasAnyPrefix(h, w.given) && anyLine(prev, w.steps):
			// Given after a paragraph of steps: the next scenario, written
			// bare (plainGherkin is asked again for it).
			return lines, last, true
		case hasAnyPrefix(h, w.steps):
		default:
			return lines, last, true
		}
		lines = append(append(lines, ""), l...)
		last, prev = next, l
	}
	return lines, last, true
}

// firstNonTag returns the index of the first line that is not a Gherkin
// tag line ("@smoke @slow"), or -1.
func firstNonTag(lines []string) int {
	for i, l := range lines {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "@") {
			return i
		}
	}
	return -1
}

func anyLine(lines, prefixes []string) bool {
	for _, l := range lines {
		if hasAnyPrefix(strings.TrimSpace(l), prefixes) {
			return true
		}
	}
	return false
}

// gherkin parses Gherkin source with cucumber's parser and emits one
// criterion per scenario (an outline with its examples). Source without a
// Feature line is parsed as the scenarios of an unnamed feature. A block
// the parser refuses gives nothing and is counted.
func (x *extractor) gherkin(lines []string, sec *section) {
	src := strings.Join(lines, "\n")
	doc, err := parseGherkin(src)
	if err != nil || doc == nil || doc.Feature == nil {
		if err != nil {
			x.out.GherkinErrors++
		}
		return
	}
	secName := ""
	if sec != nil {
		secName = sec.name
	}
	f := doc.Feature
	featureCtx := ""
	if f.Name != "" {
		featureCtx = f.Keyword + ": " + f.Name
	}
	var background []string
	emitScenario := func(ctx string, bg []string, s *messages.Scenario) {
		var b strings.Builder
		b.WriteString(s.Keyword)
		if s.Name != "" {
			b.WriteString(": " + s.Name)
		}
		for _, l := range bg {
			b.WriteString("\n" + l)
		}
		for _, l := range stepLines(s.Steps) {
			b.WriteString("\n" + l)
		}
		for _, ex := range s.Examples {
			b.WriteString("\n" + ex.Keyword + ":")
			if ex.Name != "" {
				b.WriteString(" " + ex.Name)
			}
			if ex.TableHeader != nil {
				b.WriteString("\n" + tableRow(ex.TableHeader))
			}
			for _, r := range ex.TableBody {
				b.WriteString("\n" + tableRow(r))
			}
		}
		x.emit(Criterion{Source: SourceGherkin, Text: b.String(), Context: ctx, Section: secName})
	}
	for _, c := range f.Children {
		switch {
		case c.Background != nil:
			background = stepLines(c.Background.Steps)
		case c.Scenario != nil:
			emitScenario(featureCtx, background, c.Scenario)
		case c.Rule != nil:
			ruleCtx := joinContext(featureCtx, c.Rule.Keyword+": "+c.Rule.Name)
			ruleBackground := background
			for _, rc := range c.Rule.Children {
				switch {
				case rc.Background != nil:
					ruleBackground = append(append([]string(nil), background...), stepLines(rc.Background.Steps)...)
				case rc.Scenario != nil:
					emitScenario(ruleCtx, ruleBackground, rc.Scenario)
				}
			}
		}
	}
}

func parseGherkin(src string) (*messages.GherkinDocument, error) {
	newID := func() func() string {
		n := 0
		return func() string { n++; return strconv.Itoa(n) }
	}
	doc, err := gherkin.ParseGherkinDocument(strings.NewReader(src), newID())
	if err != nil {
		// Scenarios without a Feature line: give them one.
		if doc2, err2 := gherkin.ParseGherkinDocument(strings.NewReader("Feature:\n"+src), newID()); err2 == nil {
			return doc2, nil
		}
	}
	return doc, err
}

func stepLines(steps []*messages.Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, strings.TrimSpace(s.Keyword)+" "+s.Text)
		if s.DataTable != nil {
			for _, r := range s.DataTable.Rows {
				out = append(out, "  "+tableRow(r))
			}
		}
		if s.DocString != nil {
			for _, l := range strings.Split(s.DocString.Content, "\n") {
				out = append(out, "  "+l)
			}
		}
	}
	return out
}

func tableRow(r *messages.TableRow) string {
	cells := make([]string, 0, len(r.Cells))
	for _, c := range r.Cells {
		cells = append(cells, c.Value)
	}
	return "| " + strings.Join(cells, " | ") + " |"
}
