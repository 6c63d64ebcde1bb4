package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/audit"
	"github.com/quavon/quavon/internal/postgres"
)

// Choosing a tenant. An identity known in several tenants signs in to none
// of them at random: the OAuth callback stores the confirmed identity in
// web_sign_ins (behind a random cookie, ten minutes, one use) and shows
// the tenants it is known in; the posted choice is checked against
// quavon_route_identity() again and binds a new session to that tenant. A
// signed-in user switches the same way: a new session in the chosen
// tenant, the old one revoked (rotation).

// Revocation reason of a session left by switching tenants.
const revokedSwitch = "switched_tenant"

// maxTenantsShown caps the chooser (an identity is rarely in more than a
// few tenants).
const maxTenantsShown = 100

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func (s *Server) tenantRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /auth/choose", s.choosePage)
	mux.HandleFunc("POST /auth/choose", s.choose)
	mux.Handle("GET /auth/tenants", s.signedIn(s.tenantsPage))
	mux.Handle("POST /auth/tenants", s.signedIn(s.switchTenant))
}

func (s *Server) chooseCookie() string {
	if s.cfg.InsecureCookies {
		return "quavon-choose"
	}
	return "__Host-quavon-choose"
}

// identityTenants lists the tenants that know the identity.
func (s *Server) identityTenants(ctx context.Context, host string, id int64) ([]postgres.TenantID, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT t::text FROM quavon_route_identity($1, $2) AS t LIMIT $3`, host, id, maxTenantsShown)
	if err != nil {
		return nil, fmt.Errorf("web: tenants of the identity: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("web: tenants of the identity: %w", err)
	}
	out := make([]postgres.TenantID, len(ids))
	for i, t := range ids {
		out[i] = postgres.TenantID(t)
	}
	return out, nil
}

// tenantChoice is one row of the chooser.
type tenantChoice struct {
	ID      string
	Name    string
	Roles   int
	Current bool
}

type chooserView struct {
	Login   string
	Tenants []tenantChoice
	Action  string
}

// choices are the tenants offered to the identity, with each one's name
// and the identity's role count there.
func (s *Server) choices(ctx context.Context, host string, id int64, current postgres.TenantID) ([]tenantChoice, error) {
	tenants, err := s.identityTenants(ctx, host, id)
	if err != nil {
		return nil, err
	}
	var out []tenantChoice
	for _, t := range tenants {
		c := tenantChoice{ID: string(t), Current: t == current}
		err := s.db.InTenant(ctx, t, func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, `SELECT (SELECT name FROM tenants), (SELECT count(*) FROM role_grants g JOIN user_identities i ON i.user_id = g.user_id
				WHERE i.host = $1 AND i.external_id = $2)`, host, id).Scan(&c.Name, &c.Roles)
		})
		if err != nil {
			return nil, fmt.Errorf("web: tenant %s: %w", t, err)
		}
		out = append(out, c)
	}
	// Offered are the tenants where the identity holds a role (and the
	// current one); only if it holds none anywhere, every tenant that knows
	// it.
	granted := slices.DeleteFunc(slices.Clone(out), func(c tenantChoice) bool { return c.Roles == 0 && !c.Current })
	if len(granted) > 0 {
		out = granted
	}
	slices.SortStableFunc(out, func(a, b tenantChoice) int { return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)) })
	return out, nil
}

// pendingSignIn is a confirmed identity waiting for its tenant.
type pendingSignIn struct {
	Host, Login string
	ID          int64
	Return      string
}

// holdSignIn stores the identity for the chooser and sends the browser to
// it.
func (s *Server) holdSignIn(w http.ResponseWriter, r *http.Request, p pendingSignIn) error {
	var secret [32]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return err
	}
	value := base64.RawURLEncoding.EncodeToString(secret[:])
	now := s.now()
	ctx := r.Context()
	if _, err := s.db.Pool.Exec(ctx, `DELETE FROM web_sign_ins WHERE expires_at <= $1`, now); err != nil {
		return fmt.Errorf("web: expired sign-ins: %w", err)
	}
	if _, err := s.db.Pool.Exec(ctx, `INSERT INTO web_sign_ins (secret_hash, host, login, external_id, return_path, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, hashSecret(value), p.Host, p.Login, p.ID, p.Return, now, now.Add(loginTTL)); err != nil {
		return fmt.Errorf("web: hold the sign-in: %w", err)
	}
	s.setCookie(w, s.chooseCookie(), value, int(loginTTL.Seconds()))
	http.Redirect(w, r, "/auth/choose", http.StatusSeeOther)
	return nil
}

var chooseValueRE = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)

// pending reads the browser's waiting sign-in; take deletes it (one use).
func (s *Server) pending(ctx context.Context, r *http.Request, take bool) (*pendingSignIn, string, error) {
	c, err := r.Cookie(s.chooseCookie())
	if err != nil || !chooseValueRE.MatchString(c.Value) {
		return nil, "", errNoSession
	}
	q := `SELECT host, login, external_id, return_path FROM web_sign_ins WHERE secret_hash = $1 AND expires_at > $2`
	if take {
		q = `DELETE FROM web_sign_ins WHERE secret_hash = $1 AND expires_at > $2 RETURNING host, login, external_id, return_path`
	}
	var p pendingSignIn
	err = s.db.Pool.QueryRow(ctx, q, hashSecret(c.Value), s.now()).Scan(&p.Host, &p.Login, &p.ID, &p.Return)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, "", errNoSession
	}
	if err != nil {
		return nil, "", fmt.Errorf("web: waiting sign-in: %w", err)
	}
	return &p, c.Value, nil
}

const signInAgain = "This sign-in waited too long or was already used. Sign in again."

func (s *Server) choosePage(w http.ResponseWriter, r *http.Request) {
	p, value, err := s.pending(r.Context(), r, false)
	if errors.Is(err, errNoSession) {
		s.renderError(w, r, http.StatusUnauthorized, signInAgain)
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	cs, err := s.choices(r.Context(), p.Host, p.ID, "")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, http.StatusOK, "tenants", pageData{Title: "Choose a tenant", FormTok: formToken(value),
		Content: chooserView{Login: p.Login, Tenants: cs, Action: "/auth/choose"}})
}

// choose binds a new session to the tenant chosen after sign-in. The form
// token derives from the waiting sign-in's cookie; cross-origin protection
// covers every POST.
func (s *Server) choose(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, userErr(errBadForm, "The form could not be read."))
		return
	}
	c, err := r.Cookie(s.chooseCookie())
	if err != nil || subtle.ConstantTimeCompare([]byte(r.PostForm.Get("form_token")), []byte(formToken(c.Value))) != 1 {
		s.renderError(w, r, http.StatusForbidden, "The form token is missing or belongs to another sign-in; sign in again.")
		return
	}
	p, _, err := s.pending(r.Context(), r, true)
	s.setCookie(w, s.chooseCookie(), "", -1)
	if errors.Is(err, errNoSession) {
		s.renderError(w, r, http.StatusUnauthorized, signInAgain)
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	tenant, err := s.chosenTenant(r, p.Host, p.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.bindSession(w, r, tenant, p.Login, p.ID, p.Return, "choose"); err != nil {
		s.fail(w, r, err)
	}
}

// chosenTenant is the posted tenant if it is one the identity is offered
// (choices, read again: the form is not trusted).
func (s *Server) chosenTenant(r *http.Request, host string, id int64) (postgres.TenantID, error) {
	want := r.PostForm.Get("tenant")
	if !uuidRE.MatchString(want) {
		return "", userErr(errBadForm, "The form does not name a tenant.")
	}
	cs, err := s.choices(r.Context(), host, id, "")
	if err != nil {
		return "", err
	}
	for _, c := range cs {
		if c.ID == want {
			return postgres.TenantID(want), nil
		}
	}
	return "", userErr(errForbidden, "Your GitHub account holds no role in that tenant.")
}

// bindSession signs the identity in to tenant: a new session (the
// browser's earlier one revoked), audited in that tenant, and the browser
// sent to ret.
func (s *Server) bindSession(w http.ResponseWriter, r *http.Request, tenant postgres.TenantID, login string, ghID int64, ret, via string) error {
	ctx := r.Context()
	var value string
	err := s.db.InTenant(ctx, tenant, func(tx pgx.Tx) error {
		var userID string
		if err := tx.QueryRow(ctx, `UPDATE user_identities SET login = $3 WHERE host = $1 AND external_id = $2 RETURNING user_id::text`,
			s.cfg.Host, ghID, login).Scan(&userID); err != nil {
			return err
		}
		var err error
		if value, err = s.createSession(ctx, tx, tenant, userID, login, ghID); err != nil {
			return err
		}
		meta := map[string]any{"host": s.cfg.Host, "login": login, "id": ghID}
		if via != "" {
			meta["via"] = via
		}
		_, err = audit.Record(ctx, tx, audit.Event{ActorUserID: userID, Actor: "user:" + userID, Action: "web.sign_in",
			SubjectType: "user", SubjectID: userID, Metadata: meta})
		return err
	})
	if err != nil {
		return err
	}
	// Rotation: the browser's earlier session (if any) ends here.
	if old, err := r.Cookie(s.sessionCookie()); err == nil {
		reason := revokedSignIn
		if via == "switch" {
			reason = revokedSwitch
		}
		if err := s.revoke(ctx, old.Value, reason); err != nil {
			s.log.Warn("web: revoke the previous session", slog.String("error", err.Error()))
		}
	}
	s.setCookie(w, s.sessionCookie(), value, int(s.cfg.SessionAbsolute.Seconds()))
	http.Redirect(w, r, ret, http.StatusSeeOther)
	return nil
}

// tenantsPage lists the signed-in identity's tenants to switch to.
func (s *Server) tenantsPage(w http.ResponseWriter, r *http.Request, sess *Session) error {
	cs, err := s.choices(r.Context(), sess.Host, sess.GitHubID, sess.Tenant)
	if err != nil {
		return err
	}
	s.page(w, sess, http.StatusOK, "tenants", "Switch tenant", "tenants", chooserView{Login: sess.Login, Tenants: cs, Action: "/auth/tenants"})
	return nil
}

// switchTenant moves the signed-in identity to another of its tenants: a
// new session there, this one revoked.
func (s *Server) switchTenant(w http.ResponseWriter, r *http.Request, sess *Session) error {
	tenant, err := s.chosenTenant(r, sess.Host, sess.GitHubID)
	if err != nil {
		return err
	}
	return s.bindSession(w, r, tenant, sess.Login, sess.GitHubID, "/repos", "switch")
}
