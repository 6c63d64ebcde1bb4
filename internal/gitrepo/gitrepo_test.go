package gitrepo_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/githubfake"
	"github.com/quavon/quavon/internal/gitrepo"
	"github.com/quavon/quavon/internal/snapshot"
	"github.com/quavon/quavon/internal/testenv"
)

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	testenv.Program(t, "git")
	c := exec.Command("git", args...)
	c.Dir = dir
	c.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// hostileRepo is a local repository whose own configuration and content try
// to make git run programs or follow links: hooks, fsmonitor, filters and a
// textconv driver (all of which touch a marker file), a .gitmodules, an LFS
// pointer, a symlink to /etc/passwd, and a file over the blob cap.
func hostileRepo(t *testing.T) (dir, marker, base, head string) {
	t.Helper()
	dir = t.TempDir()
	marker = filepath.Join(t.TempDir(), "pwned")
	git(t, dir, "init", "-q", "-b", "main")
	write := func(name, content string) {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "base\n")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "base")
	base = git(t, dir, "rev-parse", "HEAD")
	touch := "touch " + marker
	write(".githooks/post-checkout", "#!/bin/sh\n"+touch+"\n")
	write(".gitattributes", "* filter=evil diff=evil\n")
	write(".gitmodules", "[submodule \"x\"]\n\tpath = x\n\turl = https://example.invalid/x\n")
	write("big.bin", "LFS")
	write("model.bin", "version https://git-lfs.github.com/spec/v1\noid sha256:"+strings.Repeat("a", 64)+"\nsize 123\n")
	write("src/app.py", "print('hi')\n")
	write("huge.txt", strings.Repeat("x", 3<<20))
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "passwd")); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "head")
	head = git(t, dir, "rev-parse", "HEAD")
	// The repository's own configuration, set after the commits (so the
	// test's own git calls above do not trip it).
	for k, v := range map[string]string{
		"core.hooksPath": filepath.Join(dir, ".githooks"), "core.fsmonitor": touch,
		"filter.evil.smudge": touch, "filter.evil.clean": touch, "filter.evil.process": touch,
		"diff.evil.textconv": touch, "diff.external": touch, "core.sshCommand": touch,
		"core.pager": touch, "uploadpack.packObjectsHook": touch,
	} {
		git(t, dir, "config", k, v)
	}
	return dir, marker, base, head
}

func TestHostileLocalRepositoryRunsNothing(t *testing.T) {
	dir, marker, base, head := hostileRepo(t)
	// The process's own environment is not git's either.
	t.Setenv("GIT_CONFIG_PARAMETERS", "'core.hooksPath'='/nonexistent'")
	t.Setenv("GIT_EXTERNAL_DIFF", "touch "+marker)
	ctx := context.Background()
	lim := gitrepo.DefaultLimits
	lim.MaxBlobBytes = 1 << 20
	r, err := gitrepo.OpenLocal(ctx, filepath.Join(dir, "src"), lim)
	if err != nil {
		t.Fatal(err)
	}
	if r.Root() != dir {
		t.Fatalf("root %q, want %q", r.Root(), dir)
	}
	if got, _ := r.ResolveCommit(ctx, "HEAD"); got != head {
		t.Fatalf("HEAD %s, want %s", got, head)
	}
	if mb, err := r.MergeBase(ctx, base, head); err != nil || mb != base {
		t.Fatalf("merge base %s %v", mb, err)
	}
	tree, err := r.Tree(ctx, head)
	if err != nil {
		t.Fatal(err)
	}
	if e := tree.Entries["passwd"]; e.Mode != gitrepo.ModeSymlink {
		t.Fatalf("symlink listed as %v", e)
	}
	changes, err := r.ChangedFiles(ctx, base, head)
	if err != nil || len(changes) != 8 {
		t.Fatalf("%d changes %v: %+v", len(changes), err, changes)
	}
	blobs, err := r.Blobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	// The symlink's blob is its target, never the file it points at.
	target, err := blobs.Read(tree.Entries["passwd"].BlobSHA, 0)
	if err != nil || string(target) != "/etc/passwd" {
		t.Fatalf("symlink blob %q %v", target, err)
	}
	// Over the cap: refused, not read; the reader stays in step.
	if _, err := blobs.Read(tree.Entries["huge.txt"].BlobSHA, 0); !errors.Is(err, gitrepo.ErrTooLarge) {
		t.Fatalf("huge blob: %v", err)
	}
	if b, err := blobs.Read(tree.Entries["src/app.py"].BlobSHA, 0); err != nil || string(b) != "print('hi')\n" {
		t.Fatalf("after the refused blob: %q %v", b, err)
	}
	// Content through filters would differ; the LFS pointer is its pointer.
	if b, _ := blobs.Read(tree.Entries["model.bin"].BlobSHA, 0); !bytes.HasPrefix(b, []byte("version https://git-lfs")) {
		t.Fatalf("LFS pointer read as %q", b)
	}
	if _, err := blobs.Read(strings.Repeat("0", 40), 0); !errors.Is(err, gitrepo.ErrNotFound) {
		t.Fatalf("missing blob: %v", err)
	}
	if _, err := blobs.Read(head, 0); !errors.Is(err, gitrepo.ErrNotFound) {
		t.Fatalf("a commit read as a blob: %v", err)
	}
	for _, rev := range []string{"--output=/tmp/x", "-h", "HEAD;rm", ""} {
		if _, err := r.ResolveCommit(ctx, rev); err == nil {
			t.Errorf("revision %q accepted", rev)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a hook, filter, fsmonitor or diff driver of the repository ran")
	}
}

func TestBlobsCheckTheirIDs(t *testing.T) {
	t.Parallel()
	if gitrepo.BlobSHA([]byte("hello\n")) != "ce013625030ba8dba906f756967f9e9ca394464a" || gitrepo.BlobSHA(nil) != gitrepo.EmptyBlobSHA {
		t.Fatal("BlobSHA differs from git hash-object")
	}
}

// An emulator repository and a cache, fetched through the emulator's git
// smart HTTP with a read token given per command.
type fetchEnv struct {
	srv   *githubfake.Server
	repo  *githubfake.Repo
	inst  *githubfake.Installation
	cache *gitrepo.Cache
	url   string
}

func newFetchEnv(t *testing.T) *fetchEnv {
	t.Helper()
	testenv.Program(t, "git")
	srv := githubfake.New(t)
	repo := srv.AddRepo("acme", "app", githubfake.RepoOptions{Private: true, Files: map[string]string{"a.go": "package a\n", "README.md": "hi\n"}})
	srv.AddRepo("acme", "other", githubfake.RepoOptions{Private: true, Files: map[string]string{"secret.txt": "s\n"}})
	app := srv.RegisterApp("quavon-review")
	inst := srv.Install(app, "acme", map[string]string{"contents": "read", "pull_requests": "read", "issues": "read"})
	cache, err := gitrepo.NewCache(gitrepo.CacheConfig{Dir: t.TempDir(), AllowHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	return &fetchEnv{srv: srv, repo: repo, inst: inst, cache: cache, url: srv.URL + "/acme/app.git"}
}

func (e *fetchEnv) token(repos ...string) string {
	return e.srv.InstallationToken(e.inst, map[string]string{"contents": "read"}, repos...)
}

func (e *fetchEnv) open(t *testing.T) *gitrepo.Handle {
	t.Helper()
	h, err := e.cache.Open(context.Background(), gitrepo.Key{Tenant: "t1", Host: "github.com", Owner: "acme", Name: "app"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func TestFetchThroughTheEmulator(t *testing.T) {
	e := newFetchEnv(t)
	h := e.open(t)
	ctx := context.Background()
	tok := e.token("app")
	if err := h.Fetch(ctx, e.url, tok, []string{"+refs/heads/main:refs/quavon/main"}, gitrepo.FetchOptions{}); err != nil {
		t.Fatal(err)
	}
	first, err := h.ResolveCommit(ctx, "refs/quavon/main")
	if err != nil || first != e.repo.Ref("main") {
		t.Fatalf("fetched %s %v, want %s", first, err, e.repo.Ref("main"))
	}
	// A push, then a fetch sees the new commit.
	second := e.repo.Commit("main", map[string]string{"b.go": "package a\n"}, "more")
	if err := h.Fetch(ctx, e.url, tok, []string{"+refs/heads/main:refs/quavon/main"}, gitrepo.FetchOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.ResolveCommit(ctx, "refs/quavon/main"); got != second {
		t.Fatalf("after the push: %s, want %s", got, second)
	}
	changes, err := h.ChangedFiles(ctx, first, second)
	if err != nil || len(changes) != 1 || changes[0].Path != "b.go" || changes[0].Status != 'A' {
		t.Fatalf("changes %+v %v", changes, err)
	}
	// The cache holds no token, no remote and no work tree; every directory is 0700.
	var leaked []string
	filepath.WalkDir(e.cache.Dir(), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if fi, _ := d.Info(); fi.Mode().Perm() != 0o700 {
				leaked = append(leaked, "mode of "+p)
			}
			return nil
		}
		b, _ := os.ReadFile(p)
		if bytes.Contains(b, []byte(tok)) || bytes.Contains(b, []byte(base64.StdEncoding.EncodeToString([]byte("x-access-token:"+tok)))) {
			leaked = append(leaked, p)
		}
		if strings.HasSuffix(p, "/config") && bytes.Contains(b, []byte("[remote")) {
			leaked = append(leaked, "remote in "+p)
		}
		return nil
	})
	if len(leaked) > 0 {
		t.Fatalf("the cache holds: %v", leaked)
	}
}

func TestFetchRefusals(t *testing.T) {
	e := newFetchEnv(t)
	h := e.open(t)
	ctx := context.Background()
	for name, tok := range map[string]string{
		"token of another repository": e.token("other"),
		"no token":                    "",
		"made-up token":               "ghs_" + strings.Repeat("x", 36),
	} {
		err := h.Fetch(ctx, e.url, tok, []string{"refs/heads/main"}, gitrepo.FetchOptions{})
		if !errors.Is(err, gitrepo.ErrFetch) {
			t.Errorf("%s: %v", name, err)
		}
		// 401 for a token GitHub does not know (or none on a private
		// repository), 404 for one that does not cover the repository.
		if refused := name != "token of another repository"; errors.Is(err, gitrepo.ErrTokenRefused) != refused {
			t.Errorf("%s: ErrTokenRefused %v, want %v: %v", name, !refused, refused, err)
		}
		if tok != "" && strings.Contains(err.Error(), tok) {
			t.Errorf("%s: the error holds the token: %v", name, err)
		}
	}
	tok := e.token("app")
	e.srv.SetSuspended(e.inst, true)
	if err := h.Fetch(ctx, e.url, tok, []string{"refs/heads/main"}, gitrepo.FetchOptions{}); !errors.Is(err, gitrepo.ErrFetch) {
		t.Errorf("suspended installation: %v", err)
	}
	e.srv.SetSuspended(e.inst, false)
	for _, bad := range []string{"file:///etc", "ssh://git@example.com/x", "https://x-access-token:" + tok + "@example.com/x", "ext::sh -c id"} {
		if err := h.Fetch(ctx, bad, tok, []string{"refs/heads/main"}, gitrepo.FetchOptions{}); err == nil || strings.Contains(err.Error(), tok) {
			t.Errorf("remote %q: %v", bad, err)
		}
	}
	for _, rs := range []string{"--upload-pack=touch /tmp/x", "refs/heads/main:refs/heads/main", "refs/heads/../x"} {
		if err := h.Fetch(ctx, e.url, tok, []string{rs}, gitrepo.FetchOptions{}); err == nil {
			t.Errorf("refspec %q accepted", rs)
		}
	}
}

// The token is in no command line while a fetch runs (it travels in the
// environment of git and its remote helper only).
func TestTokenNeverInArgv(t *testing.T) {
	e := newFetchEnv(t)
	// Enough content that the fetch takes a while to watch.
	files := map[string]string{}
	for i := range 400 {
		files[fmt.Sprintf("f/%03d.txt", i)] = strings.Repeat(fmt.Sprintf("data %d ", i), 2000)
	}
	e.repo.Commit("main", files, "many")
	h := e.open(t)
	tok := e.token("app")
	var sawGit, sawToken bool
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			entries, _ := os.ReadDir("/proc")
			for _, d := range entries {
				b, err := os.ReadFile("/proc/" + d.Name() + "/cmdline")
				if err != nil || len(b) == 0 {
					continue
				}
				sawGit = sawGit || bytes.Contains(b, []byte(e.url))
				sawToken = sawToken || bytes.Contains(b, []byte(tok))
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	err := h.Fetch(context.Background(), e.url, tok, []string{"+refs/heads/main:refs/quavon/main"}, gitrepo.FetchOptions{})
	close(stop)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if !sawGit {
		t.Fatal("never saw the fetch running: the test watched nothing")
	}
	if sawToken {
		t.Fatal("the token was on a command line")
	}
}

// Two fetches of one repository: the second waits for the first. The
// first is held inside the server (its upload-pack request blocks) while the
// second runs; the second must not reach the server until the first is
// released. Readers are not held up by a fetch.
func TestOneFetchAtATimeAndEviction(t *testing.T) {
	e := newFetchEnv(t)
	ctx := context.Background()
	tok := e.token("app")
	key := gitrepo.Key{Tenant: "t1", Host: "github.com", Owner: "acme", Name: "app"}
	// A first fetch, so a reader has something to read during the next.
	first := e.open(t)
	if err := first.Fetch(ctx, e.url, tok, []string{"+refs/heads/main:refs/quavon/main"}, gitrepo.FetchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.repo.Commit("main", map[string]string{"b.go": "package a\n"}, "more")

	upstream, _ := url.Parse(e.srv.URL)
	proxy := httputil.NewSingleHostReverseProxy(upstream)
	var mu sync.Mutex
	var refsCalls int
	held, release := make(chan struct{}), make(chan struct{})
	var holdOnce sync.Once
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/info/refs") {
			mu.Lock()
			refsCalls++
			mu.Unlock()
		}
		if strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
			hold := false
			holdOnce.Do(func() { hold = true })
			if hold {
				close(held)
				<-release
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	frontURL := front.URL + "/acme/app.git"

	fetch := func() error {
		h, err := e.cache.Open(ctx, key)
		if err != nil {
			return err
		}
		defer h.Close()
		return h.Fetch(ctx, frontURL, tok, []string{"+refs/heads/main:refs/quavon/main"}, gitrepo.FetchOptions{})
	}
	errA, errB := make(chan error, 1), make(chan error, 1)
	go func() { errA <- fetch() }()
	<-held // A holds the fetch lock and is inside the server.
	go func() { errB <- fetch() }()
	// B gets a fair chance to reach the server; with the lock it cannot.
	time.Sleep(500 * time.Millisecond)
	mu.Lock()
	during := refsCalls
	mu.Unlock()
	// A reader of the repository is not held up by the fetch.
	if got, err := first.ResolveCommit(ctx, "refs/quavon/main"); err != nil || got == "" {
		t.Fatalf("a reader during a fetch: %v", err)
	}
	close(release)
	a, b := <-errA, <-errB
	if during != 1 {
		t.Fatalf("%d ref advertisements requested while the first fetch held the lock: the second fetch did not wait (fetches: %v, %v)", during, a, b)
	}
	if a != nil || b != nil {
		t.Fatal(a, b)
	}
	if refsCalls != 2 {
		t.Fatalf("%d ref advertisements in all, want 2", refsCalls)
	}
	if got, _ := first.ResolveCommit(ctx, "refs/quavon/main"); got != e.repo.Ref("main") {
		t.Fatalf("after both fetches: %s, want %s", got, e.repo.Ref("main"))
	}
	first.Close()

	small, err := gitrepo.NewCache(gitrepo.CacheConfig{Dir: e.cache.Dir(), MaxBytes: 1, AllowHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	inUse, err := small.Open(ctx, gitrepo.Key{Tenant: "t1", Host: "github.com", Owner: "acme", Name: "app"})
	if err != nil {
		t.Fatal(err)
	}
	if removed, _ := small.Evict(); len(removed) != 0 {
		t.Fatalf("evicted a repository in use: %v", removed)
	}
	inUse.Close()
	if removed, err := small.Evict(); err != nil || len(removed) != 1 {
		t.Fatalf("evicted %v %v", removed, err)
	}
}

func TestParseLsTree(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	files := map[string]string{"a.txt": "a\n", "d/e f.txt": "", "x.sh": "#!\n", "tab\tname": "t"}
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		os.WriteFile(p, []byte(content), mode)
	}
	os.Symlink("a.txt", filepath.Join(dir, "l"))
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "x")
	want := map[string]gitrepo.Mode{"a.txt": gitrepo.ModeFile, "d/e f.txt": gitrepo.ModeFile, "x.sh": gitrepo.ModeExecutable,
		"tab\tname": gitrepo.ModeFile, "l": gitrepo.ModeSymlink}
	for _, args := range [][]string{{"ls-tree", "-r", "-z", "--full-tree", "HEAD"}, {"ls-tree", "-r", "-z", "-l", "-t", "--full-tree", "HEAD"}} {
		c := exec.Command("git", args...)
		c.Dir = dir
		out, err := c.Output()
		if err != nil {
			t.Fatal(err)
		}
		entries, err := gitrepo.ParseLsTree(out)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != len(want) {
			t.Fatalf("%v: %d entries, want %d", args, len(entries), len(want))
		}
		for p, mode := range want {
			content := files[p]
			if p == "l" {
				content = "a.txt"
			}
			if e := entries[p]; e.Mode != mode || e.BlobSHA != gitrepo.BlobSHA([]byte(content)) {
				t.Errorf("%v: %q = %+v", args, p, e)
			}
		}
	}
	for _, bad := range []string{"100644 blob abc\tx\x00", "100644 blob " + strings.Repeat("a", 40) + "\tx", "zz blob " + strings.Repeat("a", 40) + "\tx\x00"} {
		if _, err := gitrepo.ParseLsTree([]byte(bad)); err == nil {
			t.Errorf("ParseLsTree(%q) accepted", bad)
		}
	}
}

// A snapshot of a commit straight from its objects: regular files with
// their modes, the symlink left out and counted, nothing of the work tree.
func TestTreeFilesSnapshot(t *testing.T) {
	dir, _, _, head := hostileRepo(t)
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("changed in the work tree, not committed\n"), 0o644)
	ctx := context.Background()
	r, err := gitrepo.OpenLocal(ctx, dir, gitrepo.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := r.Tree(ctx, head)
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := r.Blobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	files, skipped := gitrepo.TreeFiles(tree, blobs)
	if skipped["symlink"] != 1 || len(files) != len(tree.Entries)-1 {
		t.Fatalf("%d files, skipped %v", len(files), skipped)
	}
	snap, st, err := files.Build(snapshot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	dest := t.TempDir()
	if _, err := snapshot.Extract(bytes.NewReader(snap), dest, snapshot.Limits{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "README.md")); string(b) != "base\n" {
		t.Fatalf("README.md from the work tree, not the commit: %q", b)
	}
	if fi, err := os.Stat(filepath.Join(dest, ".githooks/post-checkout")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("executable file: %v %v", fi, err)
	}
	if _, err := os.Lstat(filepath.Join(dest, "passwd")); !os.IsNotExist(err) {
		t.Fatalf("the symlink travelled: %v", err)
	}
	again, _, _ := files.Build(snapshot.Limits{})
	if !bytes.Equal(snap, again) || st.Entries == 0 {
		t.Fatal("not deterministic")
	}
}

// A run fetches only the commits it needs: a pull request's head and base
// at depth 1 (one commit each, none of the older blobs), then Deepen finds
// their merge base with more history, still not the whole of it.
func TestShallowFetchTakesOnlyWhatARunNeeds(t *testing.T) {
	e := newFetchEnv(t)
	ctx := context.Background()
	for i := range 250 {
		e.repo.Commit("main", map[string]string{"hist.txt": fmt.Sprintf("v%d\n", i)}, "old history")
	}
	base := e.repo.Ref("main")
	head := e.repo.Commit("feature", map[string]string{"f.go": "package f\n"}, "the change")
	for i := range 60 {
		e.repo.Commit("main", map[string]string{"main.txt": fmt.Sprintf("m%d\n", i)}, "main moves on")
	}
	mainTip := e.repo.Ref("main")
	h := e.open(t)
	tok := e.token("app")
	refspecs := []string{"+refs/heads/feature:refs/quavon/head", "+refs/heads/main:refs/quavon/base"}
	if err := h.Fetch(ctx, e.url, tok, refspecs, gitrepo.FetchOptions{Depth: 1}); err != nil {
		t.Fatal(err)
	}
	gitDir := filepath.Join(e.cache.Dir(), "t1", "github.com", "acme", "app.git")
	commits := func() int {
		var n int
		fmt.Sscan(git(t, gitDir, "rev-list", "--count", "--all"), &n)
		return n
	}
	if n := commits(); n != 2 {
		t.Fatalf("depth 1: %d commits in the cache, want 2", n)
	}
	blobs, err := h.Blobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	has := func(content string) bool {
		_, err := blobs.Read(gitrepo.BlobSHA([]byte(content)), 0)
		if err != nil && !errors.Is(err, gitrepo.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	if !has("v249\n") || !has("m59\n") || has("v248\n") || has("m58\n") {
		t.Fatal("depth 1: the tips' blobs missing or older ones fetched")
	}
	if _, err := h.MergeBase(ctx, head, mainTip); !errors.Is(err, gitrepo.ErrNotFound) {
		t.Fatalf("a merge base with one commit of each side: %v", err)
	}

	mb, err := h.Deepen(ctx, e.url, tok, refspecs, head, mainTip)
	if err != nil || mb != base {
		t.Fatalf("Deepen: %s %v, want %s", mb, err, base)
	}
	// Depth 50 reaches the base from the head, not from main (61 commits
	// away); depth 200 does, and stops 200 commits down: the oldest
	// history stays on the server.
	if n, all := commits(), 250+1+1+60; n >= all || n < 200 {
		t.Fatalf("after Deepen: %d commits in the cache (the whole history is %d)", n, all)
	} else {
		t.Logf("after Deepen: %d of %d commits in the cache", n, all)
	}
	if has("v0\n") || !has("v100\n") {
		t.Fatal("after Deepen: the oldest blob fetched, or the history near the base missing")
	}
	if _, err := os.Stat(filepath.Join(gitDir, "shallow")); err != nil {
		t.Fatalf("the cache is not shallow: %v", err)
	}
}

// A token revoked at GitHub (DELETE /installation/token, as the broker
// does when it is done with one) fails the fetch with a clear error, and a
// new repository is left with nothing fetched: no ref, no object, no token.
func TestFetchWithARevokedToken(t *testing.T) {
	e := newFetchEnv(t)
	ctx := context.Background()
	tok := e.token("app")
	req, err := http.NewRequest(http.MethodDelete, e.srv.URL+"/installation/token", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "token "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("revoke: %s", resp.Status)
	}
	h := e.open(t)
	err = h.Fetch(ctx, e.url, tok, []string{"+refs/heads/main:refs/quavon/main"}, gitrepo.FetchOptions{Depth: 1})
	if !errors.Is(err, gitrepo.ErrFetch) || !errors.Is(err, gitrepo.ErrTokenRefused) || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("fetch with a revoked token: %v", err)
	}
	if strings.Contains(err.Error(), tok) {
		t.Fatalf("the error holds the token: %v", err)
	}
	if _, err := h.ResolveCommit(ctx, "refs/quavon/main"); !errors.Is(err, gitrepo.ErrNotFound) {
		t.Fatalf("a ref after the refused fetch: %v", err)
	}
	gitDir := filepath.Join(e.cache.Dir(), "t1", "github.com", "acme", "app.git")
	var left []string
	filepath.WalkDir(gitDir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(gitDir, p)
		if !d.IsDir() && (strings.HasPrefix(rel, "objects/") || strings.HasPrefix(rel, "refs/") || rel == "shallow" || rel == "FETCH_HEAD") {
			left = append(left, rel)
		}
		if b, _ := os.ReadFile(p); !d.IsDir() && bytes.Contains(b, []byte(tok)) {
			left = append(left, "the token in "+rel)
		}
		return nil
	})
	if len(left) > 0 {
		t.Fatalf("the refused fetch left %v", left)
	}
	// The same repository fetches with a live token.
	if err := h.Fetch(ctx, e.url, e.token("app"), []string{"+refs/heads/main:refs/quavon/main"}, gitrepo.FetchOptions{Depth: 1}); err != nil {
		t.Fatal(err)
	}
}
