package acceptance

import (
	"slices"
	"testing"
)

func links(ns ...int) []Link {
	out := make([]Link, 0, len(ns))
	for _, n := range ns {
		out = append(out, Link{Number: n, Sources: []LinkSource{LinkKeyword}})
	}
	return out
}

func TestAdmit(t *testing.T) {
	t.Parallel()
	const repo = 4242
	row := func(n int, v Visibility) IssueRow {
		return IssueRow{RepositoryID: repo, Number: n, Visibility: v, State: IssueOpen}
	}
	cases := []struct {
		name string
		pr   Visibility
		rows []IssueRow
		want Refusal
	}{
		{"public issue, public PR", VisibilityPublic, []IssueRow{row(1, VisibilityPublic)}, ""},
		{"private issue, private PR", VisibilityPrivate, []IssueRow{row(1, VisibilityPrivate)}, ""},
		{"public issue, private PR", VisibilityPrivate, []IssueRow{row(1, VisibilityPublic)}, ""},
		{"internal issue, internal PR", VisibilityInternal, []IssueRow{row(1, VisibilityInternal)}, ""},
		{"internal issue, private PR", VisibilityPrivate, []IssueRow{row(1, VisibilityInternal)}, ""},
		{"private issue, public PR", VisibilityPublic, []IssueRow{row(1, VisibilityPrivate)}, RefusedVisibility},
		{"internal issue, public PR", VisibilityPublic, []IssueRow{row(1, VisibilityInternal)}, RefusedVisibility},
		{"private issue, internal PR", VisibilityInternal, []IssueRow{row(1, VisibilityPrivate)}, RefusedVisibility},
		{"unknown issue visibility", VisibilityPrivate, []IssueRow{row(1, VisibilityUnknown)}, RefusedVisibility},
		{"unknown PR visibility counts as public", VisibilityUnknown, []IssueRow{row(1, VisibilityPrivate)}, RefusedVisibility},
		{"unknown PR visibility, public issue", VisibilityUnknown, []IssueRow{row(1, VisibilityPublic)}, ""},
		{"closed issue", VisibilityPublic, []IssueRow{{RepositoryID: repo, Number: 1, Visibility: VisibilityPublic, State: IssueClosed}}, ""},
		{"bad state", VisibilityPublic, []IssueRow{{RepositoryID: repo, Number: 1, Visibility: VisibilityPublic, State: "deleted"}}, RefusedInvalid},
		{"no state", VisibilityPublic, []IssueRow{{RepositoryID: repo, Number: 1, Visibility: VisibilityPublic}}, RefusedInvalid},
		{"transferred away", VisibilityPublic, []IssueRow{{RepositoryID: repo, Number: 1, Visibility: VisibilityPublic, State: IssueOpen, TransferredAway: true}}, RefusedTransferred},
		{"pull request", VisibilityPublic, []IssueRow{{RepositoryID: repo, Number: 1, Visibility: VisibilityPublic, State: IssueOpen, IsPullRequest: true}}, RefusedPullRequest},
		{"missing", VisibilityPublic, []IssueRow{row(2, VisibilityPublic)}, RefusedMissing},
		{"only another repository's issue 1", VisibilityPublic, []IssueRow{{RepositoryID: 7, Number: 1, Visibility: VisibilityPublic, State: IssueOpen}}, RefusedOtherRepository},
		{"another repository's row does not spoil ours", VisibilityPublic, []IssueRow{
			{RepositoryID: 7, Number: 1, Visibility: VisibilityPrivate, State: IssueOpen, TransferredAway: true},
			row(1, VisibilityPublic),
		}, ""},
		{"two rows claim it", VisibilityPublic, []IssueRow{row(1, VisibilityPublic), row(1, VisibilityPublic)}, RefusedInvalid},
	}
	for _, c := range cases {
		got := Admit(repo, c.pr, links(1), c.rows)
		if len(got) != 1 || got[0].Number != 1 || got[0].Refusal != c.want || got[0].Usable != (c.want == "") {
			t.Errorf("%s: %+v, want refusal %q", c.name, got, c.want)
		}
	}
}

func TestAdmitUnknownRepository(t *testing.T) {
	t.Parallel()
	rows := []IssueRow{{RepositoryID: 0, Number: 1, Visibility: VisibilityPublic, State: IssueOpen}}
	if got := Admit(0, VisibilityPublic, links(1), rows); got[0].Usable {
		t.Fatalf("repository id 0 admitted %+v", got)
	}
}

func TestAdmitOrderAndUsable(t *testing.T) {
	t.Parallel()
	rows := []IssueRow{
		{RepositoryID: 1, Number: 5, Visibility: VisibilityPublic, State: IssueOpen},
		{RepositoryID: 1, Number: 3, Visibility: VisibilityPrivate, State: IssueOpen},
		{RepositoryID: 1, Number: 9, Visibility: VisibilityPublic, State: IssueClosed},
	}
	ds := Admit(1, VisibilityPublic, links(9, 3, 5, 4), rows)
	if got := Usable(ds); !slices.Equal(got, []int{9, 5}) {
		t.Fatalf("usable %v from %+v", got, ds)
	}
	if ds[1].Refusal != RefusedVisibility || ds[3].Refusal != RefusedMissing {
		t.Fatalf("%+v", ds)
	}
}
