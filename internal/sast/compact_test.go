package sast

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestCompactReportKeepsTheFindings: every tool's compaction leaves the
// parser the same findings and tool errors on the tools' real reports,
// and makes them smaller; a report over MaxReportBytes, one that does not
// decode and gitleaks' (no compaction) stay byte for byte.
func TestCompactReportKeepsTheFindings(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		tool    Tool
		fixture string
	}{
		{ToolASTGrep, "ast-grep.jsonl"}, {ToolASTGrep, "ast-grep-metadata.jsonl"},
		{ToolBandit, "bandit.json"}, {ToolBandit, "bandit-1.6.2.json"},
		{ToolGosec, "gosec.json"}, {ToolESLint, "eslint.json"}, {ToolRuff, "ruff.json"},
	} {
		raw := fixture(t, c.fixture)
		path := filepath.Join(t.TempDir(), "report.json")
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		CompactReport(c.tool, path)
		compact, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(compact) >= len(raw) {
			t.Errorf("%s: %d bytes compacted to %d", c.fixture, len(raw), len(compact))
		}
		want, werr := Parse(c.tool, raw, fixtureRoot)
		got, gerr := Parse(c.tool, compact, fixtureRoot)
		if werr != nil || gerr != nil || len(want.Findings) == 0 {
			t.Fatalf("%s: %d findings, parse errors %v / %v", c.fixture, len(want.Findings), werr, gerr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: compacted report parses to\n%+v\nwant\n%+v", c.fixture, got, want)
		}
		t.Logf("%s: %d → %d bytes", c.fixture, len(raw), len(compact))
	}
	for name, c := range map[string]struct {
		tool Tool
		raw  []byte
	}{
		"gitleaks":     {ToolGitleaks, fixture(t, "gitleaks.json")},
		"not JSON":     {ToolBandit, []byte(`{"results": [` + string(fixture(t, "bandit.json")))},
		"bad element":  {ToolRuff, []byte(`[{"code":"S1","message":"m","filename":"a.py","location":{"row":"x"}}, {"code":"S2","cell":null,"message":"m","filename":"a.py"}]`)},
		"over the cap": {ToolESLint, append(fixture(t, "eslint.json"), make([]byte, MaxReportBytes)...)},
	} {
		path := filepath.Join(t.TempDir(), "report.json")
		os.WriteFile(path, c.raw, 0o644)
		CompactReport(c.tool, path)
		if b, _ := os.ReadFile(path); !reflect.DeepEqual(b, c.raw) {
			t.Errorf("%s: the report was changed", name)
		}
	}
}

// compactKeepsParse fails t when tool's compaction of raw, where it has
// one, parses to anything else than raw does.
func compactKeepsParse(t *testing.T, tool Tool, raw []byte) {
	s := ScannerOf(tool)
	if s.compact == nil || len(raw) > MaxReportBytes {
		return
	}
	compact, ok := s.compact(raw)
	if !ok {
		return
	}
	want, werr := Parse(tool, raw, fixtureRoot)
	got, gerr := Parse(tool, compact, fixtureRoot)
	if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) || !reflect.DeepEqual(got, want) {
		t.Fatalf("compaction changed the parse:\nraw     %q\ncompact %q\nwant %+v, %v\ngot  %+v, %v", raw, compact, want, werr, got, gerr)
	}
}
