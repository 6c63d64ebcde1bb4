package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/policy"
	"github.com/quavon/quavon/internal/repos"
	"github.com/quavon/quavon/internal/web/webtest"
)

// With the gate as shipped, a review-fix request from a user with every
// role and write permission is refused with 403 and the reason, and no
// fix run is recorded (spec §7b: REVIEW_FIX_SIGNED_OFF false).
func TestReviewFixRequestRefusedWhileNotSignedOff(t *testing.T) {
	if policy.ReviewFixesSignedOff() {
		t.Fatal("this test is of the gate as shipped: policy.ReviewFixesSignedOff() must be false")
	}
	f := webtest.New(t, webtest.Options{})
	f.AddUser(t, "alice", "admin", repos.RoleReview, repos.RoleManage)
	c := f.Client(t)
	page := body(t, f.SignIn(t, c, "alice", "/repos"))
	var token string
	for _, m := range hiddenRE.FindAllStringSubmatch(page, -1) {
		if m[1] == "form_token" {
			token = m[2]
		}
	}
	if token == "" {
		t.Fatal("no form token on the page")
	}
	rr := f.NewReviewRun(t, 7, strings.Repeat("ab", 20), nil)
	nc := *c
	nc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := nc.PostForm(f.URL+"/reviews/"+rr+"/fix", url.Values{"form_token": {token}, "delivery": {"stacked_pr"}})
	if err != nil {
		t.Fatal(err)
	}
	got := body(t, resp)
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("review-fix request: %d, want 403", resp.StatusCode)
	}
	if !strings.Contains(got, "threat-analysis sign-off") || !strings.Contains(got, "REVIEW_FIX_SIGNED_OFF") {
		t.Errorf("the refusal does not give the reason: %s", got)
	}
	var n int
	f.InTenant(t, func(ctx context.Context, tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT count(*) FROM fix_runs`).Scan(&n)
	})
	if n != 0 {
		t.Fatalf("%d fix runs recorded by a refused request", n)
	}
}
