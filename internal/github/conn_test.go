package github

import (
	"context"
	"errors"
	"net/http"
	"testing"
)

// A 401 from GitHub makes the next token request name the refused token as
// stale, so the broker drops it and mints a new one.
func TestUnauthorizedMarksTokenStale(t *testing.T) {
	t.Parallel()
	calls := 0
	conn, ft := newTestConn(t, map[string]http.HandlerFunc{
		"GET /repos/o/r": func(w http.ResponseWriter, r *http.Request) {
			calls++
			if calls == 1 {
				http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
				return
			}
			_, _ = w.Write([]byte(`{"id":7,"name":"r","full_name":"o/r","default_branch":"main","owner":{"login":"o"}}`))
		},
	})
	rd, err := NewReader(context.Background(), conn, 9, "o/r")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rd.Repository(context.Background()); !errors.Is(err, ErrForbidden) {
		t.Fatalf("err = %v, want ErrForbidden", err)
	}
	repo, err := rd.Repository(context.Background())
	if err != nil || repo.DefaultBranch != "main" {
		t.Fatalf("repo = %+v, err = %v", repo, err)
	}
	if ft.Issued() != 2 {
		t.Fatalf("issued = %d, want a fresh token after the 401", ft.Issued())
	}
	ft.mu.Lock()
	defer ft.mu.Unlock()
	stale := 0
	for _, r := range ft.requests {
		if r.Stale != "" {
			stale++
		}
	}
	if last := ft.requests[len(ft.requests)-1]; last.Stale != TokenDigest("tok-x") || stale != 1 {
		t.Fatalf("requests %+v: want the stale digest of the refused token once, after the 401", ft.requests)
	}
	for _, r := range ft.requests {
		if r.Set != SetReviewRead || r.InstallationID != 9 || r.Repo != "o/r" {
			t.Fatalf("request %+v: the reader asks for exactly the read set of its repository", r)
		}
	}
}

func TestTokenRequestValidate(t *testing.T) {
	t.Parallel()
	ok := TokenRequest{InstallationID: 1, Repo: "o/r", Set: SetReviewRead}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]TokenRequest{
		"installation": {Repo: "o/r", Set: SetReviewRead},
		"repo":         {InstallationID: 1, Repo: "o/r/../x", Set: SetReviewRead},
		"set":          {InstallationID: 1, Repo: "o/r", Set: "admin"},
		"stale":        {InstallationID: 1, Repo: "o/r", Set: SetFixer, Stale: "tok"},
	} {
		if r.Validate() == nil {
			t.Errorf("%s: accepted %+v", name, r)
		}
	}
	for _, s := range TokenSets() {
		if !s.App().Valid() || s.Permissions().Validate() != nil {
			t.Errorf("set %s: app %q permissions %v", s, s.App(), s.Permissions())
		}
	}
	if SetFixer.App() != AppFixer || SetCodeScanning.App() != AppReview {
		t.Error("sets map to the wrong app")
	}
}
