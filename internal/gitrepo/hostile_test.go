package gitrepo_test

import (
	"bytes"
	"context"
	"errors"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/gitrepo"
	"github.com/quavon/quavon/internal/testenv"
)

// serveGit serves the bare repositories under root with git's own smart
// HTTP server (git http-backend as a CGI program), at <URL>/<name>.git.
func serveGit(t *testing.T, root string) string {
	t.Helper()
	bin := testenv.Program(t, "git")
	h := &cgi.Handler{Path: bin, Args: []string{"http-backend"}, Root: "/",
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=" + t.TempDir()}}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// A hostile repository fetched into the worker's cache from a real git
// server: its content has hooks, a .gitattributes filter, a .gitmodules, an
// LFS pointer, a symlink to /etc/passwd, a gitlink, a name that is not
// UTF-8 and a 100 MB blob; a second branch holds a .gitmodules that git's
// fsck refuses (a submodule URL that is an option, CVE-2018-17456); and the
// cache's own repository was given hooks and configuration that run a
// program (as a cache left on a shared disk could be). The fetch runs none
// of them, the refused branch leaves nothing behind, the listing reports
// what is not a regular file or a valid name, and the blob cap holds.
//
// It fails when the hardening goes: without core.hooksPath=/dev/null the
// reference-transaction hook of the cache runs on the fetch; without
// transfer.fsckObjects/fetch.fsckObjects the refused branch is fetched.
func TestHostileRepositoryFetchedIntoTheCache(t *testing.T) {
	if testing.Short() {
		t.Skip("a 100 MB blob")
	}
	dir, marker, _, _ := hostileRepo(t)
	os.WriteFile(filepath.Join(dir, "big.bin"), bytes.Repeat([]byte("0123456789abcdef"), 100<<20/16), 0o644)
	os.WriteFile(filepath.Join(dir, "caf\xe9.txt"), []byte("latin-1 name\n"), 0o644)
	// The test's own git calls disarm the repository's configuration.
	safe := []string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "filter.evil.process=", "-c", "filter.evil.clean=cat", "-c", "filter.evil.smudge=cat"}
	git(t, dir, append(safe, "add", "-A")...)
	git(t, dir, append(safe, "update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("ab", 20)+",vendor/lib")...)
	git(t, dir, append(safe, "commit", "-q", "-m", "more")...)
	head := git(t, dir, "rev-parse", "HEAD")

	root := t.TempDir()
	served := filepath.Join(root, "hostile.git")
	git(t, root, "clone", "-q", "--bare", "--no-local", dir, served)
	// A branch whose .gitmodules git's fsck refuses.
	blob := gitIn(t, served, "module\n", "hash-object", "-w", "--stdin")
	evilModules := gitIn(t, served, "[submodule \"x\"]\n\tpath = x\n\turl = -u./payload\n", "hash-object", "-w", "--stdin")
	tree := gitIn(t, served, "100644 blob "+evilModules+"\t.gitmodules\n100644 blob "+blob+"\tx.txt\n", "mktree")
	evil := gitIn(t, served, "", "commit-tree", "-m", "evil", tree)
	git(t, served, "update-ref", "refs/heads/evil", evil)
	url := serveGit(t, root) + "/hostile.git"

	cache, err := gitrepo.NewCache(gitrepo.CacheConfig{Dir: t.TempDir(), AllowHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	h, err := cache.Open(ctx, gitrepo.Key{Tenant: "t1", Host: "github.com", Owner: "acme", Name: "hostile"})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	gitDir := filepath.Join(cache.Dir(), "t1", "github.com", "acme", "hostile.git")
	touch := "#!/bin/sh\ntouch " + marker + "\n"
	for _, hook := range []string{"reference-transaction", "post-merge", "post-checkout", "pre-auto-gc", "post-index-change"} {
		os.MkdirAll(filepath.Join(gitDir, "hooks"), 0o700)
		if err := os.WriteFile(filepath.Join(gitDir, "hooks", hook), []byte(touch), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range map[string]string{"core.fsmonitor": "touch " + marker, "filter.evil.smudge": "touch " + marker,
		"filter.evil.process": "touch " + marker, "core.sshCommand": "touch " + marker, "gc.auto": "1"} {
		git(t, gitDir, "config", k, v)
	}

	if err := h.Fetch(ctx, url, "", []string{"+refs/heads/main:refs/quavon/main"}, gitrepo.FetchOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := h.ResolveCommit(ctx, "refs/quavon/main"); err != nil || got != head {
		t.Fatalf("fetched %s %v, want %s", got, err, head)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a hook, filter or fsmonitor ran during the fetch")
	}

	// fsck refuses the evil branch: an error, no ref, no objects kept.
	packs := func() int {
		m, _ := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "*"))
		return len(m)
	}
	before := packs()
	err = h.Fetch(ctx, url, "", []string{"+refs/heads/evil:refs/quavon/evil"}, gitrepo.FetchOptions{})
	if !errors.Is(err, gitrepo.ErrFetch) || !strings.Contains(err.Error(), "gitmodulesUrl") {
		t.Fatalf("a .gitmodules with an option for a URL was fetched: %v", err)
	}
	if _, err := h.ResolveCommit(ctx, "refs/quavon/evil"); !errors.Is(err, gitrepo.ErrNotFound) {
		t.Fatalf("the refused branch left a ref: %v", err)
	}
	if n := packs(); n != before {
		m, _ := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "*"))
		t.Fatalf("the refused fetch left files in objects/pack: %d, before %d: %v", n, before, m)
	}

	tree2, err := h.Tree(ctx, head)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]gitrepo.Mode{"passwd": gitrepo.ModeSymlink, "vendor/lib": gitrepo.ModeGitlink,
		".githooks/post-checkout": gitrepo.ModeExecutable, ".gitattributes": gitrepo.ModeExecutable, "caf\xe9.txt": gitrepo.ModeFile} {
		if e, ok := tree2.Entries[name]; !ok || e.Mode != want {
			t.Errorf("%q listed as %+v (present %v), want mode %v", name, e, ok, want)
		}
	}
	var invalid []string
	for name := range tree2.Entries {
		if !gitrepo.ValidName(name) {
			invalid = append(invalid, name)
		}
	}
	if len(invalid) != 1 || invalid[0] != "caf\xe9.txt" {
		t.Errorf("names reported as not valid: %q", invalid)
	}
	if e := tree2.Entries["big.bin"]; e.Size != 100<<20 {
		t.Errorf("big.bin listed with size %d", e.Size)
	}
	blobs, err := h.Blobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	if _, err := blobs.Read(tree2.Entries["big.bin"].BlobSHA, 0); !errors.Is(err, gitrepo.ErrTooLarge) {
		t.Fatalf("the 100 MB blob under the default cap: %v", err)
	}
	if b, err := blobs.Read(tree2.Entries["passwd"].BlobSHA, 0); err != nil || string(b) != "/etc/passwd" {
		t.Fatalf("symlink blob %q %v", b, err)
	}
	if b, err := blobs.Read(tree2.Entries["model.bin"].BlobSHA, 0); err != nil || !bytes.HasPrefix(b, []byte("version https://git-lfs")) {
		t.Fatalf("LFS pointer read as %q %v", b, err)
	}
	if b, err := blobs.Read(tree2.Entries["src/app.py"].BlobSHA, 0); err != nil || string(b) != "print('hi')\n" {
		t.Fatalf("a file with a .gitattributes filter read as %q %v", b, err)
	}
	files, skipped := gitrepo.TreeFiles(tree2, blobs)
	if skipped["symlink"] != 1 || skipped["submodule"] != 1 || len(files) != len(tree2.Entries)-2 {
		t.Fatalf("%d files of %d entries, skipped %v", len(files), len(tree2.Entries), skipped)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a hook, filter, fsmonitor or driver ran")
	}
}

func TestValidName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"src/a.go": true, "dir with space/ü.txt": true, "日本.md": true,
		"caf\xe9.txt": false, "a\x00b": false, "tab\there": false, "new\nline": false, "esc\x1b[31m": false, "del\x7f": false, "": true,
	} {
		if got := gitrepo.ValidName(name); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", name, got, want)
		}
	}
}

// gitIn runs git in dir with stdin and returns its trimmed output.
func gitIn(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	c := exec.Command("git", args...)
	c.Dir = dir
	c.Stdin = strings.NewReader(stdin)
	c.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := c.Output()
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}
