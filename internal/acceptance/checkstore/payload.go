package checkstore

import (
	"github.com/quavon/quavon/internal/acceptance"
	"github.com/quavon/quavon/internal/review"
)

// Reasons a check ends without a verdict from the judge.
const (
	ReasonNoLink      = "no_link"
	ReasonNotUsable   = "no_usable_issue"
	ReasonTransferred = "transferred"
	ReasonNoCriteria  = "no_criteria"
	ReasonNoModel     = "no_model"
	ReasonBudget      = "budget_exceeded"
	ReasonModelError  = "model_error"
	ReasonBadAnswer   = "invalid_answer"
)

// noteText says in Quavon's words why a verdict is unclear.
var noteText = map[acceptance.Note]string{
	acceptance.NoteNoAnswer:    "no verdict from the judge",
	acceptance.NoteNoEvidence:  "met was claimed without evidence in the diff",
	acceptance.NoteOutsideDiff: "evidence cited outside this pull request's changes",
}

// Payload is the check as the review's outputs show it: nil when there is
// no table to show (no linked issue, or none with criteria). Text is
// redacted as the review's own text is; the renderer sanitises it.
func (s *Stored) Payload() *review.PayloadAC {
	if s == nil || s.Issue <= 0 || len(s.Criteria.Criteria) == 0 {
		return nil
	}
	byID := map[string]acceptance.Verdict{}
	for _, v := range s.Verdicts.Verdicts {
		byID[v.CriterionID] = v
	}
	out := &review.PayloadAC{Issue: s.Issue, Items: make([]review.PayloadCriterion, 0, len(s.Criteria.Criteria))}
	for _, c := range s.Criteria.Criteria {
		v, ok := byID[c.ID]
		pc := review.PayloadCriterion{Text: review.SafeText(c.Text, acceptance.DefaultMaxCriterionBytes), Status: string(acceptance.StatusUnclear),
			Inferred: c.Inferred()}
		if ok {
			pc.Status = string(v.Status)
			for _, l := range v.Evidence {
				pc.Evidence = append(pc.Evidence, review.PayloadLocation{Path: l.Path, Line: l.StartLine})
			}
			pc.Note = review.SafeText(v.Reason, acceptance.DefaultMaxReasonBytes)
			if t := noteText[v.Note]; t != "" {
				pc.Note = t
			}
		}
		if s.Reason == ReasonNoModel {
			pc.Note = "no model is configured for the acceptance check"
		}
		out.Items = append(out.Items, pc)
	}
	return out
}
