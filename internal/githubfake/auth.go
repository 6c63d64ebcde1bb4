package githubfake

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

const (
	tokenLifetime = time.Hour
	// GitHub refuses app JWTs whose exp is more than 10 minutes ahead; its
	// own recipe backdates iat by 60 s for clock drift, so exp-iat may reach
	// 11 minutes.
	jwtMaxLifetime = 10 * time.Minute
	jwtClockSkew   = 60 * time.Second
)

// Permission levels, in GitHub's vocabulary.
const (
	Read  = "read"
	Write = "write"
	Admin = "admin"
)

func levelRank(l string) int {
	switch l {
	case Read:
		return 1
	case Write:
		return 2
	case Admin:
		return 3
	}
	return 0
}

// knownPermissions are the repository permission names a token may request.
var knownPermissions = map[string]bool{
	"actions": true, "administration": true, "checks": true, "contents": true,
	"deployments": true, "environments": true, "issues": true, "metadata": true,
	"packages": true, "pages": true, "pull_requests": true, "repository_hooks": true,
	"repository_projects": true, "secret_scanning_alerts": true, "secrets": true,
	"security_events": true, "single_file": true, "statuses": true,
	"vulnerability_alerts": true, "workflows": true, "members": true,
	"organization_administration": true,
}

// Account is a user, organisation or bot.
type Account struct {
	ID    int64
	Login string
	Type  string // "User", "Organization" or "Bot"
}

// App is a registered GitHub App.
type App struct {
	ID            int64
	Slug          string
	Name          string
	PrivateKey    *rsa.PrivateKey
	PrivateKeyPEM []byte // PKCS#1, as GitHub hands it out
	WebhookSecret string
	Bot           *Account // "<slug>[bot]"
	Owner         *Account // who registered it (nil: its bot)

	// ClientID and ClientSecret are the app's OAuth credentials (the
	// user-to-server web flow, oauth.go; the manifest flow hands them out).
	ClientID     string
	ClientSecret string

	webhookURL  string
	callbackURL string
	created     time.Time
	// Set by the manifest flow (manifest.go); nil for RegisterApp's apps.
	permissions map[string]string
	events      []string
}

// Installation is an app installed on an account.
type Installation struct {
	ID          int64
	App         *App
	Account     *Account
	Permissions map[string]string
	Events      []string
	// Repos is nil when the installation covers all of the account's
	// repositories ("all"), otherwise the selected lower-case full names.
	Repos     []string
	Suspended bool
	Removed   bool

	created, updated, suspendedAt time.Time
	suspendedBy                   *Account
}

type accessToken struct {
	value   string
	inst    *Installation
	perms   map[string]string
	repos   []string // lower-case full names; nil = all the installation covers
	expires time.Time
}

// RegisterApp creates an app with a fresh 2048-bit key and webhook secret.
func (s *Server) RegisterApp(slug string) *App {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.registerApp(slug)
}

// registerApp is RegisterApp with s.mu held.
func (s *Server) registerApp(slug string) *App {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		s.tb.Fatalf("githubfake: generate key: %v", err)
	}
	secret := make([]byte, 20)
	_, _ = rand.Read(secret)
	clientSecret := make([]byte, 20)
	_, _ = rand.Read(clientSecret)
	app := &App{
		ID:            s.newID(),
		Slug:          slug,
		Name:          slug,
		PrivateKey:    key,
		PrivateKeyPEM: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		WebhookSecret: hex.EncodeToString(secret),
		ClientSecret:  hex.EncodeToString(clientSecret),
		created:       s.now(),
	}
	app.ClientID = fmt.Sprintf("Iv23li%014d", app.ID)
	app.Bot = s.account(slug+"[bot]", "Bot")
	s.apps[app.ID] = app
	return app
}

// SetWebhookURL sets where Deliver posts the app's events.
func (s *Server) SetWebhookURL(app *App, url string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	app.webhookURL = url
}

// AddUser creates (or returns) a user account.
func (s *Server) AddUser(login string) *Account {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.account(login, "User")
}

// AddOrg creates (or returns) an organisation account.
func (s *Server) AddOrg(login string) *Account {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.account(login, "Organization")
}

func (s *Server) account(login, typ string) *Account {
	if a, ok := s.accounts[strings.ToLower(login)]; ok {
		return a
	}
	a := &Account{ID: s.newID(), Login: login, Type: typ}
	s.accounts[strings.ToLower(login)] = a
	return a
}

// Install installs app on account with perms ("contents": "write", ...).
// repos are "owner/name"; none means all of the account's repositories.
// metadata: read is always granted, as on GitHub.
func (s *Server) Install(app *App, account string, perms map[string]string, repos ...string) *Installation {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := maps.Clone(perms)
	if p == nil {
		p = map[string]string{}
	}
	if levelRank(p["metadata"]) < levelRank(Read) {
		p["metadata"] = Read
	}
	for k, v := range p {
		if !knownPermissions[k] || levelRank(v) == 0 {
			s.tb.Fatalf("githubfake: Install: bad permission %s=%s", k, v)
		}
	}
	in := &Installation{
		ID:          s.newID(),
		App:         app,
		Account:     s.account(account, "User"),
		Permissions: p,
		// Installation events reach every app; they are not subscribed to.
		Events:  []string{"issues", "issue_comment", "pull_request", "repository"},
		created: s.now(),
		updated: s.now(),
	}
	if len(repos) > 0 {
		in.Repos = lowerNames(repos)
	}
	s.installations[in.ID] = in
	return in
}

// SetSuspended suspends or unsuspends an installation (suspended by the
// account's owner); a suspended installation gets no tokens and its
// tokens stop working.
func (s *Server) SetSuspended(in *Installation, suspended bool) {
	defer s.flush()
	s.mu.Lock()
	defer s.mu.Unlock()
	if in.Suspended == suspended {
		return
	}
	in.Suspended = suspended
	in.suspendedAt, in.suspendedBy = time.Time{}, nil
	if suspended {
		in.suspendedAt, in.suspendedBy = s.now(), in.Account
		if in.Account.Type == "Organization" {
			in.suspendedBy = s.account(in.Account.Login+"-admin", "User")
		}
	}
	in.updated = s.now()
	action, by := "unsuspend", in.Account.Login
	if suspended {
		action, by = "suspend", in.suspendedBy.Login
	}
	s.emitInstallation(in, "installation", func() map[string]any { return s.installationEvent(action, in, by) })
}

// SetEvents changes the events an installation is subscribed to (what the
// app's settings say; Install subscribes every installation to issues,
// issue_comment, pull_request and repository).
func (s *Server) SetEvents(in *Installation, events []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in.Events = slices.Clone(events)
	in.updated = s.now()
}

// Uninstall removes an installation and revokes its tokens.
func (s *Server) Uninstall(in *Installation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in.Removed = true
	delete(s.installations, in.ID)
	for k, t := range s.tokens {
		if t.inst == in {
			delete(s.tokens, k)
		}
	}
}

// SetInstallationRepos changes a "selected" installation's repositories
// ("owner/name"); nil switches it to all repositories.
func (s *Server) SetInstallationRepos(in *Installation, repos []string) {
	defer s.flush()
	s.mu.Lock()
	defer s.mu.Unlock()
	before := s.installationRepos(in)
	if repos == nil {
		in.Repos = nil
	} else {
		in.Repos = lowerNames(repos)
	}
	after := s.installationRepos(in)
	diff := func(a, b []*Repo) []string {
		var out []string
		for _, r := range a {
			if !slices.Contains(b, r) {
				out = append(out, r.FullName())
			}
		}
		return out
	}
	for action, names := range map[string][]string{"added": diff(after, before), "removed": diff(before, after)} {
		if len(names) > 0 {
			s.emitInstallation(in, "installation_repositories", func() map[string]any {
				return s.installationRepositoriesEvent(action, in, in.Account.Login, names...)
			})
		}
	}
}

// lowerNames keys "owner/name" repository names as the emulator stores them.
func lowerNames(repos []string) []string {
	out := make([]string, 0, len(repos))
	for _, r := range repos {
		out = append(out, strings.ToLower(r))
	}
	return out
}

// InstallationToken mints a token directly, as the access_tokens endpoint
// would, for tests that do not exercise the exchange. perms nil = all.
func (s *Server) InstallationToken(in *Installation, perms map[string]string, repos ...string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	tok, msg := s.mint(in, perms, repos, nil)
	if tok == nil {
		s.tb.Fatalf("githubfake: InstallationToken: %s", msg)
	}
	return tok.value
}

// covers reports whether the installation includes the repository.
func (in *Installation) covers(r *Repo) bool {
	if in.Removed || !strings.EqualFold(in.Account.Login, r.Owner.Login) {
		return false
	}
	return in.Repos == nil || slices.Contains(in.Repos, strings.ToLower(r.FullName()))
}

func (s *Server) installationRepos(in *Installation) []*Repo {
	var out []*Repo
	for _, r := range s.sortedRepos() {
		if in.covers(r) {
			out = append(out, r)
		}
	}
	return out
}

// mint applies GitHub's rules for POST /app/installations/{id}/access_tokens.
func (s *Server) mint(in *Installation, perms map[string]string, names []string, ids []int64) (*accessToken, string) {
	granted := in.Permissions
	if perms != nil {
		granted = map[string]string{}
		for k, v := range perms {
			if !knownPermissions[k] || levelRank(v) == 0 || levelRank(v) > levelRank(in.Permissions[k]) {
				return nil, "The permissions requested are not granted to this installation."
			}
			granted[k] = v
		}
		// Metadata is implied by any repository permission.
		if levelRank(granted["metadata"]) == 0 {
			granted["metadata"] = Read
		}
	}
	var repos []string
	if len(names) > 0 || len(ids) > 0 {
		repos = []string{}
		for _, n := range names {
			full := n
			if !strings.Contains(n, "/") {
				full = in.Account.Login + "/" + n
			}
			r := s.repos[strings.ToLower(full)]
			if r == nil || !in.covers(r) {
				return nil, "There is at least one repository that does not exist or is not accessible to the parent installation."
			}
			repos = append(repos, strings.ToLower(r.FullName()))
		}
		for _, id := range ids {
			r := s.repoByID(id)
			if r == nil || !in.covers(r) {
				return nil, "There is at least one repository that does not exist or is not accessible to the parent installation."
			}
			repos = append(repos, strings.ToLower(r.FullName()))
		}
		slices.Sort(repos)
		repos = slices.Compact(repos)
	}
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	t := &accessToken{value: "ghs_" + hex.EncodeToString(b), inst: in, perms: maps.Clone(granted), repos: repos, expires: s.now().Add(tokenLifetime)}
	s.tokens[t.value] = t
	return t, ""
}

// authenticate classifies the Authorization header; invalid credentials get
// GitHub's 401 written immediately.
func (c *call) authenticate() {
	h := c.r.Header.Get("Authorization")
	if h == "" {
		return
	}
	scheme, cred, ok := strings.Cut(h, " ")
	if ok && strings.EqualFold(scheme, "basic") {
		// git's form: any user name, the token as password
		// ("x-access-token:<token>").
		if raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred)); err == nil {
			if _, pass, found := strings.Cut(string(raw), ":"); found {
				scheme, cred = "token", pass
			}
		}
	}
	if !ok || (!strings.EqualFold(scheme, "bearer") && !strings.EqualFold(scheme, "token")) {
		c.kind = TokenInvalid
		c.fail(http.StatusUnauthorized, "Bad credentials")
		return
	}
	cred = strings.TrimSpace(cred)
	if strings.Count(cred, ".") == 2 {
		app, msg := c.s.verifyJWT(cred)
		if app == nil {
			c.kind = TokenInvalid
			c.fail(http.StatusUnauthorized, msg)
			return
		}
		c.kind, c.app = TokenJWT, app
		return
	}
	if ut := c.s.userTokens[cred]; ut != nil {
		if !c.s.now().Before(ut.expires) {
			c.kind = TokenInvalid
			c.fail(http.StatusUnauthorized, "Bad credentials")
			return
		}
		c.kind, c.user = TokenUser, ut.user
		return
	}
	t := c.s.tokens[cred]
	if t == nil || !c.s.now().Before(t.expires) || t.inst.Removed {
		c.kind = TokenInvalid
		c.fail(http.StatusUnauthorized, "Bad credentials")
		return
	}
	c.kind, c.tok = TokenInstallation, t
	if t.inst.Suspended {
		c.kind = TokenInvalid
		c.fail(http.StatusForbidden, "This installation has been suspended")
	}
}

var errJWTShape = errors.New("bad claims")

// verifyJWT checks an app JWT with GitHub's rules and messages.
func (s *Server) verifyJWT(raw string) (*App, string) {
	const undecodable = "A JSON web token could not be decoded"
	claims := jwt.MapClaims{}
	var app *App
	_, err := jwt.ParseWithClaims(raw, claims, func(t *jwt.Token) (any, error) {
		iss, err := issuer(claims["iss"])
		if err != nil {
			return nil, err
		}
		app = s.apps[iss]
		if app == nil {
			return nil, errJWTShape
		}
		return &app.PrivateKey.PublicKey, nil
	}, jwt.WithValidMethods([]string{"RS256"}), jwt.WithoutClaimsValidation())
	if err != nil || app == nil {
		return nil, undecodable
	}
	now := s.now()
	iat, ok := numeric(claims["iat"])
	if !ok || iat.After(now.Add(jwtClockSkew)) {
		return nil, "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued."
	}
	exp, ok := numeric(claims["exp"])
	if !ok || !exp.After(now) {
		return nil, "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires."
	}
	if exp.After(now.Add(jwtMaxLifetime)) || exp.Sub(iat) > jwtMaxLifetime+jwtClockSkew {
		return nil, "'Expiration time' claim ('exp') is too far in the future"
	}
	return app, ""
}

func issuer(v any) (int64, error) {
	switch x := v.(type) {
	case float64:
		return int64(x), nil
	case string:
		return strconv.ParseInt(x, 10, 64)
	}
	return 0, errJWTShape
}

func numeric(v any) (time.Time, bool) {
	f, ok := v.(float64)
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(int64(f), 0), true
}

// --- access checks ---

// need is one way to satisfy an endpoint: a permission at a level.
type need struct{ perm, level string }

// repoAccess resolves {owner}/{repo} and enforces GitHub's visibility and
// permission rules. public allows reads of public repositories by anyone
// (anonymous or a token of another installation), as GitHub does. It writes
// the refusal and returns nil when access is denied.
func (c *call) repoAccess(public bool, needs ...need) *Repo {
	r := c.s.repos[strings.ToLower(c.param("owner")+"/"+c.param("repo"))]
	if r == nil {
		c.notFound()
		return nil
	}
	switch c.kind {
	case TokenJWT:
		if r.Private || !public {
			c.forbidden()
			return nil
		}
		return r
	case TokenNone:
		if r.Private {
			c.notFound()
			return nil
		}
		if !public {
			c.fail(http.StatusUnauthorized, "Requires authentication")
			return nil
		}
		return r
	}
	if r.Archived && slices.ContainsFunc(needs, func(n need) bool { return n.level != Read }) && !public {
		c.forbidden403("Repository was archived so is read-only.")
		return nil
	}
	t := c.tok
	inScope := t.inst.covers(r) && (t.repos == nil || slices.Contains(t.repos, strings.ToLower(r.FullName())))
	if !inScope {
		if !r.Private && public {
			return r
		}
		if r.Private {
			c.notFound()
		} else {
			c.forbidden()
		}
		return nil
	}
	for _, n := range needs {
		if levelRank(t.perms[n.perm]) >= levelRank(n.level) {
			return r
		}
	}
	if len(needs) == 0 {
		return r
	}
	if !r.Private && public {
		return r
	}
	c.forbidden()
	return nil
}

func (c *call) forbidden403(msg string) { c.fail(http.StatusForbidden, msg) }

// requireJWT refuses calls not made with a valid app JWT.
func (c *call) requireJWT() bool {
	if c.kind == TokenJWT {
		return true
	}
	c.fail(http.StatusUnauthorized, "A JSON web token could not be decoded")
	return false
}

// actor is who a write is attributed to.
func (c *call) actor() *Account {
	if c.tok != nil {
		return c.tok.inst.App.Bot
	}
	return nil
}

// --- /app endpoints ---

// ownInstallation resolves {installation_id} for the calling app's JWT; an
// installation of another app is 404, as on GitHub.
func (c *call) ownInstallation() *Installation {
	if !c.requireJWT() {
		return nil
	}
	id, _ := strconv.ParseInt(c.param("installation_id"), 10, 64)
	in := c.s.installations[id]
	if in == nil || in.App != c.app {
		c.notFound()
		return nil
	}
	return in
}

func (s *Server) handleGetInstallation(c *call) {
	if in := c.ownInstallation(); in != nil {
		c.json(http.StatusOK, s.installationJSON(in))
	}
}

func (s *Server) handleListInstallations(c *call) {
	if !c.requireJWT() {
		return
	}
	out := []any{}
	for _, in := range s.sortedInstallations() {
		if in.App == c.app {
			out = append(out, s.installationJSON(in))
		}
	}
	c.json(http.StatusOK, paginate(c, out))
}

func (s *Server) handleRepoInstallation(c *call) {
	if !c.requireJWT() {
		return
	}
	r := s.repos[strings.ToLower(c.param("owner")+"/"+c.param("repo"))]
	if r != nil {
		for _, in := range s.sortedInstallations() {
			if in.App == c.app && in.covers(r) {
				c.json(http.StatusOK, s.installationJSON(in))
				return
			}
		}
	}
	c.notFound()
}

func (s *Server) handleCreateToken(c *call) {
	in := c.ownInstallation()
	if in == nil {
		return
	}
	if in.Suspended {
		c.fail(http.StatusForbidden, "This installation has been suspended")
		return
	}
	var req struct {
		Repositories  []string          `json:"repositories"`
		RepositoryIDs []int64           `json:"repository_ids"`
		Permissions   map[string]string `json:"permissions"`
	}
	if len(strings.TrimSpace(string(c.body))) > 0 && !c.decode(&req) {
		return
	}
	if len(req.Repositories)+len(req.RepositoryIDs) > 500 {
		c.validationFailed("Too many repositories requested, maximum is 500.")
		return
	}
	t, msg := s.mint(in, req.Permissions, req.Repositories, req.RepositoryIDs)
	if t == nil {
		c.validationFailed(msg)
		return
	}
	sel := "all"
	if in.Repos != nil || t.repos != nil {
		sel = "selected"
	}
	out := map[string]any{
		"token":                t.value,
		"expires_at":           t.expires.Format(time.RFC3339),
		"permissions":          t.perms,
		"repository_selection": sel,
	}
	if t.repos != nil {
		list := []any{}
		for _, n := range t.repos {
			list = append(list, s.repoJSON(s.repos[n], nil))
		}
		out["repositories"] = list
	}
	c.json(http.StatusCreated, out)
}

// requireInstallationToken refuses calls not made with an installation
// access token (the /installation endpoints).
func (c *call) requireInstallationToken() bool {
	if c.tok == nil {
		c.fail(http.StatusUnauthorized, "Requires authentication")
		return false
	}
	return true
}

// handleInstallationRepos is GET /installation/repositories (installation token).
func (s *Server) handleInstallationRepos(c *call) {
	if !c.requireInstallationToken() {
		return
	}
	list := []any{}
	for _, r := range s.installationRepos(c.tok.inst) {
		if c.tok.repos == nil || slices.Contains(c.tok.repos, strings.ToLower(r.FullName())) {
			list = append(list, s.repoJSON(r, nil))
		}
	}
	sel := "all"
	if c.tok.inst.Repos != nil {
		sel = "selected"
	}
	c.json(http.StatusOK, map[string]any{"total_count": len(list), "repository_selection": sel, "repositories": paginate(c, list)})
}

// handleRevokeToken is DELETE /installation/token: the calling installation
// token stops working at once (later calls with it are 401 "Bad
// credentials"); no permission is needed.
func (s *Server) handleRevokeToken(c *call) {
	if !c.requireInstallationToken() {
		return
	}
	delete(s.tokens, c.tok.value)
	c.status = http.StatusNoContent
}

// SignJWT returns an app JWT valid now (iat backdated 60 s, exp +9 min), for
// tests that need one without the client.
func (s *Server) SignJWT(app *App) string {
	now := s.Now()
	t := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{
		"iat": now.Add(-60 * time.Second).Unix(),
		"exp": now.Add(9 * time.Minute).Unix(),
		"iss": strconv.FormatInt(app.ID, 10),
	})
	v, err := t.SignedString(app.PrivateKey)
	if err != nil {
		s.tb.Fatalf("githubfake: sign JWT: %v", err)
	}
	return v
}
