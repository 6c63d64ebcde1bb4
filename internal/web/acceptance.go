package web

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/acceptance"
	"github.com/quavon/quavon/internal/acceptance/checkstore"
	"github.com/quavon/quavon/internal/review"
)

// acView is the acceptance-criteria check of a review run's head as the
// review page shows it. Criterion text, context and the judge's reason are
// untrusted: the template escapes them like every other untrusted text.
type acView struct {
	// Stored: a check exists for the head; otherwise Part says how the
	// run's acceptance part went.
	Stored              bool
	Part                string
	Mode, Status        string
	Reason, Why, Detail string
	Issue               int
	Links               []acLink
	Items               []acItem
	Met, Unmet, Unclear int
	Dropped             int
}

type acLink struct {
	Number  int
	Sources string
	Usable  bool
	Refusal string
}

type acItem struct {
	Text, Context string
	Inferred      bool
	Status        string
	Evidence      []acceptance.Location
	Rejected      int
	Note          string
}

// acReasonText says in words why a check has no (or no trusted) verdicts.
var acReasonText = map[string]string{
	checkstore.ReasonNoLink:      "The pull request links no issue.",
	checkstore.ReasonNotUsable:   "No linked issue could be used.",
	checkstore.ReasonTransferred: "The linked issue was transferred or deleted.",
	checkstore.ReasonNoCriteria:  "The linked issue states no acceptance criteria.",
	checkstore.ReasonNoModel:     "No model is configured for the acceptance check.",
	checkstore.ReasonBudget:      "The run's model budget was spent before the check.",
	checkstore.ReasonModelError:  "The model call failed; every criterion is unclear.",
	checkstore.ReasonBadAnswer:   "The model's answer was refused; every criterion is unclear.",
}

var acNoteText = map[acceptance.Note]string{
	acceptance.NoteNoAnswer:    "no verdict from the judge",
	acceptance.NoteNoEvidence:  "met was claimed without evidence in the diff",
	acceptance.NoteOutsideDiff: "evidence cited outside this pull request's changes",
}

// loadAcceptance reads the check of run's head.
func loadAcceptance(ctx context.Context, tx pgx.Tx, run *review.Run) (acView, error) {
	v := acView{Part: string(run.Parts[review.PartAcceptance])}
	s, err := checkstore.Get(ctx, tx, run.RepositoryID, run.PRNumber, run.HeadSHA)
	if err != nil {
		return v, fmt.Errorf("acceptance check of run %s: %w", run.ID, err)
	}
	if s == nil {
		return v, nil
	}
	v.Stored, v.Mode, v.Status, v.Reason, v.Issue = true, s.Mode, s.Status, s.Reason, s.Issue
	v.Why = acReasonText[s.Reason]
	v.Detail = review.SafeText(s.Detail, 2048)
	v.Met, v.Unmet, v.Unclear = s.Verdicts.Counts()
	v.Dropped = s.Criteria.Dropped
	for _, l := range s.Links {
		al := acLink{Number: l.Number, Usable: l.Usable, Refusal: string(l.Refusal)}
		for i, src := range l.Sources {
			if i > 0 {
				al.Sources += ", "
			}
			al.Sources += string(src)
		}
		v.Links = append(v.Links, al)
	}
	byID := map[string]acceptance.Verdict{}
	for _, d := range s.Verdicts.Verdicts {
		byID[d.CriterionID] = d
	}
	for _, c := range s.Criteria.Criteria {
		it := acItem{Text: review.SafeText(c.Text, acceptance.DefaultMaxCriterionBytes),
			Context: review.SafeText(c.Context, acceptance.DefaultMaxCriterionBytes), Inferred: c.Inferred(),
			Status: string(acceptance.StatusUnclear)}
		if d, ok := byID[c.ID]; ok {
			it.Status, it.Evidence, it.Rejected = string(d.Status), d.Evidence, d.Rejected
			it.Note = review.SafeText(d.Reason, acceptance.DefaultMaxReasonBytes)
			if t := acNoteText[d.Note]; t != "" {
				it.Note = t
			}
		}
		v.Items = append(v.Items, it)
	}
	return v, nil
}
