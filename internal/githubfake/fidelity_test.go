package githubfake_test

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/githubfake"
	"github.com/quavon/quavon/internal/githubfake/apidesc"
	"github.com/quavon/quavon/internal/testenv"
)

// The fidelity suite: every route the emulator serves answers, for every
// status it can answer, what GitHub's REST description allows, and every
// webhook builder produces, for every action Quavon handles, what both
// webhook descriptions allow. The checks themselves run inside the
// emulator (every answer, every built payload); this file makes sure each
// route and status is reached and that the checks can fail.

// descriptions returns the shared descriptions, skipping (or failing under
// scripts/test) without them.
func descriptions(t *testing.T) *apidesc.Descriptions {
	t.Helper()
	d, ok, err := apidesc.Shared()
	if err != nil {
		t.Fatalf("GitHub's descriptions: %v", err)
	}
	if !ok {
		if testenv.Required() {
			t.Fatalf("$%s is required (QUAVON_TEST_REQUIRE_SERVICES=1); run scripts/test", apidesc.EnvDir)
		}
		t.Skipf("$%s not set; run scripts/test (or scripts/test --services-only)", apidesc.EnvDir)
	}
	return d
}

// recordTB catches the emulator's check failures instead of failing the
// test, so the suite can show that a wrong answer is caught.
type recordTB struct {
	testing.TB
	errs []string
}

func (r *recordTB) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

type httpCall struct {
	method, path, token string
	body                any // nil, a string (sent raw) or a JSON value
}

func (w *world) do(t *testing.T, c httpCall) (int, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := c.body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(c.method, w.s.URL+c.path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func sarifField(t *testing.T, doc string) string {
	t.Helper()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte(doc))
	_ = zw.Close()
	return base64.StdEncoding.EncodeToString(gz.Bytes())
}

// TestFidelityRoutes calls every route in situations that reach each of
// its answers; the emulator checks each answer against the description.
func TestFidelityRoutes(t *testing.T) {
	descriptions(t)
	w := newWorld(t)
	s, repo := w.s, w.repo
	tok := s.InstallationToken(w.inst, nil)
	readOnly := s.InstallationToken(w.inst, map[string]string{"metadata": "read"})
	other := s.InstallationToken(s.Install(s.RegisterApp("other"), "mallory", map[string]string{"contents": "read"}), nil)
	jwt := s.SignJWT(w.app)

	// A situation with something of everything.
	s.SetPermission("acme", "app", "alice", "write")
	repo.Commit("feature", map[string]string{"src/a.go": "package a\n\nfunc A() {}\n", "new.txt": "new\n"}, "feature work")
	repo.Commit("conflict", map[string]string{"README.md": "theirs\n"}, "conflicting")
	repo.Commit("main", map[string]string{"README.md": "ours\n"}, "main moves")
	pr := repo.AddPullRequest(githubfake.PullRequestOptions{Title: "Feature", Body: "does things", Author: "alice", Head: "feature"})
	dirty := repo.AddPullRequest(githubfake.PullRequestOptions{Title: "Conflict", Author: "alice", Head: "conflict", Draft: true})
	issue := repo.AddIssue(githubfake.IssueOptions{Title: "Bug", Body: "broken", Author: "alice", Labels: []string{"bug"}})
	closed := repo.AddIssue(githubfake.IssueOptions{Title: "Old", Author: "alice", Closed: true})
	cid := repo.AddComment(issue, "alice", "me too")
	repo.Protect("main")
	s.SetRules("acme", "app", "~DEFAULT_BRANCH", []githubfake.Rule{{Type: "deletion"}, {Type: "non_fast_forward"}, {Type: "pull_request", Parameters: map[string]any{
		"dismiss_stale_reviews_on_push": false, "require_code_owner_review": false, "require_last_push_approval": false,
		"required_approving_review_count": 1, "required_review_thread_resolution": false,
	}}})
	head := repo.Ref("main")
	blob := func(t *testing.T) string {
		_, b := w.do(t, httpCall{"POST", "/repos/acme/app/git/blobs", tok, map[string]any{"content": "x", "encoding": "utf-8"}})
		var v struct{ SHA string }
		_ = json.Unmarshal(b, &v)
		return v.SHA
	}
	treeOf := func(sha string) string {
		info, _ := repo.CommitInfo(sha)
		return info.Tree
	}
	var checkID, reviewID int64

	steps := []struct {
		name string
		call httpCall
		want int
		then func(body []byte)
	}{
		{"list installations", httpCall{"GET", "/app/installations", jwt, nil}, 200, nil},
		{"get installation", httpCall{"GET", fmt.Sprintf("/app/installations/%d", w.inst.ID), jwt, nil}, 200, nil},
		{"get installation: other app's", httpCall{"GET", "/app/installations/1", jwt, nil}, 404, nil},
		{"list installations without JWT", httpCall{"GET", "/app/installations", tok, nil}, 401, nil},
		{"mint token", httpCall{"POST", fmt.Sprintf("/app/installations/%d/access_tokens", w.inst.ID), jwt, map[string]any{"repositories": []string{"app"}, "permissions": map[string]string{"contents": "read"}}}, 201, nil},
		{"mint token: too much", httpCall{"POST", fmt.Sprintf("/app/installations/%d/access_tokens", w.inst.ID), jwt, map[string]any{"permissions": map[string]string{"workflows": "write"}}}, 422, nil},
		{"mint token: bad JSON", httpCall{"POST", fmt.Sprintf("/app/installations/%d/access_tokens", w.inst.ID), jwt, "{"}, 400, nil},
		{"installation repositories", httpCall{"GET", "/installation/repositories", tok, nil}, 200, nil},
		{"installation repositories: JWT", httpCall{"GET", "/installation/repositories", jwt, nil}, 401, nil},
		{"repo installation", httpCall{"GET", "/repos/acme/app/installation", jwt, nil}, 200, nil},
		{"repo installation: none", httpCall{"GET", "/repos/mallory/none/installation", jwt, nil}, 404, nil},

		{"authenticated user", httpCall{"GET", "/user", s.UserToken(w.app, "alice"), nil}, 200, nil},
		{"authenticated user: installation token", httpCall{"GET", "/user", tok, nil}, 403, nil},
		{"authenticated user: none", httpCall{"GET", "/user", "", nil}, 401, nil},

		{"get repo", httpCall{"GET", "/repos/acme/app", tok, nil}, 200, nil},
		{"get repo: other installation", httpCall{"GET", "/repos/acme/app", other, nil}, 404, nil},
		{"get repo: bad credentials", httpCall{"GET", "/repos/acme/app", "ghs_nope", nil}, 401, nil},
		{"collaborator permission", httpCall{"GET", "/repos/acme/app/collaborators/alice/permission", tok, nil}, 200, nil},
		{"collaborator permission: unknown user", httpCall{"GET", "/repos/acme/app/collaborators/nobody-at-all/permission", tok, nil}, 404, nil},
		{"branch", httpCall{"GET", "/repos/acme/app/branches/main", tok, nil}, 200, nil},
		{"branch: missing", httpCall{"GET", "/repos/acme/app/branches/nope", tok, nil}, 404, nil},
		{"protection", httpCall{"GET", "/repos/acme/app/branches/main/protection", tok, nil}, 200, nil},
		{"protection: not protected", httpCall{"GET", "/repos/acme/app/branches/feature/protection", tok, nil}, 404, nil},
		{"protection: no administration", httpCall{"GET", "/repos/acme/app/branches/main/protection", readOnly, nil}, 403, nil},
		{"branch rules", httpCall{"GET", "/repos/acme/app/rules/branches/main", tok, nil}, 200, nil},
		{"contents: file", httpCall{"GET", "/repos/acme/app/contents/src/a.go?ref=feature", tok, nil}, 200, nil},
		{"contents: directory", httpCall{"GET", "/repos/acme/app/contents/src", tok, nil}, 200, nil},
		{"contents: root", httpCall{"GET", "/repos/acme/app/contents", tok, nil}, 200, nil},
		{"contents: missing", httpCall{"GET", "/repos/acme/app/contents/nope", tok, nil}, 404, nil},
		{"contents: no contents permission", httpCall{"GET", "/repos/acme/app/contents/README.md", readOnly, nil}, 403, nil},

		{"create blob", httpCall{"POST", "/repos/acme/app/git/blobs", tok, map[string]any{"content": "aGk=", "encoding": "base64"}}, 201, nil},
		{"create blob: no content", httpCall{"POST", "/repos/acme/app/git/blobs", tok, map[string]any{}}, 422, nil},
		{"create blob: read token", httpCall{"POST", "/repos/acme/app/git/blobs", readOnly, map[string]any{"content": "x"}}, 403, nil},
		{"get tree", httpCall{"GET", "/repos/acme/app/git/trees/main?recursive=1", tok, nil}, 200, nil},
		{"get tree: missing", httpCall{"GET", "/repos/acme/app/git/trees/" + strings.Repeat("0", 40), tok, nil}, 404, nil},
		{"get commit", httpCall{"GET", "/repos/acme/app/git/commits/" + head, tok, nil}, 200, nil},
		{"get commit: missing", httpCall{"GET", "/repos/acme/app/git/commits/" + strings.Repeat("0", 40), tok, nil}, 404, nil},
		{"get ref", httpCall{"GET", "/repos/acme/app/git/ref/heads/main", tok, nil}, 200, nil},
		{"get ref: missing", httpCall{"GET", "/repos/acme/app/git/ref/heads/nope", tok, nil}, 404, nil},
		{"matching refs", httpCall{"GET", "/repos/acme/app/git/matching-refs/heads/", tok, nil}, 200, nil},
		{"matching refs: none", httpCall{"GET", "/repos/acme/app/git/matching-refs/heads/nope", tok, nil}, 200, nil},
		{"create ref: exists", httpCall{"POST", "/repos/acme/app/git/refs", tok, map[string]any{"ref": "refs/heads/main", "sha": head}}, 422, nil},
		{"create ref: bad JSON", httpCall{"POST", "/repos/acme/app/git/refs", tok, "nope"}, 400, nil},
		{"update ref: protected", httpCall{"PATCH", "/repos/acme/app/git/refs/heads/main", tok, map[string]any{"sha": head}}, 422, nil},
		{"delete ref: missing", httpCall{"DELETE", "/repos/acme/app/git/refs/heads/nope", tok, nil}, 422, nil},

		{"list issues", httpCall{"GET", "/repos/acme/app/issues?state=all", tok, nil}, 200, nil},
		{"list issues: bad state", httpCall{"GET", "/repos/acme/app/issues?state=gone", tok, nil}, 422, nil},
		{"list issues: unknown repository", httpCall{"GET", "/repos/acme/nope/issues", tok, nil}, 404, nil},
		{"create issue", httpCall{"POST", "/repos/acme/app/issues", tok, map[string]any{"title": "From the app", "labels": []string{"bug"}}}, 201, nil},
		{"create issue: no title", httpCall{"POST", "/repos/acme/app/issues", tok, map[string]any{"body": "x"}}, 422, nil},
		{"get issue", httpCall{"GET", fmt.Sprintf("/repos/acme/app/issues/%d", issue), tok, nil}, 200, nil},
		{"get issue: closed", httpCall{"GET", fmt.Sprintf("/repos/acme/app/issues/%d", closed), tok, nil}, 200, nil},
		{"get issue: pull request", httpCall{"GET", fmt.Sprintf("/repos/acme/app/issues/%d", pr), tok, nil}, 200, nil},
		{"get issue: missing", httpCall{"GET", "/repos/acme/app/issues/999", tok, nil}, 404, nil},
		{"update issue", httpCall{"PATCH", fmt.Sprintf("/repos/acme/app/issues/%d", issue), tok, map[string]any{"title": "Bug (edited)"}}, 200, nil},
		{"update issue: close as not planned", httpCall{"PATCH", fmt.Sprintf("/repos/acme/app/issues/%d", closed), tok, map[string]any{"state": "closed", "state_reason": "not_planned"}}, 200, nil},
		{"update issue: bad state", httpCall{"PATCH", fmt.Sprintf("/repos/acme/app/issues/%d", issue), tok, map[string]any{"state": "gone"}}, 422, nil},
		{"issue labels", httpCall{"GET", fmt.Sprintf("/repos/acme/app/issues/%d/labels", issue), tok, nil}, 200, nil},
		{"issue labels: missing issue", httpCall{"GET", "/repos/acme/app/issues/999/labels", tok, nil}, 404, nil},
		{"add labels", httpCall{"POST", fmt.Sprintf("/repos/acme/app/issues/%d/labels", issue), tok, map[string]any{"labels": []string{"quavon:fix"}}}, 200, nil},
		{"add labels: bad JSON", httpCall{"POST", fmt.Sprintf("/repos/acme/app/issues/%d/labels", issue), tok, "{"}, 400, nil},
		{"remove label", httpCall{"DELETE", fmt.Sprintf("/repos/acme/app/issues/%d/labels/quavon:fix", issue), tok, nil}, 200, nil},
		{"remove label: missing", httpCall{"DELETE", fmt.Sprintf("/repos/acme/app/issues/%d/labels/nope", issue), tok, nil}, 404, nil},
		{"list comments", httpCall{"GET", fmt.Sprintf("/repos/acme/app/issues/%d/comments", issue), tok, nil}, 200, nil},
		{"list comments: missing issue", httpCall{"GET", "/repos/acme/app/issues/999/comments", tok, nil}, 404, nil},
		{"create comment", httpCall{"POST", fmt.Sprintf("/repos/acme/app/issues/%d/comments", issue), tok, map[string]any{"body": "on it"}}, 201, nil},
		{"create comment: empty", httpCall{"POST", fmt.Sprintf("/repos/acme/app/issues/%d/comments", issue), tok, map[string]any{"body": ""}}, 422, nil},
		{"get comment", httpCall{"GET", fmt.Sprintf("/repos/acme/app/issues/comments/%d", cid), tok, nil}, 200, nil},
		{"get comment: missing", httpCall{"GET", "/repos/acme/app/issues/comments/1", tok, nil}, 404, nil},
		{"update comment", httpCall{"PATCH", fmt.Sprintf("/repos/acme/app/issues/comments/%d", cid), tok, map[string]any{"body": "edited"}}, 200, nil},
		{"update comment: empty", httpCall{"PATCH", fmt.Sprintf("/repos/acme/app/issues/comments/%d", cid), tok, map[string]any{"body": ""}}, 422, nil},

		{"list pulls", httpCall{"GET", "/repos/acme/app/pulls?state=all", tok, nil}, 200, nil},
		{"list pulls: bad state", httpCall{"GET", "/repos/acme/app/pulls?state=merged", tok, nil}, 422, nil},
		{"get pull: clean", httpCall{"GET", fmt.Sprintf("/repos/acme/app/pulls/%d", pr), tok, nil}, 200, nil},
		{"get pull: dirty draft", httpCall{"GET", fmt.Sprintf("/repos/acme/app/pulls/%d", dirty), tok, nil}, 200, nil},
		{"get pull: an issue", httpCall{"GET", fmt.Sprintf("/repos/acme/app/pulls/%d", issue), tok, nil}, 404, nil},
		{"update pull", httpCall{"PATCH", fmt.Sprintf("/repos/acme/app/pulls/%d", pr), tok, map[string]any{"body": "does more"}}, 200, nil},
		{"update pull: bad base", httpCall{"PATCH", fmt.Sprintf("/repos/acme/app/pulls/%d", pr), tok, map[string]any{"base": "nope"}}, 422, nil},
		{"pull files", httpCall{"GET", fmt.Sprintf("/repos/acme/app/pulls/%d/files", pr), tok, nil}, 200, nil},
		{"create pull: exists", httpCall{"POST", "/repos/acme/app/pulls", tok, map[string]any{"title": "again", "head": "feature", "base": "main"}}, 422, nil},
		{"create pull: read token", httpCall{"POST", "/repos/acme/app/pulls", readOnly, map[string]any{"title": "x", "head": "feature", "base": "main"}}, 403, nil},
		{"create review", httpCall{"POST", fmt.Sprintf("/repos/acme/app/pulls/%d/reviews", pr), tok, map[string]any{"event": "COMMENT", "body": "looks fine", "comments": []any{map[string]any{"path": "src/a.go", "line": 3, "body": "nit"}}}}, 200,
			func(b []byte) { var v struct{ ID int64 }; _ = json.Unmarshal(b, &v); reviewID = v.ID }},
		{"create review: bad line", httpCall{"POST", fmt.Sprintf("/repos/acme/app/pulls/%d/reviews", pr), tok, map[string]any{"event": "COMMENT", "body": "x", "comments": []any{map[string]any{"path": "src/a.go", "line": 99, "body": "nit"}}}}, 422, nil},
		{"create review: bad event", httpCall{"POST", fmt.Sprintf("/repos/acme/app/pulls/%d/reviews", pr), tok, map[string]any{"event": "MERGE"}}, 422, nil},
		{"list reviews", httpCall{"GET", fmt.Sprintf("/repos/acme/app/pulls/%d/reviews", pr), tok, nil}, 200, nil},

		{"create check run", httpCall{"POST", "/repos/acme/app/check-runs", tok, map[string]any{"name": "quavon", "head_sha": repo.Ref("feature"), "status": "in_progress"}}, 201,
			func(b []byte) { var v struct{ ID int64 }; _ = json.Unmarshal(b, &v); checkID = v.ID }},
		{"create check run: no name", httpCall{"POST", "/repos/acme/app/check-runs", tok, map[string]any{"head_sha": head}}, 422, nil},
		{"list check runs", httpCall{"GET", "/repos/acme/app/commits/feature/check-runs", tok, nil}, 200, nil},
		{"list check runs: bad ref", httpCall{"GET", "/repos/acme/app/commits/nope/check-runs", tok, nil}, 422, nil},
		{"get repo commit", httpCall{"GET", "/repos/acme/app/commits/main", tok, nil}, 200, nil},
		{"get repo commit: bad ref", httpCall{"GET", "/repos/acme/app/commits/nope", tok, nil}, 422, nil},
		{"upload SARIF", httpCall{"POST", "/repos/acme/app/code-scanning/sarifs", tok, map[string]any{"commit_sha": head, "ref": "refs/heads/main", "sarif": sarifField(t, `{"version":"2.1.0","runs":[]}`)}}, 202, nil},
		{"upload SARIF: not SARIF", httpCall{"POST", "/repos/acme/app/code-scanning/sarifs", tok, map[string]any{"commit_sha": head, "ref": "refs/heads/main", "sarif": "bm9wZQ=="}}, 400, nil},
		{"upload SARIF: bad ref", httpCall{"POST", "/repos/acme/app/code-scanning/sarifs", tok, map[string]any{"commit_sha": head, "ref": "main", "sarif": "x"}}, 422, nil},
		{"get SARIF: missing", httpCall{"GET", "/repos/acme/app/code-scanning/sarifs/nope", tok, nil}, 404, nil},
		{"list analyses", httpCall{"GET", "/repos/acme/app/code-scanning/analyses?ref=refs/heads/main", tok, nil}, 200, nil},
		{"list analyses: no repository", httpCall{"GET", "/repos/acme/nope/code-scanning/analyses", tok, nil}, 404, nil},
		{"unknown route", httpCall{"GET", "/repos/acme/app/no-such-thing", tok, nil}, 404, nil},
	}
	for _, st := range steps {
		status, body := w.do(t, st.call)
		if status != st.want {
			t.Errorf("%s: %s %s = %d, want %d: %s", st.name, st.call.method, st.call.path, status, st.want, body)
		}
		if st.then != nil {
			st.then(body)
		}
	}

	// Steps that need what earlier ones made.
	tree := treeOf(repo.Ref("feature"))
	sha := blob(t)
	more := []struct {
		name string
		call httpCall
		want int
	}{
		{"create tree", httpCall{"POST", "/repos/acme/app/git/trees", tok, map[string]any{"base_tree": tree, "tree": []any{map[string]any{"path": "b.txt", "mode": "100644", "type": "blob", "sha": sha}}}}, 201},
		{"create tree: bad mode", httpCall{"POST", "/repos/acme/app/git/trees", tok, map[string]any{"tree": []any{map[string]any{"path": "b.txt", "mode": "7", "sha": sha}}}}, 422},
		{"get blob", httpCall{"GET", "/repos/acme/app/git/blobs/" + sha, tok, nil}, 200},
		{"get blob: missing", httpCall{"GET", "/repos/acme/app/git/blobs/" + strings.Repeat("0", 40), tok, nil}, 404},
		{"create commit", httpCall{"POST", "/repos/acme/app/git/commits", tok, map[string]any{"message": "m", "tree": tree, "parents": []string{repo.Ref("feature")}}}, 201},
		{"create commit: bad tree", httpCall{"POST", "/repos/acme/app/git/commits", tok, map[string]any{"message": "m", "tree": strings.Repeat("0", 40)}}, 422},
		{"create ref", httpCall{"POST", "/repos/acme/app/git/refs", tok, map[string]any{"ref": "refs/heads/quavon/fix-1-0123abcd", "sha": repo.Ref("feature")}}, 201},
		{"update ref", httpCall{"PATCH", "/repos/acme/app/git/refs/heads/quavon/fix-1-0123abcd", tok, map[string]any{"sha": repo.Ref("feature")}}, 200},
		{"update ref: not a fast-forward", httpCall{"PATCH", "/repos/acme/app/git/refs/heads/quavon/fix-1-0123abcd", tok, map[string]any{"sha": repo.Ref("conflict")}}, 422},
		{"create pull: no commits", httpCall{"POST", "/repos/acme/app/pulls", tok, map[string]any{"title": "Fix", "head": "quavon/fix-1-0123abcd", "base": "feature", "draft": true}}, 422},
		{"create pull", httpCall{"POST", "/repos/acme/app/pulls", tok, map[string]any{"title": "Fix", "head": "quavon/fix-1-0123abcd", "base": "main", "draft": true}}, 201},
		{"delete ref", httpCall{"DELETE", "/repos/acme/app/git/refs/heads/quavon/fix-1-0123abcd", tok, nil}, 204},
		{"get review", httpCall{"GET", fmt.Sprintf("/repos/acme/app/pulls/%d/reviews/%d", pr, reviewID), tok, nil}, 200},
		{"get review: missing", httpCall{"GET", fmt.Sprintf("/repos/acme/app/pulls/%d/reviews/1", pr), tok, nil}, 404},
		{"get check run", httpCall{"GET", fmt.Sprintf("/repos/acme/app/check-runs/%d", checkID), tok, nil}, 200},
		{"get check run: missing", httpCall{"GET", "/repos/acme/app/check-runs/1", tok, nil}, 404},
		{"update check run", httpCall{"PATCH", fmt.Sprintf("/repos/acme/app/check-runs/%d", checkID), tok, map[string]any{"conclusion": "neutral", "output": map[string]any{"title": "t", "summary": "s"}}}, 200},
		{"update check run: bad conclusion", httpCall{"PATCH", fmt.Sprintf("/repos/acme/app/check-runs/%d", checkID), tok, map[string]any{"conclusion": "maybe"}}, 422},
		{"revoke token", httpCall{"DELETE", "/installation/token", s.InstallationToken(w.inst, nil), nil}, 204},
	}
	for _, st := range more {
		if status, body := w.do(t, st.call); status != st.want {
			t.Errorf("%s: %s %s = %d, want %d: %s", st.name, st.call.method, st.call.path, status, st.want, body)
		}
	}
	// The manifest flow: the web form hands out a code, exchanged once.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	form, err := noRedirect.PostForm(s.URL+"/settings/apps/new?state=st", url.Values{"manifest": {`{"name":"Fidelity","url":"https://q.example",` +
		`"hook_attributes":{"url":"https://q.example/h","active":true},"redirect_url":"https://cli.example/cb","public":false,` +
		`"default_permissions":{"contents":"read","issues":"write"},"default_events":["issues"]}`}})
	if err != nil {
		t.Fatal(err)
	}
	form.Body.Close()
	loc, _ := url.Parse(form.Header.Get("Location"))
	code := loc.Query().Get("code")
	for _, want := range []int{201, 404} {
		if status, body := w.do(t, httpCall{"POST", "/app-manifests/" + code + "/conversions", "", nil}); status != want {
			t.Errorf("manifest conversion = %d, want %d: %s", status, want, body)
		}
	}
	// The upload's status, now that one exists.
	up := repo.SARIFUploads()
	if len(up) != 1 {
		t.Fatalf("SARIF uploads = %d", len(up))
	}
	if status, body := w.do(t, httpCall{"GET", "/repos/acme/app/code-scanning/sarifs/" + up[0].ID, tok, nil}); status != 200 {
		t.Errorf("get SARIF = %d: %s", status, body)
	}
	// And its analyses (one per run), now that an upload with a run exists.
	if _, body := w.do(t, httpCall{"POST", "/repos/acme/app/code-scanning/sarifs", tok, map[string]any{"commit_sha": head, "ref": "refs/heads/main",
		"sarif": sarifField(t, `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"gosec"}},"automationDetails":{"id":"quavon/abc"},"results":[]}]}`)}}); !strings.Contains(string(body), "id") {
		t.Errorf("second upload: %s", body)
	}
	if status, body := w.do(t, httpCall{"GET", "/repos/acme/app/code-scanning/analyses?ref=refs/heads/main", tok, nil}); status != 200 ||
		!strings.Contains(string(body), `"category":"quavon/"`) {
		t.Errorf("list analyses = %d: %s", status, body)
	}
	// An archived repository refuses writes.
	repo.SetArchived(true)
	if status, body := w.do(t, httpCall{"POST", "/repos/acme/app/issues", tok, map[string]any{"title": "x"}}); status != 403 || !strings.Contains(string(body), "archived") {
		t.Errorf("write to an archived repository = %d: %s", status, body)
	}
	if status, _ := w.do(t, httpCall{"GET", "/repos/acme/app", tok, nil}); status != 200 {
		t.Errorf("read of an archived repository = %d", status)
	}

	// Every route was reached with a success and with an error.
	seen := map[string][]int{}
	for _, r := range s.Requests() {
		if r.Operation != "" {
			seen[r.Operation] = append(seen[r.Operation], r.Status)
		}
	}
	for _, op := range s.Operations() {
		st := seen[op]
		if !slices.ContainsFunc(st, func(c int) bool { return c >= 200 && c < 300 }) {
			t.Errorf("route %s was never answered with success (statuses %v)", op, st)
		}
		_, exempt := noErrorScenario[op]
		reached := slices.ContainsFunc(st, func(c int) bool { return c >= 400 })
		if !reached && !exempt {
			t.Errorf("route %s was never answered with an error (statuses %v)", op, st)
		}
		if reached && exempt {
			t.Errorf("route %s is answered with an error now (statuses %v): drop it from noErrorScenario", op, st)
		}
	}
}

// noErrorScenario are the routes the suite reaches with success only, each
// with the reason GitHub's description has no error a scenario could reach
// there; their generic errors (401, 403, 404 on every route) are answered
// in TestFidelityGenericErrors.
var noErrorScenario = map[string]string{
	"apps/revoke-installation-access-token": "GitHub documents 204 only: revoking the token a call is made with always succeeds",
	"repos/get-branch-rules":                "GitHub documents 200 only: a branch without rules (or one that does not exist) lists none",
	"pulls/list-reviews":                    "GitHub documents 200 only: a pull request without reviews lists none",
	"pulls/list-files":                      "GitHub documents 422, 500 and 503 without a condition a request can cause (server-side limits and outages); the emulator models none",
	"git/list-matching-refs":                "GitHub documents 409 only, for an empty repository (\"Git Repository is empty.\"), and every emulated repository has a commit; a prefix that matches nothing is 200 []",
}

// TestFidelityGenericErrors answers every route without credentials, with
// bad credentials, with a token of another installation, and (for writes)
// a body that is not JSON: GitHub's generic error shapes on every route.
func TestFidelityGenericErrors(t *testing.T) {
	descriptions(t)
	w := newWorld(t)
	s := w.s
	other := s.InstallationToken(s.Install(s.RegisterApp("other"), "mallory", map[string]string{"contents": "read"}), nil)
	tok := s.InstallationToken(w.inst, nil)
	paths := map[string]string{
		"{owner}": "acme", "{repo}": "app", "{installation_id}": fmt.Sprint(w.inst.ID), "{user}": "alice",
		"{branch...}": "main", "{path...}": "README.md", "{sha}": w.repo.Ref("main"), "{sha...}": "main",
		"{ref...}": "heads/main", "{number}": "1", "{id}": "1", "{name}": "bug",
	}
	w.repo.AddIssue(githubfake.IssueOptions{Title: "x", Author: "alice"})
	for _, rt := range githubfake.RoutePatterns(s) {
		p := rt.Pattern
		for k, v := range paths {
			p = strings.ReplaceAll(p, k, v)
		}
		tokens := []string{"", "ghs_bad", other}
		if strings.HasPrefix(rt.Pattern, "/installation/") {
			tokens = tokens[:2] // another installation's token is valid there
		}
		for _, token := range tokens {
			status, body := w.do(t, httpCall{rt.Method, p, token, nil})
			if status < 400 {
				t.Errorf("%s %s with token %q = %d: %s", rt.Method, p, token, status, body)
			}
		}
		if rt.Method == "POST" || rt.Method == "PATCH" {
			if status, _ := w.do(t, httpCall{rt.Method, p, tok, "{not json"}); status != 400 && status != 404 && status != 401 {
				t.Errorf("%s %s with a broken body = %d, want 400", rt.Method, p, status)
			}
		}
	}
}

// TestFidelityChecksCanFail shows the checks catch what they must: a
// property GitHub does not define, a missing required property, a wrong
// type, an enum value GitHub does not send, in answers and payloads.
func TestFidelityChecksCanFail(t *testing.T) {
	d := descriptions(t)
	w := newWorld(t)
	tok := w.s.InstallationToken(w.inst, nil)
	_, good := w.do(t, httpCall{"GET", "/repos/acme/app", tok, nil})
	if err := d.CheckResponse("repos/get", 200, good); err != nil {
		t.Fatalf("the emulator's repository does not validate: %v", err)
	}
	mutate := func(body []byte, f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, _ := json.Marshal(m)
		return b
	}
	for name, f := range map[string]func(map[string]any){
		"undefined property":        func(m map[string]any) { m["merge_queue_magic"] = true },
		"undefined nested":          func(m map[string]any) { m["owner"].(map[string]any)["karma"] = 3 },
		"missing required":          func(m map[string]any) { delete(m, "default_branch") },
		"wrong type":                func(m map[string]any) { m["private"] = "yes" },
		"null where not nullable":   func(m map[string]any) { m["owner"] = nil },
		"date-time that is not":     func(m map[string]any) { m["created_at"] = "yesterday" },
		"nullable field wrong type": func(m map[string]any) { m["description"] = 7 },
	} {
		if err := d.CheckResponse("repos/get", 200, mutate(good, f)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	_, pull := w.do(t, httpCall{"GET", "/repos/acme/app/issues?state=all", tok, nil})
	if err := d.CheckResponse("issues/list-for-repo", 200, pull); err != nil {
		t.Fatal(err)
	}
	if err := d.CheckResponse("repos/get", 201, good); !errors.Is(err, apidesc.ErrUndocumented) {
		t.Errorf("undocumented status: %v", err)
	}
	// An error status the operation does not describe passes only where
	// apidesc.ErrorStatuses lists it, and then only with GitHub's error
	// shape.
	invalid := []byte(`{"message":"Validation Failed","documentation_url":"https://docs.github.com/rest","status":"422","errors":[{"resource":"CheckRun","field":"conclusion","code":"invalid"}]}`)
	if err := d.CheckResponse("checks/create", 422, invalid); err != nil {
		t.Errorf("a listed error status: %v", err)
	}
	if err := d.CheckResponse("checks/create", 422, good); err == nil {
		t.Error("a listed error status with a body that is no error: accepted")
	}
	for _, c := range []struct {
		op     string
		status int
	}{{"repos/get", 422}, {"checks/create", 409}, {"pulls/list-reviews", 418}} {
		if err := d.CheckResponse(c.op, c.status, invalid); !errors.Is(err, apidesc.ErrUndocumented) {
			t.Errorf("%s %d, not in apidesc.ErrorStatuses: %v", c.op, c.status, err)
		}
	}

	// Webhooks: both descriptions refuse an extra property and a bad enum.
	w.repo.AddIssue(githubfake.IssueOptions{Title: "x", Author: "alice", Labels: []string{"bug"}})
	payload, _ := json.Marshal(w.s.IssuesEvent("labeled", w.inst, w.repo, 1, "alice", "bug"))
	if err := d.CheckWebhook("issues", payload); err != nil {
		t.Fatalf("the emulator's issues.labeled does not validate: %v", err)
	}
	for name, f := range map[string]func(map[string]any){
		"undefined property": func(m map[string]any) { m["issue"].(map[string]any)["priority"] = "high" },
		"bad enum":           func(m map[string]any) { m["issue"].(map[string]any)["author_association"] = "FRIEND" },
		"missing label id":   func(m map[string]any) { delete(m["label"].(map[string]any), "id") },
	} {
		err := d.CheckWebhook("issues", mutate(payload, f))
		if err == nil || !strings.Contains(err.Error(), "openapi-webhooks") || !strings.Contains(err.Error(), "webhooks-schemas") {
			t.Errorf("%s: not refused by both descriptions: %v", name, err)
		}
	}

	// The emulator's own hook reports a wrong answer: an emulator whose
	// test double records errors, answering with an injected extra field.
	rec := &recordTB{TB: t}
	s2 := githubfake.New(rec)
	s2.AddRepo("octo", "pub", githubfake.RepoOptions{Files: map[string]string{"a": "b"}})
	githubfake.CorruptAnswers(s2, func(b []byte) []byte { return append([]byte(`{"zz_extra":1,`), b[1:]...) })
	if status, _ := (&world{s: s2}).do(t, httpCall{"GET", "/repos/octo/pub", "", nil}); status != 200 {
		t.Fatalf("status %d", status)
	}
	if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "zz_extra") {
		t.Errorf("the emulator's check did not report the extra field: %q", rec.errs)
	}
}

// TestFidelityWebhooks builds every event and action Quavon handles from
// the emulator's state and validates each against both descriptions.
func TestFidelityWebhooks(t *testing.T) {
	d := descriptions(t)
	w := newWorld(t)
	s, repo, in := w.s, w.repo, w.inst
	s.AddOrg("acme")
	check := func(event string, payload map[string]any) {
		t.Helper()
		b, _ := json.Marshal(payload)
		if err := d.CheckWebhook(event, b); err != nil {
			t.Errorf("%s %v: %v", event, payload["action"], err)
		}
	}
	for _, a := range []string{"created", "new_permissions_accepted", "suspend", "unsuspend"} {
		if a == "suspend" {
			s.SetSuspended(in, true)
		}
		if a == "unsuspend" {
			s.SetSuspended(in, false)
		}
		check("installation", s.InstallationEvent(a, in, "acme-admin"))
	}
	check("installation", s.InstallationEvent("suspend", in, "acme-admin")) // built without SetSuspended
	s.SetInstallationRepos(in, []string{"acme/app"})
	check("installation_repositories", s.InstallationRepositoriesEvent("removed", in, "acme-admin", "acme/secret"))
	s.SetInstallationRepos(in, []string{"acme/app", "acme/secret"})
	check("installation_repositories", s.InstallationRepositoriesEvent("added", in, "acme-admin", "acme/secret"))

	// Issues and comments.
	n := repo.AddIssue(githubfake.IssueOptions{Title: "Bug", Body: "broken", Author: "alice", Labels: []string{"quavon:fix"}})
	check("issues", s.IssuesEvent("opened", in, repo, n, "alice", ""))
	check("issues", s.IssuesEvent("labeled", in, repo, n, "bob", "quavon:fix"))
	repo.UpdateIssue(n, func(i *githubfake.Issue) { i.Title, i.Labels = "Bug in a.go", nil })
	edited := s.IssuesEvent("edited", in, repo, n, "alice", "")
	if edited["changes"].(map[string]any)["title"].(map[string]any)["from"] != "Bug" {
		t.Errorf("edited changes = %v", edited["changes"])
	}
	check("issues", edited)
	check("issues", s.IssuesEvent("unlabeled", in, repo, n, "bob", "quavon:fix"))
	cid := repo.AddComment(n, "bob", "@quavon-fixer fix")
	check("issue_comment", s.IssueCommentEvent("created", in, repo, n, cid, "bob"))
	repo.EditComment(cid, "@quavon-fixer fix please")
	check("issue_comment", s.IssueCommentEvent("edited", in, repo, n, cid, "bob"))
	repo.DeleteComment(cid)
	check("issue_comment", s.IssueCommentEvent("deleted", in, repo, n, cid, "bob"))
	repo.UpdateIssue(n, func(i *githubfake.Issue) { i.State = "closed" })
	closedEv := s.IssuesEvent("closed", in, repo, n, "alice", "")
	if iss := closedEv["issue"].(map[string]any); iss["closed_at"] == nil || iss["state_reason"] != "completed" {
		t.Errorf("closed issue: closed_at %v, state_reason %v", iss["closed_at"], iss["state_reason"])
	}
	check("issues", closedEv)
	repo.UpdateIssue(n, func(i *githubfake.Issue) { i.State = "open" })
	check("issues", s.IssuesEvent("reopened", in, repo, n, "alice", ""))
	moved := repo.TransferIssue(n, w.secret)
	tr := s.IssuesEvent("transferred", in, repo, n, "alice", "")
	if ch := tr["changes"].(map[string]any); ch["new_issue"].(map[string]any)["number"] != moved {
		t.Errorf("transferred changes = %v", ch)
	}
	check("issues", tr)
	d2 := repo.AddIssue(githubfake.IssueOptions{Title: "Spam", Author: "mallory"})
	repo.DeleteIssue(d2)
	check("issues", s.IssuesEvent("deleted", in, repo, d2, "alice", ""))

	// Pull requests.
	repo.Commit("feature", map[string]string{"src/a.go": "package a\n\nfunc A() {}\n"}, "feature")
	pr := repo.AddPullRequest(githubfake.PullRequestOptions{Title: "Feature", Author: "alice", Head: "feature", Draft: true})
	check("pull_request", s.PullRequestEvent("opened", in, repo, pr, "alice"))
	before := repo.Ref("feature")
	repo.Commit("feature", map[string]string{"b.go": "package a\n"}, "more")
	sync := s.PullRequestEvent("synchronize", in, repo, pr, "alice")
	if sync["before"] != before || sync["after"] != repo.Ref("feature") {
		t.Errorf("synchronize before/after = %v/%v", sync["before"], sync["after"])
	}
	check("pull_request", sync)
	repo.UpdateIssue(pr, func(i *githubfake.Issue) { i.PullRequest.Draft = false })
	check("pull_request", s.PullRequestEvent("ready_for_review", in, repo, pr, "alice"))
	repo.UpdateIssue(pr, func(i *githubfake.Issue) { i.Body = "now with a body" })
	check("pull_request", s.PullRequestEvent("edited", in, repo, pr, "alice"))
	repo.UpdateIssue(pr, func(i *githubfake.Issue) { i.State = "closed" })
	check("pull_request", s.PullRequestEvent("closed", in, repo, pr, "alice"))
	repo.UpdateIssue(pr, func(i *githubfake.Issue) { i.State = "open" })
	check("pull_request", s.PullRequestEvent("reopened", in, repo, pr, "alice"))
	if _, err := repo.MergePullRequest(pr, "alice"); err != nil {
		t.Fatal(err)
	}
	merged := s.PullRequestEvent("closed", in, repo, pr, "alice")
	if p := merged["pull_request"].(map[string]any); p["merged"] != true || p["merged_by"] == nil || p["merged_at"] == nil {
		t.Errorf("merged pull request: %v %v %v", p["merged"], p["merged_by"], p["merged_at"])
	}
	check("pull_request", merged)
	// A pull request from a fork that was deleted.
	fork := s.AddRepo("mallory", "app", githubfake.RepoOptions{Fork: repo})
	fork.Commit("evil", map[string]string{"x": "y"}, "evil")
	fp := repo.AddPullRequest(githubfake.PullRequestOptions{Title: "From a fork", Author: "mallory", Head: "evil", HeadRepo: fork})
	fork.Delete()
	gone := s.PullRequestEvent("synchronize", in, repo, fp, "mallory")
	if gone["pull_request"].(map[string]any)["head"].(map[string]any)["repo"] != nil {
		t.Errorf("deleted fork: head.repo = %v", gone["pull_request"].(map[string]any)["head"])
	}
	check("pull_request", gone)

	// Repositories.
	repo.Rename("app2")
	check("repository", s.RepositoryEvent("renamed", in, repo, "acme-admin", nil))
	repo.Transfer("acme2")
	check("repository", s.RepositoryEvent("transferred", in, repo, "acme-admin", nil))
	repo.SetPrivate(false)
	check("repository", s.RepositoryEvent("publicized", in, repo, "acme-admin", nil))
	repo.SetPrivate(true)
	check("repository", s.RepositoryEvent("privatized", in, repo, "acme-admin", nil))
	repo.SetArchived(true)
	arch := s.RepositoryEvent("archived", in, repo, "acme-admin", nil)
	if arch["repository"].(map[string]any)["archived"] != true {
		t.Error("archived repository not archived in the payload")
	}
	check("repository", arch)
	repo.SetArchived(false)
	check("repository", s.RepositoryEvent("unarchived", in, repo, "acme-admin", nil))
	check("repository", s.RepositoryEvent("deleted", in, repo, "acme-admin", nil))
	check("installation", s.InstallationEvent("deleted", in, "acme-admin"))

	// Every event and action Quavon reads is described.
	for event, actions := range handledWebhooks {
		for _, a := range actions {
			if !d.HasWebhook(event, a) {
				t.Errorf("%s.%s is not in GitHub's webhook descriptions", event, a)
			}
		}
	}
}

// handledWebhooks are the events and actions Quavon processes (the intake
// today, the worker's pull request, issue and comment events next).
var handledWebhooks = map[string][]string{
	"installation":              {"created", "deleted", "suspend", "unsuspend", "new_permissions_accepted"},
	"installation_repositories": {"added", "removed"},
	"repository":                {"renamed", "transferred", "privatized", "publicized", "deleted", "archived", "unarchived"},
	"pull_request":              {"opened", "synchronize", "reopened", "ready_for_review", "closed", "edited"},
	"issues":                    {"opened", "edited", "labeled", "unlabeled", "closed", "reopened", "transferred", "deleted"},
	"issue_comment":             {"created", "edited", "deleted"},
}

// TestFidelityExceptionsHaveReasons keeps the exception list honest.
func TestFidelityExceptionsHaveReasons(t *testing.T) {
	descriptions(t)
	var names []string
	for _, e := range apidesc.Exceptions {
		if len(e.Reason) < 20 {
			t.Errorf("exception %s %s.%s has no reason", e.Doc, e.Def, e.Property)
		}
		names = append(names, e.Def+"."+strings.Join(append(e.Path, e.Property), "."))
	}
	for _, e := range apidesc.ErrorStatuses {
		if len(e.Reason) < 20 {
			t.Errorf("error status exception %s %d has no reason", e.Op, e.Status)
		}
		names = append(names, fmt.Sprintf("%s %d", cmp.Or(e.Op, "every operation"), e.Status))
	}
	sort.Strings(names)
	t.Logf("exceptions: %v", names)
}
