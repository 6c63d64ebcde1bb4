package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/postgres"
)

// Session is a signed-in user.
type Session struct {
	ID       string
	Tenant   postgres.TenantID
	UserID   string
	Host     string
	Login    string
	GitHubID int64
	Expires  time.Time
	// TenantName and Tenants (how many tenants know the identity) let the
	// page offer switching; Admin: an instance admin (Config.Admins).
	TenantName string
	Tenants    int
	Admin      bool

	formToken string
}

type sessionKey struct{}

var sessionRE = regexp.MustCompile(`^([0-9a-f]{32})\.([A-Za-z0-9_-]{43})$`)

// Revocation reasons.
const (
	revokedSignOut = "sign_out"
	revokedSignIn  = "signed_in_again"
)

func (s *Server) sessionCookie() string {
	if s.cfg.InsecureCookies {
		return "quavon-session"
	}
	return "__Host-quavon-session"
}

func (s *Server) loginCookie() string {
	if s.cfg.InsecureCookies {
		return "quavon-login"
	}
	return "__Host-quavon-login"
}

func (s *Server) setCookie(w http.ResponseWriter, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge, HttpOnly: true,
		Secure: !s.cfg.InsecureCookies, SameSite: http.SameSiteLaxMode})
}

func hashSecret(v string) []byte {
	h := sha256.Sum256([]byte(v))
	return h[:]
}

// formToken binds forms to the session: it derives from the cookie value,
// which a cross-site page can neither read nor guess.
func formToken(cookie string) string {
	h := sha256.Sum256([]byte("quavon-form:v1\n" + cookie))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

func tenantOf(hex32 string) postgres.TenantID {
	return postgres.TenantID(hex32[0:8] + "-" + hex32[8:12] + "-" + hex32[12:16] + "-" + hex32[16:20] + "-" + hex32[20:32])
}

// createSession stores a new session for the identity and returns the
// cookie value (shown to nobody but the browser; only its hash is kept).
// Expired sessions of the user are deleted on the way.
func (s *Server) createSession(ctx context.Context, tx pgx.Tx, tenant postgres.TenantID, userID, login string, ghID int64) (string, error) {
	var secret [32]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return "", err
	}
	value := strings.ReplaceAll(string(tenant), "-", "") + "." + base64.RawURLEncoding.EncodeToString(secret[:])
	now := s.now()
	if _, err := tx.Exec(ctx, `DELETE FROM web_sessions WHERE user_id = $1 AND (expires_at <= $2 OR idle_expires_at <= $2)`, userID, now); err != nil {
		return "", fmt.Errorf("web: sessions: %w", err)
	}
	_, err := tx.Exec(ctx, `INSERT INTO web_sessions (tenant_id, user_id, secret_hash, host, login, external_id, created_at,
			last_seen_at, idle_expires_at, expires_at)
		VALUES (quavon_current_tenant(), $1, $2, $3, $4, $5, $6, $6, $7, $8)`,
		userID, hashSecret(value), s.cfg.Host, login, ghID, now, now.Add(s.cfg.SessionIdle), now.Add(s.cfg.SessionAbsolute))
	if err != nil {
		return "", fmt.Errorf("web: create session: %w", err)
	}
	return value, nil
}

// lookup resolves a cookie value to a live session and extends its idle
// expiry (never past the absolute one).
func (s *Server) lookup(ctx context.Context, value string) (*Session, error) {
	m := sessionRE.FindStringSubmatch(value)
	if m == nil {
		return nil, errNoSession
	}
	tenant := tenantOf(m[1])
	sess := &Session{Tenant: tenant, formToken: formToken(value)}
	now := s.now()
	err := s.db.InTenant(ctx, tenant, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `UPDATE web_sessions SET last_seen_at = $2, idle_expires_at = least($2 + $3::interval, expires_at)
			WHERE secret_hash = $1 AND revoked_at IS NULL AND expires_at > $2 AND idle_expires_at > $2
			RETURNING id::text, user_id::text, host, login, external_id, expires_at, coalesce((SELECT name FROM tenants), ''),
				(SELECT count(*) FROM quavon_route_identity(web_sessions.host, web_sessions.external_id))`,
			hashSecret(value), now, s.cfg.SessionIdle.String()).Scan(&sess.ID, &sess.UserID, &sess.Host, &sess.Login, &sess.GitHubID, &sess.Expires,
			&sess.TenantName, &sess.Tenants)
		if errors.Is(err, pgx.ErrNoRows) {
			return errNoSession
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	sess.Admin = s.isAdmin(sess.Host, sess.GitHubID)
	return sess, nil
}

// revoke ends the session whose cookie value is given (no error when there
// is none).
func (s *Server) revoke(ctx context.Context, value, reason string) error {
	m := sessionRE.FindStringSubmatch(value)
	if m == nil {
		return nil
	}
	return s.db.InTenant(ctx, tenantOf(m[1]), func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE web_sessions SET revoked_at = $2, revoked_reason = $3
			WHERE secret_hash = $1 AND revoked_at IS NULL`, hashSecret(value), s.now(), reason)
		return err
	})
}

var errNoSession = errors.New("no session")

// signedIn runs h with the session, or sends the browser to sign in. A
// POST must also carry the session's form token.
func (s *Server) signedIn(h func(http.ResponseWriter, *http.Request, *Session) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var sess *Session
		if c, err := r.Cookie(s.sessionCookie()); err == nil {
			sess, err = s.lookup(r.Context(), c.Value)
			if err != nil && !errors.Is(err, errNoSession) {
				s.fail(w, r, err)
				return
			}
		}
		if sess == nil {
			if r.Method != http.MethodGet {
				s.renderError(w, r, http.StatusUnauthorized, "Your session ended. Sign in again.")
				return
			}
			s.render(w, http.StatusUnauthorized, "signin", pageData{Title: "Sign in", Redirect: r.URL.RequestURI()})
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), sessionKey{}, sess))
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			if err := r.ParseForm(); err != nil {
				s.fail(w, r, userErr(errBadForm, "The form could not be read."))
				return
			}
			if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("form_token")), []byte(sess.formToken)) != 1 {
				s.renderError(w, r, http.StatusForbidden, "The form token is missing or belongs to another session; reload the page and try again.")
				return
			}
		}
		if err := h(w, r, sess); err != nil {
			s.fail(w, r, err)
		}
	})
}

// maxFormBytes caps a form body (the policy editor's document is the
// largest).
const maxFormBytes = 256 << 10

func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
