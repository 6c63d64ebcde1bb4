package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/agent"
	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/fix/fixagent"
	"github.com/quavon/quavon/internal/gitrepo"
	"github.com/quavon/quavon/internal/patch"
	"github.com/quavon/quavon/internal/sandbox/runner/docker"
	"github.com/quavon/quavon/internal/snapshot"
	"github.com/quavon/quavon/internal/testenv"
)

// BenchmarkFixAgentTools: the fix agent's per-step overhead, without the
// model or the sandbox: read_file and search through the agent's tools on
// a 5,000-file base (a gitrepo listing with its batch blob reader, plus an
// overlay), against `git cat-file -p HEAD:<path>` and `git grep -n
// <pattern> HEAD` on the same repository, interleaved in the same run.
// Goal: ≤ 1.5× (µs per call). The agent reads the base through a cache of
// blob contents (fixagent.Run), so the first search of a run pays for
// reading the blobs once; the ratio is over all calls of the run.
func BenchmarkFixAgentTools(b *testing.B) {
	testenv.Program(b, "git")
	ctx := context.Background()
	files := map[string]string{}
	for i := range 5000 {
		files[fmt.Sprintf("pkg%02d/sub%d/file%04d.go", i%50, i%7, i)] = fmt.Sprintf("package p\n\n// file %d\nvar V%d = %d\n\nfunc F%d() int { return V%d }\n", i, i, i, i, i)
	}
	dir := testenv.GitRepo(b, nil, files)
	repo, err := gitrepo.OpenLocal(ctx, dir, gitrepo.DefaultLimits)
	if err != nil {
		b.Fatal(err)
	}
	head, err := repo.ResolveCommit(ctx, "HEAD")
	if err != nil {
		b.Fatal(err)
	}
	tree, err := repo.Tree(ctx, head)
	if err != nil {
		b.Fatal(err)
	}
	blobs, err := repo.Blobs(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer blobs.Close()
	// As fixagent.Run builds it.
	base := patch.FromTree(tree, blobs).Cached(agent.MaxSearchBytes)
	ov, err := patch.NewOverlay(base, patch.PathPolicy{}, patch.DefaultLimits)
	if err != nil {
		b.Fatal(err)
	}
	if err := ov.EditFile("pkg00/sub0/file0000.go", "var V0 = 0", "var V0 = 1"); err != nil {
		b.Fatal(err)
	}
	tools := agent.ReadTools(agent.NewWorkspace(base, ov))
	read, search := tools[1], tools[2]
	path := func(i int) string { return fmt.Sprintf("pkg%02d/sub%d/file%04d.go", i%50, i%7, i) }
	args := func(v any) []byte { j, _ := json.Marshal(v); return j }
	git := func(a ...string) {
		c := exec.Command("git", append([]string{"-C", dir}, a...)...)
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v %s", a, err, out)
		}
	}
	const rounds = 20
	var oursRead, gitRead, oursSearch, gitSearch time.Duration
	b.ResetTimer()
	for range b.N {
		for r := range rounds {
			p := path((r * 97) % 5000)
			t0 := time.Now()
			if res := read.Run(ctx, args(map[string]any{"path": p})); res.IsError {
				b.Fatalf("read_file %s: %s", p, res.Content)
			}
			oursRead += time.Since(t0)
			t0 = time.Now()
			git("cat-file", "-p", "HEAD:"+p)
			gitRead += time.Since(t0)

			pat := fmt.Sprintf("V%d\\b", (r*131)%5000)
			t0 = time.Now()
			if res := search.Run(ctx, args(map[string]any{"pattern": pat})); res.IsError {
				b.Fatalf("search: %s", res.Content)
			}
			oursSearch += time.Since(t0)
			t0 = time.Now()
			git("grep", "-n", "-E", fmt.Sprintf("V%d([^0-9]|$)", (r*131)%5000), "HEAD")
			gitSearch += time.Since(t0)
		}
	}
	n := float64(b.N * rounds)
	b.ReportMetric(float64(oursRead.Microseconds())/n, "read_file-µs/op")
	b.ReportMetric(float64(gitRead.Microseconds())/n, "cat-file-µs/op")
	b.ReportMetric(float64(oursRead)/float64(gitRead), "read_file/cat-file")
	b.ReportMetric(float64(oursSearch.Microseconds())/n, "search-µs/op")
	b.ReportMetric(float64(gitSearch.Microseconds())/n, "git-grep-µs/op")
	b.ReportMetric(float64(oursSearch)/float64(gitSearch), "search/git-grep")
}

// BenchmarkFixRunTests: one run_tests round of the fix agent (the overlay
// of one edited file built from memory, the signed job with the base
// snapshot, the verified result, the tails redacted and cut) against a bare
// `docker run` of the same command (/bin/true) on the same image and
// runtime (gVisor), interleaved. Goal: ≤ 1.3×.
func BenchmarkFixRunTests(b *testing.B) {
	rb := newRunnerBench(b, docker.ModeRunsc, 1)
	sb := &fixagent.JobSandbox{Runner: rb.local.Client, TenantID: "tenant-bench", Base: snapshot.Dir(rb.base), ImageClass: "byo:smoke",
		TestCommand: "true", Limits: benchLimits()}
	changes := []patch.FixFileChange{{Path: "fix.go", Operation: patch.OpCreate, NewContent: "package fix\n", Mode: patch.ModeFile}}
	round := func() {
		res, err := sb.Run(context.Background(), fix.KindTest, changes)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("run_tests: %+v %v", res, err)
		}
		var r fix.TestResult
		r.SetTails(res.Stdout, res.Stderr, res.Truncated)
	}
	rb.bare(b) // warm both paths once
	round()
	var bare, ours time.Duration
	for b.Loop() {
		t0 := time.Now()
		rb.bare(b)
		t1 := time.Now()
		round()
		bare += t1.Sub(t0)
		ours += time.Since(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(bare.Milliseconds())/n, "bare-ms/op")
	b.ReportMetric(float64(ours.Milliseconds())/n, "run_tests-ms/op")
	b.ReportMetric(float64(ours)/float64(bare), "run_tests/bare")
}
