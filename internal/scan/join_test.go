package scan_test

import (
	"slices"
	"testing"

	"github.com/quavon/quavon/internal/review"
	"github.com/quavon/quavon/internal/sast"
	"github.com/quavon/quavon/internal/scan"
)

// TestDemoCorpusJoined: the demo corpus's findings (every tool, changed
// lines only), joined as a review joins them, become one finding per file,
// overlapping lines and weakness, each listing every tool that reported
// it; nothing is lost.
func TestDemoCorpusJoined(t *testing.T) {
	dir := newRepo(t, map[string]string{"README.md": "base\n"}, copyDemo(t))
	out := runScan(t, dir, scan.Options{Normalise: sast.Options{ContextLines: 0, MaxFindings: 25000}})
	requireStatus(t, out, allOK())
	det := out.Report.Findings
	joined := review.Join(nil, det)
	t.Logf("%d scanner findings joined into %d", len(det), len(joined))
	multi := 0
	members := 0
	for i, a := range joined {
		if a.Source != review.SourceSAST || len(a.Tools) == 0 || len(a.Tools) != len(slices.Compact(slices.Sorted(slices.Values(a.Tools)))) {
			t.Errorf("joined finding %+v", a)
		}
		if len(a.Tools) > 1 {
			multi++
		}
		for _, b := range joined[i+1:] {
			if a.Weakness != "" && a.Weakness == b.Weakness && a.Path == b.Path && a.StartLine <= b.EndLine && b.StartLine <= a.EndLine {
				t.Errorf("two findings on %s:%d-%d and %d-%d with weakness %s", a.Path, a.StartLine, a.EndLine, b.StartLine, b.EndLine, a.Weakness)
			}
		}
	}
	for _, f := range det {
		found := false
		for _, g := range joined {
			if g.Path == f.Path && g.StartLine <= f.StartLine && f.EndLine <= g.EndLine && slices.Contains(g.Tools, string(f.Tool)) &&
				slices.Contains(g.RuleIDs, f.RuleID) {
				found = true
				members++
				break
			}
		}
		if !found {
			t.Errorf("%s %s at %s:%d lost in the join", f.Tool, f.RuleID, f.Path, f.StartLine)
		}
	}
	if multi == 0 {
		t.Errorf("no finding of the corpus lists more than one tool: the grouping proves nothing")
	}
	if len(joined) >= len(det) {
		t.Errorf("%d findings joined into %d", len(det), len(joined))
	}
}
