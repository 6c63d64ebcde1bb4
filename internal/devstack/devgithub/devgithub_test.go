package devgithub

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/devstack"
	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/githubfake"
	"github.com/quavon/quavon/internal/testenv/testbroker"
	"github.com/quavon/quavon/internal/tokenbroker"
)

func TestSeedStateAndControl(t *testing.T) {
	s := githubfake.New(t)
	d := Seed(s, "http://127.0.0.1:1/webhooks/github", "http://127.0.0.1:1")
	dir := filepath.Join(t.TempDir(), "gh")
	if err := d.WriteState(dir, "http://control", "tok"); err != nil {
		t.Fatal(err)
	}
	st, err := devstack.ReadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.URL != s.URL || st.Repo != "quavon-demo/demo-app" || st.Review.ID != d.Review.ID || st.Fixer.InstallationID != d.FixerInst.ID {
		t.Fatalf("state %+v", st)
	}
	for _, f := range []string{devstack.SecretFile(dir, "review", "key.pem"), devstack.SecretFile(dir, "fixer", "webhook-secret"), filepath.Join(dir, devstack.ControlTokenFile)} {
		fi, err := os.Stat(f)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", f, fi, err)
		}
	}
	h := d.ControlHandler("tok")
	call := func(method, path, auth string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, path, nil)
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for _, auth := range []string{"", "Bearer to", "Bearer tok2", "tok"} {
		if w := call("POST", "/pr", auth); w.Code != http.StatusUnauthorized {
			t.Fatalf("auth %q: %d", auth, w.Code)
		}
	}
	if len(d.Repo.Issues()) != 0 {
		t.Fatal("an unauthorised call opened a pull request")
	}
	if w := call("POST", "/pr", "Bearer tok"); w.Code != 200 || !strings.Contains(w.Body.String(), `"number":1`) {
		t.Fatalf("pr: %d %s", w.Code, w.Body)
	}
	if w := call("POST", "/issue", "Bearer tok"); w.Code != 200 || !strings.Contains(w.Body.String(), `"number":2`) {
		t.Fatalf("issue: %d %s", w.Code, w.Body)
	}
	if w := call("GET", "/reviews?pr=1", "Bearer tok"); w.Code != 200 || !strings.Contains(w.Body.String(), `"reviews"`) {
		t.Fatalf("reviews: %d %s", w.Code, w.Body)
	}
}

// The demo's installations are exactly what Quavon registers its apps
// with, as the emulator reports them to each app (GET
// /app/installations/{id} with the app's JWT), and the real broker mints
// every token set of each app from them: the seeding, the manifests and the
// broker's sets cannot drift apart.
func TestSeededAppsMatchTokenSets(t *testing.T) {
	s := githubfake.New(t)
	d := Seed(s, "http://127.0.0.1:1/webhooks/github", "")
	insts := map[github.AppKind]*githubfake.Installation{github.AppReview: d.ReviewInst, github.AppFixer: d.FixerInst}
	apps := map[github.AppKind]*githubfake.App{github.AppReview: d.Review, github.AppFixer: d.Fixer}
	for kind, in := range insts {
		req, _ := http.NewRequest("GET", s.URL+"/app/installations/"+strconv.FormatInt(in.ID, 10), nil)
		req.Header.Set("Authorization", "Bearer "+s.SignJWT(apps[kind]))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Permissions github.Permissions `json:"permissions"`
			Events      []string           `json:"events"`
		}
		err = json.NewDecoder(res.Body).Decode(&got)
		res.Body.Close()
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("%s installation: %d %v", kind, res.StatusCode, err)
		}
		if want := github.AppPermissions(kind); !got.Permissions.Equal(want) {
			t.Errorf("%s app installed with %s, registered with %s", kind, got.Permissions, want)
		}
		if want := github.AppEvents(kind); !slices.Equal(slices.Sorted(slices.Values(got.Events)), slices.Sorted(slices.Values(want))) {
			t.Errorf("%s app subscribed to %v, registered with %v", kind, got.Events, want)
		}
	}
	b := testbroker.Start(t, s, apps, testbroker.Options{})
	pub := b.Client(t, tokenbroker.RolePublisher)
	for _, set := range github.TokenSets() {
		tok, err := pub.Token(context.Background(), github.TokenRequest{InstallationID: insts[set.App()].ID, Repo: d.Repo.FullName(), Set: set})
		if err != nil {
			t.Errorf("set %s from the seeded %s installation: %v", set, set.App(), err)
			continue
		}
		if !tok.Permissions.Equal(set.Permissions()) {
			t.Errorf("set %s minted with %s", set, tok.Permissions)
		}
	}
}
