package githubfake

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Review states, as GitHub reports them.
const (
	ReviewApproved         = "APPROVED"
	ReviewChangesRequested = "CHANGES_REQUESTED"
	ReviewCommented        = "COMMENTED"
	ReviewPending          = "PENDING"
)

// reviewStates maps a create request's event to the review's state; no
// event leaves the review PENDING.
var reviewStates = map[string]string{
	"":                ReviewPending,
	"APPROVE":         ReviewApproved,
	"REQUEST_CHANGES": ReviewChangesRequested,
	"COMMENT":         ReviewCommented,
}

// diffContext is how many unchanged lines around a change a unified diff
// shows; review comments may only sit on lines the diff shows.
const diffContext = 3

// maxDiffCells bounds the emulator's line diff (lines(base) × lines(head));
// beyond it every line of a changed file counts as commentable.
const maxDiffCells = 1 << 20

// Review is a pull request review as the emulator stores it.
type Review struct {
	ID       int64
	Author   string // login
	State    string // ReviewApproved, ReviewChangesRequested, ReviewCommented or ReviewPending
	Body     string
	CommitID string // the commit reviewed, possibly no longer the head
	Comments []ReviewComment

	submitted time.Time
}

// ReviewComment is one draft line comment of a review.
type ReviewComment struct {
	Path      string
	Line      int
	Side      string // "LEFT" or "RIGHT"
	StartLine int    // multi-line comments; 0 otherwise
	Position  int    // the legacy diff position, when the client sent one
	Body      string
}

// Reviews returns copies of pull request pr's reviews, oldest first.
func (r *Repo) Reviews(pr int) []Review {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	out := make([]Review, 0, len(r.reviews[pr]))
	for _, rv := range r.reviews[pr] {
		c := *rv
		c.Comments = slices.Clone(rv.Comments)
		out = append(out, c)
	}
	return out
}

// unprocessable writes the 422 GitHub answers for review rules: "errors" is
// a list of strings, not objects.
func (c *call) unprocessable(msg string) {
	c.json(http.StatusUnprocessableEntity, map[string]any{
		"message": "Unprocessable Entity", "errors": []string{msg}, "documentation_url": docsREST, "status": "422",
	})
}

func (s *Server) reviewJSON(r *Repo, in *Issue, rv *Review) map[string]any {
	html := fmt.Sprintf("https://github.com/%s/pull/%d#pullrequestreview-%d", r.FullName(), in.Number, rv.ID)
	pr := fmt.Sprintf("%s/pulls/%d", r.api(), in.Number)
	out := map[string]any{
		"id": rv.ID, "node_id": nodeID("PRR", rv.ID), "user": s.userJSON(s.accounts[strings.ToLower(rv.Author)]),
		"body": rv.Body, "state": rv.State, "html_url": html, "pull_request_url": pr, "commit_id": rv.CommitID,
		"author_association": r.association(rv.Author),
		"_links":             map[string]any{"html": map[string]any{"href": html}, "pull_request": map[string]any{"href": pr}},
	}
	// Pending reviews have no submitted_at.
	if rv.State != ReviewPending {
		out["submitted_at"] = timeOrNil(rv.submitted)
	}
	return out
}

// visibleTo reports whether account a may see rv: a pending review is visible
// to its author only.
func (rv *Review) visibleTo(a *Account) bool {
	return rv.State != ReviewPending || (a != nil && strings.EqualFold(rv.Author, a.Login))
}

func (s *Server) handleListReviews(c *call) {
	r, in := c.pullAccess(false)
	if in == nil {
		return
	}
	list := []any{}
	for _, rv := range r.reviews[in.Number] {
		if rv.visibleTo(c.actor()) {
			list = append(list, s.reviewJSON(r, in, rv))
		}
	}
	c.json(http.StatusOK, paginate(c, list))
}

func (s *Server) handleGetReview(c *call) {
	r, in := c.pullAccess(false)
	if in == nil {
		return
	}
	id, _ := strconv.ParseInt(c.param("id"), 10, 64)
	for _, rv := range r.reviews[in.Number] {
		if rv.ID == id && rv.visibleTo(c.actor()) {
			c.json(http.StatusOK, s.reviewJSON(r, in, rv))
			return
		}
	}
	c.notFound()
}

type reviewCommentReq struct {
	Path      string `json:"path"`
	Body      string `json:"body"`
	Line      *int   `json:"line"`
	Side      string `json:"side"`
	StartLine *int   `json:"start_line"`
	StartSide string `json:"start_side"`
	Position  *int   `json:"position"`
}

// handleCreateReview is POST pulls/{n}/reviews with GitHub's rules: a body
// for REQUEST_CHANGES and COMMENT, no approving or requesting changes on
// one's own pull request, one pending review per user, commit_id any commit
// of the pull request's head repository (a stale one is allowed), and line
// comments only on lines the diff of that commit shows.
func (s *Server) handleCreateReview(c *call) {
	r, in := c.pullAccess(true)
	if in == nil {
		return
	}
	var req struct {
		CommitID string             `json:"commit_id"`
		Body     string             `json:"body"`
		Event    string             `json:"event"`
		Comments []reviewCommentReq `json:"comments"`
	}
	// Every field is optional: an empty body creates a pending review.
	if len(strings.TrimSpace(string(c.body))) > 0 && !c.decode(&req) {
		return
	}
	state, ok := reviewStates[req.Event]
	if !ok {
		// GitHub's request-schema refusals carry no "errors" list.
		c.validationFailed("Invalid request.\n\nFor 'properties/event', \"" + req.Event + "\" is not one of [\"APPROVE\", \"REQUEST_CHANGES\", \"COMMENT\"].")
		return
	}
	author := c.actor()
	if (state == ReviewChangesRequested || state == ReviewCommented) && strings.TrimSpace(req.Body) == "" {
		c.unprocessable("Body can't be blank")
		return
	}
	if strings.EqualFold(in.Author, author.Login) {
		switch state {
		case ReviewApproved:
			c.unprocessable("Can not approve your own pull request")
			return
		case ReviewChangesRequested:
			c.unprocessable("Can not request changes on your own pull request")
			return
		}
	}
	for _, rv := range r.reviews[in.Number] {
		if rv.State == ReviewPending && strings.EqualFold(rv.Author, author.Login) {
			c.unprocessable("User can only have one pending review per pull request")
			return
		}
	}
	pr := in.PullRequest
	commit := req.CommitID
	if commit == "" {
		commit = r.prHeadSHA(pr)
	}
	hr := r.prHeadRepo(pr)
	if !plumbing.IsHash(commit) || hr == nil || !hr.hasObject(plumbing.CommitObject, plumbing.NewHash(commit)) {
		c.unprocessable("No commit found for SHA: " + commit)
		return
	}
	comments, msg := r.reviewComments(pr, plumbing.NewHash(commit), req.Comments)
	if msg != "" {
		c.unprocessable(msg)
		return
	}
	rv := &Review{ID: s.newID(), Author: author.Login, State: state, Body: req.Body, CommitID: commit, Comments: comments}
	if state != ReviewPending {
		rv.submitted = s.now()
	}
	r.reviews[in.Number] = append(r.reviews[in.Number], rv)
	c.json(http.StatusOK, s.reviewJSON(r, in, rv))
}

// reviewComments checks draft comments against the diff between the base
// branch and commit, GitHub's "could not be resolved" errors otherwise.
func (r *Repo) reviewComments(pr *PullRequest, commit plumbing.Hash, reqs []reviewCommentReq) ([]ReviewComment, string) {
	if len(reqs) == 0 {
		return nil, ""
	}
	changes, hr := r.prChanges(pr, commit)
	var out []ReviewComment
	for _, q := range reqs {
		if q.Path == "" || q.Body == "" {
			return nil, "Invalid request: path and body are required for each comment."
		}
		i := slices.IndexFunc(changes, func(ch prChange) bool { return ch.path == q.Path })
		if i < 0 {
			return nil, "Path could not be resolved"
		}
		cm := ReviewComment{Path: q.Path, Body: q.Body, Side: cmp.Or(q.Side, "RIGHT")}
		if cm.Side != "LEFT" && cm.Side != "RIGHT" {
			return nil, "Side must be LEFT or RIGHT"
		}
		if q.Position != nil {
			// The legacy position counts lines of the file's patch; the
			// emulator does not render patches, so any positive one is taken.
			if *q.Position < 1 {
				return nil, "Position could not be resolved"
			}
			cm.Position = *q.Position
			out = append(out, cm)
			continue
		}
		if q.Line == nil {
			return nil, "Line could not be resolved"
		}
		left, right := r.diffLines(hr, changes[i])
		shown := map[string]map[int]bool{"LEFT": left, "RIGHT": right}
		cm.Line = *q.Line
		if !shown[cm.Side][cm.Line] {
			return nil, "Line could not be resolved"
		}
		if q.StartLine != nil {
			startSide := cmp.Or(q.StartSide, cm.Side)
			if *q.StartLine >= cm.Line || !shown[startSide][*q.StartLine] {
				return nil, "Start line could not be resolved"
			}
			cm.StartLine = *q.StartLine
		}
		out = append(out, cm)
	}
	return out, ""
}

// diffLines returns the line numbers a unified diff of the change shows on
// each side: changed lines and diffContext lines of context around them.
func (r *Repo) diffLines(hr *Repo, ch prChange) (left, right map[int]bool) {
	var a, b []string
	if ch.status != "added" {
		data, _ := r.blob(ch.base.hash)
		a = splitLines(string(data))
	}
	if ch.status != "removed" {
		data, _ := hr.blob(ch.head.hash)
		b = splitLines(string(data))
	}
	left, right = map[int]bool{}, map[int]bool{}
	if len(a)*len(b) > maxDiffCells {
		for i := range a {
			left[i+1] = true
		}
		for i := range b {
			right[i+1] = true
		}
		return left, right
	}
	ops := lineDiff(a, b)
	changed := func(i int) bool { return i >= 0 && i < len(ops) && ops[i].kind != ' ' }
	for i, op := range ops {
		show := op.kind != ' '
		for d := 1; d <= diffContext && !show; d++ {
			show = changed(i-d) || changed(i+d)
		}
		if !show {
			continue
		}
		if op.left > 0 {
			left[op.left] = true
		}
		if op.right > 0 {
			right[op.right] = true
		}
	}
	return left, right
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// lineOp is one line of a diff: ' ' kept, '-' removed, '+' added, with its
// 1-based line number on each side (0 when absent there).
type lineOp struct {
	kind        byte
	left, right int
}

// lineDiff is a longest-common-subsequence line diff of a and b.
func lineDiff(a, b []string) []lineOp {
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []lineOp
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			ops = append(ops, lineOp{' ', i + 1, j + 1})
			i, j = i+1, j+1
		case j < len(b) && (i == len(a) || lcs[i][j+1] >= lcs[i+1][j]):
			ops = append(ops, lineOp{'+', 0, j + 1})
			j++
		default:
			ops = append(ops, lineOp{'-', i + 1, 0})
			i++
		}
	}
	return ops
}
