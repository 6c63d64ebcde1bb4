package appauth

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/quavon/quavon/internal/github"
)

var testKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

func pkcs1PEM(tb testing.TB) []byte {
	tb.Helper()
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(testKey())})
}

func pkcs8PEM(tb testing.TB) []byte {
	tb.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(testKey())
	if err != nil {
		tb.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// fakeClock is a settable clock whose Sleep advances time instead of
// sleeping and records each wait.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return nil
}

func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// tokenServer is a minimal installation-token endpoint: it checks the app
// JWT and answers with what grant returns for the request.
type tokenServer struct {
	t        testing.TB
	mu       sync.Mutex
	mints    int
	revoked  []string
	requests []tokenRequest
	// grant decides the response; nil echoes the request for owner "o".
	grant func(req tokenRequest) (perms github.Permissions, fullName string)
	// lifetime of minted tokens from clock.
	clock    *fakeClock
	lifetime time.Duration
	// extra routes served with installation tokens.
	routes map[string]http.HandlerFunc
}

type tokenRequest struct {
	Repositories []string           `json:"repositories"`
	Permissions  github.Permissions `json:"permissions"`
}

func (s *tokenServer) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /app/installations/{id}/access_tokens", func(w http.ResponseWriter, r *http.Request) {
		raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			http.Error(w, `{"message":"no jwt"}`, http.StatusUnauthorized)
			return
		}
		_, err := jwt.Parse(raw, func(*jwt.Token) (any, error) { return &testKey().PublicKey, nil },
			jwt.WithValidMethods([]string{"RS256"}), jwt.WithTimeFunc(s.clock.Now), jwt.WithIssuer("42"))
		if err != nil {
			http.Error(w, `{"message":"bad jwt"}`, http.StatusUnauthorized)
			return
		}
		var req tokenRequest
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, `{"message":"bad body"}`, http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.mints++
		n := s.mints
		s.requests = append(s.requests, req)
		s.mu.Unlock()
		perms, full := req.Permissions, "o/"+strings.Join(req.Repositories, ",")
		if s.grant != nil {
			perms, full = s.grant(req)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{
			"token":                "ghs_token" + strings.Repeat("x", n),
			"expires_at":           s.clock.Now().Add(s.lifetime).Format(time.RFC3339),
			"permissions":          perms,
			"repository_selection": "selected",
			"repositories":         []map[string]any{{"id": 7, "name": strings.Join(req.Repositories, ","), "full_name": full}},
		})
	})
	mux.HandleFunc("DELETE /installation/token", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.revoked = append(s.revoked, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	for pattern, h := range s.routes {
		mux.HandleFunc(pattern, h)
	}
	return mux
}

func (s *tokenServer) Mints() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mints
}

// newTestApp starts ts and returns an App pointed at it on clock.
func newTestApp(tb testing.TB, ts *tokenServer) (*App, *httptest.Server) {
	tb.Helper()
	if ts.clock == nil {
		ts.clock = newFakeClock()
	}
	if ts.lifetime == 0 {
		ts.lifetime = time.Hour
	}
	ts.t = tb
	srv := httptest.NewServer(ts.handler())
	tb.Cleanup(srv.Close)
	app, err := NewApp(AppConfig{
		ID: 42, PrivateKeyPEM: pkcs1PEM(tb), APIURL: srv.URL + "/",
		Now: ts.clock.Now, HTTP: github.TransportConfig{Sleep: ts.clock.Sleep, Base: srv.Client().Transport},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return app, srv
}
