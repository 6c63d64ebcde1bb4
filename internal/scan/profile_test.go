package scan_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/sast"
	"github.com/quavon/quavon/internal/scan"
	"github.com/quavon/quavon/internal/testenv"
)

// suiteFiles is testdata/suites (a Python, a Go and a JavaScript project
// with their test suites) as a file map, with a fresh GitHub token (which
// gitleaks must report in a test file too) in place of @TOKEN@.
func suiteFiles(t *testing.T) (map[string]string, string) {
	t.Helper()
	token := "ghp_" + testenv.RandomString(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 36)
	files := map[string]string{}
	root := "testdata/suites"
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
		t.Fatal(err)
	}
	return files, token
}

// checkOneSeverityPerWeakness: every finding has a weakness and its
// severity, and findings of one weakness on one line agree.
func checkOneSeverityPerWeakness(t *testing.T, fs []sast.Finding) {
	t.Helper()
	multi := 0
	for _, g := range sast.GroupFindings(fs) {
		tools := map[sast.Tool]bool{}
		for _, f := range g.Findings {
			w, ok := sast.WeaknessOf(f.Weakness)
			switch {
			case !ok:
				t.Errorf("%s:%d %s %s: no weakness", f.Path, f.StartLine, f.Tool, f.RuleID)
			case f.Severity != w.Severity:
				t.Errorf("%s:%d %s %s: severity %s, weakness %s is %s", f.Path, f.StartLine, f.Tool, f.RuleID, f.Severity, w.ID, w.Severity)
			case f.Weakness == g.Weakness:
				tools[f.Tool] = true
			}
		}
		if len(tools) > 1 {
			multi++
		}
	}
	if multi == 0 {
		t.Error("no weakness reported by two tools on one line: the agreement is not tested")
	}
}

// The review profile posts no assertion, fixture or made-up-secret
// findings in realistic test suites, keeps a real-looking secret there and
// the real weaknesses of the code; the audit profile still shows them all.
func TestReviewProfileOnTestSuites(t *testing.T) {
	files, token := suiteFiles(t)
	dir := newRepo(t, map[string]string{"README.md": "base\n"}, files)
	norm := sast.Options{ContextLines: 0, MaxFindings: 25000}
	norm.Profile = sast.ProfileAudit
	audit := runScan(t, dir, scan.Options{Normalise: norm})
	requireStatus(t, audit, allOK())
	checkOneSeverityPerWeakness(t, audit.Report.Findings)
	norm.Profile = sast.ProfileReview
	reviewReport := audit.Normalise(norm)
	review := &scan.Outcome{Report: &reviewReport}

	describe := func(f sast.Finding) string {
		return fmt.Sprintf("%s:%d %s %s (%s)", f.Path, f.StartLine, f.Tool, f.RuleID, f.Weakness)
	}
	auditTests := map[sast.WeaknessID]int{}
	for _, f := range audit.Report.Findings {
		if sast.IsTestPath(f.Path) {
			auditTests[f.Weakness]++
		}
	}
	for _, w := range []sast.WeaknessID{"assertion", "hardcoded-secret", "insecure-tls", "file-permissions"} {
		if auditTests[w] == 0 {
			t.Errorf("audit: no %s finding in the test files: the fixture does not exercise the review profile", w)
		}
	}
	secretInTests := false
	for _, f := range review.Report.Findings {
		switch {
		case f.Tool == sast.ToolGitleaks && sast.IsTestPath(f.Path):
			secretInTests = true
		case sast.IsTestPath(f.Path):
			t.Errorf("review: finding in a test file: %s", describe(f))
		case f.Weakness == "assertion" || f.Weakness == "risky-import" || f.Weakness == "dynamic-property-access":
			t.Errorf("review: audit hint posted: %s", describe(f))
		}
	}
	if !secretInTests {
		t.Error("review: the real-looking token in a test file is not reported")
	}
	// The real weakness: a shell command built from the upload form,
	// reported once, by several tools.
	found := false
	for _, g := range sast.GroupFindings(review.Report.Findings) {
		if g.Path == "python/shop/service.py" && g.Weakness == "command-injection" && len(g.Tools) >= 2 {
			found = true
		}
	}
	if !found {
		t.Errorf("review: the shell command built from a form field is not one finding of several tools: %v", review.Report.Findings)
	}
	// A shell command the tools call constant is not posted.
	constant := lineOf(t, files["python/shop/service.py"], `"df -h /", shell=True`)
	for _, f := range audit.Report.Findings {
		if f.Path == "python/shop/service.py" && f.StartLine == constant {
			constant = -constant // the audit profile has it
		}
	}
	if constant > 0 {
		t.Errorf("audit: nothing reported on the constant shell command (line %d)", constant)
	}
	for _, f := range review.Report.Findings {
		if f.Path == "python/shop/service.py" && f.StartLine == -constant {
			t.Errorf("review: constant shell command posted: %s", describe(f))
		}
	}
	// Nothing is lost in silence: review + muted = audit.
	if len(review.Report.Findings)+review.Report.Muted != len(audit.Report.Findings) || review.Report.Profile != sast.ProfileReview {
		t.Errorf("review %d + muted %d != audit %d", len(review.Report.Findings), review.Report.Muted, len(audit.Report.Findings))
	}
	if strings.Contains(fmt.Sprint(review.Report), token) {
		t.Error("the token appears in the report")
	}
	if t.Failed() {
		for _, f := range audit.Report.Findings {
			t.Logf("audit: %s %s", describe(f), f.Severity)
		}
	}
}
