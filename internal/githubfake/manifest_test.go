package githubfake_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	gh "github.com/google/go-github/v75/github"

	"github.com/quavon/quavon/internal/githubfake"
)

// The manifest flow's refusals: malformed manifests, an unknown
// organization, a taken name, an expired or reused code.
func TestManifestFlow(t *testing.T) {
	s := githubfake.New(t)
	s.AddOrg("acme")
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(path, manifest string) *http.Response {
		t.Helper()
		res, err := noRedirect.PostForm(s.URL+path, url.Values{"manifest": {manifest}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	good := `{"name":"Q","url":"https://q.example","hook_attributes":{"url":"https://q.example/h"},"redirect_url":"https://cli.example/cb","default_permissions":{"contents":"read"},"default_events":["pull_request"]}`
	for _, tc := range []struct {
		name, path, manifest string
		status               int
	}{
		{"unknown field", "/settings/apps/new", strings.Replace(good, `"url"`, `"urll"`, 1), 422},
		{"no redirect", "/settings/apps/new", strings.Replace(good, `"redirect_url":"https://cli.example/cb"`, `"redirect_url":""`, 1), 422},
		{"no webhook", "/settings/apps/new", strings.Replace(good, `"hook_attributes":{"url":"https://q.example/h"},`, ``, 1), 422},
		{"bad level", "/settings/apps/new", strings.Replace(good, `"read"`, `"owner"`, 1), 422},
		{"unknown org", "/organizations/nope/settings/apps/new", good, 404},
	} {
		if res := post(tc.path+"?state=s1", tc.manifest); res.StatusCode != tc.status {
			t.Errorf("%s: %d, want %d", tc.name, res.StatusCode, tc.status)
		}
	}
	res := post("/organizations/acme/settings/apps/new?state=s1", good)
	loc, err := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusFound || err != nil || loc.Host != "cli.example" || loc.Query().Get("state") != "s1" || loc.Query().Get("code") == "" {
		t.Fatalf("redirect: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	if res := post("/settings/apps/new", good); res.StatusCode != 422 {
		t.Errorf("taken name: %d", res.StatusCode)
	}
	client := gh.NewClient(nil)
	client.BaseURL, _ = url.Parse(s.URL + "/")
	conf, _, err := client.Apps.CompleteAppManifest(context.Background(), loc.Query().Get("code"))
	if err != nil || conf.GetName() != "Q" || conf.GetOwner().GetLogin() != "acme" || !strings.Contains(conf.GetPEM(), "RSA PRIVATE KEY") ||
		conf.GetWebhookSecret() == "" || conf.GetClientSecret() == "" {
		t.Fatalf("conversion: %+v %v", conf, err)
	}
	if _, r, err := client.Apps.CompleteAppManifest(context.Background(), loc.Query().Get("code")); err == nil || r.StatusCode != 404 {
		t.Fatalf("second conversion: %v", err)
	}
	good2 := strings.Replace(good, `"name":"Q"`, `"name":"Q2"`, 1)
	loc2, _ := url.Parse(post("/settings/apps/new", good2).Header.Get("Location"))
	s.Advance(githubfake.ManifestCodeTTL + 1)
	if _, r, err := client.Apps.CompleteAppManifest(context.Background(), loc2.Query().Get("code")); err == nil || r.StatusCode != 404 {
		t.Fatalf("expired code: %v", err)
	}
}
