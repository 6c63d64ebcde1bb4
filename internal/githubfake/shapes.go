package githubfake

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// The JSON shapes of GitHub's objects, field for field as GitHub's REST
// description defines them (apidesc checks every answer against it). Each
// shape is one function; endpoints and webhook payloads share them.

const htmlBase = "https://github.com/"

func nodeID(prefix string, id int64) string {
	return prefix + "_" + base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("%012d", id)))
}

func timeOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.Format(time.RFC3339)
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// loginPath is a login as it appears in a URL path ("name%5Bbot%5D").
func loginPath(login string) string { return url.PathEscape(login) }

// userJSON is GitHub's simple-user.
func (s *Server) userJSON(a *Account) map[string]any {
	if a == nil {
		return nil
	}
	u := s.URL + "/users/" + loginPath(a.Login)
	html := htmlBase + loginPath(a.Login)
	if a.Type == "Bot" {
		html = htmlBase + "apps/" + strings.TrimSuffix(a.Login, "[bot]")
	}
	return map[string]any{
		"login": a.Login, "id": a.ID, "node_id": nodeID(accountPrefix(a), a.ID),
		"avatar_url":  fmt.Sprintf("https://avatars.githubusercontent.com/u/%d?v=4", a.ID),
		"gravatar_id": "", "url": u, "html_url": html,
		"followers_url": u + "/followers", "following_url": u + "/following{/other_user}",
		"gists_url": u + "/gists{/gist_id}", "starred_url": u + "/starred{/owner}{/repo}",
		"subscriptions_url": u + "/subscriptions", "organizations_url": u + "/orgs",
		"repos_url": u + "/repos", "events_url": u + "/events{/privacy}",
		"received_events_url": u + "/received_events", "type": a.Type, "site_admin": false,
	}
}

func accountPrefix(a *Account) string {
	switch a.Type {
	case "Organization":
		return "O"
	case "Bot":
		return "BOT"
	}
	return "U"
}

// orgJSON is the organization-simple of webhook payloads.
func (s *Server) orgJSON(a *Account) map[string]any {
	u := s.URL + "/orgs/" + a.Login
	return map[string]any{
		"login": a.Login, "id": a.ID, "node_id": nodeID("O", a.ID), "url": u,
		"repos_url": u + "/repos", "events_url": u + "/events", "hooks_url": u + "/hooks",
		"issues_url": u + "/issues", "members_url": u + "/members{/member}",
		"public_members_url": u + "/public_members{/member}",
		"avatar_url":         fmt.Sprintf("https://avatars.githubusercontent.com/u/%d?v=4", a.ID),
		"description":        nil,
	}
}

// repoJSON is GitHub's repository (the shape nested in pull requests,
// installation lists and token answers); perms is the caller's view of its
// own rights (nil: omitted).
func (s *Server) repoJSON(r *Repo, perms map[string]bool) map[string]any {
	vis := "public"
	if r.Private {
		vis = "private"
	}
	api := s.URL + "/repos/" + r.FullName()
	html := htmlBase + r.FullName()
	open := r.openIssues()
	out := map[string]any{
		"id": r.ID, "node_id": nodeID("R", r.ID), "name": r.Name, "full_name": r.FullName(),
		"owner": s.userJSON(r.Owner), "private": r.Private, "html_url": html,
		"description": nilIfEmpty(r.Description), "fork": r.Parent != nil, "url": api,
		"archive_url": api + "/{archive_format}{/ref}", "assignees_url": api + "/assignees{/user}",
		"blobs_url": api + "/git/blobs{/sha}", "branches_url": api + "/branches{/branch}",
		"collaborators_url": api + "/collaborators{/collaborator}", "comments_url": api + "/comments{/number}",
		"commits_url": api + "/commits{/sha}", "compare_url": api + "/compare/{base}...{head}",
		"contents_url": api + "/contents/{+path}", "contributors_url": api + "/contributors",
		"deployments_url": api + "/deployments", "downloads_url": api + "/downloads",
		"events_url": api + "/events", "forks_url": api + "/forks",
		"git_commits_url": api + "/git/commits{/sha}", "git_refs_url": api + "/git/refs{/sha}",
		"git_tags_url": api + "/git/tags{/sha}", "git_url": "git://github.com/" + r.FullName() + ".git",
		"issue_comment_url": api + "/issues/comments{/number}", "issue_events_url": api + "/issues/events{/number}",
		"issues_url": api + "/issues{/number}", "keys_url": api + "/keys{/key_id}",
		"labels_url": api + "/labels{/name}", "languages_url": api + "/languages",
		"merges_url": api + "/merges", "milestones_url": api + "/milestones{/number}",
		"notifications_url": api + "/notifications{?since,all,participating}",
		"pulls_url":         api + "/pulls{/number}", "releases_url": api + "/releases{/id}",
		"ssh_url": "git@github.com:" + r.FullName() + ".git", "stargazers_url": api + "/stargazers",
		"statuses_url": api + "/statuses/{sha}", "subscribers_url": api + "/subscribers",
		"subscription_url": api + "/subscription", "tags_url": api + "/tags", "teams_url": api + "/teams",
		"trees_url": api + "/git/trees{/sha}", "clone_url": html + ".git", "mirror_url": nil,
		"hooks_url": api + "/hooks", "svn_url": html, "homepage": nil, "language": nil,
		"forks_count": r.forkCount(), "forks": r.forkCount(), "stargazers_count": 0, "watchers_count": 0, "watchers": 0,
		"size": 0, "default_branch": r.DefaultBranch, "open_issues_count": open, "open_issues": open,
		"is_template": false, "topics": []any{}, "has_issues": true, "has_projects": true, "has_wiki": true,
		"has_pages": false, "has_downloads": true, "has_discussions": false, "archived": r.Archived,
		"disabled": false, "visibility": vis, "pushed_at": timeOrNil(r.pushed), "created_at": timeOrNil(r.created),
		"updated_at": timeOrNil(r.updated()), "allow_forking": true, "web_commit_signoff_required": false,
		"license": nil,
	}
	if perms != nil {
		out["permissions"] = perms
	}
	return out
}

// fullRepoJSON is GitHub's full-repository (GET /repos/{owner}/{repo}).
func (s *Server) fullRepoJSON(r *Repo, perms map[string]bool) map[string]any {
	out := s.repoJSON(r, perms)
	out["subscribers_count"] = 0
	out["network_count"] = r.forkCount()
	if r.Owner.Type == "Organization" {
		out["organization"] = s.userJSON(r.Owner)
	}
	if r.Parent != nil {
		out["parent"] = s.repoJSON(r.Parent, nil)
		src := r.Parent
		for src.Parent != nil {
			src = src.Parent
		}
		out["source"] = s.repoJSON(src, nil)
	}
	for k, v := range map[string]any{
		"allow_rebase_merge": true, "allow_squash_merge": true, "allow_merge_commit": true,
		"allow_auto_merge": false, "delete_branch_on_merge": false, "allow_update_branch": false,
		"use_squash_pr_title_as_default": false, "squash_merge_commit_title": "COMMIT_OR_PR_TITLE",
		"squash_merge_commit_message": "COMMIT_MESSAGES", "merge_commit_title": "MERGE_MESSAGE",
		"merge_commit_message": "PR_TITLE",
	} {
		out[k] = v
	}
	return out
}

func (r *Repo) forkCount() int {
	n := 0
	for _, o := range r.s.repos {
		if o.Parent == r {
			n++
		}
	}
	return n
}

// updated is the repository's updated_at: its creation or last push.
func (r *Repo) updated() time.Time {
	if r.pushed.After(r.created) {
		return r.pushed
	}
	return r.created
}

// appJSON is GitHub's integration (a GitHub App).
func (s *Server) appJSON(a *App) map[string]any {
	if a == nil {
		return nil
	}
	owner := a.Owner
	if owner == nil {
		owner = a.Bot
	}
	perms, events := map[string]any{"metadata": "read"}, []any{}
	for k, v := range a.permissions {
		perms[k] = v
	}
	for _, e := range a.events {
		events = append(events, e)
	}
	return map[string]any{
		"id": a.ID, "slug": a.Slug, "node_id": nodeID("A", a.ID), "client_id": a.ClientID,
		"owner": s.userJSON(owner), "name": a.Name, "description": nil,
		"external_url": "https://quavon.invalid/" + a.Slug, "html_url": htmlBase + "apps/" + a.Slug,
		"created_at": timeOrNil(a.created), "updated_at": timeOrNil(a.created),
		"permissions": perms,
		"events":      events,
	}
}

// installationJSON is GitHub's installation.
func (s *Server) installationJSON(in *Installation) map[string]any {
	sel := "all"
	if in.Repos != nil {
		sel = "selected"
	}
	out := map[string]any{
		"id": in.ID, "app_id": in.App.ID, "app_slug": in.App.Slug,
		"target_id": in.Account.ID, "target_type": in.Account.Type, "account": s.userJSON(in.Account),
		"permissions": in.Permissions, "events": in.Events, "repository_selection": sel,
		"access_tokens_url": fmt.Sprintf("%s/app/installations/%d/access_tokens", s.URL, in.ID),
		"repositories_url":  s.URL + "/installation/repositories",
		"html_url":          fmt.Sprintf("https://github.com/settings/installations/%d", in.ID),
		"created_at":        timeOrNil(in.created), "updated_at": timeOrNil(in.updated),
		"single_file_name": nil, "has_multiple_single_files": false, "single_file_paths": []any{},
		"suspended_at": nil, "suspended_by": nil,
	}
	if in.Suspended {
		out["suspended_at"] = timeOrNil(in.suspendedAt)
		out["suspended_by"] = s.userJSON(in.suspendedBy)
	}
	return out
}

// labelJSON is GitHub's label.
func (s *Server) labelJSON(r *Repo, name string) map[string]any {
	l := r.ensureLabel(name)
	return map[string]any{
		"id": l.id, "node_id": nodeID("LA", l.id), "url": r.api() + "/labels/" + url.PathEscape(l.name),
		"name": l.name, "color": l.color, "default": false, "description": nil,
	}
}

func (s *Server) labelsJSON(r *Repo, in *Issue) []any {
	out := []any{}
	for _, l := range in.Labels {
		out = append(out, s.labelJSON(r, l))
	}
	return out
}

func reactionsJSON(u string) map[string]any {
	return map[string]any{"url": u + "/reactions", "total_count": 0, "+1": 0, "-1": 0, "laugh": 0,
		"confused": 0, "heart": 0, "hooray": 0, "eyes": 0, "rocket": 0}
}

// issueJSON is GitHub's issue (pull requests' issues carry pull_request).
func (s *Server) issueJSON(r *Repo, in *Issue) map[string]any {
	u := fmt.Sprintf("%s/issues/%d", r.api(), in.Number)
	html := fmt.Sprintf("%s%s/issues/%d", htmlBase, r.FullName(), in.Number)
	if in.PullRequest != nil {
		html = fmt.Sprintf("%s%s/pull/%d", htmlBase, r.FullName(), in.Number)
	}
	out := map[string]any{
		"id": in.ID, "node_id": nodeID("I", in.ID), "url": u, "repository_url": r.api(),
		"labels_url": u + "/labels{/name}", "comments_url": u + "/comments", "events_url": u + "/events",
		"timeline_url": u + "/timeline", "html_url": html, "number": in.Number, "state": in.State,
		"state_reason": nilIfEmpty(in.StateReason), "title": in.Title, "body": nilIfEmpty(in.Body),
		"user": s.userJSON(s.accounts[strings.ToLower(in.Author)]), "labels": s.labelsJSON(r, in),
		"assignee": nil, "assignees": []any{}, "milestone": nil, "locked": in.Locked, "active_lock_reason": nil,
		"comments": len(in.Comments), "created_at": timeOrNil(in.created), "updated_at": timeOrNil(in.updated),
		"closed_at": timeOrNil(in.closed), "author_association": r.association(in.Author),
		"performed_via_github_app": nil, "reactions": reactionsJSON(u),
	}
	if in.State == "closed" {
		out["closed_by"] = s.userJSON(in.closedBy)
	}
	if in.viaApp != nil {
		out["performed_via_github_app"] = s.appJSON(in.viaApp)
	}
	if pr := in.PullRequest; pr != nil {
		p := fmt.Sprintf("%s/pulls/%d", r.api(), in.Number)
		var merged any
		if pr.Merged {
			merged = timeOrNil(pr.mergedAt)
		}
		out["pull_request"] = map[string]any{"url": p, "html_url": html, "diff_url": html + ".diff", "patch_url": html + ".patch", "merged_at": merged}
		out["draft"] = pr.Draft
	}
	return out
}

// commentJSON is GitHub's issue-comment.
func (s *Server) commentJSON(r *Repo, in *Issue, cm Comment) map[string]any {
	u := fmt.Sprintf("%s/issues/comments/%d", r.api(), cm.ID)
	html := fmt.Sprintf("%s%s/issues/%d#issuecomment-%d", htmlBase, r.FullName(), in.Number, cm.ID)
	if in.PullRequest != nil {
		html = fmt.Sprintf("%s%s/pull/%d#issuecomment-%d", htmlBase, r.FullName(), in.Number, cm.ID)
	}
	out := map[string]any{
		"id": cm.ID, "node_id": nodeID("IC", cm.ID), "url": u, "html_url": html,
		"issue_url": fmt.Sprintf("%s/issues/%d", r.api(), in.Number), "body": cm.Body,
		"user": s.userJSON(s.accounts[strings.ToLower(cm.Author)]), "created_at": timeOrNil(cm.created),
		"updated_at": timeOrNil(cm.updatedAt()), "author_association": r.association(cm.Author),
		"performed_via_github_app": nil, "reactions": reactionsJSON(u),
	}
	if cm.viaApp != nil {
		out["performed_via_github_app"] = s.appJSON(cm.viaApp)
	}
	return out
}

func (cm Comment) updatedAt() time.Time {
	if cm.updated.IsZero() {
		return cm.created
	}
	return cm.updated
}

// pullBranchJSON is a pull request's head or base: repo is nil for a head
// whose repository was deleted (GitHub then sends "repo": null).
func (s *Server) pullBranchJSON(repo *Repo, owner *Account, ref, sha string) map[string]any {
	m := map[string]any{"ref": ref, "sha": sha, "repo": nil, "user": s.userJSON(owner), "label": ref}
	if owner != nil {
		m["label"] = owner.Login + ":" + ref
	}
	if repo != nil {
		m["repo"] = s.repoJSON(repo, nil)
	}
	return m
}

// pullSimpleJSON is GitHub's pull-request-simple (list endpoints).
func (s *Server) pullSimpleJSON(r *Repo, in *Issue) map[string]any {
	pr := in.PullRequest
	u := fmt.Sprintf("%s/pulls/%d", r.api(), in.Number)
	html := fmt.Sprintf("%s%s/pull/%d", htmlBase, r.FullName(), in.Number)
	issue := fmt.Sprintf("%s/issues/%d", r.api(), in.Number)
	head := r.prHeadSHA(pr)
	baseSHA := r.prBaseSHA(pr)
	link := func(h string) map[string]any { return map[string]any{"href": h} }
	var merged any
	if pr.Merged {
		merged = timeOrNil(pr.mergedAt)
	}
	return map[string]any{
		"url": u, "id": in.ID, "node_id": nodeID("PR", in.ID), "html_url": html, "diff_url": html + ".diff",
		"patch_url": html + ".patch", "issue_url": issue, "commits_url": u + "/commits",
		"review_comments_url": u + "/comments", "review_comment_url": r.api() + "/pulls/comments{/number}",
		"comments_url": issue + "/comments", "statuses_url": r.api() + "/statuses/" + head,
		"number": in.Number, "state": in.State, "locked": in.Locked, "title": in.Title, "body": nilIfEmpty(in.Body),
		"user": s.userJSON(s.accounts[strings.ToLower(in.Author)]), "labels": s.labelsJSON(r, in),
		"milestone": nil, "active_lock_reason": nil, "created_at": timeOrNil(in.created),
		"updated_at": timeOrNil(in.updated), "closed_at": timeOrNil(in.closed), "merged_at": merged,
		"merge_commit_sha": nilIfEmpty(r.mergeCommitSHA(in)), "assignee": nil, "assignees": []any{},
		"requested_reviewers": []any{}, "requested_teams": []any{},
		"head": s.pullBranchJSON(r.prHeadRepo(pr), r.s.accounts[strings.ToLower(pr.headOwner())], pr.Head, head),
		"base": s.pullBranchJSON(r, r.Owner, pr.Base, baseSHA),
		"_links": map[string]any{
			"self": link(u), "html": link(html), "issue": link(issue), "comments": link(issue + "/comments"),
			"review_comments": link(u + "/comments"), "review_comment": link(r.api() + "/pulls/comments{/number}"),
			"commits": link(u + "/commits"), "statuses": link(r.api() + "/statuses/" + head),
		},
		"author_association": r.association(in.Author), "auto_merge": nil, "draft": pr.Draft,
	}
}

// pullJSON is GitHub's pull-request (GET one, create, update, webhooks):
// the simple form plus merge state and counts.
func (s *Server) pullJSON(r *Repo, in *Issue) map[string]any {
	pr := in.PullRequest
	out := s.pullSimpleJSON(r, in)
	st := r.mergeState(in)
	stats := r.prStats(pr)
	out["merged"] = pr.Merged
	out["mergeable"] = st.mergeable
	out["rebaseable"] = st.mergeable
	out["mergeable_state"] = st.state
	out["merged_by"] = s.userJSON(pr.mergedBy)
	out["comments"] = len(in.Comments)
	out["review_comments"] = 0
	out["maintainer_can_modify"] = pr.MaintainerCanModify
	out["commits"] = stats.commits
	out["additions"] = stats.additions
	out["deletions"] = stats.deletions
	out["changed_files"] = stats.files
	return out
}
