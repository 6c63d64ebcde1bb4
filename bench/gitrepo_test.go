package bench

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/githubfake"
	"github.com/quavon/quavon/internal/gitrepo"
	"github.com/quavon/quavon/internal/testenv"
)

// BenchmarkGitFetchAndList: the worker's hardened fetch of a 5,000-file
// repository from the emulator's git smart HTTP, its tree listing, the
// changed files of a 50-file change and the reads of those 50 blobs,
// against `git clone --bare` plus `git ls-tree -r` of the same repository
// run directly, in the same run. Goal: ≤ 1.2×.
func BenchmarkGitFetchAndList(b *testing.B) {
	testenv.Program(b, "git")
	srv := githubfake.New(b)
	files := map[string]string{}
	for i := range 5000 {
		files[fmt.Sprintf("pkg%02d/sub%d/file%04d.go", i%50, i%7, i)] = fmt.Sprintf("package p\n\n// file %d\nvar V%d = %d\n", i, i, i)
	}
	repo := srv.AddRepo("acme", "big", githubfake.RepoOptions{Private: true, Files: files})
	base := repo.Ref("main")
	changed := map[string]string{}
	for i := range 50 {
		changed[fmt.Sprintf("pkg%02d/sub%d/file%04d.go", i%50, i%7, i)] = fmt.Sprintf("package p\n\n// changed %d\n", i)
	}
	head := repo.Commit("main", changed, "change 50 files")
	app := srv.RegisterApp("quavon-review")
	inst := srv.Install(app, "acme", map[string]string{"contents": "read"})
	tok := srv.InstallationToken(inst, map[string]string{"contents": "read"}, "big")
	url := srv.URL + "/acme/big.git"
	ctx := context.Background()

	ours := func() {
		cache, err := gitrepo.NewCache(gitrepo.CacheConfig{Dir: b.TempDir(), AllowHTTP: true})
		if err != nil {
			b.Fatal(err)
		}
		h, err := cache.Open(ctx, gitrepo.Key{Tenant: "t", Host: "github.com", Owner: "acme", Name: "big"})
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		if err := h.Fetch(ctx, url, tok, []string{"+refs/heads/main:refs/quavon/main"}, gitrepo.FetchOptions{}); err != nil {
			b.Fatal(err)
		}
		tree, err := h.Tree(ctx, head)
		if err != nil || len(tree.Entries) != 5000 {
			b.Fatalf("tree: %d entries, %v", len(tree.Entries), err)
		}
		ch, err := h.ChangedFiles(ctx, base, head)
		if err != nil || len(ch) != 50 {
			b.Fatalf("%d changes, %v", len(ch), err)
		}
		blobs, err := h.Blobs(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer blobs.Close()
		for _, c := range ch {
			if _, err := blobs.Read(c.NewBlob, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
	direct := func() {
		dir := filepath.Join(b.TempDir(), "big.git")
		header := "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+tok))
		run := func(args ...string) {
			c := exec.Command("git", args...)
			c.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
				"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraHeader", "GIT_CONFIG_VALUE_0="+header)
			if out, err := c.CombinedOutput(); err != nil {
				b.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
		run("clone", "--quiet", "--bare", url, dir)
		run("--git-dir="+dir, "ls-tree", "-r", "-z", "--long", "--full-tree", head)
	}
	ours()
	direct()
	b.ResetTimer()
	var tOurs, tDirect time.Duration
	for b.Loop() {
		t0 := time.Now()
		direct()
		t1 := time.Now()
		ours()
		tDirect += t1.Sub(t0)
		tOurs += time.Since(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(tOurs.Milliseconds())/n, "gitrepo-ms/op")
	b.ReportMetric(float64(tDirect.Milliseconds())/n, "clone+ls-tree-ms/op")
	b.ReportMetric(float64(tOurs)/float64(tDirect), "gitrepo/direct")
}
