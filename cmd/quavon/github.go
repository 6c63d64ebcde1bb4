package main

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	gh "github.com/google/go-github/v75/github"
	"github.com/spf13/cobra"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/github"
)

type githubSetupOptions struct {
	env *env
	// Out is the directory the apps' secrets are written to.
	Out string
	// WebURL is GitHub's web host (github.com, or the GHES host); empty:
	// derived from QUAVON_GITHUB_API_URL.
	WebURL string
	// Org registers the apps under an organization instead of the user.
	Org string
	// WebhookURL is quavon-api's public base URL.
	WebhookURL string
	// HomepageURL is the apps' homepage (required by GitHub).
	HomepageURL string
	Name        string
	Listen      string
	// listening, when not nil, gets the setup page's URL (tests).
	listening func(string)
}

func newGitHubCmd(e *env, runF func(context.Context, *githubSetupOptions) error) *cobra.Command {
	if runF == nil {
		runF = runGitHubSetup
	}
	cmd := &cobra.Command{Use: "github", Short: "GitHub App setup", Args: cobra.ArbitraryArgs, RunE: groupRunE}
	o := &githubSetupOptions{env: e}
	setup := &cobra.Command{
		Use:   "setup --out DIR --webhook-url URL",
		Short: "Register Quavon's two GitHub Apps through GitHub's manifest flow",
		Long: `Register the review app and the Fixer app from manifests with their exact
permissions and events, in a browser signed in to GitHub: this command serves a
page on a loopback address; each app's button posts its manifest to GitHub,
GitHub asks you to confirm and sends you back here, and the one-time code is
exchanged at GitHub's conversion endpoint (QUAVON_GITHUB_API_URL; GitHub
Enterprise Server: https://HOST/api/v3/). Each app's private key, webhook secret
and client secret are written to DIR as new files with mode 0600 (never
overwritten): review_private_key, review_webhook_secret, review_client_secret,
fixer_… likewise; the app ids are printed for the broker's settings.

  review  ` + permString(github.AppReview) + `
  fixer   ` + permString(github.AppFixer),
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Out == "" || o.WebhookURL == "" {
				return usageError(cmd, "--out and --webhook-url are required")
			}
			return runF(cmd.Context(), o)
		},
	}
	f := setup.Flags()
	f.StringVar(&o.Out, "out", "", "write the apps' secrets to `DIR` (created 0700 if missing)")
	f.StringVar(&o.WebhookURL, "webhook-url", "", "quavon-api's public base `URL` (webhooks go to URL/webhooks/github/review and …/fixer)")
	f.StringVar(&o.HomepageURL, "homepage-url", "", "the apps' homepage `URL` (default: the webhook URL)")
	f.StringVar(&o.Org, "org", "", "register the apps under this `ORGANIZATION` (default: your user)")
	f.StringVar(&o.WebURL, "github-url", "", "GitHub's web `URL` (default: from QUAVON_GITHUB_API_URL: https://github.com/, or https://HOST/ for Enterprise Server)")
	f.StringVar(&o.Name, "name", "Quavon", "apps' `NAME` prefix: NAME and NAME Fixer (names are unique on GitHub)")
	f.StringVar(&o.Listen, "listen", "127.0.0.1:0", "serve the setup page on this loopback `ADDRESS`")
	cmd.AddCommand(setup)
	return cmd
}

func permString(kind github.AppKind) string {
	return github.AppPermissions(kind).String() + "; events " + strings.Join(github.AppEvents(kind), ", ")
}

// setupApp is one app's state in the flow.
type setupApp struct {
	kind     github.AppKind
	name     string
	state    string // the manifest flow's state; cleared once its code was exchanged
	manifest string
	done     *gh.AppConfig
}

var setupPage = template.Must(template.New("setup").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>Quavon: GitHub App setup</title></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 3em auto">
<h1>Quavon: GitHub App setup</h1>
{{range .Apps}}{{if .Done}}<p>✔ <b>{{.Name}}</b> registered (app id {{.ID}}): <a href="{{.HTMLURL}}">{{.HTMLURL}}</a></p>
{{else}}<form method="post" action="{{.Action}}">
<input type="hidden" name="manifest" value="{{.Manifest}}">
<p><b>{{.Name}}</b>: {{.Perms}}</p>
<button type="submit">Register {{.Name}} on GitHub</button>
</form>{{end}}{{end}}
{{if .AllDone}}<p>Both apps are registered; the secrets are in {{.Out}}. You can close this page.</p>{{end}}
</body></html>
`))

func runGitHubSetup(ctx context.Context, o *githubSetupOptions) error {
	cfg, err := config.LoadGitHubSetup(o.env.environ)
	if err != nil {
		return err
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintln(o.env.stderr, "quavon: warning:", w)
	}
	web, err := webURL(o.WebURL, cfg.GitHub.APIURL)
	if err != nil {
		return err
	}
	hook, err := url.Parse(o.WebhookURL)
	if err != nil || hook.Host == "" || (hook.Scheme != "https" && hook.Scheme != "http") {
		return fmt.Errorf("--webhook-url %q: want an absolute URL", o.WebhookURL)
	}
	if o.HomepageURL == "" {
		o.HomepageURL = o.WebhookURL
	}
	host, _, err := net.SplitHostPort(o.Listen)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--listen %q: want a loopback ip:port (the page hands out one-time codes)", o.Listen)
	}
	if err := os.MkdirAll(o.Out, 0o700); err != nil {
		return err
	}
	for _, kind := range []github.AppKind{github.AppReview, github.AppFixer} {
		for _, f := range []string{"private_key", "webhook_secret", "client_secret"} {
			if _, err := os.Lstat(filepath.Join(o.Out, string(kind)+"_"+f)); err == nil {
				return fmt.Errorf("%s already exists: quavon github setup never overwrites a secret", filepath.Join(o.Out, string(kind)+"_"+f))
			}
		}
	}
	apiURL, err := github.ParseHTTPURL(strings.TrimSuffix(cfg.GitHub.APIURL, "/") + "/")
	if err != nil {
		return fmt.Errorf("QUAVON_GITHUB_API_URL: %w", err)
	}
	// The conversion endpoint needs no authentication: the code is the
	// credential.
	client := gh.NewClient(&http.Client{Timeout: 30 * time.Second})
	client.BaseURL = apiURL

	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return err
	}
	base := "http://" + ln.Addr().String()
	apps := []*setupApp{{kind: github.AppReview, name: o.Name}, {kind: github.AppFixer, name: o.Name + " Fixer"}}
	for _, a := range apps {
		a.state = randomHex()
		m, err := json.Marshal(map[string]any{
			"name": a.name, "url": o.HomepageURL, "description": "Quavon " + string(a.kind) + " app",
			"hook_attributes":     map[string]any{"url": strings.TrimSuffix(o.WebhookURL, "/") + "/webhooks/github/" + string(a.kind), "active": true},
			"redirect_url":        base + "/callback/" + string(a.kind),
			"public":              false,
			"default_permissions": github.AppPermissions(a.kind),
			"default_events":      github.AppEvents(a.kind),
		})
		if err != nil {
			return err
		}
		a.manifest = string(m)
	}
	newAppPath := "settings/apps/new"
	if o.Org != "" {
		newAppPath = "organizations/" + url.PathEscape(o.Org) + "/settings/apps/new"
	}

	var mu sync.Mutex
	finished := make(chan struct{})
	mux := http.NewServeMux()
	// render writes the setup page; mu is held.
	render := func(w http.ResponseWriter) {
		type row struct {
			Name, Action, Manifest, Perms, HTMLURL string
			Done                                   bool
			ID                                     int64
		}
		data := struct {
			Apps    []row
			AllDone bool
			Out     string
		}{AllDone: true, Out: o.Out}
		for _, a := range apps {
			rw := row{Name: a.name, Manifest: a.manifest, Perms: permString(a.kind),
				Action: web + newAppPath + "?state=" + url.QueryEscape(a.state)}
			if a.done != nil {
				rw.Done, rw.ID, rw.HTMLURL = true, a.done.GetID(), a.done.GetHTMLURL()
			} else {
				data.AllDone = false
			}
			data.Apps = append(data.Apps, rw)
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; form-action "+web)
		_ = setupPage.Execute(w, data)
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		render(w)
	})
	mux.HandleFunc("GET /callback/{app}", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		var a *setupApp
		for _, x := range apps {
			if string(x.kind) == r.PathValue("app") {
				a = x
			}
		}
		state, code := r.URL.Query().Get("state"), r.URL.Query().Get("code")
		if a == nil || a.state == "" || subtle.ConstantTimeCompare([]byte(state), []byte(a.state)) != 1 || code == "" {
			http.Error(w, "unknown or used state: start again from the setup page", http.StatusBadRequest)
			return
		}
		a.state = "" // the code is exchanged once, whatever happens next
		cctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
		defer cancel()
		conf, _, err := client.Apps.CompleteAppManifest(cctx, code)
		if err == nil {
			err = writeAppSecrets(o.Out, a.kind, conf)
		}
		if err != nil {
			fmt.Fprintf(o.env.stderr, "quavon: %s app: %v\n", a.kind, err)
			http.Error(w, fmt.Sprintf("the %s app could not be completed: %v", a.kind, err), http.StatusBadGateway)
			return
		}
		a.done = conf
		fmt.Fprintf(o.env.stderr, "quavon: %s app %q registered (id %d); its secrets are in %s\n", a.kind, conf.GetName(), conf.GetID(), o.Out)
		all := true
		for _, x := range apps {
			all = all && x.done != nil
		}
		if all {
			// The last page is answered here: the server stops next.
			render(w)
			close(finished)
			return
		}
		http.Redirect(w, r, "/", http.StatusSeeOther)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	fmt.Fprintf(o.env.stderr, "quavon: open %s/ in a browser signed in to %s and register both apps\n", base, web)
	if o.listening != nil {
		o.listening(base + "/")
	}
	select {
	case <-ctx.Done():
		return fmt.Errorf("github setup: stopped before both apps were registered: %w", ctx.Err())
	case <-finished:
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	for _, a := range apps {
		fmt.Fprintf(o.env.stdout, "QUAVON_GITHUB_%s_APP_ID=%d\n", strings.ToUpper(string(a.kind)), a.done.GetID())
	}
	for _, a := range apps {
		fmt.Fprintf(o.env.stdout, "# install %s: %s/installations/new\n", a.done.GetName(), strings.TrimSuffix(a.done.GetHTMLURL(), "/"))
	}
	return nil
}

// webURL is GitHub's web host for the API URL: api.github.com → github.com,
// https://HOST/api/v3/ → https://HOST/.
func webURL(flag, api string) (string, error) {
	if flag != "" {
		u, err := url.Parse(flag)
		if err != nil || u.Host == "" {
			return "", fmt.Errorf("--github-url %q: want an absolute URL", flag)
		}
		return strings.TrimSuffix(flag, "/") + "/", nil
	}
	u, err := url.Parse(api)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("QUAVON_GITHUB_API_URL %q: want an absolute URL", api)
	}
	if u.Host == "api.github.com" {
		return "https://github.com/", nil
	}
	if p := strings.TrimSuffix(u.Path, "/"); p == "/api/v3" {
		return u.Scheme + "://" + u.Host + "/", nil
	}
	return "", fmt.Errorf("QUAVON_GITHUB_API_URL %q is neither api.github.com nor https://HOST/api/v3/: give --github-url", api)
}

// writeAppSecrets writes the app's key and secrets as new 0600 files.
func writeAppSecrets(dir string, kind github.AppKind, c *gh.AppConfig) error {
	if c.GetID() <= 0 || !strings.Contains(c.GetPEM(), "PRIVATE KEY") || c.GetWebhookSecret() == "" || c.GetClientSecret() == "" {
		return errors.New("GitHub's answer lacks the app id, key or secrets")
	}
	for name, content := range map[string]string{"private_key": c.GetPEM(), "webhook_secret": c.GetWebhookSecret(), "client_secret": c.GetClientSecret()} {
		p := filepath.Join(dir, string(kind)+"_"+name)
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		_, err = f.WriteString(strings.TrimSuffix(content, "\n") + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	return nil
}

func randomHex() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
