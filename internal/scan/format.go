package scan

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"

	"github.com/quavon/quavon/internal/sast"
)

// SeverityRank orders severities: critical is 4, info 0, unknown -1.
func SeverityRank(s sast.Severity) int {
	switch s {
	case sast.SeverityCritical:
		return 4
	case sast.SeverityHigh:
		return 3
	case sast.SeverityMedium:
		return 2
	case sast.SeverityLow:
		return 1
	case sast.SeverityInfo:
		return 0
	}
	return -1
}

// ParseFailOn reads --fail-on: a severity, or "none" (never fail on
// findings), which is returned as rank 5.
func ParseFailOn(s string) (int, error) {
	if s == "none" {
		return 5, nil
	}
	if r := SeverityRank(sast.Severity(s)); r >= 0 {
		return r, nil
	}
	return 0, fmt.Errorf("--fail-on %q: want critical, high, medium, low, info or none", s)
}

// Failing counts findings at or above rank, a weakness reported on one
// line by several tools once (sast.GroupFindings).
func (o *Outcome) Failing(rank int) int {
	n := 0
	for _, g := range sast.GroupFindings(o.Report.Findings) {
		if SeverityRank(g.Severity) >= rank {
			n++
		}
	}
	return n
}

// Text writes the findings for a terminal: one line per finding (a
// weakness that several tools report on one line is one finding listing
// every tool and rule, with the first one's message), then each tool's
// status. Messages are untrusted: control and format characters are
// replaced so they cannot move the cursor or fake lines.
func Text(w io.Writer, o *Outcome) error {
	groups := sast.GroupFindings(o.Report.Findings)
	for _, g := range groups {
		f := g.Findings[0]
		loc := fmt.Sprintf("%s:%d", f.Path, f.StartLine)
		if f.StartColumn > 0 {
			loc += fmt.Sprintf(":%d", f.StartColumn)
		}
		msg := clean(f.Message)
		if f.Unmapped != "" {
			msg += " [line as " + string(f.Tool) + " numbers it: " + clean(f.Unmapped) + "]"
		}
		var by []string
		for _, m := range g.Findings {
			if r := string(m.Tool) + " " + clean(m.RuleID); !slices.Contains(by, r) {
				by = append(by, r)
			}
		}
		sev := string(g.Severity)
		if g.Weakness != "" {
			sev += " " + string(g.Weakness)
		}
		if _, err := fmt.Fprintf(w, "%s: %s [%s] %s\n", clean(loc), sev, strings.Join(by, ", "), msg); err != nil {
			return err
		}
	}
	r := o.Report
	fmt.Fprintf(w, "\n%d finding(s) on changed lines", len(groups))
	if len(groups) != len(r.Findings) {
		fmt.Fprintf(w, " (%d from the tools)", len(r.Findings))
	}
	if r.Profile != "" {
		fmt.Fprintf(w, ", profile %s", r.Profile)
	}
	if r.Muted > 0 {
		fmt.Fprintf(w, ", %d muted by it (--profile audit shows them)", r.Muted)
	}
	if r.Dropped > 0 {
		fmt.Fprintf(w, ", %d more dropped by the cap", r.Dropped)
	}
	if r.OutsideChange > 0 {
		fmt.Fprintf(w, ", %d outside the change ignored", r.OutsideChange)
	}
	fmt.Fprintln(w)
	for _, t := range r.Tools {
		line := fmt.Sprintf("  %-9s %-9s", t.Tool, t.Status)
		if t.Version != "" {
			line += " " + clean(t.Version)
		}
		if t.Files > 0 {
			line += fmt.Sprintf(", %d file(s)", t.Files)
		}
		if t.Status != sast.StatusOK && t.Status != sast.StatusNoFiles && t.Status != sast.StatusPartial {
			if t.Error != "" {
				line += ": " + clean(t.Error)
			}
			if s := lastLine(t.Stderr); s != "" {
				line += " (" + clean(s) + ")"
			}
		}
		if len(t.Errors) > 0 {
			line += fmt.Sprintf(" [%d tool error(s): %s]", len(t.Errors), clean(t.Errors[0]))
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w, r.Summary())
	for _, n := range r.NotScanned {
		who := "not scanned"
		if n.Tool != "" {
			who = string(n.Tool)
		}
		fmt.Fprintf(w, "  %s: %s: %s\n", clean(n.Path), who, clean(n.Reason))
	}
	if r.NotScannedDropped > 0 {
		fmt.Fprintf(w, "  … and %d more\n", r.NotScannedDropped)
	}
	return nil
}

// JSON writes the outcome as one JSON document.
func JSON(w io.Writer, o *Outcome) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(o)
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// clean makes untrusted text safe for a terminal line.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\t' {
			return ' '
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return '\uFFFD'
		}
		return r
	}, s)
}
