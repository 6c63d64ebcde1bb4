package devgithub

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/devstack"
	"github.com/quavon/quavon/internal/githubfake"
)

func TestSeedStateAndControl(t *testing.T) {
	s := githubfake.New(t)
	d := Seed(s, "http://127.0.0.1:1/webhooks/github")
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
