package githubfake_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/shurcooL/githubv4"

	"github.com/quavon/quavon/internal/githubfake"
)

// TestCreateCommitOnBranchRefusals: createCommitOnBranch honours what
// GitHub enforces on a direct commit to a branch: classic protection
// (BRANCH_PROTECTION_RULE_VIOLATION, "Changes must be made through a pull
// request."), rulesets (pull_request, update), required_signatures (which
// GitHub's own signature satisfies) and the workflows permission of an
// app. A refusal never moves the branch.
func TestCreateCommitOnBranchRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var m struct {
		CreateCommitOnBranch struct {
			Commit struct{ Oid githubv4.GitObjectID }
		} `graphql:"createCommitOnBranch(input: $input)"`
	}
	commit := func(v4 *githubv4.Client, branch, head, path string) error {
		return v4.Mutate(ctx, &m, githubv4.CreateCommitOnBranchInput{
			Branch:          githubv4.CommittableBranch{RepositoryNameWithOwner: githubv4.NewString("acme/app"), BranchName: githubv4.NewString(githubv4.String(branch))},
			Message:         githubv4.CommitMessage{Headline: "h"},
			ExpectedHeadOid: githubv4.GitObjectID(head),
			FileChanges: &githubv4.FileChanges{Additions: &[]githubv4.FileAddition{{Path: githubv4.String(path),
				Contents: githubv4.Base64String(base64.StdEncoding.EncodeToString([]byte("x\n")))}}},
		}, nil)
	}
	for _, tc := range []struct {
		name  string
		setup func(w *world)
		path  string
		want  string // "" = accepted
	}{
		{name: "classic protection", setup: func(w *world) { w.repo.Protect("feature") }, want: "Changes must be made through a pull request."},
		{name: "pull_request rule", setup: func(w *world) {
			w.s.SetRules("acme", "app", "feature", []githubfake.Rule{{Type: "pull_request"}})
		}, want: "Repository rule violations found"},
		{name: "update rule", setup: func(w *world) {
			w.s.SetRules("acme", "app", "feature", []githubfake.Rule{{Type: "update"}})
		}, want: "Cannot update this protected ref."},
		{name: "required signatures", setup: func(w *world) {
			w.s.SetRules("acme", "app", "~ALL", []githubfake.Rule{{Type: "required_signatures"}, {Type: "non_fast_forward"}})
		}},
		{name: "rule on another branch", setup: func(w *world) {
			w.s.SetRules("acme", "app", "main", []githubfake.Rule{{Type: "pull_request"}})
		}},
		{name: "workflow without workflows permission", path: ".github/workflows/ci.yml",
			want: "refusing to allow a GitHub App to create or update workflow `.github/workflows/ci.yml` without `workflows` permission"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.repo.Commit("feature", map[string]string{"src/a.go": "package a // v2\n"}, "human work")
			head := w.repo.Ref("feature")
			if tc.setup != nil {
				tc.setup(w)
			}
			path := tc.path
			if path == "" {
				path = "src/a.go"
			}
			v4 := gql(w.s, w.s.InstallationToken(w.inst, map[string]string{"contents": "write"}, "app"))
			err := commit(v4, "feature", head, path)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				info, _ := w.repo.CommitInfo(w.repo.Ref("feature"))
				if !info.Verified || len(info.Parents) != 1 || info.Parents[0] != head {
					t.Fatalf("commit %+v", info)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if w.repo.Ref("feature") != head {
				t.Fatal("a refused commit moved the branch")
			}
		})
	}
}
