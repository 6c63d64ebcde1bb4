package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/audit"
	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/policy"
	"github.com/quavon/quavon/internal/repos"
	"github.com/quavon/quavon/internal/review"
)

func (s *Server) page(w http.ResponseWriter, sess *Session, status int, name, title, nav string, content any) {
	s.render(w, status, name, pageData{Title: title, User: sess, FormTok: sess.formToken, Content: content, Nav: nav})
}

func (s *Server) home(w http.ResponseWriter, r *http.Request, _ *Session) error {
	http.Redirect(w, r, "/repos", http.StatusSeeOther)
	return nil
}

type repoView struct {
	*repoRow
	Effective   policy.Effective
	FixMode     string
	ReviewFixes string
	SAST        string
	Acceptance  string
}

func viewOf(r *repoRow, eff policy.Effective) repoView {
	return repoView{repoRow: r, Effective: eff, FixMode: string(eff.FixMode()), ReviewFixes: string(eff.ReviewFixDelivery()),
		SAST: string(eff.SASTMode()), Acceptance: string(eff.AcceptanceMode())}
}

func (s *Server) reposPage(w http.ResponseWriter, r *http.Request, sess *Session) error {
	var views []repoView
	err := s.db.InTenant(r.Context(), sess.Tenant, func(tx pgx.Tx) error {
		rs, err := userRepos(r.Context(), tx, sess.UserID)
		if err != nil {
			return err
		}
		for _, rr := range rs {
			eff, _, _, err := effectiveOf(r.Context(), tx, rr)
			if err != nil {
				return err
			}
			views = append(views, viewOf(rr, eff))
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.page(w, sess, http.StatusOK, "repos", "Repositories", "repos", views)
	return nil
}

type policyView struct {
	Repo     repoView
	Document string
	Version  int64
	Errors   []policy.FieldError
	Conflict bool
	Saved    *repos.PolicyUpdate
	CanEdit  bool
}

func (s *Server) policyPage(w http.ResponseWriter, r *http.Request, sess *Session) error {
	var v policyView
	err := s.db.InTenant(r.Context(), sess.Tenant, func(tx pgx.Tx) error {
		rr, err := repoByName(r.Context(), tx, sess.UserID, r.PathValue("owner"), r.PathValue("name"))
		if err != nil {
			return err
		}
		eff, doc, version, err := effectiveOf(r.Context(), tx, rr)
		if err != nil {
			return err
		}
		if doc == nil {
			if doc, err = policy.Marshal(policy.Default()); err != nil {
				return err
			}
		}
		v = policyView{Repo: viewOf(rr, eff), Document: indentJSON(doc), Version: version, CanEdit: rr.has(repos.RoleManage)}
		return nil
	})
	if err != nil {
		return err
	}
	s.page(w, sess, http.StatusOK, "policy", "Policy of "+v.Repo.FullName(), "repos", v)
	return nil
}

func indentJSON(doc []byte) string {
	var v any
	if json.Unmarshal(doc, &v) != nil {
		return string(doc)
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// policySave saves the edited document (repo:manage). Field errors are
// shown next to the document, a version conflict keeps the text and says
// what happened, a save shows the audited diff.
func (s *Server) policySave(w http.ResponseWriter, r *http.Request, sess *Session) error {
	text := r.PostForm.Get("document")
	want, err := strconv.ParseInt(r.PostForm.Get("version"), 10, 64)
	if err != nil || want < 0 {
		return userErr(errBadForm, "The form lost the policy's version; reload the page.")
	}
	var v policyView
	status := http.StatusOK
	err = s.db.InTenant(r.Context(), sess.Tenant, func(tx pgx.Tx) error {
		ctx := r.Context()
		rr, err := repoByName(ctx, tx, sess.UserID, r.PathValue("owner"), r.PathValue("name"))
		if err != nil {
			return err
		}
		if !rr.has(repos.RoleManage) {
			return userErr(errForbidden, "Editing the policy needs the repo:manage role on %s.", rr.FullName())
		}
		v = policyView{Repo: viewOf(rr, policy.Effective{}), Document: text, Version: want, CanEdit: true}
		parsed, perr := policy.Parse([]byte(text))
		var ve *policy.ValidationError
		if errors.As(perr, &ve) {
			v.Errors, status = ve.Errors, http.StatusUnprocessableEntity
			return nil
		} else if perr != nil {
			return perr
		}
		canonical, err := policy.Marshal(parsed)
		if err != nil {
			return err
		}
		up, err := repos.UpdatePolicy(ctx, tx, &rr.Repository, sess.UserID, parsed, canonical, want)
		if errors.Is(err, repos.ErrVersionConflict) {
			v.Conflict, status = true, http.StatusConflict
			_, v.Version, err = repos.Policy(ctx, tx, rr.ID, false)
			return err
		}
		if err != nil {
			return err
		}
		v.Saved, v.Version, v.Document = up, up.To, indentJSON(canonical)
		return nil
	})
	if err != nil {
		return err
	}
	_ = s.db.InTenant(r.Context(), sess.Tenant, func(tx pgx.Tx) error {
		rr, err := repoByID(r.Context(), tx, sess.UserID, v.Repo.ID)
		if err == nil {
			eff, _, _, _ := effectiveOf(r.Context(), tx, rr)
			v.Repo = viewOf(rr, eff)
		}
		return nil
	})
	s.page(w, sess, status, "policy", "Policy of "+v.Repo.FullName(), "repos", v)
	return nil
}

const runsPerPage = 25

type runsView struct {
	Repo    repoView
	Reviews []*review.Run
	Fixes   []*fix.Run
	Page    int
	Next    bool
}

func (s *Server) runsList(w http.ResponseWriter, r *http.Request, sess *Session, kind string) error {
	page, ok := pageOf(r.URL.Query().Get("page"), 10_000)
	if !ok {
		return userErr(errBadForm, "The page number must be between 1 and 10000.")
	}
	var v runsView
	err := s.db.InTenant(r.Context(), sess.Tenant, func(tx pgx.Tx) error {
		rr, err := repoByName(r.Context(), tx, sess.UserID, r.PathValue("owner"), r.PathValue("name"))
		if err != nil {
			return err
		}
		v = runsView{Repo: viewOf(rr, policy.Effective{}), Page: page}
		if kind == "reviews" {
			v.Reviews, err = review.List(r.Context(), tx, rr.ID, runsPerPage+1, (page-1)*runsPerPage)
			if len(v.Reviews) > runsPerPage {
				v.Reviews, v.Next = v.Reviews[:runsPerPage], true
			}
		} else {
			v.Fixes, err = fix.List(r.Context(), tx, rr.ID, runsPerPage+1, (page-1)*runsPerPage)
			if len(v.Fixes) > runsPerPage {
				v.Fixes, v.Next = v.Fixes[:runsPerPage], true
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	title := "Review runs of " + v.Repo.FullName()
	if kind == "fixes" {
		title = "Fix runs of " + v.Repo.FullName()
	}
	s.page(w, sess, http.StatusOK, kind, title, "repos", v)
	return nil
}

func (s *Server) reviewsPage(w http.ResponseWriter, r *http.Request, sess *Session) error {
	return s.runsList(w, r, sess, "reviews")
}

func (s *Server) fixesPage(w http.ResponseWriter, r *http.Request, sess *Session) error {
	return s.runsList(w, r, sess, "fixes")
}

type findingView struct {
	review.StoredFinding
	Shown     string // the status shown: dismissed wins
	Dismissed bool
}

type reviewView struct {
	Repo      repoView
	Run       *review.Run
	Findings  []findingView
	CanReview bool
	Tools     []toolStatus
	// Parts: the model review, the scanners and the acceptance check.
	LLM, SAST, Acceptance string
	// AC is the acceptance-criteria check of the run's head.
	AC acView
	// Fix is what the page offers for review fixes.
	Fix reviewFixView
}

type toolStatus struct{ Tool, Status string }

func validID(id string) bool {
	if len(id) != 36 {
		return false
	}
	for i, c := range id {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'):
		default:
			return false
		}
	}
	return true
}

func (s *Server) reviewPage(w http.ResponseWriter, r *http.Request, sess *Session) error {
	id := r.PathValue("id")
	if !validID(id) {
		return errNotFound
	}
	var v reviewView
	err := s.db.InTenant(r.Context(), sess.Tenant, func(tx pgx.Tx) error {
		ctx := r.Context()
		run, err := review.Get(ctx, tx, id)
		if errors.Is(err, review.ErrNotFound) {
			return errNotFound
		}
		if err != nil {
			return err
		}
		rr, err := repoByID(ctx, tx, sess.UserID, run.RepositoryID)
		if err != nil {
			return err
		}
		fs, err := review.Findings(ctx, tx, id)
		if err != nil {
			return err
		}
		dismissed, err := review.Dismissed(ctx, tx, run.RepositoryID, run.PRNumber)
		if err != nil {
			return err
		}
		v = reviewView{Repo: viewOf(rr, policy.Effective{}), Run: run, CanReview: rr.has(repos.RoleReview),
			LLM: string(run.Parts[review.PartLLM]), SAST: string(run.Parts[review.PartSAST]), Acceptance: string(run.Parts[review.PartAcceptance])}
		for _, f := range fs {
			fv := findingView{StoredFinding: f, Shown: string(f.Status)}
			if _, ok := dismissed[f.Fingerprint]; ok {
				fv.Shown, fv.Dismissed = string(review.FindingDismissed), true
			}
			v.Findings = append(v.Findings, fv)
		}
		for _, t := range sortedKeys(run.SASTTools) {
			v.Tools = append(v.Tools, toolStatus{t, run.SASTTools[t]})
		}
		if v.AC, err = loadAcceptance(ctx, tx, run); err != nil {
			return err
		}
		eff, _, _, err := effectiveOf(ctx, tx, rr)
		if err != nil {
			return err
		}
		v.Fix, err = reviewFixOf(ctx, tx, rr, eff, run)
		return err
	})
	if err != nil {
		return err
	}
	s.page(w, sess, http.StatusOK, "review", fmt.Sprintf("Review of %s#%d", v.Repo.FullName(), v.Run.PRNumber), "repos", v)
	return nil
}

// findingFeedback dismisses or restores a finding's fingerprint on its
// pull request (repo:review), with a reason for a dismissal.
func (s *Server) findingFeedback(w http.ResponseWriter, r *http.Request, sess *Session) error {
	id, fid := r.PathValue("id"), r.PathValue("finding")
	if !validID(id) || !validID(fid) {
		return errNotFound
	}
	action := review.FeedbackAction(r.PostForm.Get("action"))
	reason := r.PostForm.Get("reason")
	switch {
	case action == review.ActionDismiss && reason == "":
		return userErr(errBadForm, "Choose a reason to dismiss the finding.")
	case action == review.ActionUndismiss:
		reason = ""
	case action != review.ActionDismiss:
		return userErr(errBadForm, "Unknown action.")
	}
	err := s.db.InTenant(r.Context(), sess.Tenant, func(tx pgx.Tx) error {
		ctx := r.Context()
		run, err := review.Get(ctx, tx, id)
		if errors.Is(err, review.ErrNotFound) {
			return errNotFound
		}
		if err != nil {
			return err
		}
		rr, err := repoByID(ctx, tx, sess.UserID, run.RepositoryID)
		if err != nil {
			return err
		}
		if !rr.has(repos.RoleReview) {
			return userErr(errForbidden, "Dismissing findings needs the repo:review role on %s.", rr.FullName())
		}
		fs, err := review.Findings(ctx, tx, id)
		if err != nil {
			return err
		}
		var f *review.StoredFinding
		for i := range fs {
			if fs[i].ID == fid {
				f = &fs[i]
			}
		}
		if f == nil {
			return errNotFound
		}
		fbID, err := review.AddFeedback(ctx, tx, review.Feedback{RepositoryID: rr.ID, PRNumber: run.PRNumber, Fingerprint: f.Fingerprint,
			FindingID: f.ID, Action: action, Reason: reason, Comment: r.PostForm.Get("comment"), Source: "dashboard", UserID: sess.UserID})
		if errors.Is(err, review.ErrInvalid) {
			return userErr(errBadForm, "The feedback was not valid: %v", err)
		}
		if err != nil {
			return err
		}
		_, err = audit.Record(ctx, tx, audit.Event{ActorUserID: sess.UserID, Actor: "user:" + sess.UserID,
			Action: "review_finding." + string(action), SubjectType: "review_finding", SubjectID: f.ID,
			Metadata: map[string]any{"repository": rr.FullName(), "pullRequest": run.PRNumber, "fingerprint": f.Fingerprint,
				"reason": reason, "feedbackId": fbID, "login": sess.Login}})
		return err
	})
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/reviews/"+id+"#finding-"+fid, http.StatusSeeOther)
	return nil
}

const auditPerPage = 50

type auditView struct {
	Entries []auditEntry
	Action  string
	Actor   string
	Page    int
	Next    bool
}

type auditEntry struct {
	Seq                    int64
	At                     time.Time
	Actor, Action, Subject string
	Metadata               string
}

// auditPage lists the tenant's audit log, newest first, filtered by an
// action prefix and an actor, 50 a page (repo:manage on any repository).
func (s *Server) auditPage(w http.ResponseWriter, r *http.Request, sess *Session) error {
	q := r.URL.Query()
	page, ok := pageOf(q.Get("page"), 10_000)
	if !ok {
		return userErr(errBadForm, "The page number must be between 1 and 10000.")
	}
	v := auditView{Action: clip(q.Get("action"), 100), Actor: clip(q.Get("actor"), 100), Page: page}
	err := s.db.InTenant(r.Context(), sess.Tenant, func(tx pgx.Tx) error {
		ctx := r.Context()
		var manager bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM role_grants WHERE user_id = $1 AND role = 'repo:manage')`, sess.UserID).Scan(&manager); err != nil {
			return err
		}
		if !manager {
			return userErr(errForbidden, "The audit log is for users with the repo:manage role.")
		}
		rows, err := tx.Query(ctx, `SELECT coalesce(seq, 0), at, actor, action, subject_type || ':' || subject_id, metadata::text FROM audit_log
			WHERE ($1 = '' OR starts_with(action, $1)) AND ($2 = '' OR actor = $2 OR actor_user_id::text = $2)
			ORDER BY at DESC, id DESC LIMIT $3 OFFSET $4`, v.Action, v.Actor, auditPerPage+1, (page-1)*auditPerPage)
		if err != nil {
			return err
		}
		v.Entries, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (auditEntry, error) {
			var e auditEntry
			return e, row.Scan(&e.Seq, &e.At, &e.Actor, &e.Action, &e.Subject, &e.Metadata)
		})
		if len(v.Entries) > auditPerPage {
			v.Entries, v.Next = v.Entries[:auditPerPage], true
		}
		return err
	})
	if err != nil {
		return err
	}
	s.page(w, sess, http.StatusOK, "audit", "Audit log", "audit", v)
	return nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
