package worker_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/githubfake"
	"github.com/quavon/quavon/internal/llm"
	"github.com/quavon/quavon/internal/review"
	"github.com/quavon/quavon/internal/sast"
	"github.com/quavon/quavon/internal/testenv"
)

// acmeShell is a bring-your-own scanner (busybox sh): the line of the first
// changed file that holds shell=True, as CWE-78.
const acmeShell = `#!/bin/sh
set -e
line=$(grep -n 'shell=True' /work/changed/0/f.py | head -n 1 | cut -d: -f1)
cat > /out/results.sarif <<EOF
{"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "acme", "rules": [
  {"id": "ACME-SHELL", "name": "Shell built from input", "properties": {"tags": ["external/cwe/cwe-78"], "security-severity": "9.1"}}]}},
 "results": [{"ruleId": "ACME-SHELL", "message": {"text": "a shell runs input"},
   "locations": [{"physicalLocation": {"artifactLocation": {"uri": "changed/0/f.py"}, "region": {"startLine": $line}}}]}]}]}
EOF
`

// leakedToken is what a failing scanner prints on stderr: the detail
// shown for it is redacted.
const leakedToken = "ghp_" + "R2d2C3poBB8Luke5Leia7Han0Solo9Yoda1Xw"

// TestReviewRunWithBYOScanners: the policy names four bring-your-own
// scanners. The instance allows acme (which reports the shell injection),
// broken (which fails) and absent (which the runner's lockfile lacks), not
// unlisted (which is in the lockfile and would report the injection too).
// acme's finding joins bandit's and the model's on the same line and
// weakness under its image's name; broken is failed, absent and unlisted
// are missing with their reasons, on the run and in the outputs; the
// scanners' part is partial; unlisted never ran.
func TestReviewRunWithBYOScanners(t *testing.T) {
	acme := testenv.BYOImage(t, map[string]string{sast.BYORunCommand: acmeShell})
	lock := testenv.LockWithBYO(t, map[string]string{
		"acme": acme, "unlisted": acme,
		"broken": testenv.BYOImage(t, map[string]string{sast.BYORunCommand: "#!/bin/sh\necho 'license expired for " + leakedToken + "' >&2\nexit 3\n"}),
	})
	w := newWorld(t)
	models := &scripts{}
	w.startReviewWorkerBYO(t, models, startSandboxWith(t, lock), []string{"acme", "broken", "absent"})
	w.in(t, func(tx pgx.Tx) error {
		_, err := tx.Exec(context.Background(), `INSERT INTO repository_policies (tenant_id, repository_id, document)
			VALUES (quavon_current_tenant(), $1, '{"version":1,"features":{"sast":{"mode":"on","scanners":["bandit"],
				"byo":["acme","broken","unlisted","absent"]}}}')`, w.repoID)
		return err
	})
	src := "import subprocess\n\n\ndef run(c):\n    return subprocess.call(c, shell=True)\n"
	models.push(
		report("app.py", 5, "high", "security", "subprocess.call(c, shell=True)"),
		llm.Call("finish", map[string]string{"summary": "one"}),
	)
	w.repo.Commit("feature", map[string]string{"app.py": src}, "work")
	pr := w.repo.AddPullRequest(githubfake.PullRequestOptions{Title: "Run", Author: "alice", Head: "feature"})
	run := w.waitRun(t, pr, w.repo.Ref("feature"), review.StatusCompleted)

	want := map[string]string{"bandit": "ok", "byo:acme": "ok", "byo:broken": "failed", "byo:unlisted": "missing", "byo:absent": "missing"}
	for tool, st := range want {
		if run.SASTTools[tool] != st {
			t.Errorf("%s: %q, want %q (all: %v)", tool, run.SASTTools[tool], st, run.SASTTools)
		}
	}
	if run.Parts[review.PartSAST] != review.PartPartial {
		t.Errorf("sast part %s, want partial (a BYO scanner failed, two are missing)", run.Parts[review.PartSAST])
	}
	fs := w.findingsOf(t, run.ID)
	if len(fs) != 1 {
		t.Fatalf("%d findings, want the one joined finding: %+v", len(fs), fs)
	}
	f := fs[0]
	if f.Source != review.SourceSAST || f.StartLine != 5 || f.Weakness != "CWE-78" || f.Severity != "critical" ||
		!slices.Contains(f.Tools, "bandit") || !slices.Contains(f.Tools, "byo:acme") || !slices.Contains(f.Tools, review.ToolLLM) ||
		slices.Contains(f.Tools, "byo:unlisted") || !slices.Contains(f.RuleIDs, "ACME-SHELL") || !slices.Contains(f.RuleIDs, "B602") {
		t.Errorf("joined finding %+v", f.Finding)
	}
	p, _ := w.payloadOf(t, run.ID)
	if p.SAST == nil {
		t.Fatal("no scanners part in the payload")
	}
	details := map[string]string{}
	for _, tr := range p.SAST.Tools {
		details[tr.Tool] = string(tr.Status) + ": " + tr.Detail
	}
	for tool, says := range map[string]string{
		"byo:acme": "ok", "byo:broken": "failed: the scanner exited 3", "byo:unlisted": "missing: the instance does not allow",
		"byo:absent": "missing: the image byo:absent is not in the sandbox runner's image lockfile",
	} {
		if !strings.HasPrefix(details[tool], says) {
			t.Errorf("%s in the payload: %q, want %q…", tool, details[tool], says)
		}
	}
	if strings.Contains(details["byo:broken"], leakedToken) || !strings.Contains(details["byo:broken"], "license expired") {
		t.Errorf("the failing scanner's stderr in the payload: %q", details["byo:broken"])
	}
	if len(p.Inline) != 1 || !slices.Contains(p.Inline[0].Tools, "byo:acme") {
		t.Errorf("inline %+v", p.Inline)
	}
}
