package render

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/quavon/quavon/internal/sast"
)

// CheckRunOutput is the output object of a check run.
type CheckRunOutput struct {
	// Title is plain text.
	Title string
	// Summary is Markdown.
	Summary string
}

var acLabel = map[ACStatus]string{ACMet: "✅ met", ACUnmet: "❌ unmet", ACUnclear: "❔ unclear"}

// CheckRun renders the check run of a review run: a plain title, and a
// summary with the counts per severity, the findings table, the scanners'
// status, the acceptance-criteria table (which never fails the check),
// skipped files and the model with its usage and cost: the only place cost
// is shown.
func (r *Renderer) CheckRun(rv Review) (CheckRunOutput, error) {
	if err := rv.validate(); err != nil {
		return CheckRunOutput{}, fmt.Errorf("render.CheckRun: %w", err)
	}
	all := append(append([]Finding(nil), rv.Inline...), rv.Outside...)
	title := "No new findings"
	if len(all) > 0 {
		title = plural(len(all), "new finding", "new findings")
		top := all[0].Severity
		for _, f := range all {
			if severityRank(f.Severity) < severityRank(top) {
				top = f.Severity
			}
		}
		n := 0
		for _, f := range all {
			if f.Severity == top {
				n++
			}
		}
		title += fmt.Sprintf(" (%d %s)", n, severityWord(top))
	}
	if rv.SAST != nil && sastIncomplete(rv.SAST) {
		title += "; scanners incomplete"
	}
	if rv.ModelFailed != "" {
		title += "; AI review incomplete"
	}

	var b body
	b.add(reviewLabel(rv))
	b.add(r.counts(rv))
	if len(all) > 0 {
		b.add(severityTable(all))
		b.add("### Findings")
		b.add(r.findingTable(all))
	}
	if len(rv.Resolved) > 0 {
		b.add("### Resolved since the last review")
		b.add(r.findingRefs(rv.Resolved, true))
	}
	if rv.SAST != nil {
		b.add("### Deterministic scanners")
		b.add(r.sastTable(rv.SAST))
	}
	if rv.AC != nil {
		b.add(r.acSection(rv.AC))
	}
	if len(rv.Skipped) > 0 {
		b.add("### Not reviewed")
		b.add(skippedList(rv.Skipped))
	}
	if m := modelLine(rv); m != "" {
		b.add("### Model")
		b.add(m)
	}
	s := b.String()
	if len(s) > MaxCheckSummaryBytes {
		return CheckRunOutput{}, fmt.Errorf("render.CheckRun: summary of %d bytes", len(s))
	}
	return CheckRunOutput{Title: cut(title, MaxCheckTitleBytes), Summary: s}, nil
}

func severityRank(s sast.Severity) int {
	for i, v := range severities {
		if v == s {
			return i
		}
	}
	return len(severities)
}

func sastIncomplete(s *SAST) bool {
	if s.Failed != "" || len(s.NotScanned) > 0 || s.NotScannedDropped > 0 {
		return true
	}
	for _, t := range s.Tools {
		if t.Incomplete || t.Status == sast.StatusPartial || t.Status == sast.StatusFailed || t.Status == sast.StatusMissing || t.Status == sast.StatusTimedOut {
			return true
		}
	}
	return false
}

func severityTable(all []Finding) string {
	var b strings.Builder
	b.WriteString("| Severity | New |\n| --- | ---: |")
	for _, s := range severities {
		n := 0
		for _, f := range all {
			if f.Severity == s {
				n++
			}
		}
		b.WriteString("\n| " + severityLabel(s) + " | " + strconv.Itoa(n) + " |")
	}
	return b.String()
}

func (r *Renderer) findingTable(all []Finding) string {
	var b strings.Builder
	b.WriteString("| Severity | Finding | Location | Found by |\n| --- | --- | --- | --- |\n")
	b.WriteString(capRows(len(all), maxCheckFindings, func(i int) string {
		f := all[i]
		t := r.san.Cell(f.Title, maxTitleBytes)
		if t == "" {
			t = "(untitled)"
		}
		loc := "—"
		if f.Path != "" {
			loc = path(f.Path, f.Line, true)
		}
		return "| " + severityLabel(f.Severity) + " | " + t + " | " + loc + " | " + badgesCell(f.Sources) + " |"
	}, budgetFindings, func(n int) string { return fmt.Sprintf("| … | %d more findings | | |", n) }))
	return b.String()
}

func acCounts(ac *AC) (met, unmet, unclear int) {
	for _, c := range ac.Items {
		switch c.Status {
		case ACMet:
			met++
		case ACUnmet:
			unmet++
		default:
			unclear++
		}
	}
	return
}

// acSection is the acceptance-criteria table: status, the criterion
// (sanitised, cut), and evidence (changed files or lines of the pull
// request, as the judge had to cite them).
func (r *Renderer) acSection(ac *AC) string {
	met, unmet, unclear := acCounts(ac)
	var b strings.Builder
	b.WriteString(fmt.Sprintf("### Acceptance criteria of issue #%d\n\n", ac.Issue))
	if len(ac.Items) == 0 {
		b.WriteString("The linked issue names no criteria.")
		return b.String()
	}
	b.WriteString(fmt.Sprintf("%d met, %d unmet, %d unclear. These verdicts inform the review; they never fail this check.\n\n", met, unmet, unclear))
	b.WriteString("| Status | Criterion | Evidence |\n| --- | --- | --- |\n")
	b.WriteString(capRows(len(ac.Items), maxListed, func(i int) string {
		c := ac.Items[i]
		text := r.san.Cell(c.Text, maxCriterion)
		if text == "" {
			text = "(empty)"
		}
		if c.Inferred {
			text += " *(inferred)*"
		}
		if c.Note != "" {
			text += " — " + r.san.Cell(c.Note, maxCriterion)
		}
		var ev []string
		for j, l := range c.Evidence {
			if j == maxEvidence {
				ev = append(ev, fmt.Sprintf("+%d", len(c.Evidence)-j))
				break
			}
			ev = append(ev, path(l.Path, l.Line, true))
		}
		evs := "—"
		if len(ev) > 0 {
			evs = strings.Join(ev, ", ")
		}
		return "| " + acLabel[c.Status] + " | " + text + " | " + evs + " |"
	}, budgetAC, func(n int) string { return fmt.Sprintf("| … | %d more criteria | |", n) }))
	return b.String()
}

// modelLine shows the model with its usage and cost.
func modelLine(rv Review) string {
	if rv.Model == "" && rv.Usage.Calls == 0 {
		return ""
	}
	parts := []string{}
	if rv.Model != "" {
		parts = append(parts, code(rv.Model, maxModelBytes))
	}
	if rv.Usage.Calls > 0 {
		parts = append(parts, plural(rv.Usage.Calls, "call", "calls"))
	}
	if rv.Usage.InputTokens > 0 || rv.Usage.OutputTokens > 0 {
		parts = append(parts, thousands(rv.Usage.InputTokens)+" input and "+thousands(rv.Usage.OutputTokens)+" output tokens")
	}
	switch {
	case rv.Usage.CostMicroUSD > 0:
		parts = append(parts, "cost "+usd(rv.Usage.CostMicroUSD))
	case rv.Usage.CostMicroUSD < 0:
		parts = append(parts, "cost unknown")
	}
	return strings.Join(parts, " · ")
}

// usd shows micro-dollars as $0.0123 below a dollar and $12.34 above.
func usd(micros int64) string {
	if micros >= 1_000_000 {
		return fmt.Sprintf("$%.2f", float64(micros)/1e6)
	}
	return fmt.Sprintf("$%.4f", float64(micros)/1e6)
}
