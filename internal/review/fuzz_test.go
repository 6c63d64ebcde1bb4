package review

import (
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/sast"
)

// FuzzVerify: whatever the model reports, a kept finding is on a changed
// line of a changed file, its quote is the file's text there, its
// severity and category are in the closed sets, and its fingerprint does
// not depend on its lines.
func FuzzVerify(f *testing.F) {
	f.Add("app.py", 4, 4, "high", "security", "t", "return os.system(cmd)")
	f.Add("app.py", 3, 4, "low", "bug", "t", "def run(cmd): return")
	f.Add("app.py", 7, 7, "info", "bug", "t", "return 1")
	f.Add("../app.py", 1, 1, "critical", "security", "t", "import os")
	f.Fuzz(func(t *testing.T, path string, start, end int, sev, cat, title, quote string) {
		changed := sast.ChangedLines{"app.py": {{Start: 3, End: 4}}}
		c := Candidate{Path: path, StartLine: start, EndLine: end, Severity: sev, Category: cat, Title: title, Quote: quote}
		got, err := Verify(c, changed, readHead)
		if err != nil {
			return
		}
		if got.Path != "app.py" || !changed.Contains(got.Path, got.StartLine, got.EndLine, 0) {
			t.Fatalf("kept off the change: %+v", got)
		}
		lines := strings.SplitAfter(headFiles["app.py"], "\n")
		at := NormaliseSpace(strings.Join(lines[got.StartLine-1:got.EndLine], ""))
		if q := NormaliseSpace(quote); q == "" || !strings.Contains(at, q) {
			t.Fatalf("quote %q not at lines %d-%d", quote, got.StartLine, got.EndLine)
		}
		if err := got.check(); err != nil {
			t.Fatalf("kept finding fails the store's check: %v", err)
		}
		c.StartLine, c.EndLine = 3, 4
		if again, err := Verify(c, changed, readHead); err == nil && again.Fingerprint != got.Fingerprint {
			t.Fatalf("fingerprint depends on lines")
		}
	})
}
