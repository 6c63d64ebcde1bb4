package sast

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/sast/sariftest"
	"github.com/quavon/quavon/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/sarif")

// TestLineHashes checks LineHashes against the expected values of
// github/codeql-action's src/fingerprints.test.ts.
func TestLineHashes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"", []string{"c129715d7a2bc9a3:1"}},
		{" a\nb\n  \t\tc\n d", []string{"271789c17abda88f:1", "54703d4cd895b18:1", "180aee12dab6264:1", "a23a3dc5e078b07b:1"}},
		{" hello; \t\nworld!!!\n\n\n  \t\tGreetings\n End", []string{"8b7cf3e952e7aeb2:1", "b1ae1287ec4718d9:1",
			"bff680108adb0fcc:1", "c6805c5e1288b612:1", "b86d3392aea1be30:1", "e6ceba753e1a442:1"}},
	}
	newlineVariants := []string{
		" hello; \t\nworld!!!\n\n\n  \t\tGreetings\n End\n",
		" hello; \t\nworld!!!\r\r\r  \t\tGreetings\r End\r",
		" hello; \t\r\nworld!!!\r\n\r\n\r\n  \t\tGreetings\r\n End\r\n",
		" hello; \t\nworld!!!\r\n\n\r  \t\tGreetings\r End\r\n",
	}
	for _, in := range newlineVariants {
		tests = append(tests, struct {
			in   string
			want []string
		}{in, []string{"e9496ae3ebfced30:1", "fb7c023a8b9ccb3f:1", "ce8ba1a563dcdaca:1", "e20e36e16fcb0cc8:1",
			"b3edc88f2938467e:1", "c8e28b0b4002a3a0:1", "c129715d7a2bc9a3:1"}})
	}
	tests = append(tests, struct {
		in   string
		want []string
	}{strings.Repeat("Lorem ipsum dolor sit amet.\n", 10), []string{
		"a7f2ff13bc495cf2:1", "a7f2ff13bc495cf2:2", "a7f2ff13bc495cf2:3", "a7f2ff13bc495cf2:4",
		"a7f2ff13bc495cf2:5", "a7f2ff13bc495cf2:6", "a7f2ff1481e87703:1", "a9cf91f7bbf1862b:1",
		"55ec222b86bcae53:1", "cc97dc7b1d7d8f7b:1", "c129715d7a2bc9a3:1",
	}})
	for _, tt := range tests {
		got := LineHashes([]byte(tt.in))
		if len(got) != len(tt.want)+1 || got[0] != "" {
			t.Errorf("%q: %d hashes, want %d: %q", tt.in, len(got)-1, len(tt.want), got)
			continue
		}
		for i, w := range tt.want {
			if got[i+1] != w {
				t.Errorf("%q line %d: %s, want %s", tt.in, i+1, got[i+1], w)
			}
		}
	}
}

// fixtureSARIF is the SARIF of every fixture finding (the whole tree
// counts as changed).
func fixtureSARIF(t testing.TB) (Report, []byte) {
	t.Helper()
	changed := ChangedLines{}
	for _, p := range []string{"app/run.py", "app/we ird.py", "app/keys.py", "app/web/app.js", "conf/settings.env",
		"svc/main.go", "svc/multi/multi.go"} {
		changed[p] = []LineRange{{1, 1000}}
	}
	rep := Normalise(fixtureInput(t, changed), Options{Profile: ProfileAudit, MaxFindings: 1000})
	out, err := SARIF(rep, SARIFOptions{AutomationID: "quavon/sast/", Source: fixtureSource})
	if err != nil {
		t.Fatal(err)
	}
	return rep, out
}

type sarifDoc struct {
	Runs []struct {
		Tool struct {
			Driver struct {
				Name    string `json:"name"`
				Version string `json:"version"`
				Rules   []struct {
					ID            string `json:"id"`
					DefaultConfig struct {
						Level string `json:"level"`
					} `json:"defaultConfiguration"`
					Properties struct {
						Tags []string `json:"tags"`
					} `json:"properties"`
				} `json:"rules"`
			} `json:"driver"`
		} `json:"tool"`
		AutomationDetails struct {
			ID string `json:"id"`
		} `json:"automationDetails"`
		Invocations []struct {
			ExecutionSuccessful bool `json:"executionSuccessful"`
			Notifications       []struct {
				Message   struct{ Text string } `json:"message"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI string `json:"uri"`
						} `json:"artifactLocation"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"toolExecutionNotifications"`
		} `json:"invocations"`
		Results []struct {
			RuleID    string `json:"ruleId"`
			RuleIndex int    `json:"ruleIndex"`
			Level     string `json:"level"`
			Locations []struct {
				PhysicalLocation struct {
					ArtifactLocation struct {
						URI       string `json:"uri"`
						URIBaseID string `json:"uriBaseId"`
					} `json:"artifactLocation"`
					Region map[string]int `json:"region"`
				} `json:"physicalLocation"`
			} `json:"locations"`
			PartialFingerprints map[string]string `json:"partialFingerprints"`
		} `json:"results"`
	} `json:"runs"`
}

func TestSARIFFixtures(t *testing.T) {
	t.Parallel()
	rep, out := fixtureSARIF(t)
	sariftest.Validate(t, out)
	golden := filepath.Join("testdata", "sarif", "fixtures.sarif")
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, out, "", "  "); err != nil {
		t.Fatal(err)
	}
	pretty.WriteByte('\n')
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(pretty.Bytes(), want) {
		t.Errorf("SARIF differs from %s (go test -update rewrites it)", golden)
	}

	var doc sarifDoc
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Runs) != len(Tools) {
		t.Fatalf("%d runs", len(doc.Runs))
	}
	results := 0
	sawSpace, sawCWE := false, false
	for _, run := range doc.Runs {
		if run.AutomationDetails.ID != "quavon/sast/" || run.Tool.Driver.Version != fixtureVersions[Tool(run.Tool.Driver.Name)] {
			t.Errorf("run %s: automation %q version %q", run.Tool.Driver.Name, run.AutomationDetails.ID, run.Tool.Driver.Version)
		}
		for _, r := range run.Tool.Driver.Rules {
			if len(r.Properties.Tags) == 0 || r.Properties.Tags[0] != "security" {
				t.Errorf("rule %s tags %v", r.ID, r.Properties.Tags)
			}
			for _, tag := range r.Properties.Tags {
				sawCWE = sawCWE || strings.HasPrefix(tag, "external/cwe/cwe-")
			}
		}
		for _, res := range run.Results {
			results++
			if run.Tool.Driver.Rules[res.RuleIndex].ID != res.RuleID {
				t.Errorf("ruleIndex %d is not %s", res.RuleIndex, res.RuleID)
			}
			loc := res.Locations[0].PhysicalLocation
			if loc.ArtifactLocation.URIBaseID != "%SRCROOT%" || strings.HasPrefix(loc.ArtifactLocation.URI, "/") {
				t.Errorf("location %+v", loc)
			}
			sawSpace = sawSpace || loc.ArtifactLocation.URI == "app/we%20ird.py"
			path := strings.ReplaceAll(loc.ArtifactLocation.URI, "%20", " ")
			src, _ := fixtureSource(path)
			if want := LineHashes(src)[loc.Region["startLine"]]; res.PartialFingerprints["primaryLocationLineHash"] != want {
				t.Errorf("%s:%d: primaryLocationLineHash %q, want %q", path, loc.Region["startLine"],
					res.PartialFingerprints["primaryLocationLineHash"], want)
			}
			if len(res.PartialFingerprints["quavon/v1"]) != 32 {
				t.Errorf("quavon/v1 %q", res.PartialFingerprints["quavon/v1"])
			}
		}
	}
	if results != len(rep.Findings) || !sawSpace || !sawCWE {
		t.Errorf("%d results for %d findings; escaped space %v; CWE tag %v", results, len(rep.Findings), sawSpace, sawCWE)
	}
}

// TestSARIFLimits: the per-run result cap truncates with a notification,
// the gzipped size cap is an error, runs only for tools that ran, and the
// automation id is checked.
func TestSARIFLimits(t *testing.T) {
	t.Parallel()
	rep, _ := fixtureSARIF(t)
	out, err := SARIF(rep, SARIFOptions{MaxResultsPerRun: 2})
	if err != nil {
		t.Fatal(err)
	}
	sariftest.Validate(t, out)
	var doc sarifDoc
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	truncated := 0
	for _, run := range doc.Runs {
		if len(run.Results) > 2 {
			t.Errorf("%s: %d results", run.Tool.Driver.Name, len(run.Results))
		}
		for _, inv := range run.Invocations {
			for _, n := range inv.Notifications {
				if strings.Contains(n.Message.Text, "only the 2 most severe") {
					truncated++
				}
			}
		}
	}
	if truncated == 0 {
		t.Error("no run was truncated")
	}

	// Runs only for tools with status ok or partial; the others are
	// notifications of the run of "quavon".
	rep2 := rep
	rep2.Tools = append([]ToolRun{}, rep.Tools...)
	rep2.Tools[0].Status = StatusFailed
	rep2.Tools[1].Status = StatusMissing
	out, err = SARIF(rep2, SARIFOptions{})
	if err != nil {
		t.Fatal(err)
	}
	doc = sarifDoc{}
	if err := json.Unmarshal(out, &doc); err != nil || len(doc.Runs) != len(Tools)-2+1 {
		t.Errorf("runs %d %v", len(doc.Runs), err)
	} else if last := doc.Runs[len(doc.Runs)-1]; last.Tool.Driver.Name != "quavon" || len(last.Invocations) != 1 ||
		last.Invocations[0].ExecutionSuccessful || !strings.Contains(last.Invocations[0].Notifications[0].Message.Text, "did not finish") {
		t.Errorf("coverage run %+v", last)
	}

	if _, err := SARIF(rep, SARIFOptions{AutomationID: "a\nb"}); !errors.Is(err, ErrSARIFOption) {
		t.Errorf("bad automation id: %v", err)
	}

	// 25,000 results of random 2 KiB messages do not compress to 10 MB.
	big := Report{Tools: []ToolRun{{Tool: ToolRuff, Status: StatusOK}}}
	buf := make([]byte, 1536)
	for i := range MaxSARIFResults {
		_, _ = rand.Read(buf)
		big.Findings = append(big.Findings, Finding{Tool: ToolRuff, RuleID: "S101", Severity: SeverityLow, Path: "a.py",
			StartLine: i + 1, EndLine: i + 1, Message: base64.StdEncoding.EncodeToString(buf)})
	}
	if _, err := SARIF(big, SARIFOptions{}); !errors.Is(err, ErrSARIFTooLarge) {
		t.Errorf("large SARIF: %v", err)
	}
}

func TestURIEscape(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"a/b.go":       "a/b.go",
		"we ird.py":    "we%20ird.py",
		"a:b/c#d?e%f":  "a%3Ab/c%23d%3Fe%25f",
		"ä.go":         "%C3%A4.go",
		"a\tb.go":      "a%09b.go",
		"x/~y-z_1.txt": "x/~y-z_1.txt",
	} {
		if got := uriEscape(in); got != want {
			t.Errorf("uriEscape(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSARIFMultitool validates our SARIF with Microsoft's SARIF Multitool
// (scripts/test installs it and sets QUAVON_TEST_SARIF_MULTITOOL). Its
// `validate` exits 0 whatever it finds, so the test reads its output log
// and requires no error-level result; and it first checks that the tool
// does report an error for a broken file, so a validator that silently
// accepts everything fails the test.
func TestSARIFMultitool(t *testing.T) {
	t.Parallel()
	bin := testenv.SARIFMultitool(t)
	_, out := fixtureSARIF(t)
	dir := t.TempDir()
	validate := func(name string, data []byte) (errs, warnings []string) {
		t.Helper()
		in := filepath.Join(dir, name+".sarif")
		log := filepath.Join(dir, name+".log.sarif")
		if err := os.WriteFile(in, data, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "validate", in, "-o", log, "--log", "ForceOverwrite")
		// Invariant globalization: the tool then needs no ICU library.
		cmd.Env = append(os.Environ(), "DOTNET_CLI_TELEMETRY_OPTOUT=1", "DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1", "HOME="+dir)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("Sarif.Multitool validate: %v\n%s", err, b)
		}
		raw, err := os.ReadFile(log)
		if err != nil {
			t.Fatalf("no validation log: %v", err)
		}
		var res struct {
			Runs []struct {
				Results []struct {
					RuleID  string `json:"ruleId"`
					Level   string `json:"level"`
					Message struct {
						ID        string   `json:"id"`
						Arguments []string `json:"arguments"`
					} `json:"message"`
				} `json:"results"`
			} `json:"runs"`
		}
		if err := json.Unmarshal(raw, &res); err != nil || len(res.Runs) == 0 {
			t.Fatalf("validation log: %v", err)
		}
		for _, r := range res.Runs[0].Results {
			s := fmt.Sprintf("%s %s %v", r.RuleID, r.Message.ID, r.Message.Arguments)
			if r.Level == "error" { // SARIF's default level for a result is warning
				errs = append(errs, s)
			} else {
				warnings = append(warnings, s)
			}
		}
		return errs, warnings
	}

	broken := bytes.Replace(out, []byte(`"driver":{"name":"ast-grep"`), []byte(`"driver":{"nam":"ast-grep"`), 1)
	if bytes.Equal(broken, out) {
		t.Fatal("could not break the SARIF")
	}
	if errs, _ := validate("broken", broken); len(errs) == 0 {
		t.Fatal("the Multitool found no error in a SARIF file without a driver name; it is not validating")
	}
	errs, warnings := validate("quavon", out)
	if len(errs) > 0 {
		t.Errorf("Sarif.Multitool: %d errors:\n%s", len(errs), strings.Join(errs, "\n"))
	}
	for _, w := range warnings {
		t.Logf("Sarif.Multitool warning: %s", w)
	}
}
