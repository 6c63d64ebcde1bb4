package githubfake

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// The GitHub App manifest flow (docs: "Registering a GitHub App from a
// manifest"): a browser POSTs a form with a `manifest` field (and the
// caller's `state` in the action's query) to /settings/apps/new or
// /organizations/{org}/settings/apps/new on GitHub's web host; GitHub
// creates the app once the user confirms and redirects to the manifest's
// redirect_url with ?code=…&state=…; the code is exchanged, once and within
// an hour, at POST /app-manifests/{code}/conversions for the app's id,
// private key (PEM), webhook secret and client secret. The emulator's web
// host is its API host; it creates the app as if the user confirmed at once.

// ManifestCodeTTL is how long a manifest code may be exchanged.
const ManifestCodeTTL = time.Hour

type manifestCode struct {
	app     *App
	expires time.Time
}

// manifest is the documented manifest object; unknown fields are refused.
type manifest struct {
	Name           string `json:"name"`
	URL            string `json:"url"`
	HookAttributes *struct {
		URL    string `json:"url"`
		Active *bool  `json:"active"`
	} `json:"hook_attributes"`
	RedirectURL           string            `json:"redirect_url"`
	CallbackURLs          []string          `json:"callback_urls"`
	SetupURL              string            `json:"setup_url"`
	Description           string            `json:"description"`
	Public                bool              `json:"public"`
	DefaultEvents         []string          `json:"default_events"`
	DefaultPermissions    map[string]string `json:"default_permissions"`
	RequestOAuthOnInstall bool              `json:"request_oauth_on_install"`
	SetupOnUpdate         bool              `json:"setup_on_update"`
}

var (
	manifestFormPath = regexp.MustCompile(`^/(?:organizations/([A-Za-z0-9-]+)/)?settings/apps/new$`)
	permissionLevels = []string{"read", "write", "admin"}
	permissionName   = regexp.MustCompile(`^[a-z][a-z_]{0,63}$`)
	slugChars        = regexp.MustCompile(`[^A-Za-z0-9]+`)
)

// serveManifestForm answers the web form of the manifest flow; false when
// the request is not for it.
func (s *Server) serveManifestForm(w http.ResponseWriter, c *call) bool {
	m := manifestFormPath.FindStringSubmatch(c.r.URL.Path)
	if m == nil {
		return false
	}
	c.op = "web manifest"
	refuse := func(status int, msg string) bool {
		c.status = status
		http.Error(w, msg, status)
		return true
	}
	if c.r.Method != http.MethodPost {
		return refuse(http.StatusMethodNotAllowed, "POST the manifest form")
	}
	form, err := url.ParseQuery(string(c.body))
	if err != nil {
		return refuse(http.StatusBadRequest, "malformed form")
	}
	state := c.r.URL.Query().Get("state")
	var mf manifest
	dec := json.NewDecoder(strings.NewReader(form.Get("manifest")))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&mf); err != nil {
		return refuse(http.StatusUnprocessableEntity, "invalid manifest: "+err.Error())
	}
	redirect, err := url.Parse(mf.RedirectURL)
	switch {
	case mf.Name == "" || len(mf.Name) > 34:
		return refuse(http.StatusUnprocessableEntity, "name: 1 to 34 characters")
	case mf.URL == "":
		return refuse(http.StatusUnprocessableEntity, "url is required")
	case err != nil || redirect.Scheme == "" || redirect.Host == "":
		return refuse(http.StatusUnprocessableEntity, "redirect_url must be an absolute URL")
	case mf.HookAttributes == nil || mf.HookAttributes.URL == "":
		return refuse(http.StatusUnprocessableEntity, "hook_attributes.url is required for webhooks")
	}
	for name, level := range mf.DefaultPermissions {
		if !permissionName.MatchString(name) || !slices.Contains(permissionLevels, level) {
			return refuse(http.StatusUnprocessableEntity, "default_permissions: invalid "+name+"="+level)
		}
	}
	var owner *Account
	if m[1] != "" {
		if owner = s.accounts[strings.ToLower(m[1])]; owner == nil || owner.Type != "Organization" {
			return refuse(http.StatusNotFound, "no such organization")
		}
	}
	slug := strings.Trim(strings.ToLower(slugChars.ReplaceAllString(mf.Name, "-")), "-")
	for _, a := range s.apps {
		if a.Slug == slug {
			return refuse(http.StatusUnprocessableEntity, "Name is already in use")
		}
	}
	app := s.registerApp(slug)
	app.Name, app.Owner, app.webhookURL = mf.Name, owner, mf.HookAttributes.URL
	app.permissions = map[string]string{"metadata": "read"}
	for k, v := range mf.DefaultPermissions {
		app.permissions[k] = v
	}
	app.events = slices.Clone(mf.DefaultEvents)
	code := make([]byte, 20)
	_, _ = rand.Read(code)
	s.manifestCodes[hex.EncodeToString(code)] = &manifestCode{app: app, expires: s.now().Add(ManifestCodeTTL)}
	q := redirect.Query()
	q.Set("code", hex.EncodeToString(code))
	if state != "" {
		q.Set("state", state)
	}
	redirect.RawQuery = q.Encode()
	c.status = http.StatusFound
	http.Redirect(w, c.r, redirect.String(), http.StatusFound)
	return true
}

// ManifestApp returns the app the manifest flow created with that name, or
// nil.
func (s *Server) ManifestApp(name string) *App {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.apps {
		if a.Name == name && a.permissions != nil {
			return a
		}
	}
	return nil
}

// Permissions and Events are what the app's manifest asked for.
func (a *App) Permissions() map[string]string { return a.permissions }
func (a *App) Events() []string               { return slices.Clone(a.events) }

func (s *Server) handleManifestConversion(c *call) {
	mc := s.manifestCodes[c.param("code")]
	if mc == nil || s.now().After(mc.expires) {
		c.notFound()
		return
	}
	delete(s.manifestCodes, c.param("code")) // exchanged once
	out := s.appJSON(mc.app)
	out["client_secret"] = mc.app.ClientSecret
	out["webhook_secret"] = mc.app.WebhookSecret
	out["pem"] = string(mc.app.PrivateKeyPEM)
	c.json(http.StatusCreated, out)
}
