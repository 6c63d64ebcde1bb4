package githubfake

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

const (
	// sarifMaxCompressed is GitHub's limit on the gzip-compressed SARIF.
	sarifMaxCompressed = 10 << 20
	// sarifMaxDecompressed guards the emulator against gzip bombs.
	sarifMaxDecompressed = 256 << 20
	maxAnnotations       = 50
)

// CheckRun is a check run as the emulator stores it.
type CheckRun struct {
	ID          int64
	App         string // slug of the app that created it
	Name        string
	HeadSHA     string
	Status      string
	Conclusion  string
	ExternalID  string
	DetailsURL  string
	Title       string
	Summary     string
	Text        string
	Annotations []map[string]any

	started, completed time.Time
}

// SARIFUpload is one accepted code scanning upload.
type SARIFUpload struct {
	ID        string
	CommitSHA string
	Ref       string
	ToolName  string
	SARIF     []byte // decompressed

	created time.Time
}

// CheckRuns returns copies of the repository's check runs.
func (r *Repo) CheckRuns() []CheckRun {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	out := make([]CheckRun, 0, len(r.checkRuns))
	for _, cr := range r.checkRuns {
		c := *cr
		c.Annotations = slices.Clone(cr.Annotations)
		out = append(out, c)
	}
	return out
}

// SARIFUploads returns the accepted SARIF uploads.
func (r *Repo) SARIFUploads() []SARIFUpload {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	return slices.Clone(r.sarifs)
}

type checkOutput struct {
	Title       *string          `json:"title"`
	Summary     *string          `json:"summary"`
	Text        *string          `json:"text"`
	Annotations []map[string]any `json:"annotations"`
}

type checkReq struct {
	Name        *string      `json:"name"`
	HeadSHA     *string      `json:"head_sha"`
	DetailsURL  *string      `json:"details_url"`
	ExternalID  *string      `json:"external_id"`
	Status      *string      `json:"status"`
	Conclusion  *string      `json:"conclusion"`
	StartedAt   *string      `json:"started_at"`
	CompletedAt *string      `json:"completed_at"`
	Output      *checkOutput `json:"output"`
}

var (
	checkStatuses    = []string{"queued", "in_progress", "completed", "waiting", "requested", "pending"}
	checkConclusions = []string{"action_required", "cancelled", "failure", "neutral", "success", "skipped", "stale", "timed_out"}
)

// apply validates and applies a create/update body.
func (c *call) applyCheck(cr *CheckRun, req checkReq) bool {
	bad := func(field string) bool {
		c.validationFailed("Invalid request.\n\nFor 'properties/"+field+"', invalid value.", map[string]any{"resource": "CheckRun", "field": field, "code": "invalid"})
		return false
	}
	if req.Name != nil {
		cr.Name = *req.Name
	}
	if req.DetailsURL != nil {
		cr.DetailsURL = *req.DetailsURL
	}
	if req.ExternalID != nil {
		cr.ExternalID = *req.ExternalID
	}
	if req.Status != nil {
		if !slices.Contains(checkStatuses, *req.Status) {
			return bad("status")
		}
		cr.Status = *req.Status
	}
	if req.Conclusion != nil {
		if !slices.Contains(checkConclusions, *req.Conclusion) {
			return bad("conclusion")
		}
		// Providing a conclusion completes the run.
		cr.Conclusion, cr.Status = *req.Conclusion, "completed"
	}
	if cr.Status == "completed" && cr.Conclusion == "" {
		c.validationFailed("Invalid request.\n\nNo conclusion provided for a completed check run.")
		return false
	}
	if req.Output != nil {
		o := req.Output
		if o.Title == nil || o.Summary == nil {
			c.validationFailed("Invalid request.\n\n\"title\", \"summary\" weren't supplied.")
			return false
		}
		if len(o.Annotations) > maxAnnotations {
			c.validationFailed("Invalid request.\n\nFor 'properties/annotations', is too long (maximum is 50 items).")
			return false
		}
		if len(*o.Summary) > 65535 || (o.Text != nil && len(*o.Text) > 65535) {
			c.validationFailed("Invalid request.\n\nOnly 65535 characters are allowed; " + strconv.Itoa(len(*o.Summary)) + " were supplied.")
			return false
		}
		cr.Title, cr.Summary = *o.Title, *o.Summary
		if o.Text != nil {
			cr.Text = *o.Text
		}
		// Annotations accumulate across updates, as on GitHub.
		cr.Annotations = append(cr.Annotations, o.Annotations...)
	}
	now := c.s.now()
	if cr.started.IsZero() {
		cr.started = now
	}
	if cr.Status == "completed" && cr.completed.IsZero() {
		cr.completed = now
	}
	return true
}

func (s *Server) checkRunJSON(r *Repo, cr *CheckRun) map[string]any {
	return s.checkRunWithPulls(r, cr, r.pullsWithHead(cr.HeadSHA))
}

// checkRunWithPulls is checkRunJSON with its pull_requests computed once
// for a list of runs on one commit.
func (s *Server) checkRunWithPulls(r *Repo, cr *CheckRun, pulls []any) map[string]any {
	var app map[string]any
	for _, a := range s.apps {
		if a.Slug == cr.App {
			app = s.appJSON(a)
		}
	}
	return map[string]any{
		"id": cr.ID, "node_id": nodeID("CR", cr.ID), "head_sha": cr.HeadSHA, "external_id": cr.ExternalID,
		"url": fmt.Sprintf("%s/check-runs/%d", r.api(), cr.ID), "html_url": fmt.Sprintf("https://github.com/%s/runs/%d", r.FullName(), cr.ID),
		"details_url": nilIfEmpty(cr.DetailsURL), "status": cr.Status, "conclusion": nilIfEmpty(cr.Conclusion),
		"started_at": timeOrNil(cr.started), "completed_at": timeOrNil(cr.completed), "name": cr.Name,
		"output": map[string]any{
			"title": nilIfEmpty(cr.Title), "summary": nilIfEmpty(cr.Summary), "text": nilIfEmpty(cr.Text),
			"annotations_count": len(cr.Annotations), "annotations_url": fmt.Sprintf("%s/check-runs/%d/annotations", r.api(), cr.ID),
		},
		"check_suite": map[string]any{"id": cr.ID + 1}, "app": app, "pull_requests": pulls,
	}
}

// pullsWithHead is a check run's pull_requests: the open pull requests of
// this repository whose head is sha (GitHub leaves out those from forks).
func (r *Repo) pullsWithHead(sha string) []any {
	out := []any{}
	short := func(rr *Repo) map[string]any {
		return map[string]any{"id": rr.ID, "url": rr.api(), "name": rr.Name}
	}
	for _, in := range r.sortedIssues() {
		pr := in.PullRequest
		if pr == nil || in.State != "open" || r.prHeadRepo(pr) != r || r.prHeadSHA(pr) != sha {
			continue
		}
		out = append(out, map[string]any{
			"id": in.ID, "number": in.Number, "url": fmt.Sprintf("%s/pulls/%d", r.api(), in.Number),
			"head": map[string]any{"ref": pr.Head, "sha": sha, "repo": short(r)},
			"base": map[string]any{"ref": pr.Base, "sha": r.prBaseSHA(pr), "repo": short(r)},
		})
	}
	return out
}

func (s *Server) handleCreateCheckRun(c *call) {
	r := c.repoAccess(false, need{"checks", Write})
	if r == nil {
		return
	}
	var req checkReq
	if !c.decode(&req) {
		return
	}
	if req.Name == nil || *req.Name == "" || req.HeadSHA == nil {
		c.validationFailed("Invalid request.\n\n\"name\", \"head_sha\" weren't supplied.")
		return
	}
	if !plumbing.IsHash(*req.HeadSHA) || !r.hasObject(plumbing.CommitObject, plumbing.NewHash(*req.HeadSHA)) {
		c.validationFailed("No commit found for SHA: " + *req.HeadSHA)
		return
	}
	cr := &CheckRun{ID: s.newID(), App: c.tok.inst.App.Slug, HeadSHA: *req.HeadSHA, Status: "queued"}
	if !c.applyCheck(cr, req) {
		return
	}
	r.checkRuns = append(r.checkRuns, cr)
	c.json(http.StatusCreated, s.checkRunJSON(r, cr))
}

func (c *call) checkRun(r *Repo) *CheckRun {
	id, _ := strconv.ParseInt(c.param("id"), 10, 64)
	for _, cr := range r.checkRuns {
		if cr.ID == id {
			return cr
		}
	}
	c.notFound()
	return nil
}

func (s *Server) handleGetCheckRun(c *call) {
	r := c.repoAccess(true, need{"checks", Read})
	if r == nil {
		return
	}
	if cr := c.checkRun(r); cr != nil {
		c.json(http.StatusOK, s.checkRunJSON(r, cr))
	}
}

func (s *Server) handleUpdateCheckRun(c *call) {
	r := c.repoAccess(false, need{"checks", Write})
	if r == nil {
		return
	}
	cr := c.checkRun(r)
	if cr == nil {
		return
	}
	if cr.App != c.tok.inst.App.Slug {
		// Only the app that created a check run may update it.
		c.forbidden()
		return
	}
	var req checkReq
	if !c.decode(&req) {
		return
	}
	next := *cr
	if !c.applyCheck(&next, req) {
		return
	}
	*cr = next
	c.json(http.StatusOK, s.checkRunJSON(r, cr))
}

func (s *Server) handleListCheckRuns(c *call) {
	r := c.repoAccess(true, need{"checks", Read})
	if r == nil {
		return
	}
	h, ok := c.commitParam(r)
	if !ok {
		return
	}
	list := []any{}
	pulls := r.pullsWithHead(h.String())
	for _, cr := range r.checkRuns {
		if cr.HeadSHA == h.String() {
			list = append(list, s.checkRunWithPulls(r, cr, pulls))
		}
	}
	c.json(http.StatusOK, map[string]any{"total_count": len(list), "check_runs": paginate(c, list)})
}

var sarifRef = regexp.MustCompile(`^refs/(heads/.+|tags/.+|pull/[0-9]+/(merge|head))$`)

var errTooLarge = errors.New("too large")

// decodeSARIF undoes base64 then gzip, with GitHub's size limit on the
// compressed data.
func decodeSARIF(field string) ([]byte, error) {
	gz, err := base64.StdEncoding.DecodeString(field)
	if err != nil {
		return nil, err
	}
	if len(gz) > sarifMaxCompressed {
		return nil, errTooLarge
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(zr, sarifMaxDecompressed+1))
	if err != nil {
		return nil, err
	}
	if len(data) > sarifMaxDecompressed {
		return nil, errTooLarge
	}
	var doc struct {
		Version string            `json:"version"`
		Runs    []json.RawMessage `json:"runs"`
	}
	if err := json.Unmarshal(data, &doc); err != nil || doc.Runs == nil {
		return nil, errors.New("not a SARIF log")
	}
	return data, nil
}

func (s *Server) handleUploadSARIF(c *call) {
	r := c.repoAccess(false, need{"security_events", Write})
	if r == nil {
		return
	}
	var req struct {
		CommitSHA string `json:"commit_sha"`
		Ref       string `json:"ref"`
		SARIF     string `json:"sarif"`
		ToolName  string `json:"tool_name"`
	}
	if !c.decode(&req) {
		return
	}
	if !plumbing.IsHash(req.CommitSHA) {
		c.validationFailed("Invalid request.\n\nFor 'properties/commit_sha', \""+req.CommitSHA+"\" does not match /^[0-9a-fA-F]+$/.", map[string]any{"resource": "CodeScanning", "field": "commit_sha", "code": "invalid"})
		return
	}
	if !sarifRef.MatchString(req.Ref) {
		c.validationFailed("Invalid request.\n\nFor 'properties/ref', \""+req.Ref+"\" does not match /^refs\\/(heads|tags|pull)\\/.*$/.", map[string]any{"resource": "CodeScanning", "field": "ref", "code": "invalid"})
		return
	}
	data, err := decodeSARIF(req.SARIF)
	if errors.Is(err, errTooLarge) {
		c.fail(http.StatusRequestEntityTooLarge, "Payload Too Large")
		return
	}
	if err != nil {
		c.fail(http.StatusBadRequest, "Invalid SARIF: the sarif field must be a gzip-compressed, base64-encoded SARIF log")
		return
	}
	up := SARIFUpload{ID: fmt.Sprintf("%08x-0000-4000-8000-%012x", s.newID(), s.lastID), CommitSHA: req.CommitSHA, Ref: req.Ref, ToolName: req.ToolName, SARIF: data, created: s.now()}
	r.sarifs = append(r.sarifs, up)
	c.json(http.StatusAccepted, map[string]any{"id": up.ID, "url": r.api() + "/code-scanning/sarifs/" + up.ID})
}

func (s *Server) handleGetSARIF(c *call) {
	r := c.repoAccess(false, need{"security_events", Read})
	if r == nil {
		return
	}
	for _, up := range r.sarifs {
		if up.ID == c.param("id") {
			c.json(http.StatusOK, map[string]any{"processing_status": "complete", "analyses_url": r.api() + "/code-scanning/analyses?sarif_id=" + up.ID, "errors": nil})
			return
		}
	}
	c.notFound()
}

// handleListAnalyses lists one analysis per run of every accepted upload,
// newest first, filtered by ref and sarif_id as GitHub does. The category
// is the run's automationDetails.id up to its last "/".
func (s *Server) handleListAnalyses(c *call) {
	r := c.repoAccess(false, need{"security_events", Read})
	if r == nil {
		return
	}
	q := c.r.URL.Query()
	list := []any{}
	for i := len(r.sarifs) - 1; i >= 0; i-- {
		up := r.sarifs[i]
		if (q.Get("ref") != "" && q.Get("ref") != up.Ref) || (q.Get("sarif_id") != "" && q.Get("sarif_id") != up.ID) {
			continue
		}
		var doc struct {
			Runs []struct {
				Tool struct {
					Driver struct {
						Name string `json:"name"`
					} `json:"driver"`
				} `json:"tool"`
				AutomationDetails struct {
					ID string `json:"id"`
				} `json:"automationDetails"`
				Results []json.RawMessage `json:"results"`
			} `json:"runs"`
		}
		_ = json.Unmarshal(up.SARIF, &doc)
		for j, run := range doc.Runs {
			category := run.AutomationDetails.ID
			if k := strings.LastIndex(category, "/"); k >= 0 {
				category = category[:k+1]
			}
			list = append(list, map[string]any{
				"id": int64(i*100 + j + 1), "ref": up.Ref, "commit_sha": up.CommitSHA, "category": category,
				"analysis_key": "(upload)", "sarif_id": up.ID, "results_count": len(run.Results),
				"tool": map[string]any{"name": run.Tool.Driver.Name, "guid": nil, "version": nil}, "error": "", "deletable": true,
				"environment": "{}", "created_at": timeOrNil(up.created), "rules_count": 0, "warning": "",
				"url": fmt.Sprintf("%s/code-scanning/analyses/%d", r.api(), i*100+j+1),
			})
		}
	}
	c.json(http.StatusOK, paginate(c, list))
}
