package review

import (
	"cmp"
	"slices"
	"strings"

	"github.com/quavon/quavon/internal/sast"
)

// ToolLLM is the name a model finding merged into a deterministic one
// carries in Finding.Tools.
const ToolLLM = "llm"

// Join makes one run's findings from the verified model findings and the
// scanners' normalised findings (spec SC2, §8):
//
//   - every deterministic finding carries its tool and rule id (the
//     deterministic badge);
//   - deterministic findings of several tools on overlapping lines of one
//     file with the same weakness (Weakness: the CWE, or a rule family)
//     become one finding listing every tool and rule, with the highest
//     severity and the smallest member fingerprint;
//   - a model finding of category security on lines a deterministic
//     finding with a weakness overlaps is merged into it (its tools gain
//     "llm", its body follows the tool's message);
//   - every other model finding is kept as the model reported it. Nothing
//     else removes or changes a finding of either side.
//
// Cross-tool grouping is this one function so that internal/sast's own
// grouping can replace the weakness table later.
func Join(model []Finding, det []sast.Finding) []Finding {
	groups := make([]Finding, 0, len(det))
	sorted := slices.Clone(det)
	slices.SortStableFunc(sorted, func(a, b sast.Finding) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.StartLine, b.StartLine), cmp.Compare(a.EndLine, b.EndLine),
			cmp.Compare(a.Tool, b.Tool), cmp.Compare(a.RuleID, b.RuleID))
	})
	for _, f := range sorted {
		w := Weakness(f)
		merged := false
		if w != "" {
			for i := range groups {
				g := &groups[i]
				if g.Path == f.Path && g.Weakness == w && overlaps(g.StartLine, g.EndLine, f.StartLine, f.EndLine) {
					g.StartLine, g.EndLine = min(g.StartLine, f.StartLine), max(g.EndLine, f.EndLine)
					g.Tools = appendNew(g.Tools, string(f.Tool))
					g.RuleIDs = appendNew(g.RuleIDs, f.RuleID)
					if rank(string(f.Severity)) < rank(g.Severity) {
						g.Severity = string(f.Severity)
					}
					if f.Fingerprint < g.Fingerprint {
						g.Fingerprint = f.Fingerprint
					}
					merged = true
					break
				}
			}
		}
		if merged {
			continue
		}
		title := f.RuleName
		if title == "" {
			title = f.RuleID
		}
		groups = append(groups, Finding{
			Fingerprint: f.Fingerprint, Source: SourceSAST, Tools: []string{string(f.Tool)}, RuleIDs: []string{f.RuleID},
			Weakness: w, Path: f.Path, StartLine: f.StartLine, EndLine: f.EndLine, Severity: string(f.Severity),
			Category: "security", Title: title, Body: f.Message,
		})
	}
	out := groups
	nGroups := len(groups)
	for _, m := range model {
		merged := false
		if m.Category == "security" {
			for i := range nGroups {
				g := &out[i]
				if g.Weakness != "" && g.Path == m.Path && overlaps(g.StartLine, g.EndLine, m.StartLine, m.EndLine) &&
					!slices.Contains(g.Tools, ToolLLM) {
					g.Tools = append(g.Tools, ToolLLM)
					if rank(m.Severity) < rank(g.Severity) {
						g.Severity = m.Severity
					}
					if strings.TrimSpace(m.Body) != "" {
						g.Body = strings.TrimSpace(g.Body + "\n\n" + m.Body)
					}
					g.Quote = m.Quote
					merged = true
					break
				}
			}
		}
		if !merged {
			out = append(out, m)
		}
	}
	SortFindings(out)
	return out
}

// SortFindings orders findings most severe first, then by path, line and
// fingerprint.
func SortFindings(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(rank(a.Severity), rank(b.Severity)), cmp.Compare(a.Path, b.Path),
			cmp.Compare(a.StartLine, b.StartLine), cmp.Compare(a.Fingerprint, b.Fingerprint))
	})
}

func rank(severity string) int {
	if i := slices.Index(Severities, severity); i >= 0 {
		return i
	}
	return len(Severities)
}

// AtLeast reports whether severity is min or more severe.
func AtLeast(severity, min string) bool { return rank(severity) <= rank(min) }

func overlaps(a1, a2, b1, b2 int) bool { return a1 <= b2 && b1 <= a2 }

func appendNew(ss []string, s string) []string {
	if slices.Contains(ss, s) {
		return ss
	}
	return append(ss, s)
}

// ruleWeakness maps rules whose tools name no CWE to the weakness of the
// rules other tools have for the same problem: ruff's flake8-bandit rules
// mirror bandit's numbers (bandit's own CWE is not always in its report);
// ESLint's security rules and gitleaks name none.
var ruleWeakness = map[string]string{
	"ruff:S102": "CWE-78", "ruff:S105": "CWE-259", "ruff:S106": "CWE-259", "ruff:S107": "CWE-259",
	"ruff:S301": "CWE-502", "ruff:S307": "CWE-78", "ruff:S311": "CWE-330", "ruff:S324": "CWE-327",
	"ruff:S501": "CWE-295", "ruff:S506": "CWE-20", "ruff:S602": "CWE-78", "ruff:S603": "CWE-78",
	"ruff:S604": "CWE-78", "ruff:S605": "CWE-78", "ruff:S607": "CWE-78", "ruff:S608": "CWE-89",
	"ruff:S701":   "CWE-94",
	"bandit:B102": "CWE-78", "bandit:B105": "CWE-259", "bandit:B106": "CWE-259", "bandit:B107": "CWE-259",
	"bandit:B301": "CWE-502", "bandit:B307": "CWE-78", "bandit:B311": "CWE-330", "bandit:B324": "CWE-327",
	"bandit:B501": "CWE-295", "bandit:B506": "CWE-20", "bandit:B602": "CWE-78", "bandit:B603": "CWE-78",
	"bandit:B604": "CWE-78", "bandit:B605": "CWE-78", "bandit:B607": "CWE-78", "bandit:B608": "CWE-89",
	"bandit:B701":    "CWE-94",
	"eslint:no-eval": "CWE-95", "eslint:no-implied-eval": "CWE-95", "eslint:no-new-func": "CWE-95",
	"eslint:security/detect-eval-with-expression": "CWE-95", "eslint:security/detect-child-process": "CWE-78",
	"eslint:security/detect-non-literal-fs-filename": "CWE-22", "eslint:security/detect-unsafe-regex": "CWE-1333",
	"eslint:security/detect-non-literal-regexp": "CWE-1333",
}

// Weakness is a deterministic finding's weakness for grouping: its CWE,
// else the weakness of its rule's family; "" when neither is known (the
// finding then groups with nothing).
func Weakness(f sast.Finding) string {
	if f.CWE != "" {
		return f.CWE
	}
	if f.Tool == sast.ToolGitleaks {
		return "CWE-798"
	}
	return ruleWeakness[string(f.Tool)+":"+f.RuleID]
}
