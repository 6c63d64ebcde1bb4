package scan_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/sast"
	"github.com/quavon/quavon/internal/scan"
	"github.com/quavon/quavon/internal/testenv"
)

// acmeScan is a BYO scanner (busybox sh) that reads the snapshot: it
// reports the line of the first changed file that holds shell=True, a
// line that is not changed, and the line of "password" in a Go file it
// finds at its repository path beneath src/.
const acmeScan = `#!/bin/sh
set -e
test -f /work/scan-request.json
line=$(grep -n 'shell=True' /work/changed/0/f.py | head -n 1 | cut -d: -f1)
go=$(grep -n 'password' /work/src/pkg/a.go | head -n 1 | cut -d: -f1)
net=no
if wget -q -T 2 -O /dev/null http://1.1.1.1/ 2>/dev/null || nc -w 2 1.1.1.1 80 </dev/null 2>/dev/null; then net=yes; fi
ro=yes
if touch /opt/quavon/written 2>/dev/null; then ro=no; fi
cat > /out/results.sarif <<EOF
{"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "acme", "rules": [
  {"id": "ACME-SHELL", "name": "Shell built from input", "properties": {"tags": ["external/cwe/cwe-78"], "security-severity": "8.0"}}]}},
 "results": [
  {"ruleId": "ACME-SHELL", "message": {"text": "shell=True with a variable (uid $(id -u), network $net, read-only root $ro)"},
   "locations": [{"physicalLocation": {"artifactLocation": {"uri": "changed/0/f.py"}, "region": {"startLine": $line}}}]},
  {"ruleId": "ACME-OLD", "level": "note", "message": {"text": "an unchanged line"},
   "locations": [{"physicalLocation": {"artifactLocation": {"uri": "file:///work/changed/0/f.py"}, "region": {"startLine": 1}}}]},
  {"ruleId": "ACME-PW", "level": "error", "message": {"text": "a password"},
   "locations": [{"physicalLocation": {"artifactLocation": {"uri": "src/pkg/a.go"}, "region": {"startLine": $go}}}]}]}]}
EOF
`

// escapeScan writes results whose locations leave the snapshot, and one
// that does not.
const escapeScan = `#!/bin/sh
cat > /out/results.sarif <<'EOF'
{"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "escape"}}, "results": [
  {"ruleId": "E1", "message": {"text": "x"}, "locations": [{"physicalLocation": {"artifactLocation": {"uri": "../../etc/passwd"}, "region": {"startLine": 1}}}]},
  {"ruleId": "E2", "message": {"text": "x"}, "locations": [{"physicalLocation": {"artifactLocation": {"uri": "/etc/passwd"}, "region": {"startLine": 1}}}]},
  {"ruleId": "E3", "message": {"text": "x"}, "locations": [{"physicalLocation": {"artifactLocation": {"uri": "file://evil.example/work/changed/0/f.py"}, "region": {"startLine": 1}}}]},
  {"ruleId": "E4", "message": {"text": "x"}, "locations": [{"physicalLocation": {"artifactLocation": {"uri": "changed/0/f.py"}, "region": {"startLine": 99999}}}]},
  {"ruleId": "E5", "message": {"text": "kept"}, "locations": [{"physicalLocation": {"artifactLocation": {"uri": "changed/0/f.py"}, "region": {"startLine": 7}}}]}]}]}
EOF
`

// floodScan writes 12,000 results on line 7 of the first changed file.
const floodScan = `#!/bin/sh
awk 'BEGIN {
  printf "{\"version\": \"2.1.0\", \"runs\": [{\"tool\": {\"driver\": {\"name\": \"flood\"}}, \"results\": ["
  for (i = 0; i < 12000; i++) {
    if (i > 0) printf ","
    printf "{\"ruleId\": \"F\", \"message\": {\"text\": \"x\"}, \"locations\": [{\"physicalLocation\": {\"artifactLocation\": {\"uri\": \"changed/0/f.py\"}, \"region\": {\"startLine\": 7}}}]}"
  }
  printf "]}]}\n"
}' > /out/results.sarif
`

func TestBYOScannersInTheSandbox(t *testing.T) {
	byo := map[string]string{
		"acme":    testenv.BYOImage(t, map[string]string{sast.BYORunCommand: acmeScan}),
		"failing": testenv.BYOImage(t, map[string]string{sast.BYORunCommand: "#!/bin/sh\necho 'acme: license expired' >&2\nexit 3\n"}),
		"huge": testenv.BYOImage(t, map[string]string{sast.BYORunCommand: "#!/bin/sh\n" +
			"head -c 9437184 /dev/zero | tr '\\0' ' ' > /out/results.sarif\n"}),
		"garbage": testenv.BYOImage(t, map[string]string{sast.BYORunCommand: "#!/bin/sh\necho '{\"version\": \"2.1.0\", \"runs\": [' > /out/results.sarif\n"}),
		"silent":  testenv.BYOImage(t, map[string]string{sast.BYORunCommand: "#!/bin/sh\nexit 0\n"}),
		"escape":  testenv.BYOImage(t, map[string]string{sast.BYORunCommand: escapeScan}),
		// 12,000 results on one changed line: read up to the cap, merged
		// into one finding.
		"flood":   testenv.BYOImage(t, map[string]string{sast.BYORunCommand: floodScan}),
		"sleeper": testenv.BYOImage(t, map[string]string{sast.BYORunCommand: "#!/bin/sh\nsleep 60\n"}),
	}
	lb := sandbox(t, testenv.LockWithBYO(t, byo))
	defer lb.Close()

	old := "import subprocess\n\ndef a(c):\n    return c\n"
	dir := newRepo(t, map[string]string{"app.py": old, "go.mod": "module m\n\ngo 1.22\n"}, map[string]string{
		"app.py":   old + "\ndef b(c):\n    return subprocess.call(c, shell=True)\n",
		"pkg/a.go": "package pkg\n\n// password = \"hunter2\"\nconst X = 1\n",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	plan, err := scan.NewPlan(ctx, dir, "main", scan.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(plan.Files, []string{"app.py", "pkg/a.go"}) {
		t.Fatalf("plan files %v", plan.Files)
	}
	opts := scan.BYOOptions{Normalise: sast.Options{ContextLines: 0, MaxFindings: 50}}
	names := []string{"acme", "failing", "huge", "garbage", "silent", "nope", "smoke", "escape", "flood"}
	// All at once, as a review sends them.
	outs, err := scan.RunBYO(ctx, lb.Client, plan, names, opts)
	if err != nil || len(outs) != len(names) {
		t.Fatalf("%d outcomes, %v", len(outs), err)
	}
	byName := map[string]*scan.BYOOutcome{}
	for i, o := range outs {
		if o.Name != names[i] || len(o.Report.Tools) != 1 || o.Report.Tools[0].Tool != sast.BYOTool(names[i]) {
			t.Fatalf("outcome %d: %s %+v", i, o.Name, o.Report.Tools)
		}
		byName[o.Name] = o
	}
	run := func(name string, timeout time.Duration) *scan.BYOOutcome {
		t.Helper()
		if o, ok := byName[name]; ok && timeout == 0 {
			return o
		}
		o := opts
		o.Timeout = timeout
		outs, err := scan.RunBYO(ctx, lb.Client, plan, []string{name}, o)
		if err != nil || len(outs) != 1 {
			t.Fatalf("%s: %v", name, err)
		}
		return outs[0]
	}

	acme := run("acme", 0)
	if st := acme.Report.Tools[0]; st.Status != sast.StatusOK || acme.ImageDigest != byo["acme"] {
		t.Fatalf("acme: %+v, image %s", st, acme.ImageDigest)
	}
	got := map[string]sast.Finding{}
	for _, f := range acme.Report.Findings {
		got[f.RuleID] = f
	}
	// Line 7 of app.py and line 3 of pkg/a.go are changed; line 1 of
	// app.py is not: that result is left out.
	if f := got["ACME-SHELL"]; len(got) != 2 || f.Path != "app.py" || f.StartLine != 7 || f.CWE != "CWE-78" ||
		f.Severity != sast.SeverityHigh || f.Tool != "byo:acme" || !strings.Contains(f.Message, "uid 65532, network no, read-only root yes") {
		t.Errorf("acme findings %+v", acme.Report.Findings)
	}
	if f := got["ACME-PW"]; f.Path != "pkg/a.go" || f.StartLine != 3 {
		t.Errorf("the src/ result: %+v", f)
	}
	if acme.Report.OutsideChange != 1 || acme.Report.Incomplete() {
		t.Errorf("acme: outside %d, incomplete %v", acme.Report.OutsideChange, acme.Report.Incomplete())
	}

	for name, want := range map[string]struct {
		status sast.Status
		says   string
	}{
		"failing": {sast.StatusFailed, "license expired"},
		// /out is a capped tmpfs: the log cannot even be written whole.
		"huge":    {sast.StatusFailed, "No space left on device"},
		"garbage": {sast.StatusFailed, "invalid SARIF log"},
		"silent":  {sast.StatusFailed, "wrote no /out/results.sarif"},
		"nope":    {sast.StatusMissing, "not in the sandbox runner's image lockfile"},
		"smoke":   {sast.StatusMissing, "the image has no /opt/quavon/byo/scan"},
	} {
		out := run(name, 0)
		st := out.Report.Tools[0]
		if st.Status != want.status || !strings.Contains(st.Error, want.says) || len(out.Report.Findings) != 0 ||
			!out.Report.Incomplete() || len(out.Report.NotScanned) != 2 {
			t.Errorf("%s: %+v, not scanned %+v", name, st, out.Report.NotScanned)
		}
	}

	esc := run("escape", 0)
	if st := esc.Report.Tools[0]; st.Status != sast.StatusPartial || len(st.Errors) != 4 || len(esc.Report.Findings) != 1 ||
		esc.Report.Findings[0].RuleID != "E5" || esc.Report.Findings[0].Path != "app.py" {
		t.Errorf("escape: %+v, findings %+v", st, esc.Report.Findings)
	}

	flood := run("flood", 0)
	if st := flood.Report.Tools[0]; st.Status != sast.StatusPartial || len(st.Errors) != 1 ||
		!strings.Contains(st.Errors[0], "more than 10000 results") || len(flood.Report.Findings) != 1 {
		t.Errorf("flood: %+v, %d findings", st, len(flood.Report.Findings))
	}

	slow := run("sleeper", 3*time.Second)
	if st := slow.Report.Tools[0]; st.Status != sast.StatusTimedOut {
		t.Errorf("sleeper: %+v", st)
	}
}
