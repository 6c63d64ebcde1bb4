package bench

import (
	scanapp "github.com/quavon/quavon/internal/app/scan"

	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/sast"
	"github.com/quavon/quavon/internal/scan"
	"github.com/quavon/quavon/internal/testenv"
)

// BenchmarkReviewNoise: findings per 1,000 changed lines on ordinary code
// changes (internal/scan/testdata/suites: a Flask service, a Go HTTP
// service and a Node module, each with its test suite, added as one
// change), in the review profile against the audit profile of the same
// scan: the baseline is the audit profile, measured in the same run. It
// reports both rates (findings as posted: one per weakness and line, and
// as the tools report them) and review/audit. Aim: under 2 posted review
// findings per 1,000 changed lines on real project history.
func BenchmarkReviewNoise(b *testing.B) {
	lock := testenv.ImagesLock(b)
	testenv.Docker(b)
	platform := testenv.RunscPlatform(b)
	repo := ordinaryChange(b)
	ctx := context.Background()
	plan, err := scan.NewPlan(ctx, repo, "main", scan.DefaultLimits)
	if err != nil {
		b.Fatal(err)
	}
	changed := 0
	for _, rs := range plan.Changed {
		for _, r := range rs {
			changed += r.End - r.Start + 1
		}
	}
	cfg, err := config.LoadScan([]string{"QUAVON_ENV=test", "QUAVON_SANDBOX_IMAGES_LOCK=" + lock,
		"QUAVON_SANDBOX_RUNSC_PLATFORM=" + platform})
	if err != nil {
		b.Fatal(err)
	}
	local, err := scanapp.StartLocal(ctx, cfg, &testenv.LogBuffer{})
	if err != nil {
		b.Fatal(err)
	}
	defer local.Close()
	opt := sast.Options{ContextLines: sast.DefaultContextLines, MaxFindings: sast.MaxMaxFindings, Profile: sast.ProfileAudit}
	var audit, review sast.Report
	b.ResetTimer()
	for range b.N {
		out, err := scan.Run(ctx, local.Client, plan, scan.Options{Normalise: opt})
		if err != nil {
			b.Fatal(err)
		}
		if out.Incomplete() {
			b.Fatalf("incomplete scan: %s", out.Report.Summary())
		}
		audit = *out.Report
		ropt := opt
		ropt.Profile = sast.ProfileReview
		review = out.Normalise(ropt)
	}
	b.StopTimer()
	perK := func(n int) float64 { return float64(n) * 1000 / float64(changed) }
	ag, rg := len(sast.GroupFindings(audit.Findings)), len(sast.GroupFindings(review.Findings))
	if ag == 0 {
		b.Fatal("the audit profile found nothing: the fixture measures nothing")
	}
	b.ReportMetric(float64(changed), "changed-lines")
	b.ReportMetric(perK(ag), "audit-findings/kloc")
	b.ReportMetric(perK(rg), "review-findings/kloc")
	b.ReportMetric(perK(len(audit.Findings)), "audit-tool-findings/kloc")
	b.ReportMetric(perK(len(review.Findings)), "review-tool-findings/kloc")
	b.ReportMetric(float64(rg)/float64(ag), "review/audit")
	var posted []string
	for _, g := range sast.GroupFindings(review.Findings) {
		posted = append(posted, fmt.Sprintf("%s:%d %s %s %v", g.Path, g.StartLine, g.Severity, g.Weakness, g.Rules))
	}
	b.Logf("%d changed lines; audit %d findings (%d from the tools), review %d (%d from the tools, %d muted):\n  %s",
		changed, ag, len(audit.Findings), rg, len(review.Findings), review.Muted, strings.Join(posted, "\n  "))
}

// ordinaryChange is a repository whose main holds a README and whose
// branch adds internal/scan/testdata/suites, with a fresh token where the
// fixture has @TOKEN@.
func ordinaryChange(b *testing.B) string {
	b.Helper()
	token := "ghp_" + testenv.RandomString(b, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 36)
	files := map[string]string{}
	root := filepath.Join("..", "internal", "scan", "testdata", "suites")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = strings.ReplaceAll(string(data), "@TOKEN@", token)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return testenv.GitRepo(b, map[string]string{"README.md": "base\n"}, files)
}
