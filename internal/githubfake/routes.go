package githubfake

// buildRoutes lists the endpoints the emulator serves. Order matters: the
// first matching pattern wins.
func (s *Server) buildRoutes() []route {
	rs := []struct {
		method, pattern string
		h               handlerFunc
	}{
		{"GET", "/app/installations", s.handleListInstallations},
		{"GET", "/app/installations/{installation_id}", s.handleGetInstallation},
		{"POST", "/app/installations/{installation_id}/access_tokens", s.handleCreateToken},
		{"GET", "/installation/repositories", s.handleInstallationRepos},
		{"DELETE", "/installation/token", s.handleRevokeToken},
		{"POST", "/graphql", s.handleGraphQL},

		{"GET", "/repos/{owner}/{repo}", s.handleGetRepo},
		{"GET", "/repos/{owner}/{repo}/installation", s.handleRepoInstallation},
		{"GET", "/repos/{owner}/{repo}/collaborators/{user}/permission", s.handleCollaboratorPermission},
		{"GET", "/repos/{owner}/{repo}/branches/{branch...}/protection", s.handleGetProtection},
		{"GET", "/repos/{owner}/{repo}/branches/{branch...}", s.handleGetBranch},
		{"GET", "/repos/{owner}/{repo}/rules/branches/{branch...}", s.handleGetBranchRules},
		{"GET", "/repos/{owner}/{repo}/contents/{path...}", s.handleGetContents},
		{"GET", "/repos/{owner}/{repo}/contents", s.handleGetContents},

		{"POST", "/repos/{owner}/{repo}/git/blobs", s.handleCreateBlob},
		{"GET", "/repos/{owner}/{repo}/git/blobs/{sha}", s.handleGetBlob},
		{"POST", "/repos/{owner}/{repo}/git/trees", s.handleCreateTree},
		{"GET", "/repos/{owner}/{repo}/git/trees/{sha...}", s.handleGetTree},
		{"POST", "/repos/{owner}/{repo}/git/commits", s.handleCreateCommit},
		{"GET", "/repos/{owner}/{repo}/git/commits/{sha}", s.handleGetCommit},
		{"GET", "/repos/{owner}/{repo}/git/ref/{ref...}", s.handleGetRef},
		{"GET", "/repos/{owner}/{repo}/git/refs", s.handleListRefs},
		{"GET", "/repos/{owner}/{repo}/git/refs/{ref...}", s.handleListRefs},
		{"GET", "/repos/{owner}/{repo}/git/matching-refs/{ref...}", s.handleListRefs},
		{"POST", "/repos/{owner}/{repo}/git/refs", s.handleCreateRef},
		{"PATCH", "/repos/{owner}/{repo}/git/refs/{ref...}", s.handleUpdateRef},
		{"DELETE", "/repos/{owner}/{repo}/git/refs/{ref...}", s.handleDeleteRef},

		{"GET", "/repos/{owner}/{repo}/issues", s.handleListIssues},
		{"POST", "/repos/{owner}/{repo}/issues", s.handleCreateIssue},
		{"GET", "/repos/{owner}/{repo}/issues/comments/{id}", s.handleGetComment},
		{"PATCH", "/repos/{owner}/{repo}/issues/comments/{id}", s.handleUpdateComment},
		{"GET", "/repos/{owner}/{repo}/issues/{number}", s.handleGetIssue},
		{"PATCH", "/repos/{owner}/{repo}/issues/{number}", s.handleUpdateIssue},
		{"GET", "/repos/{owner}/{repo}/issues/{number}/labels", s.handleListIssueLabels},
		{"POST", "/repos/{owner}/{repo}/issues/{number}/labels", s.handleAddLabels},
		{"DELETE", "/repos/{owner}/{repo}/issues/{number}/labels/{name}", s.handleRemoveLabel},
		{"GET", "/repos/{owner}/{repo}/issues/{number}/comments", s.handleListComments},
		{"POST", "/repos/{owner}/{repo}/issues/{number}/comments", s.handleCreateComment},

		{"GET", "/repos/{owner}/{repo}/pulls", s.handleListPulls},
		{"POST", "/repos/{owner}/{repo}/pulls", s.handleCreatePull},
		{"GET", "/repos/{owner}/{repo}/pulls/{number}", s.handleGetPull},
		{"PATCH", "/repos/{owner}/{repo}/pulls/{number}", s.handleUpdatePull},
		{"GET", "/repos/{owner}/{repo}/pulls/{number}/files", s.handleListPullFiles},
		{"GET", "/repos/{owner}/{repo}/pulls/{number}/reviews", s.handleListReviews},
		{"POST", "/repos/{owner}/{repo}/pulls/{number}/reviews", s.handleCreateReview},
		{"GET", "/repos/{owner}/{repo}/pulls/{number}/reviews/{id}", s.handleGetReview},

		{"POST", "/repos/{owner}/{repo}/check-runs", s.handleCreateCheckRun},
		{"GET", "/repos/{owner}/{repo}/check-runs/{id}", s.handleGetCheckRun},
		{"PATCH", "/repos/{owner}/{repo}/check-runs/{id}", s.handleUpdateCheckRun},
		{"GET", "/repos/{owner}/{repo}/commits/{ref...}/check-runs", s.handleListCheckRuns},
		{"GET", "/repos/{owner}/{repo}/commits/{ref...}", s.handleGetRepoCommit},

		{"POST", "/repos/{owner}/{repo}/code-scanning/sarifs", s.handleUploadSARIF},
		{"GET", "/repos/{owner}/{repo}/code-scanning/sarifs/{id}", s.handleGetSARIF},
	}
	out := make([]route, 0, len(rs))
	for _, r := range rs {
		out = append(out, route{method: r.method, pattern: r.pattern, segs: patternSegs(r.pattern), h: r.h})
	}
	return out
}
