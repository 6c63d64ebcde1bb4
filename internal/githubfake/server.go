package githubfake

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	graphql "github.com/graph-gophers/graphql-go"

	"github.com/quavon/quavon/internal/githubfake/apidesc"
	"github.com/quavon/quavon/internal/testenv"
)

// Documentation URLs GitHub puts into error bodies. Clients must not depend on
// them except for the secondary-rate-limit one, which go-github keys on.
const (
	docsREST               = "https://docs.github.com/rest"
	docsSecondaryRateLimit = "https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
	docsPrimaryRateLimit   = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-primary-rate-limits"

	// maxRequestBody bounds what the emulator reads; GitHub refuses larger
	// REST bodies too (SARIF has its own, smaller, limit on the decoded data).
	maxRequestBody = 64 << 20

	rateLimitInstallation = 5000
	rateLimitAnonymous    = 60
)

// TokenKind says how a request authenticated.
type TokenKind string

// Token kinds recorded in the request log.
const (
	TokenNone         TokenKind = "none"         // no Authorization header
	TokenJWT          TokenKind = "jwt"          // a valid app JWT
	TokenInstallation TokenKind = "installation" // a valid installation access token
	TokenUser         TokenKind = "user"         // a valid user-to-server token (OAuth web flow)
	TokenInvalid      TokenKind = "invalid"      // credentials present but refused
)

// Request is one entry of the request log.
type Request struct {
	Method         string
	Path           string // unescaped URL path, e.g. /repos/acme/app/git/refs
	Query          string // raw query string
	TokenKind      TokenKind
	InstallationID int64  // for installation tokens and JWT calls naming one
	Status         int    // status sent (0 when the connection was dropped)
	GraphQL        string // for POST /graphql: the root fields, e.g. "createCommitOnBranch"
	Operation      string // GitHub's operationId of the route ("" when none matched)
}

// Server is the emulator. All exported methods are safe for concurrent use.
type Server struct {
	// URL is the base URL: REST lives at URL+"/", GraphQL at URL+"/graphql".
	URL string

	tb     testing.TB
	hs     *httptest.Server
	client *http.Client // for webhook deliveries
	schema *graphql.Schema
	routes []route
	desc   *apidesc.Descriptions // nil: answers are not checked
	// corrupt rewrites answers (tests of the check only).
	corrupt func([]byte) []byte

	mu            sync.Mutex
	offset        time.Duration
	lastID        int64
	accounts      map[string]*Account // by lower-case login
	apps          map[int64]*App
	installations map[int64]*Installation
	tokens        map[string]*accessToken
	repos         map[string]*Repo // by lower-case full name
	faults        []*Fault
	requests      []Request
	// acked holds the common commits a fetch negotiation's round was
	// ACKed for, until its "done" request (githttp.go).
	acked         map[string]ackedRound
	rateUsed      map[string]int // per rate-limit bucket
	auto          autoState
	signedIn      *Account                 // who approves OAuth authorizations
	oauthCodes    map[string]*oauthCode    // by code
	userTokens    map[string]*userToken    // by token
	manifestCodes map[string]*manifestCode // manifest.go
}

// New starts an emulator that is closed when the test ends.
func New(tb testing.TB) *Server {
	tb.Helper()
	s := &Server{
		tb:            tb,
		lastID:        1000,
		accounts:      map[string]*Account{},
		apps:          map[int64]*App{},
		installations: map[int64]*Installation{},
		tokens:        map[string]*accessToken{},
		repos:         map[string]*Repo{},
		rateUsed:      map[string]int{},
		auto:          autoState{apps: map[int64]bool{}},
		manifestCodes: map[string]*manifestCode{},
	}
	d, ok, err := apidesc.Shared()
	switch {
	case err != nil:
		tb.Fatalf("githubfake: GitHub's API descriptions: %v", err)
	case !ok && testenv.Required():
		tb.Fatalf("githubfake: GitHub's API descriptions ($%s) are required (QUAVON_TEST_REQUIRE_SERVICES=1) but not set; run scripts/test", apidesc.EnvDir)
	}
	s.desc = d
	s.routes = s.buildRoutes()
	s.schema = graphql.MustParseSchema(graphqlSchema, &gqlRoot{s: s}, graphql.UseFieldResolvers(), graphql.MaxParallelism(1))
	s.hs = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.URL = s.hs.URL
	s.client = &http.Client{Timeout: 30 * time.Second}
	tb.Cleanup(s.hs.Close)
	tb.Cleanup(s.WaitDeliveries) // registered last: runs before the server closes
	return s
}

// Now is the emulator's clock (real time shifted by Advance).
func (s *Server) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now()
}

func (s *Server) now() time.Time { return time.Now().Add(s.offset).UTC() }

// Advance moves the emulator's clock forward, e.g. past a token's expiry.
func (s *Server) Advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.offset += d
}

// Requests returns a copy of the request log.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// ResetRequests clears the request log.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

func (s *Server) newID() int64 {
	s.lastID++
	return s.lastID
}

// --- routing ---

type handlerFunc func(c *call)

type route struct {
	method  string
	pattern string
	op      string // GitHub's operationId
	segs    []string
	h       handlerFunc
}

// match supports {name} for one segment and one {name...} that may be
// followed by literal segments (branch names contain slashes, and clients
// differ in whether they escape them).
func (rt route) match(segs []string) (map[string]string, bool) {
	params := map[string]string{}
	for i, p := range rt.segs {
		if strings.HasSuffix(p, "...}") {
			tail := rt.segs[i+1:]
			if len(segs)-i < len(tail)+1 {
				return nil, false
			}
			for j, t := range tail {
				if segs[len(segs)-len(tail)+j] != t {
					return nil, false
				}
			}
			params[p[1:len(p)-4]] = strings.Join(segs[i:len(segs)-len(tail)], "/")
			return params, true
		}
		if i >= len(segs) {
			return nil, false
		}
		if strings.HasPrefix(p, "{") {
			if segs[i] == "" {
				return nil, false
			}
			params[p[1:len(p)-1]] = segs[i]
			continue
		}
		if p != segs[i] {
			return nil, false
		}
	}
	return params, len(segs) == len(rt.segs)
}

func splitPath(escaped string) ([]string, bool) {
	parts := strings.Split(strings.Trim(escaped, "/"), "/")
	for i, p := range parts {
		u, err := url.PathUnescape(p)
		if err != nil {
			return nil, false
		}
		parts[i] = u
	}
	return parts, true
}

func patternSegs(p string) []string { return strings.Split(strings.Trim(p, "/"), "/") }

// call is one request being served. Handlers run with s.mu held.
type call struct {
	s      *Server
	r      *http.Request
	params map[string]string
	body   []byte
	kind   TokenKind
	op     string // operationId of the matched route
	fault  bool   // an injected fault answered
	// checked, when set, is what checkAnswer validates instead of out
	// (the answer without parts the description cannot know).
	checked []byte
	app     *App         // JWT calls
	tok     *accessToken // installation token calls
	user    *Account     // user token calls
	gql     string

	status int
	header http.Header
	out    []byte
}

func (c *call) param(n string) string { return c.params[n] }

func (c *call) json(status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		c.s.tb.Errorf("githubfake: encode response: %v", err)
		status, b = http.StatusInternalServerError, []byte(`{"message":"Server Error"}`)
	}
	c.status = status
	c.header.Set("Content-Type", "application/json; charset=utf-8")
	c.out = b
}

// fail writes GitHub's error body.
func (c *call) fail(status int, msg string) {
	c.json(status, map[string]any{"message": msg, "documentation_url": docsREST, "status": strconv.Itoa(status)})
}

func (c *call) notFound()  { c.fail(http.StatusNotFound, "Not Found") }
func (c *call) forbidden() { c.fail(http.StatusForbidden, "Resource not accessible by integration") }

// validationFailed writes a 422 with GitHub's "errors" array.
func (c *call) validationFailed(msg string, errs ...map[string]any) {
	body := map[string]any{"message": msg, "documentation_url": docsREST, "status": "422"}
	if len(errs) > 0 {
		body["errors"] = errs
	}
	c.json(http.StatusUnprocessableEntity, body)
}

func (c *call) decode(v any) bool {
	if len(bytes.TrimSpace(c.body)) == 0 {
		c.fail(http.StatusBadRequest, "Problems parsing JSON")
		return false
	}
	if err := json.Unmarshal(c.body, v); err != nil {
		c.fail(http.StatusBadRequest, "Problems parsing JSON")
		return false
	}
	return true
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	segs, ok := splitPath(r.URL.EscapedPath())
	// Webhooks of API writes go out after the answer; the delivery is
	// counted (WaitDeliveries) before the answer can reach the client.
	pending := false
	defer func() {
		if pending {
			go func() {
				defer s.auto.wg.Done()
				s.flush()
			}()
		}
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	reserve := func() {
		if len(s.auto.outbox) > 0 && !pending {
			pending = true
			s.auto.wg.Add(1)
		}
	}

	c := &call{s: s, r: r, body: body, header: http.Header{}, kind: TokenNone}
	entry := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery}
	logIt := func(status int) {
		entry.Status = status
		entry.TokenKind = c.kind
		entry.GraphQL = c.gql
		entry.Operation = c.op
		if c.tok != nil {
			entry.InstallationID = c.tok.inst.ID
		}
		if c.app != nil && c.params["installation_id"] != "" {
			entry.InstallationID, _ = strconv.ParseInt(c.params["installation_id"], 10, 64)
		}
		s.requests = append(s.requests, entry)
	}

	// Faults answering before anything happens still authenticate first, so
	// the log shows who was refused.
	if s.serveOAuth(w, c) {
		return
	}
	c.authenticate()
	if s.serveGit(w, c) {
		return
	}
	if s.serveManifestForm(w, c) {
		logIt(c.status)
		return
	}
	fault := s.takeFault(r.Method, r.URL.Path)
	if fault != nil && fault.Kind != FaultLoseResponse {
		c.fault = true
		c.writeFault(fault)
		reserve()
		s.finish(w, c)
		logIt(c.status)
		return
	}

	if !ok || len(body) > maxRequestBody {
		c.fail(http.StatusBadRequest, "Bad Request")
	} else if c.kind == TokenInvalid {
		// authenticate already wrote the refusal.
	} else {
		var h handlerFunc
		for _, rt := range s.routes {
			if params, ok := rt.match(segs); ok && rt.method == r.Method {
				c.params, h, c.op = params, rt.h, rt.op
				break
			}
		}
		if h == nil {
			c.notFound() // GitHub answers unknown routes and methods with 404
		} else {
			h(c)
		}
	}

	reserve()
	if fault != nil && fault.Kind == FaultLoseResponse {
		// The write happened; the client never learns about it.
		logIt(0)
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	s.finish(w, c)
	logIt(c.status)
}

// finish adds rate-limit headers and ETags, answers If-None-Match, and writes.
func (s *Server) finish(w http.ResponseWriter, c *call) {
	if c.status == 0 {
		c.status = http.StatusNoContent
	}
	if c.header.Get("X-Ratelimit-Limit") == "" {
		s.rateHeaders(c)
	}
	if s.corrupt != nil && c.out != nil {
		c.out = s.corrupt(c.out)
	}
	s.checkAnswer(c)
	h := w.Header()
	for k, v := range c.header {
		h[k] = v
	}
	h.Set("X-GitHub-Api-Version-Selected", "2022-11-28")
	h.Set("X-GitHub-Request-Id", fmt.Sprintf("FAKE:%d", len(s.requests)+1))
	if c.r.Method == http.MethodGet && c.status == http.StatusOK && c.out != nil {
		sum := sha256.Sum256(c.out)
		etag := `W/"` + hex.EncodeToString(sum[:16]) + `"`
		h.Set("ETag", etag)
		h.Set("Cache-Control", "private, max-age=60, s-maxage=60")
		h.Set("Vary", "Accept, Authorization, Cookie, X-GitHub-OTP")
		if inm := c.r.Header.Get("If-None-Match"); inm != "" && etagMatches(inm, etag) {
			// GitHub does not count 304s against the primary rate limit.
			s.rateUsed[s.rateBucket(c)]--
			h.Del("Content-Type")
			w.WriteHeader(http.StatusNotModified)
			c.status = http.StatusNotModified
			return
		}
	}
	if c.out != nil {
		h.Set("Content-Length", strconv.Itoa(len(c.out)))
	}
	w.WriteHeader(c.status)
	if c.out != nil && c.status != http.StatusNoContent {
		_, _ = w.Write(c.out)
	}
}

// checkAnswer holds every answer to GitHub's description of its route: the
// operation's documented response for that status, or GitHub's generic
// error shape for an error status the operation does not describe and
// apidesc.ErrorStatuses lists with its reason (401 Bad credentials, for
// one, is possible everywhere). Injected faults and GraphQL are not
// checked.
func (s *Server) checkAnswer(c *call) {
	if s.desc == nil || c.fault || c.r.URL.Path == "/graphql" {
		return
	}
	body := c.out
	if c.checked != nil {
		body = c.checked
	}
	if c.status == http.StatusNoContent {
		body = nil
	}
	var err error
	if c.op == "" {
		err = s.desc.CheckError(c.status, body)
	} else {
		err = s.desc.CheckResponse(c.op, c.status, body)
	}
	if err != nil {
		s.tb.Errorf("githubfake: %s %s answered %d, which GitHub's description (%s) does not allow: %v\nbody: %.3000s",
			c.r.Method, c.r.URL.Path, c.status, cmp.Or(c.op, "no route"), err, body)
	}
}

func etagMatches(header, etag string) bool {
	strip := func(e string) string { return strings.TrimPrefix(strings.TrimSpace(e), "W/") }
	for _, e := range strings.Split(header, ",") {
		if strings.TrimSpace(e) == "*" || strip(e) == strip(etag) {
			return true
		}
	}
	return false
}

func (s *Server) rateBucket(c *call) string {
	resource := "core"
	if c.r.URL.Path == "/graphql" {
		resource = "graphql"
	}
	switch {
	case c.tok != nil:
		return fmt.Sprintf("inst:%d:%s", c.tok.inst.ID, resource)
	case c.app != nil:
		return fmt.Sprintf("app:%d:%s", c.app.ID, resource)
	default:
		return "anon:" + resource
	}
}

func (s *Server) rateHeaders(c *call) {
	bucket := s.rateBucket(c)
	limit := rateLimitInstallation
	if c.tok == nil && c.app == nil {
		limit = rateLimitAnonymous
	}
	s.rateUsed[bucket]++
	used := s.rateUsed[bucket]
	resource := "core"
	if c.r.URL.Path == "/graphql" {
		resource = "graphql"
	}
	c.header.Set("X-Ratelimit-Limit", strconv.Itoa(limit))
	c.header.Set("X-Ratelimit-Remaining", strconv.Itoa(max(limit-used, 0)))
	c.header.Set("X-Ratelimit-Used", strconv.Itoa(used))
	c.header.Set("X-Ratelimit-Reset", strconv.FormatInt(s.now().Truncate(time.Hour).Add(time.Hour).Unix(), 10))
	c.header.Set("X-Ratelimit-Resource", resource)
}
