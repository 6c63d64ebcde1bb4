package check

import (
	"testing"

	"github.com/quavon/quavon/internal/acceptance"
	"github.com/quavon/quavon/internal/sast"
)

// FuzzJudgeAnswer: whatever the judge answers, the check decodes it
// without panicking, and a criterion ends met only with evidence on the
// pull request's changed lines.
func FuzzJudgeAnswer(f *testing.F) {
	crit := acceptance.Extract("- [ ] divides\n- [ ] documents\n", acceptance.Limits{}).Criteria
	for _, s := range []string{
		`{"criteria":[{"id":"` + crit[0].ID + `","status":"met","evidence":[{"path":"app.py","start_line":13,"end_line":14}]}]}`,
		"```json\n{\"criteria\":[]}\n```",
		"```\n{\"criteria\":[{\"id\":\"" + crit[1].ID + "\",\"status\":\"met\",\"evidence\":[{\"path\":\"secrets.env\"}]}]}\n```",
		"Sure! ```json\n{}```", "```", "``````", "```json\n```",
	} {
		f.Add(s)
	}
	changed := sast.ChangedLines{"app.py": {{Start: 13, End: 14}}}
	f.Fuzz(func(t *testing.T, text string) {
		ans, err := acceptance.DecodeAnswer([]byte(unfence(text)), acceptance.AnswerLimits{})
		if err != nil {
			ans = acceptance.Answer{}
		}
		v := acceptance.Verify(crit, ans, diffOf(changed), acceptance.VerifyOptions{})
		if len(v.Verdicts) != len(crit) {
			t.Fatalf("%d verdicts for %d criteria", len(v.Verdicts), len(crit))
		}
		for _, d := range v.Verdicts {
			if d.Status != acceptance.StatusMet {
				continue
			}
			if len(d.Evidence) == 0 {
				t.Fatalf("met without evidence: %+v", d)
			}
			for _, l := range d.Evidence {
				if l.Path != "app.py" {
					t.Fatalf("met on %s, outside the diff", l.Path)
				}
			}
		}
	})
}
