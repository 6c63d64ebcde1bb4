package publisher_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/publish/publisher"
	"github.com/quavon/quavon/internal/publish/render"
	"github.com/quavon/quavon/internal/review"
	"github.com/quavon/quavon/internal/sast"
	"github.com/quavon/quavon/internal/sast/sariftest"
	"github.com/quavon/quavon/internal/testenv"
)

func storedSAST(n int) []review.StoredFinding {
	var out []review.StoredFinding
	for i := range n {
		out = append(out, review.StoredFinding{Finding: review.Finding{Fingerprint: fmt.Sprintf("%032x", i+1), Source: review.SourceSAST,
			Tools: []string{"gosec", "bandit"}, RuleIDs: []string{"G104", "B110"}, Weakness: "CWE-703", Path: fmt.Sprintf("pkg/f%d.go", i),
			StartLine: i + 1, EndLine: i + 1, Severity: "medium", Title: "Errors unhandled", Body: "`err` is dropped"}})
	}
	// The model's findings never reach code scanning.
	out = append(out, review.StoredFinding{Finding: review.Finding{Fingerprint: strings.Repeat("c", 32), Source: review.SourceLLM,
		Path: "a.go", StartLine: 1, EndLine: 1, Severity: "high", Title: "model"}})
	return out
}

func TestSARIFFromFindings(t *testing.T) {
	t.Parallel()
	tools := []render.ToolRun{{Tool: "gosec", Status: sast.StatusOK}, {Tool: "bandit", Status: sast.StatusFailed}}
	data, err := publisher.SARIFFromFindings(tools, storedSAST(3), publisher.SARIFCategory+"0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	sariftest.Validate(t, data)
	var doc struct {
		Runs []struct {
			Tool struct {
				Driver struct{ Name string } `json:"driver"`
			} `json:"tool"`
			Results []json.RawMessage `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	// gosec's run has its three results; bandit failed, so it has no run
	// of its own (an empty run would close its alerts) but is reported in
	// the driver's notification run.
	if len(doc.Runs) != 2 || doc.Runs[0].Tool.Driver.Name != "gosec" || len(doc.Runs[0].Results) != 3 || doc.Runs[1].Tool.Driver.Name != "quavon" {
		t.Fatalf("runs: %s", data)
	}
	if bytes.Contains(data, []byte(`"model"`)) {
		t.Fatal("a model finding reached the SARIF")
	}
}

// TestSARIFCaps: a run over GitHub's result limit is cut (and says so),
// and the gzipped size limit is GitHub's.
func TestSARIFCaps(t *testing.T) {
	t.Parallel()
	if sast.MaxSARIFGzipBytes != 10<<20 {
		t.Fatalf("gzip cap %d", sast.MaxSARIFGzipBytes)
	}
	data, err := publisher.SARIFFromFindings([]render.ToolRun{{Tool: "gosec", Status: sast.StatusOK}}, storedSAST(sast.MaxSARIFResults+5), "quavon/x")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Runs []struct {
			Results []json.RawMessage `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Runs) == 0 || len(doc.Runs[0].Results) != sast.MaxSARIFResults {
		t.Fatalf("results %d", len(doc.Runs[0].Results))
	}
}

// TestSARIFMultitool validates the regenerated SARIF with Microsoft's
// SARIF Multitool (as internal/sast's test does for the generator): no
// error-level result, and a broken file is caught, so a validator that
// accepts everything fails the test.
func TestSARIFMultitool(t *testing.T) {
	t.Parallel()
	bin := testenv.SARIFMultitool(t)
	data, err := publisher.SARIFFromFindings([]render.ToolRun{{Tool: "gosec", Status: sast.StatusOK}, {Tool: "bandit", Status: sast.StatusTimedOut}},
		storedSAST(5), publisher.SARIFCategory+"0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	errorsOf := func(name string, doc []byte) []string {
		t.Helper()
		in, log := filepath.Join(dir, name+".sarif"), filepath.Join(dir, name+".log.sarif")
		if err := os.WriteFile(in, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "validate", in, "-o", log, "--log", "ForceOverwrite")
		cmd.Env = append(os.Environ(), "DOTNET_CLI_TELEMETRY_OPTOUT=1", "DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1", "HOME="+dir)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("Sarif.Multitool validate: %v\n%s", err, b)
		}
		raw, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			Runs []struct {
				Results []struct {
					RuleID string `json:"ruleId"`
					Level  string `json:"level"`
				} `json:"results"`
			} `json:"runs"`
		}
		if err := json.Unmarshal(raw, &res); err != nil || len(res.Runs) == 0 {
			t.Fatalf("validation log: %v", err)
		}
		var errs []string
		for _, r := range res.Runs[0].Results {
			if r.Level == "error" {
				errs = append(errs, r.RuleID)
			}
		}
		return errs
	}
	broken := bytes.Replace(data, []byte(`"driver":{"name":"gosec"`), []byte(`"driver":{"nam":"gosec"`), 1)
	if bytes.Equal(broken, data) {
		t.Fatal("could not break the SARIF")
	}
	if len(errorsOf("broken", broken)) == 0 {
		t.Fatal("the Multitool found no error in a SARIF file without a driver name; it is not validating")
	}
	if errs := errorsOf("quavon", data); len(errs) > 0 {
		t.Fatalf("Sarif.Multitool errors: %v", errs)
	}
}
