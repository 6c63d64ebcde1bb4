package githubfake

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Issue is an issue or pull request (they share numbers, as on GitHub).
// Methods returning an Issue return a copy.
type Issue struct {
	ID          int64
	Number      int
	Title       string
	Body        string
	State       string // "open" or "closed"
	StateReason string
	Author      string
	Labels      []string
	Locked      bool
	Comments    []Comment
	PullRequest *PullRequest // nil for issues

	created, updated, closed time.Time
	closedBy                 *Account
	viaApp                   *App              // created through an app's token
	lastEdit                 map[string]string // title/body before the last edit
	movedTo                  *issueLoc         // TransferIssue's target
	deletedComments          []Comment
}

type issueLoc struct {
	repo   *Repo
	number int
}

// PullRequest holds what only pull requests have.
type PullRequest struct {
	Head                string // branch name in HeadRepo
	HeadRepo            string // "owner/name"; differs from the repository for forks; "" when deleted
	Base                string
	Draft               bool
	Merged              bool
	HeadSHA             string // last known head commit (kept when the branch is deleted)
	MaintainerCanModify bool

	prevHead string // head before the last push (synchronize's before)
	baseSHA  string // base commit at merge time
	mergedAt time.Time
	mergedBy *Account
	mergeSHA string
}

// Comment is an issue comment.
type Comment struct {
	ID     int64
	Author string
	Body   string

	created, updated time.Time
	viaApp           *App
	prevBody         string
}

// IssueOptions configures AddIssue.
type IssueOptions struct {
	Title  string
	Body   string
	Author string // login; created as a user if unknown
	Labels []string
	Closed bool
}

// PullRequestOptions configures AddPullRequest.
type PullRequestOptions struct {
	Title    string
	Body     string
	Author   string
	Head     string // branch
	HeadRepo *Repo  // nil = this repository; a fork for cross-repository PRs
	Base     string // default branch when empty
	Draft    bool
	Closed   bool
}

func (in Issue) clone() Issue {
	in.Labels = slices.Clone(in.Labels)
	in.Comments = slices.Clone(in.Comments)
	if in.PullRequest != nil {
		pr := *in.PullRequest
		in.PullRequest = &pr
	}
	return in
}

// AddIssue creates an issue as a human would and returns its number.
func (r *Repo) AddIssue(opt IssueOptions) int {
	defer r.s.flush()
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	in := r.newIssue(opt.Title, opt.Body, r.s.account(opt.Author, "User"), opt.Labels, opt.Closed, nil)
	r.issueOpened(in, in.Author)
	return in.Number
}

// AddPullRequest creates a pull request as a human would and returns its number.
func (r *Repo) AddPullRequest(opt PullRequestOptions) int {
	defer r.s.flush()
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	head := opt.HeadRepo
	if head == nil {
		head = r
	}
	if opt.Base == "" {
		opt.Base = r.DefaultBranch
	}
	sha, ok := head.refHash("refs/heads/" + opt.Head)
	if !ok {
		r.s.tb.Fatalf("githubfake: AddPullRequest: no branch %s in %s", opt.Head, head.FullName())
	}
	pr := &PullRequest{Head: opt.Head, HeadRepo: head.FullName(), Base: opt.Base, Draft: opt.Draft, HeadSHA: sha.String()}
	in := r.newIssue(opt.Title, opt.Body, r.s.account(opt.Author, "User"), nil, opt.Closed, pr)
	r.syncPullRef(in)
	r.issueOpened(in, in.Author)
	return in.Number
}

func (r *Repo) newIssue(title, body string, author *Account, labels []string, closed bool, pr *PullRequest) *Issue {
	now := r.s.now()
	in := &Issue{ID: r.s.newID(), Number: r.nextNumber, Title: title, Body: body, State: "open", Author: author.Login, PullRequest: pr, created: now, updated: now}
	r.nextNumber++
	for _, l := range labels {
		r.ensureLabel(l)
		if !slices.Contains(in.Labels, l) {
			in.Labels = append(in.Labels, l)
		}
	}
	r.issues[in.Number] = in
	if closed {
		r.setState(in, "closed", "", author)
	}
	return in
}

func (r *Repo) ensureLabel(name string) *label {
	if l := r.labels[strings.ToLower(name)]; l != nil {
		return l
	}
	l := &label{id: r.s.newID(), name: name, color: "ededed"}
	r.labels[strings.ToLower(name)] = l
	return l
}

// Issue returns a copy of issue or pull request n.
func (r *Repo) Issue(n int) (Issue, bool) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	in := r.issues[n]
	if in == nil {
		return Issue{}, false
	}
	return in.clone(), true
}

// Issues returns copies of all issues and pull requests, by number.
func (r *Repo) Issues() []Issue {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	var out []Issue
	for _, in := range r.sortedIssues() {
		out = append(out, in.clone())
	}
	return out
}

// UpdateIssue edits issue or pull request n in place (state, labels,
// draft, head, ...), as activity on GitHub would.
func (r *Repo) UpdateIssue(n int, edit func(*Issue)) {
	defer r.s.flush()
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	in := r.issues[n]
	if in == nil {
		r.s.tb.Fatalf("githubfake: UpdateIssue: no #%d in %s", n, r.FullName())
	}
	snap := snapshotOf(in)
	defer func() { r.issueChanged(in, snap, r.Owner.Login) }()
	before, title, body := in.State, in.Title, in.Body
	edit(in)
	if changed := editOf(title, body, in); len(changed) > 0 {
		in.lastEdit = changed
	}
	after := in.State
	in.State = before
	r.setState(in, after, in.StateReason, r.Owner)
	for _, l := range in.Labels {
		r.ensureLabel(l)
	}
	in.updated = r.s.now()
}

func editOf(title, body string, in *Issue) map[string]string {
	out := map[string]string{}
	if in.Title != title {
		out["title"] = title
	}
	if in.Body != body {
		out["body"] = body
	}
	return out
}

// setState moves issue or pull request in to state ("open" or "closed")
// as GitHub does: closing stamps closed_at and closed_by and defaults
// state_reason to completed (issues); reopening clears them and sets
// state_reason reopened.
func (r *Repo) setState(in *Issue, state, reason string, by *Account) {
	if state == in.State {
		if reason != "" {
			in.StateReason = reason
		}
		return
	}
	in.State = state
	now := r.s.now()
	switch state {
	case "closed":
		in.closed, in.closedBy = now, by
		if in.PullRequest == nil {
			in.StateReason = cmp.Or(reason, "completed")
		}
	default:
		in.closed, in.closedBy = time.Time{}, nil
		if in.PullRequest == nil {
			in.StateReason = "reopened"
		}
	}
	in.updated = now
}

// AddComment adds a comment by author to issue or pull request n.
func (r *Repo) AddComment(n int, author, body string) int64 {
	defer r.s.flush()
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	in := r.issues[n]
	if in == nil {
		r.s.tb.Fatalf("githubfake: AddComment: no #%d in %s", n, r.FullName())
	}
	cm := Comment{ID: r.s.newID(), Author: r.s.account(author, "User").Login, Body: body, created: r.s.now()}
	in.Comments = append(in.Comments, cm)
	r.emitComment(in, cm.ID, "created", cm.Author)
	return cm.ID
}

// LinkIssue makes issueRepo#issue a closing reference of pull request pr in
// owner/repo, as GraphQL closingIssuesReferences reports it.
func (s *Server) LinkIssue(owner, repo string, pr int, issueRepo string, issue int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repos[strings.ToLower(owner+"/"+repo)]
	if r == nil {
		s.tb.Fatalf("githubfake: LinkIssue: no repository %s/%s", owner, repo)
	}
	r.closing[pr] = append(r.closing[pr], issueRef{repo: strings.ToLower(issueRepo), number: issue})
}

func (r *Repo) sortedIssues() []*Issue {
	return sortedBy(r.issues, func(in *Issue) int { return in.Number })
}

// association is GitHub's author_association of login in r.
func (r *Repo) association(login string) string {
	if strings.EqualFold(login, r.Owner.Login) {
		return "OWNER"
	}
	if _, ok := r.collaborators[strings.ToLower(login)]; ok {
		return "COLLABORATOR"
	}
	return "NONE"
}

// issueAccess resolves {number} with the permission GitHub asks for: issues
// for issues, issues or pull_requests for pull requests.
func (c *call) issueAccess(write bool) (*Repo, *Issue) {
	r, in, lvl := c.numberAccess(write, "issues", "pull_requests")
	if in == nil {
		return nil, nil
	}
	if in.PullRequest == nil && c.tok != nil && !(c.tok.inst.covers(r) && levelRank(c.tok.perms["issues"]) >= levelRank(lvl)) && (write || r.Private) {
		c.forbidden()
		return nil, nil
	}
	return r, in
}

func (s *Server) handleGetIssue(c *call) {
	r, in := c.issueAccess(false)
	if in == nil {
		return
	}
	c.json(http.StatusOK, s.issueJSON(r, in))
}

func (s *Server) handleListIssues(c *call) {
	r := c.repoAccess(true, need{"issues", Read}, need{"pull_requests", Read})
	if r == nil {
		return
	}
	q := c.r.URL.Query()
	inState, ok := c.stateFilter(q, "Issue")
	if !ok {
		return
	}
	var want []string
	if l := q.Get("labels"); l != "" {
		want = strings.Split(l, ",")
	}
	list := []any{}
	for _, in := range r.sortedIssues() {
		if !inState(in) {
			continue
		}
		ok := true
		for _, l := range want {
			ok = ok && slices.ContainsFunc(in.Labels, func(x string) bool { return strings.EqualFold(x, l) })
		}
		if ok {
			list = append(list, s.issueJSON(r, in))
		}
	}
	c.json(http.StatusOK, paginate(c, list))
}

// stateFilter reads the list endpoints' state parameter: open (the
// default), closed or all. Any other value is answered 422 Validation
// Failed, as GitHub does, and ok is false.
func (c *call) stateFilter(q url.Values, resource string) (inState func(*Issue) bool, ok bool) {
	state := cmp.Or(q.Get("state"), "open")
	if state != "open" && state != "closed" && state != "all" {
		c.validationFailed("Validation Failed", map[string]any{"value": state, "resource": resource, "field": "state", "code": "invalid"})
		return nil, false
	}
	return func(in *Issue) bool { return state == "all" || in.State == state }, true
}

func (s *Server) handleCreateIssue(c *call) {
	r := c.repoAccess(false, need{"issues", Write})
	if r == nil {
		return
	}
	var req struct {
		Title  json.RawMessage `json:"title"`
		Body   string          `json:"body"`
		Labels []string        `json:"labels"`
	}
	if !c.decode(&req) {
		return
	}
	var title string
	if json.Unmarshal(req.Title, &title) != nil || title == "" {
		c.validationFailed("Validation Failed", map[string]any{"resource": "Issue", "field": "title", "code": "missing_field"})
		return
	}
	in := r.newIssue(title, req.Body, c.actor(), req.Labels, false, nil)
	in.viaApp = c.tok.inst.App
	r.issueOpened(in, in.Author)
	c.header.Set("Location", fmt.Sprintf("%s/issues/%d", r.api(), in.Number))
	c.json(http.StatusCreated, s.issueJSON(r, in))
}

func (s *Server) handleUpdateIssue(c *call) {
	r, in := c.issueAccess(true)
	if in == nil {
		return
	}
	var req struct {
		Title       *string   `json:"title"`
		Body        *string   `json:"body"`
		State       *string   `json:"state"`
		StateReason *string   `json:"state_reason"`
		Labels      *[]string `json:"labels"`
	}
	if !c.decode(&req) {
		return
	}
	if !c.validState("Issue", req.State) {
		return
	}
	if req.StateReason != nil && !slices.Contains([]string{"completed", "not_planned", "duplicate", "reopened"}, *req.StateReason) {
		c.validationFailed("Validation Failed", map[string]any{"resource": "Issue", "field": "state_reason", "code": "invalid"})
		return
	}
	snap := snapshotOf(in)
	s.applyIssueEdit(c, r, in, req.Title, req.Body, req.State, req.Labels)
	r.issueChanged(in, snap, c.actor().Login)
	if req.StateReason != nil {
		r.setState(in, in.State, *req.StateReason, c.actor())
	}
	c.json(http.StatusOK, s.issueJSON(r, in))
}

// validState refuses an edit's state other than open or closed.
func (c *call) validState(resource string, state *string) bool {
	if state != nil && *state != "open" && *state != "closed" {
		c.validationFailed("Validation Failed", map[string]any{"resource": resource, "field": "state", "code": "invalid"})
		return false
	}
	return true
}

func (s *Server) applyIssueEdit(c *call, r *Repo, in *Issue, title, body, state *string, labels *[]string) {
	edit := map[string]string{}
	if title != nil && *title != in.Title {
		edit["title"], in.Title = in.Title, *title
	}
	if body != nil && *body != in.Body {
		edit["body"], in.Body = in.Body, *body
	}
	if len(edit) > 0 {
		in.lastEdit = edit
	}
	if state != nil {
		r.setState(in, *state, "", c.actor())
	}
	if labels != nil {
		in.Labels = nil
		for _, l := range *labels {
			r.ensureLabel(l)
			in.Labels = append(in.Labels, l)
		}
	}
	in.updated = s.now()
}

func (s *Server) handleAddLabels(c *call) {
	r, in := c.issueAccess(true)
	if in == nil {
		return
	}
	var names []string
	var obj struct {
		Labels []string `json:"labels"`
	}
	if json.Unmarshal(c.body, &obj) == nil && obj.Labels != nil {
		names = obj.Labels
	} else if json.Unmarshal(c.body, &names) != nil {
		c.fail(http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	snap := snapshotOf(in)
	for _, l := range names {
		if !slices.ContainsFunc(in.Labels, func(x string) bool { return strings.EqualFold(x, l) }) {
			in.Labels = append(in.Labels, r.ensureLabel(l).name)
		}
	}
	r.issueChanged(in, snap, c.actor().Login)
	in.updated = s.now()
	c.json(http.StatusOK, s.issueLabels(r, in))
}

func (s *Server) issueLabels(r *Repo, in *Issue) []any {
	out := []any{}
	for _, l := range in.Labels {
		out = append(out, s.labelJSON(r, l))
	}
	return out
}

func (s *Server) handleListIssueLabels(c *call) {
	r, in := c.issueAccess(false)
	if in == nil {
		return
	}
	c.json(http.StatusOK, s.issueLabels(r, in))
}

func (s *Server) handleRemoveLabel(c *call) {
	r, in := c.issueAccess(true)
	if in == nil {
		return
	}
	name := c.param("name")
	i := slices.IndexFunc(in.Labels, func(x string) bool { return strings.EqualFold(x, name) })
	if i < 0 {
		c.fail(http.StatusNotFound, "Label does not exist")
		return
	}
	snap := snapshotOf(in)
	in.Labels = slices.Delete(in.Labels, i, i+1)
	r.issueChanged(in, snap, c.actor().Login)
	c.json(http.StatusOK, s.issueLabels(r, in))
}

func (s *Server) handleListComments(c *call) {
	r, in := c.issueAccess(false)
	if in == nil {
		return
	}
	list := []any{}
	for _, cm := range in.Comments {
		list = append(list, s.commentJSON(r, in, cm))
	}
	c.json(http.StatusOK, paginate(c, list))
}

func (s *Server) handleCreateComment(c *call) {
	r, in := c.issueAccess(true)
	if in == nil {
		return
	}
	var req struct {
		Body *string `json:"body"`
	}
	if !c.decode(&req) {
		return
	}
	if req.Body == nil || *req.Body == "" {
		c.validationFailed("Validation Failed", map[string]any{"resource": "IssueComment", "field": "body", "code": "missing_field"})
		return
	}
	if in.Locked {
		c.fail(http.StatusForbidden, "Unable to create comment because issue is locked.")
		return
	}
	cm := Comment{ID: s.newID(), Author: c.actor().Login, Body: *req.Body, created: s.now(), viaApp: c.tok.inst.App}
	in.Comments = append(in.Comments, cm)
	r.emitComment(in, cm.ID, "created", cm.Author)
	c.header.Set("Location", fmt.Sprintf("%s/issues/comments/%d", r.api(), cm.ID))
	c.json(http.StatusCreated, s.commentJSON(r, in, cm))
}

func (s *Server) findComment(r *Repo, id int64) (*Issue, int) {
	for _, in := range r.issues {
		for i, cm := range in.Comments {
			if cm.ID == id {
				return in, i
			}
		}
	}
	return nil, -1
}

func (s *Server) handleGetComment(c *call) {
	r := c.repoAccess(true, need{"issues", Read}, need{"pull_requests", Read})
	if r == nil {
		return
	}
	id, _ := strconv.ParseInt(c.param("id"), 10, 64)
	in, i := s.findComment(r, id)
	if in == nil {
		c.notFound()
		return
	}
	c.json(http.StatusOK, s.commentJSON(r, in, in.Comments[i]))
}

func (s *Server) handleUpdateComment(c *call) {
	r := c.repoAccess(false, need{"issues", Write}, need{"pull_requests", Write})
	if r == nil {
		return
	}
	id, _ := strconv.ParseInt(c.param("id"), 10, 64)
	in, i := s.findComment(r, id)
	if in == nil {
		c.notFound()
		return
	}
	var req struct {
		Body *string `json:"body"`
	}
	if !c.decode(&req) {
		return
	}
	if req.Body == nil || *req.Body == "" {
		c.validationFailed("Validation Failed", map[string]any{"resource": "IssueComment", "field": "body", "code": "missing_field"})
		return
	}
	in.Comments[i].prevBody, in.Comments[i].Body = in.Comments[i].Body, *req.Body
	in.Comments[i].updated = s.now()
	r.emitComment(in, id, "edited", c.actor().Login)
	c.json(http.StatusOK, s.commentJSON(r, in, in.Comments[i]))
}

// --- pull requests ---

func (r *Repo) prHeadRepo(pr *PullRequest) *Repo {
	if pr.HeadRepo == "" {
		return nil
	}
	return r.s.repos[strings.ToLower(pr.HeadRepo)]
}

// prHeadSHA returns the live head commit, remembering it.
func (r *Repo) prHeadSHA(pr *PullRequest) string {
	if hr := r.prHeadRepo(pr); hr != nil && !pr.Merged {
		if h, ok := hr.refHash("refs/heads/" + pr.Head); ok && h.String() != pr.HeadSHA {
			pr.prevHead, pr.HeadSHA = pr.HeadSHA, h.String()
		}
	}
	return pr.HeadSHA
}

// pullAccess resolves {number} to a pull request with pull_requests.
func (c *call) pullAccess(write bool) (*Repo, *Issue) {
	r, in, _ := c.numberAccess(write, "pull_requests")
	if in == nil {
		return nil, nil
	}
	if in.PullRequest == nil {
		c.notFound()
		return nil, nil
	}
	return r, in
}

// numberAccess resolves {number} after repoAccess with any of perms at the
// level a read or write needs (reads of public repositories are open), and
// returns that level.
func (c *call) numberAccess(write bool, perms ...string) (*Repo, *Issue, string) {
	lvl := Read
	if write {
		lvl = Write
	}
	needs := make([]need, 0, len(perms))
	for _, p := range perms {
		needs = append(needs, need{p, lvl})
	}
	r := c.repoAccess(!write, needs...)
	if r == nil {
		return nil, nil, lvl
	}
	n, _ := strconv.Atoi(c.param("number"))
	in := r.issues[n]
	if in == nil {
		c.notFound()
		return nil, nil, lvl
	}
	return r, in, lvl
}

func (s *Server) handleGetPull(c *call) {
	r, in := c.pullAccess(false)
	if in == nil {
		return
	}
	c.json(http.StatusOK, s.pullJSON(r, in))
}

func (s *Server) handleListPulls(c *call) {
	r := c.repoAccess(true, need{"pull_requests", Read})
	if r == nil {
		return
	}
	q := c.r.URL.Query()
	inState, ok := c.stateFilter(q, "PullRequest")
	if !ok {
		return
	}
	list := []any{}
	for _, in := range r.sortedIssues() {
		pr := in.PullRequest
		if pr == nil || !inState(in) {
			continue
		}
		if b := q.Get("base"); b != "" && b != pr.Base {
			continue
		}
		if h := q.Get("head"); h != "" {
			owner, branch, ok := strings.Cut(h, ":")
			hr := r.prHeadRepo(pr)
			if !ok || hr == nil || !strings.EqualFold(hr.Owner.Login, owner) || (branch != "" && branch != pr.Head) {
				continue
			}
		}
		list = append(list, s.pullSimpleJSON(r, in))
	}
	c.json(http.StatusOK, paginate(c, list))
}

func (s *Server) handleCreatePull(c *call) {
	r := c.repoAccess(false, need{"pull_requests", Write})
	if r == nil {
		return
	}
	var req struct {
		Title               string `json:"title"`
		Head                string `json:"head"`
		HeadRepo            string `json:"head_repo"`
		Base                string `json:"base"`
		Body                string `json:"body"`
		Draft               bool   `json:"draft"`
		MaintainerCanModify *bool  `json:"maintainer_can_modify"`
		Issue               *int   `json:"issue"`
	}
	if !c.decode(&req) {
		return
	}
	invalid := func(field, code string) {
		c.validationFailed("Validation Failed", map[string]any{"resource": "PullRequest", "field": field, "code": code})
	}
	if req.Title == "" && req.Issue == nil {
		invalid("title", "missing_field")
		return
	}
	if req.Head == "" {
		invalid("head", "missing_field")
		return
	}
	if req.Base == "" {
		invalid("base", "missing_field")
		return
	}
	headRepo, branch := r, req.Head
	if owner, b, ok := strings.Cut(req.Head, ":"); ok {
		branch = b
		headRepo = nil
		if strings.EqualFold(owner, r.Owner.Login) {
			headRepo = r
		} else {
			for _, cand := range s.sortedRepos() {
				if strings.EqualFold(cand.Owner.Login, owner) && cand.Parent == r {
					headRepo = cand
					break
				}
			}
		}
	}
	if req.HeadRepo != "" {
		headRepo = s.repos[strings.ToLower(req.HeadRepo)]
	}
	if headRepo == nil {
		invalid("head", "invalid")
		return
	}
	headSHA, ok := headRepo.refHash("refs/heads/" + branch)
	if !ok {
		invalid("head", "invalid")
		return
	}
	baseSHA, ok := r.refHash("refs/heads/" + req.Base)
	if !ok {
		invalid("base", "invalid")
		return
	}
	for _, in := range r.issues {
		pr := in.PullRequest
		if pr != nil && in.State == "open" && pr.Head == branch && strings.EqualFold(pr.HeadRepo, headRepo.FullName()) && pr.Base == req.Base {
			c.validationFailed("Validation Failed", map[string]any{"resource": "PullRequest", "code": "custom", "message": "A pull request already exists for " + headRepo.Owner.Login + ":" + branch + "."})
			return
		}
	}
	if headSHA == baseSHA || s.isAncestorAcross(headRepo, headSHA, r, baseSHA) {
		c.validationFailed("Validation Failed", map[string]any{"resource": "PullRequest", "code": "custom", "message": "No commits between " + req.Base + " and " + branch})
		return
	}
	pr := &PullRequest{Head: branch, HeadRepo: headRepo.FullName(), Base: req.Base, Draft: req.Draft, HeadSHA: headSHA.String()}
	if req.MaintainerCanModify != nil {
		pr.MaintainerCanModify = *req.MaintainerCanModify
	}
	in := r.newIssue(req.Title, req.Body, c.actor(), nil, false, pr)
	in.viaApp = c.tok.inst.App
	r.syncPullRef(in)
	r.issueOpened(in, in.Author)
	c.header.Set("Location", fmt.Sprintf("%s/pulls/%d", r.api(), in.Number))
	c.json(http.StatusCreated, s.pullJSON(r, in))
}

// isAncestorAcross reports whether head is already contained in base.
func (s *Server) isAncestorAcross(headRepo *Repo, head plumbing.Hash, base *Repo, baseSHA plumbing.Hash) bool {
	hc, err := object.GetCommit(headRepo.st, head)
	if err != nil {
		return false
	}
	bc, err := object.GetCommit(base.st, baseSHA)
	if err != nil {
		return false
	}
	if headRepo != base {
		// Objects live in separate stores; compare by walking base's history.
		found := false
		iter := object.NewCommitPreorderIter(bc, nil, nil)
		_ = iter.ForEach(func(c *object.Commit) error {
			if c.Hash == hc.Hash {
				found = true
			}
			return nil
		})
		return found
	}
	ok, _ := hc.IsAncestor(bc)
	return ok
}

func (s *Server) handleUpdatePull(c *call) {
	r, in := c.pullAccess(true)
	if in == nil {
		return
	}
	var req struct {
		Title *string `json:"title"`
		Body  *string `json:"body"`
		State *string `json:"state"`
		Base  *string `json:"base"`
	}
	if !c.decode(&req) {
		return
	}
	if !c.validState("PullRequest", req.State) {
		return
	}
	if req.Base != nil {
		if _, ok := r.refHash("refs/heads/" + *req.Base); !ok {
			c.validationFailed("Validation Failed", map[string]any{"resource": "PullRequest", "field": "base", "code": "invalid"})
			return
		}
		in.PullRequest.Base = *req.Base
	}
	snap := snapshotOf(in)
	s.applyIssueEdit(c, r, in, req.Title, req.Body, req.State, nil)
	r.issueChanged(in, snap, c.actor().Login)
	c.json(http.StatusOK, s.pullJSON(r, in))
}

func (s *Server) handleListPullFiles(c *call) {
	r, in := c.pullAccess(false)
	if in == nil {
		return
	}
	changes, hr := r.prChanges(in.PullRequest, plumbing.NewHash(r.prHeadSHA(in.PullRequest)))
	list := []any{}
	for _, ch := range changes {
		sha := ch.head.hash.String()
		if ch.status == "removed" {
			sha = ch.base.hash.String()
		}
		add, del := r.lineCounts(hr, ch)
		ref := r.prHeadSHA(in.PullRequest)
		list = append(list, map[string]any{
			"sha": sha, "filename": ch.path, "status": ch.status, "additions": add, "deletions": del, "changes": add + del,
			"blob_url":     htmlBase + hr.FullName() + "/blob/" + ref + "/" + ch.path,
			"raw_url":      htmlBase + hr.FullName() + "/raw/" + ref + "/" + ch.path,
			"contents_url": hr.api() + "/contents/" + ch.path + "?ref=" + ref,
		})
	}
	c.json(http.StatusOK, paginate(c, list))
}

// prChange is one path a pull request changes; base or head is the zero
// leaf when the path is absent on that side.
type prChange struct {
	path, status string
	base, head   leaf
}

// prChanges compares the base branch with commit head of the pull request's
// head repository, by path, and returns the changes with that repository.
// Nothing is returned when either side cannot be read.
func (r *Repo) prChanges(pr *PullRequest, head plumbing.Hash) ([]prChange, *Repo) {
	hr := r.prHeadRepo(pr)
	baseSHA, ok := r.refHash("refs/heads/" + pr.Base)
	if hr == nil || !ok {
		return nil, hr
	}
	base, err1 := r.flatTree(baseSHA)
	files, err2 := hr.flatTree(head)
	if err1 != nil || err2 != nil {
		return nil, hr
	}
	var names []string
	for p := range base {
		names = append(names, p)
	}
	for p := range files {
		if _, ok := base[p]; !ok {
			names = append(names, p)
		}
	}
	sort.Strings(names)
	var out []prChange
	for _, p := range names {
		b, inBase := base[p]
		h, inHead := files[p]
		ch := prChange{path: p, base: b, head: h}
		switch {
		case !inBase:
			ch.status = "added"
		case !inHead:
			ch.status = "removed"
		case b != h:
			ch.status = "modified"
		default:
			continue
		}
		out = append(out, ch)
	}
	return out, hr
}

// TransferIssue moves issue n to repository to, as "Transfer issue" does:
// the issue gets a new number there and is gone here (an "issues
// transferred" payload built afterwards names the new issue and
// repository). It returns the new number.
func (r *Repo) TransferIssue(n int, to *Repo) int {
	defer r.s.flush()
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	in := r.issues[n]
	if in == nil || in.PullRequest != nil {
		r.s.tb.Fatalf("githubfake: TransferIssue: no issue #%d in %s", n, r.FullName())
	}
	moved := to.newIssue(in.Title, in.Body, r.s.account(in.Author, "User"), in.Labels, in.State == "closed", nil)
	moved.Comments = slices.Clone(in.Comments)
	in.movedTo = &issueLoc{repo: to, number: moved.Number}
	delete(r.issues, n)
	r.deleted[n] = in
	r.s.emit(r, "issues", func(inst *Installation) map[string]any {
		return r.s.issuesEvent("transferred", inst, r, n, r.Owner.Login, "")
	})
	to.issueOpened(moved, r.Owner.Login)
	return moved.Number
}

// DeleteIssue deletes issue n (an "issues deleted" payload can still be
// built for it).
func (r *Repo) DeleteIssue(n int) {
	defer r.s.flush()
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	in := r.issues[n]
	if in == nil || in.PullRequest != nil {
		r.s.tb.Fatalf("githubfake: DeleteIssue: no issue #%d in %s", n, r.FullName())
	}
	delete(r.issues, n)
	r.deleted[n] = in
	r.s.emit(r, "issues", func(inst *Installation) map[string]any {
		return r.s.issuesEvent("deleted", inst, r, n, r.Owner.Login, "")
	})
}

// EditComment changes comment id's body, as its author would (an
// "issue_comment edited" payload carries the previous body).
func (r *Repo) EditComment(id int64, body string) {
	defer r.s.flush()
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	in, i := r.s.findComment(r, id)
	if in == nil {
		r.s.tb.Fatalf("githubfake: EditComment: no comment %d in %s", id, r.FullName())
	}
	in.Comments[i].prevBody, in.Comments[i].Body = in.Comments[i].Body, body
	in.Comments[i].updated = r.s.now()
	r.emitComment(in, id, "edited", in.Comments[i].Author)
}

// DeleteComment deletes comment id ("issue_comment deleted" can still be
// built for it).
func (r *Repo) DeleteComment(id int64) {
	defer r.s.flush()
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	in, i := r.s.findComment(r, id)
	if in == nil {
		r.s.tb.Fatalf("githubfake: DeleteComment: no comment %d in %s", id, r.FullName())
	}
	in.deletedComments = append(in.deletedComments, in.Comments[i])
	in.Comments = slices.Delete(in.Comments, i, i+1)
	r.emitComment(in, id, "deleted", r.Owner.Login)
}

func (r *Repo) emitComment(in *Issue, id int64, action, sender string) {
	r.s.emit(r, "issue_comment", func(inst *Installation) map[string]any {
		return r.s.issueCommentEvent(action, inst, r, in.Number, id, sender)
	})
}
