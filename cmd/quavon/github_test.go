package main

import (
	"bytes"
	"context"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	gh "github.com/google/go-github/v75/github"

	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/githubfake"
)

var formRE = regexp.MustCompile(`<form method="post" action="([^"]+)">\s*<input type="hidden" name="manifest" value="([^"]+)">`)

// quavon github setup registers both apps on the emulator through the
// manifest flow, as a browser would drive it: each app with exactly its
// permissions and events, organization-owned, its key and secrets written
// 0600, each code exchanged once, a used state refused.
func TestGitHubSetup(t *testing.T) {
	srv := githubfake.New(t)
	srv.AddOrg("acme")
	out := filepath.Join(t.TempDir(), "secrets")
	var stdout, stderr bytes.Buffer
	e := &env{environ: []string{"QUAVON_GITHUB_API_URL=" + srv.URL + "/", "QUAVON_GITHUB_GRAPHQL_URL=" + srv.URL + "/graphql"},
		stdout: &stdout, stderr: &stderr}
	page := make(chan string, 1)
	o := &githubSetupOptions{env: e, Out: out, WebURL: srv.URL, Org: "acme", WebhookURL: "https://quavon.example.com",
		Name: "Quavon", Listen: "127.0.0.1:0", listening: func(u string) { page <- u }}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- runGitHubSetup(ctx, o) }()
	home := <-page

	// The browser: follows redirects, remembers the callbacks it was sent to.
	var callbacks []string
	browser := &http.Client{CheckRedirect: func(r *http.Request, _ []*http.Request) error {
		if strings.Contains(r.URL.Path, "/callback/") {
			callbacks = append(callbacks, r.URL.String())
		}
		return nil
	}}
	get := func(u string) string {
		res, err := browser.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	for i := range 2 {
		m := formRE.FindStringSubmatch(get(home))
		if m == nil {
			t.Fatalf("step %d: no registration form on the setup page", i)
		}
		action, manifest := html.UnescapeString(m[1]), html.UnescapeString(m[2])
		if !strings.HasPrefix(action, srv.URL+"/organizations/acme/settings/apps/new?state=") {
			t.Fatalf("form posts to %s", action)
		}
		res, err := browser.PostForm(action, url.Values{"manifest": {manifest}})
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if i == 0 {
			if res.StatusCode != 200 || !strings.Contains(string(body), "registered") {
				t.Fatalf("after the first app: %d %s", res.StatusCode, body)
			}
			// The same callback again: its state is used up.
			r2, err := http.Get(callbacks[0])
			if err != nil {
				t.Fatal(err)
			}
			r2.Body.Close()
			if r2.StatusCode != http.StatusBadRequest {
				t.Fatalf("replayed callback: %d", r2.StatusCode)
			}
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("setup: %v\n%s", err, stderr.String())
	}

	for _, tc := range []struct {
		kind github.AppKind
		name string
	}{{github.AppReview, "Quavon"}, {github.AppFixer, "Quavon Fixer"}} {
		app := srv.ManifestApp(tc.name)
		if app == nil {
			t.Fatalf("no app %q on the emulator", tc.name)
		}
		want := github.AppPermissions(tc.kind)
		if got := github.Permissions(app.Permissions()); !got.Equal(want) {
			t.Errorf("%s permissions %v, want %v", tc.kind, got, want)
		}
		if got := app.Events(); !slices.Equal(got, github.AppEvents(tc.kind)) {
			t.Errorf("%s events %v", tc.kind, got)
		}
		if app.Owner == nil || app.Owner.Login != "acme" {
			t.Errorf("%s owner %+v", tc.kind, app.Owner)
		}
		if !strings.Contains(stdout.String(), "QUAVON_GITHUB_"+strings.ToUpper(string(tc.kind))+"_APP_ID="+itoa(app.ID)+"\n") {
			t.Errorf("app id of %s not printed:\n%s", tc.kind, stdout.String())
		}
		for name, want := range map[string]string{"private_key": string(app.PrivateKeyPEM), "webhook_secret": app.WebhookSecret + "\n"} {
			p := filepath.Join(out, string(tc.kind)+"_"+name)
			b, err := os.ReadFile(p)
			fi, serr := os.Stat(p)
			if err != nil || serr != nil || string(b) != want || fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: %v %v mode %v, content matches %v", p, err, serr, fi.Mode().Perm(), string(b) == want)
			}
		}
	}
	// Each code was exchanged once: a second exchange is refused.
	if len(callbacks) != 2 {
		t.Fatalf("callbacks %q", callbacks)
	}
	cb, _ := url.Parse(callbacks[1])
	client := gh.NewClient(nil)
	client.BaseURL, _ = url.Parse(srv.URL + "/")
	if _, res, err := client.Apps.CompleteAppManifest(context.Background(), cb.Query().Get("code")); err == nil || res == nil || res.StatusCode != 404 {
		t.Fatalf("second exchange of a code: %v", err)
	}

	// A second run never overwrites the secrets.
	err := runGitHubSetup(ctx, &githubSetupOptions{env: e, Out: out, WebURL: srv.URL, WebhookURL: "https://q.example", Name: "Other", Listen: "127.0.0.1:0"})
	if err == nil || !strings.Contains(err.Error(), "never overwrites") {
		t.Fatalf("second run: %v", err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestGitHubSetupRefusals(t *testing.T) {
	e := &env{environ: nil, stdout: io.Discard, stderr: io.Discard}
	for _, tc := range []struct {
		o    githubSetupOptions
		want string
	}{
		{githubSetupOptions{Out: t.TempDir(), WebhookURL: "https://q.example", Listen: "0.0.0.0:0"}, "loopback"},
		{githubSetupOptions{Out: t.TempDir(), WebhookURL: "q.example", Listen: "127.0.0.1:0"}, "--webhook-url"},
	} {
		tc.o.env = e
		if err := runGitHubSetup(context.Background(), &tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v", tc.o, err)
		}
	}
	for api, want := range map[string]string{
		"https://api.github.com/":              "https://github.com/",
		"https://ghe.example.com/api/v3/":      "https://ghe.example.com/",
		"https://ghe.example.com/api/v3":       "https://ghe.example.com/",
		"https://proxy.example.com/github/api": "",
	} {
		got, err := webURL("", api)
		if got != want || (want == "" && err == nil) {
			t.Errorf("webURL(%s) = %q, %v", api, got, err)
		}
	}
}
