package web

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/repos"
)

// Instance admins. They are code-host identities in the instance's
// configuration (QUAVON_WEB_ADMINS), never in repository content or a
// table a tenant can write: a session is an admin's when its identity's
// host and numeric id (as GitHub confirmed them at sign-in) are listed.
// Admins see the grants page of every tenant and grant and revoke roles
// there (repos.ChangeGrant, as `quavon admin grant|revoke` does), each
// change audited in that tenant's log with the admin's identity.

// Admin is an instance admin's identity: Host and ID match; Login is for
// display.
type Admin struct {
	Host  string
	ID    int64
	Login string
}

func (s *Server) isAdmin(host string, id int64) bool {
	for _, a := range s.cfg.Admins {
		if a.ID == id && strings.EqualFold(a.Host, host) {
			return true
		}
	}
	return false
}

func (s *Server) adminRoutes(mux *http.ServeMux) {
	mux.Handle("GET /admin/grants", s.signedIn(s.adminOnly(s.grantsPage)))
	mux.Handle("POST /admin/grants", s.signedIn(s.adminOnly(s.grantChange)))
}

// adminOnly refuses anyone but an instance admin.
func (s *Server) adminOnly(h func(http.ResponseWriter, *http.Request, *Session) error) func(http.ResponseWriter, *http.Request, *Session) error {
	return func(w http.ResponseWriter, r *http.Request, sess *Session) error {
		if !sess.Admin {
			return userErr(errForbidden, "This page is for instance admins.")
		}
		return h(w, r, sess)
	}
}

// Caps of the grants page.
const (
	maxAdminTenants = 200
	maxAdminGrants  = 1000
	maxAdminRepos   = 1000
)

type tenantLink struct {
	ID, Name string
	Current  bool
}

type grantsView struct {
	Tenants     []tenantLink
	MoreTenants bool
	Tenant      tenantLink
	Grants      []repos.GrantRow
	MoreGrants  bool
	Repos       []string
	Roles       []string
	Notice      string
}

// grantNotices are the fixed messages after a change (?done=).
var grantNotices = map[string]string{
	"granted": "The role was granted.", "held": "The role was already held; nothing changed.",
	"revoked": "The role was revoked.", "not_held": "The role was not held; nothing changed.",
}

// grantsPage lists one tenant's role grants (the session's tenant unless
// ?tenant= names another) with the forms that change them.
func (s *Server) grantsPage(w http.ResponseWriter, r *http.Request, sess *Session) error {
	ctx := r.Context()
	want := r.URL.Query().Get("tenant")
	if want == "" {
		want = string(sess.Tenant)
	}
	if !uuidRE.MatchString(want) {
		return userErr(errBadForm, "The tenant must be a tenant id.")
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT id::text FROM quavon_tenants() LIMIT $1`, maxAdminTenants+1)
	if err != nil {
		return fmt.Errorf("web: tenants: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("web: tenants: %w", err)
	}
	v := grantsView{Roles: []string{repos.RoleReview, repos.RoleManage}, Notice: grantNotices[r.URL.Query().Get("done")]}
	if len(ids) > maxAdminTenants {
		ids, v.MoreTenants = ids[:maxAdminTenants], true
	}
	found := false
	for _, id := range ids {
		l := tenantLink{ID: id, Current: id == want}
		if err := s.db.InTenant(ctx, postgres.TenantID(id), func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, `SELECT name FROM tenants`).Scan(&l.Name)
		}); err != nil {
			return fmt.Errorf("web: tenant %s: %w", id, err)
		}
		v.Tenants = append(v.Tenants, l)
		if l.Current {
			v.Tenant, found = l, true
		}
	}
	err = s.db.InTenant(ctx, postgres.TenantID(want), func(tx pgx.Tx) error {
		if !found {
			// A tenant past the list's cap, or none at all.
			err := tx.QueryRow(ctx, `SELECT name FROM tenants`).Scan(&v.Tenant.Name)
			if errors.Is(err, pgx.ErrNoRows) {
				return userErr(errNotFound, "There is no such tenant.")
			}
			if err != nil {
				return err
			}
			v.Tenant.ID = want
		}
		var err error
		if v.Grants, v.MoreGrants, err = repos.Grants(ctx, tx, maxAdminGrants); err != nil {
			return err
		}
		v.Repos, err = repos.Names(ctx, tx, maxAdminRepos)
		return err
	})
	if err != nil {
		return err
	}
	s.page(w, sess, http.StatusOK, "grants", "Role grants", "grants", v)
	return nil
}

// loginRE is GitHub's login syntax (letters, digits, single hyphens, at
// most 39 characters).
var loginRE = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9]|-[A-Za-z0-9]){0,38}$`)

// grantChange grants or revokes one role in one tenant (form fields
// tenant, op, login, github_id, repo, role), audited there with the
// admin's identity.
func (s *Server) grantChange(w http.ResponseWriter, r *http.Request, sess *Session) error {
	f := r.PostForm
	tenant := f.Get("tenant")
	if !uuidRE.MatchString(tenant) {
		return userErr(errBadForm, "The form does not name a tenant.")
	}
	var revoke bool
	switch f.Get("op") {
	case "grant":
	case "revoke":
		revoke = true
	default:
		return userErr(errBadForm, "Unknown change: want grant or revoke.")
	}
	// A grant's login must be a GitHub login; a revoke matches by id and
	// takes the login as stored (for the audit entry), whatever it is.
	login := f.Get("login")
	switch {
	case !revoke && !loginRE.MatchString(login):
		return userErr(errBadForm, "The login must be a GitHub login (letters, digits and single hyphens, at most 39 characters).")
	case revoke && (login == "" || len(login) > 100 || !utf8.ValidString(login)):
		return userErr(errBadForm, "The form's login is not valid.")
	}
	ghID, err := strconv.ParseInt(f.Get("github_id"), 10, 64)
	if err != nil || ghID <= 0 {
		return userErr(errBadForm, "The GitHub id must be the user's positive numeric id (GET /users/LOGIN shows it).")
	}
	owner, name, ok := strings.Cut(f.Get("repo"), "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return userErr(errBadForm, "The repository must be owner/name.")
	}
	role := f.Get("role")
	if role != repos.RoleManage && role != repos.RoleReview {
		return userErr(errBadForm, "The role must be repo:manage or repo:review.")
	}
	by := repos.GrantActor{Name: fmt.Sprintf("instance-admin:%s/%d", sess.Host, sess.GitHubID),
		Identity: map[string]any{"host": sess.Host, "login": sess.Login, "id": sess.GitHubID, "instanceAdmin": true}}
	if postgres.TenantID(tenant) == sess.Tenant {
		by.UserID = sess.UserID
	}
	var changed bool
	err = s.db.InTenant(r.Context(), postgres.TenantID(tenant), func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(r.Context(), `SELECT EXISTS (SELECT 1 FROM tenants)`).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return userErr(errNotFound, "There is no such tenant.")
		}
		var err error
		changed, err = repos.ChangeGrant(r.Context(), tx, repos.GrantChange{Host: s.cfg.Host, ExternalID: ghID, Login: login,
			Owner: owner, Name: name, Role: role, Revoke: revoke}, by)
		if errors.Is(err, repos.ErrNotFound) {
			return userErr(errNotFound, "The tenant has no repository %s/%s.", owner, name)
		}
		return err
	})
	if err != nil {
		return err
	}
	done := map[[2]bool]string{{false, true}: "granted", {false, false}: "held", {true, true}: "revoked", {true, false}: "not_held"}[[2]bool{revoke, changed}]
	http.Redirect(w, r, "/admin/grants?tenant="+tenant+"&done="+done, http.StatusSeeOther)
	return nil
}
