package githubfake_test

import (
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/githubfake"
	"github.com/quavon/quavon/internal/testenv"
)

// gitRun runs Debian's git with an empty environment of its own: no system
// or global config, no prompts, and the token (if any) as an extra header
// given through GIT_CONFIG_*, as Quavon's hardened checkout does.
func gitRun(t *testing.T, dir, token string, args ...string) (string, error) {
	t.Helper()
	bin := testenv.Program(t, "git")
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	home := t.TempDir()
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "LC_ALL=C"}
	if token != "" {
		basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))
		cmd.Env = append(cmd.Env, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraHeader",
			"GIT_CONFIG_VALUE_0=Authorization: Basic "+basic)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func gitOK(t *testing.T, dir, token string, args ...string) string {
	t.Helper()
	out, err := gitRun(t, dir, token, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(out)
}

func TestGitCloneAndFetch(t *testing.T) {
	w := newWorld(t)
	s, repo := w.s, w.repo
	url := s.URL + "/acme/app.git"
	tok := s.InstallationToken(w.inst, map[string]string{"contents": "read"}, "app")
	dir := filepath.Join(t.TempDir(), "app")

	gitOK(t, "", tok, "clone", "--quiet", url, dir)
	if b, err := os.ReadFile(filepath.Join(dir, "src", "a.go")); err != nil || string(b) != "package a\n" {
		t.Fatalf("cloned file: %q %v", b, err)
	}
	if got := gitOK(t, dir, "", "rev-parse", "HEAD"); got != repo.Ref("main") {
		t.Fatalf("HEAD %s, want %s", got, repo.Ref("main"))
	}
	if got := gitOK(t, dir, "", "symbolic-ref", "refs/remotes/origin/HEAD"); got != "refs/remotes/origin/main" {
		t.Errorf("origin/HEAD = %s", got)
	}

	// A push (a human's, and one through the REST API) is seen by the next
	// fetch, which negotiates from what the clone has.
	first := repo.Commit("main", map[string]string{"b.go": "package a\n"}, "human push")
	gitOK(t, dir, tok, "fetch", "--quiet", "origin")
	if got := gitOK(t, dir, "", "rev-parse", "origin/main"); got != first {
		t.Fatalf("after a push: origin/main %s, want %s", got, first)
	}
	second := repo.Commit("main", map[string]string{"c.go": "package a\n"}, "another")
	gitOK(t, dir, tok, "-c", "protocol.version=0", "fetch", "--quiet", "origin")
	if got := gitOK(t, dir, "", "rev-parse", "origin/main"); got != second {
		t.Fatalf("after a second push (protocol v0): origin/main %s, want %s", got, second)
	}
	if got := gitOK(t, dir, "", "fsck", "--strict"); strings.Contains(got, "error") {
		t.Errorf("fsck: %s", got)
	}

	// A pull request's head, from a fork, as refs/pull/N/head.
	fork := s.AddRepo("mallory", "app", githubfake.RepoOptions{Fork: repo})
	evil := fork.Commit("evil", map[string]string{"x.go": "package x\n"}, "from the fork")
	n := repo.AddPullRequest(githubfake.PullRequestOptions{Title: "fork", Author: "mallory", Head: "evil", HeadRepo: fork})
	gitOK(t, dir, tok, "fetch", "--quiet", "origin", fmt.Sprintf("+refs/pull/%d/head:refs/remotes/pr/head", n))
	if got := gitOK(t, dir, "", "rev-parse", "refs/remotes/pr/head"); got != evil {
		t.Errorf("refs/pull/%d/head = %s, want %s", n, got, evil)
	}

	// The log names each fetch as a git request of the installation.
	var gitCalls int
	for _, r := range s.Requests() {
		if strings.HasPrefix(r.Operation, "git ") {
			gitCalls++
			if r.TokenKind != githubfake.TokenInstallation || r.InstallationID != w.inst.ID {
				t.Errorf("git request logged as %+v", r)
			}
		}
	}
	if gitCalls < 6 {
		t.Errorf("%d git requests logged", gitCalls)
	}
}

func TestGitTokenRules(t *testing.T) {
	w := newWorld(t)
	s := w.s
	url := s.URL + "/acme/app.git"
	refused := func(name, token, wantMsg string) {
		t.Helper()
		out, err := gitRun(t, "", token, "ls-remote", url)
		if err == nil {
			t.Errorf("%s: fetch allowed:\n%s", name, out)
			return
		}
		if !regexp.MustCompile(wantMsg).MatchString(out) {
			t.Errorf("%s: git said %q, want %q", name, out, wantMsg)
		}
	}
	refused("a token of another repository", s.InstallationToken(w.inst, map[string]string{"contents": "read"}, "secret"), "not found")
	refused("no contents permission", s.InstallationToken(w.inst, map[string]string{"metadata": "read"}), "403")
	refused("no token on a private repository", "", "terminal prompts disabled|Authentication failed")
	refused("a made-up token", "ghs_0000000000000000000000000000000000000000", "terminal prompts disabled|Authentication failed")
	refused("an app JWT", s.SignJWT(w.app), "terminal prompts disabled|Authentication failed")

	ok := s.InstallationToken(w.inst, map[string]string{"contents": "read"}, "app")
	if out, err := gitRun(t, "", ok, "ls-remote", url); err != nil || !strings.Contains(out, "refs/heads/main") {
		t.Fatalf("ls-remote with a covering token: %v\n%s", err, out)
	}
	s.SetSuspended(w.inst, true)
	refused("a suspended installation", ok, "403")
	s.SetSuspended(w.inst, false)
	s.Advance(61 * time.Minute)
	refused("an expired token", ok, "terminal prompts disabled|Authentication failed")

	// A public repository is readable by anyone.
	pub := s.AddRepo("octo", "pub", githubfake.RepoOptions{Files: map[string]string{"a": "b"}})
	dir := filepath.Join(t.TempDir(), "pub")
	gitOK(t, "", "", "clone", "--quiet", s.URL+"/octo/pub.git", dir)
	if got := gitOK(t, dir, "", "rev-parse", "HEAD"); got != pub.Ref("main") {
		t.Errorf("public clone HEAD %s", got)
	}
	// Pushing is not served.
	if out, err := gitRun(t, dir, "", "push", "origin", "HEAD:refs/heads/x"); err == nil {
		t.Errorf("push allowed:\n%s", out)
	}
}

// Shallow fetches: --depth takes only the commits asked for (and their
// trees), a deeper fetch unshallows the old boundary and sends only what is
// new, --unshallow completes the history; the result passes fsck.
func TestGitShallowFetch(t *testing.T) {
	w := newWorld(t)
	s, repo := w.s, w.repo
	url := s.URL + "/acme/app.git"
	tok := s.InstallationToken(w.inst, map[string]string{"contents": "read"}, "app")
	var commits []string
	for i := range 10 {
		commits = append(commits, repo.Commit("main", map[string]string{"hist.txt": fmt.Sprintf("v%d\n", i)}, fmt.Sprintf("c%d", i)))
	}
	total := len(commits) + 1 // and the repository's first commit
	dir := filepath.Join(t.TempDir(), "app.git")
	gitOK(t, "", "", "init", "--quiet", "--bare", dir)
	hasObject := func(content string) bool {
		c := exec.Command(testenv.Program(t, "git"), "hash-object", "--stdin")
		c.Stdin = strings.NewReader(content)
		oid, err := c.Output()
		if err != nil {
			t.Fatal(err)
		}
		_, err = gitRun(t, dir, "", "cat-file", "-e", strings.TrimSpace(string(oid)))
		return err == nil
	}
	count := func() string { return gitOK(t, dir, "", "rev-list", "--count", "refs/heads/main") }
	shallow := func() string {
		b, _ := os.ReadFile(filepath.Join(dir, "shallow"))
		return strings.TrimSpace(string(b))
	}
	fetch := func(args ...string) {
		t.Helper()
		gitOK(t, dir, tok, append(append([]string{"fetch", "--quiet", "--no-tags"}, args...), url, "+refs/heads/main:refs/heads/main")...)
	}

	fetch("--depth=1")
	if got := count(); got != "1" {
		t.Fatalf("--depth=1: %s commits", got)
	}
	if got := shallow(); got != commits[9] {
		t.Fatalf("--depth=1: shallow %q, want %s", got, commits[9])
	}
	if !hasObject("v9\n") || hasObject("v8\n") || hasObject("v0\n") {
		t.Fatal("--depth=1: the tip's blob missing or an older one sent")
	}

	fetch("--depth=4")
	if got := count(); got != "4" {
		t.Fatalf("--depth=4: %s commits", got)
	}
	if got := shallow(); got != commits[6] {
		t.Fatalf("--depth=4: shallow %q, want %s", got, commits[6])
	}
	if !hasObject("v6\n") || hasObject("v5\n") {
		t.Fatal("--depth=4: wrong blobs")
	}

	// A push, then a shallow repository fetches without a depth: only the
	// new commit, the boundary unchanged.
	commits = append(commits, repo.Commit("main", map[string]string{"hist.txt": "v10\n"}, "c10"))
	total++
	fetch()
	if got := count(); got != "5" {
		t.Fatalf("after a push: %s commits", got)
	}
	if got := shallow(); got != commits[6] {
		t.Fatalf("after a push: shallow %q", got)
	}

	fetch("--unshallow")
	if got := count(); got != fmt.Sprint(total) {
		t.Fatalf("--unshallow: %s commits, want %d", got, total)
	}
	if _, err := os.Stat(filepath.Join(dir, "shallow")); !os.IsNotExist(err) {
		t.Fatalf("--unshallow left a shallow file: %v", err)
	}
	if !hasObject("v0\n") {
		t.Fatal("--unshallow: old blob missing")
	}
	if out, err := gitRun(t, dir, "", "fsck", "--strict", "--no-dangling"); err != nil {
		t.Fatalf("fsck: %v\n%s", err, out)
	}

	// A shallow clone over protocol v0 explicitly, and refusals of what is
	// not served.
	dir2 := filepath.Join(t.TempDir(), "c")
	gitOK(t, "", tok, "-c", "protocol.version=0", "clone", "--quiet", "--bare", "--depth=2", url, dir2)
	if got := gitOK(t, dir2, "", "rev-list", "--count", "HEAD"); got != "2" {
		t.Fatalf("clone --depth=2: %s commits", got)
	}
	if out, err := gitRun(t, "", tok, "clone", "--quiet", "--bare", "--shallow-since=2000-01-01", url, filepath.Join(t.TempDir(), "d")); err == nil {
		t.Errorf("--shallow-since served:\n%s", out)
	}
}

// A client with more than one round of haves (16 a round) gets its ACK in
// a first round and the pack after its "done": an incremental fetch from a
// repository with history, the pack holding only the new objects.
func TestGitFetchNegotiatesOverRounds(t *testing.T) {
	w := newWorld(t)
	s, repo := w.s, w.repo
	url := s.URL + "/acme/app.git"
	tok := s.InstallationToken(w.inst, map[string]string{"contents": "read"}, "app")
	for i := range 40 {
		repo.Commit("main", map[string]string{"h.txt": fmt.Sprintf("v%d\n", i)}, "history")
	}
	dir := filepath.Join(t.TempDir(), "app")
	gitOK(t, "", tok, "clone", "--quiet", "--bare", url, dir)
	for i := range 3 {
		repo.Commit("main", map[string]string{"n.txt": fmt.Sprintf("n%d\n", i)}, "new")
	}
	out := gitOK(t, dir, tok, "-c", "fetch.unpackLimit=1000", "fetch", "--no-tags", "-v", url, "+refs/heads/main:refs/heads/main")
	if got := gitOK(t, dir, "", "rev-parse", "refs/heads/main"); got != repo.Ref("main") {
		t.Fatalf("main %s, want %s\n%s", got, repo.Ref("main"), out)
	}
	// 3 commits, 3 trees, 3 blobs: nothing of the history again.
	if got := gitOK(t, dir, "", "count-objects"); !strings.HasPrefix(got, "9 objects") {
		t.Errorf("the fetch stored %s (want 9 loose objects)", got)
	}
}
