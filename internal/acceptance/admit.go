package acceptance

// Visibility is who may read a repository's content. The zero value is
// unknown, which Admit treats as the most restrictive answer on each
// side.
type Visibility int

// Visibilities, from the widest audience to the narrowest.
const (
	VisibilityUnknown Visibility = iota
	VisibilityPublic
	VisibilityInternal // GitHub Enterprise: every member of the enterprise
	VisibilityPrivate
)

// rank orders audiences: a wider audience has a lower rank. ok is false
// for unknown.
func (v Visibility) rank() (int, bool) {
	switch v {
	case VisibilityPublic:
		return 1, true
	case VisibilityInternal:
		return 2, true
	case VisibilityPrivate:
		return 3, true
	}
	return 0, false
}

// IssueState is an issue's state.
type IssueState string

// Issue states.
const (
	IssueOpen   IssueState = "open"
	IssueClosed IssueState = "closed"
)

// IssueRow is what the issues table knows of one issue: enough to decide
// whether its text may be used, not the text itself.
type IssueRow struct {
	RepositoryID int64
	Number       int
	// Visibility of the issue's text when it was stored: its
	// repository's visibility then.
	Visibility Visibility
	State      IssueState
	// TransferredAway: GitHub moved the issue to another repository
	// (issues.transferred); the number here no longer holds it.
	TransferredAway bool
	// IsPullRequest: the number is a pull request, not an issue.
	IsPullRequest bool
}

// Refusal says why a linked issue may not be used.
type Refusal string

// Refusals.
const (
	// RefusedMissing: no row for the issue. The caller may refresh the
	// row with a read of this repository and decide again.
	RefusedMissing Refusal = "missing"
	// RefusedOtherRepository: the only row with that number belongs to
	// another repository.
	RefusedOtherRepository Refusal = "other_repository"
	// RefusedTransferred: the issue was transferred away.
	RefusedTransferred Refusal = "transferred"
	// RefusedPullRequest: the number is a pull request.
	RefusedPullRequest Refusal = "pull_request"
	// RefusedVisibility: the issue's text has a narrower audience than
	// the pull request (a private issue and a public pull request), or
	// its visibility is unknown.
	RefusedVisibility Refusal = "visibility"
	// RefusedInvalid: the row's state is not open or closed, or several
	// rows claim the issue.
	RefusedInvalid Refusal = "invalid_row"
)

// Decision is Admit's answer for one linked issue.
type Decision struct {
	Number  int
	Usable  bool
	Refusal Refusal // empty when Usable
}

// Admit decides which linked issues of the pull request's repository (id
// repositoryID, visibility prVisibility) may give their text to the check
// (AC2), in the links' order:
//
//   - only a row of that repository with that number counts;
//   - an issue transferred away, or a number that is a pull request, is
//     refused;
//   - the issue's audience must include the pull request's: a public pull
//     request never gets a private or internal issue's text, an internal
//     one never a private one. An unknown issue visibility is refused; an
//     unknown pull-request visibility counts as public;
//   - open and closed issues are both usable (criteria still apply to an
//     issue closed early); any other state is an invalid row.
//
// Rows of other repositories never make an issue usable.
func Admit(repositoryID int64, prVisibility Visibility, links []Link, rows []IssueRow) []Decision {
	prRank, ok := prVisibility.rank()
	if !ok {
		prRank = 1
	}
	out := make([]Decision, 0, len(links))
	for _, l := range links {
		d := Decision{Number: l.Number}
		var mine []IssueRow
		other := false
		for _, r := range rows {
			if r.Number != l.Number {
				continue
			}
			if repositoryID != 0 && r.RepositoryID == repositoryID {
				mine = append(mine, r)
			} else {
				other = true
			}
		}
		switch {
		case len(mine) == 0 && other:
			d.Refusal = RefusedOtherRepository
		case len(mine) == 0:
			d.Refusal = RefusedMissing
		case len(mine) > 1:
			d.Refusal = RefusedInvalid
		default:
			d.Refusal = admitRow(mine[0], prRank)
		}
		d.Usable = d.Refusal == ""
		out = append(out, d)
	}
	return out
}

func admitRow(r IssueRow, prRank int) Refusal {
	switch {
	case r.TransferredAway:
		return RefusedTransferred
	case r.IsPullRequest:
		return RefusedPullRequest
	case r.State != IssueOpen && r.State != IssueClosed:
		return RefusedInvalid
	}
	issueRank, ok := r.Visibility.rank()
	if !ok || issueRank > prRank {
		return RefusedVisibility
	}
	return ""
}

// Usable returns the numbers of the usable decisions, in order.
func Usable(ds []Decision) []int {
	var out []int
	for _, d := range ds {
		if d.Usable {
			out = append(out, d.Number)
		}
	}
	return out
}
