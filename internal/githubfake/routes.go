package githubfake

import (
	"slices"

	"github.com/quavon/quavon/internal/githubfake/apidesc"
)

// buildRoutes lists the endpoints the emulator serves, each with the
// operationId GitHub's REST description gives it: every answer is checked
// against that operation's documented responses (apidesc). GraphQL has none.
// Order matters: the first matching pattern wins.
func (s *Server) buildRoutes() []route {
	rs := []struct {
		method, pattern, op string
		h                   handlerFunc
	}{
		{"GET", "/app/installations", "apps/list-installations", s.handleListInstallations},
		{"GET", "/app/installations/{installation_id}", "apps/get-installation", s.handleGetInstallation},
		{"POST", "/app/installations/{installation_id}/access_tokens", "apps/create-installation-access-token", s.handleCreateToken},
		{"GET", "/installation/repositories", "apps/list-repos-accessible-to-installation", s.handleInstallationRepos},
		{"DELETE", "/installation/token", "apps/revoke-installation-access-token", s.handleRevokeToken},
		{"POST", "/graphql", "", s.handleGraphQL},
		{"GET", "/user", "users/get-authenticated", s.handleGetAuthenticatedUser},
		{"POST", "/app-manifests/{code}/conversions", "apps/create-from-manifest", s.handleManifestConversion},

		{"GET", "/repos/{owner}/{repo}", "repos/get", s.handleGetRepo},
		{"GET", "/repos/{owner}/{repo}/installation", "apps/get-repo-installation", s.handleRepoInstallation},
		{"GET", "/repos/{owner}/{repo}/collaborators/{user}/permission", "repos/get-collaborator-permission-level", s.handleCollaboratorPermission},
		{"GET", "/repos/{owner}/{repo}/branches/{branch...}/protection", "repos/get-branch-protection", s.handleGetProtection},
		{"GET", "/repos/{owner}/{repo}/branches/{branch...}", "repos/get-branch", s.handleGetBranch},
		{"GET", "/repos/{owner}/{repo}/rules/branches/{branch...}", "repos/get-branch-rules", s.handleGetBranchRules},
		{"GET", "/repos/{owner}/{repo}/contents/{path...}", "repos/get-content", s.handleGetContents},
		{"GET", "/repos/{owner}/{repo}/contents", "repos/get-content", s.handleGetContents},

		{"POST", "/repos/{owner}/{repo}/git/blobs", "git/create-blob", s.handleCreateBlob},
		{"GET", "/repos/{owner}/{repo}/git/blobs/{sha}", "git/get-blob", s.handleGetBlob},
		{"POST", "/repos/{owner}/{repo}/git/trees", "git/create-tree", s.handleCreateTree},
		{"GET", "/repos/{owner}/{repo}/git/trees/{sha...}", "git/get-tree", s.handleGetTree},
		{"POST", "/repos/{owner}/{repo}/git/commits", "git/create-commit", s.handleCreateCommit},
		{"GET", "/repos/{owner}/{repo}/git/commits/{sha}", "git/get-commit", s.handleGetCommit},
		{"GET", "/repos/{owner}/{repo}/git/ref/{ref...}", "git/get-ref", s.handleGetRef},
		{"GET", "/repos/{owner}/{repo}/git/matching-refs/{ref...}", "git/list-matching-refs", s.handleListRefs},
		{"POST", "/repos/{owner}/{repo}/git/refs", "git/create-ref", s.handleCreateRef},
		{"PATCH", "/repos/{owner}/{repo}/git/refs/{ref...}", "git/update-ref", s.handleUpdateRef},
		{"DELETE", "/repos/{owner}/{repo}/git/refs/{ref...}", "git/delete-ref", s.handleDeleteRef},

		{"GET", "/repos/{owner}/{repo}/issues", "issues/list-for-repo", s.handleListIssues},
		{"POST", "/repos/{owner}/{repo}/issues", "issues/create", s.handleCreateIssue},
		{"GET", "/repos/{owner}/{repo}/issues/comments/{id}", "issues/get-comment", s.handleGetComment},
		{"PATCH", "/repos/{owner}/{repo}/issues/comments/{id}", "issues/update-comment", s.handleUpdateComment},
		{"GET", "/repos/{owner}/{repo}/issues/{number}", "issues/get", s.handleGetIssue},
		{"PATCH", "/repos/{owner}/{repo}/issues/{number}", "issues/update", s.handleUpdateIssue},
		{"GET", "/repos/{owner}/{repo}/issues/{number}/labels", "issues/list-labels-on-issue", s.handleListIssueLabels},
		{"POST", "/repos/{owner}/{repo}/issues/{number}/labels", "issues/add-labels", s.handleAddLabels},
		{"DELETE", "/repos/{owner}/{repo}/issues/{number}/labels/{name}", "issues/remove-label", s.handleRemoveLabel},
		{"GET", "/repos/{owner}/{repo}/issues/{number}/comments", "issues/list-comments", s.handleListComments},
		{"POST", "/repos/{owner}/{repo}/issues/{number}/comments", "issues/create-comment", s.handleCreateComment},

		{"GET", "/repos/{owner}/{repo}/pulls", "pulls/list", s.handleListPulls},
		{"POST", "/repos/{owner}/{repo}/pulls", "pulls/create", s.handleCreatePull},
		{"GET", "/repos/{owner}/{repo}/pulls/{number}", "pulls/get", s.handleGetPull},
		{"PATCH", "/repos/{owner}/{repo}/pulls/{number}", "pulls/update", s.handleUpdatePull},
		{"GET", "/repos/{owner}/{repo}/pulls/{number}/files", "pulls/list-files", s.handleListPullFiles},
		{"GET", "/repos/{owner}/{repo}/pulls/{number}/reviews", "pulls/list-reviews", s.handleListReviews},
		{"POST", "/repos/{owner}/{repo}/pulls/{number}/reviews", "pulls/create-review", s.handleCreateReview},
		{"GET", "/repos/{owner}/{repo}/pulls/{number}/reviews/{id}", "pulls/get-review", s.handleGetReview},

		{"POST", "/repos/{owner}/{repo}/check-runs", "checks/create", s.handleCreateCheckRun},
		{"GET", "/repos/{owner}/{repo}/check-runs/{id}", "checks/get", s.handleGetCheckRun},
		{"PATCH", "/repos/{owner}/{repo}/check-runs/{id}", "checks/update", s.handleUpdateCheckRun},
		{"GET", "/repos/{owner}/{repo}/commits/{ref...}/check-runs", "checks/list-for-ref", s.handleListCheckRuns},
		{"GET", "/repos/{owner}/{repo}/commits/{ref...}", "repos/get-commit", s.handleGetRepoCommit},

		{"POST", "/repos/{owner}/{repo}/code-scanning/sarifs", "code-scanning/upload-sarif", s.handleUploadSARIF},
		{"GET", "/repos/{owner}/{repo}/code-scanning/sarifs/{id}", "code-scanning/get-sarif", s.handleGetSARIF},
		{"GET", "/repos/{owner}/{repo}/code-scanning/analyses", "code-scanning/list-recent-analyses", s.handleListAnalyses},
	}
	out := make([]route, 0, len(rs))
	for _, r := range rs {
		out = append(out, route{method: r.method, pattern: r.pattern, op: r.op, segs: patternSegs(r.pattern), h: r.h})
	}
	return out
}

// Operations returns the operationIds of the REST routes the emulator
// serves, in route order (GraphQL has none).
func (s *Server) Operations() []string {
	var out []string
	for _, r := range s.routes {
		if r.op != "" && !slices.Contains(out, r.op) {
			out = append(out, r.op)
		}
	}
	return out
}

// Descriptions returns GitHub's descriptions every answer and payload is
// checked against, or nil when they are not configured.
func (s *Server) Descriptions() *apidesc.Descriptions { return s.desc }
