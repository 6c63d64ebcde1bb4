package acceptance

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkExtract measures Extract against goldmark parsing the same
// body alone (the baseline, in the same run) and reports the ratio: what
// the extraction itself adds to parsing. Bodies: the issue-form fixture,
// a 64 KiB issue of 4 000 checklist items and the nesting guard's worst
// accepted shape (256 KiB of lines 32 block quotes deep).
func BenchmarkExtract(b *testing.B) {
	form, err := os.ReadFile(filepath.Join("testdata", "issues", "issue-form.md"))
	if err != nil {
		b.Fatal(err)
	}
	var big strings.Builder
	for i := 0; big.Len() < 64<<10; i++ {
		fmt.Fprintf(&big, "- [ ] criterion number %d\n", i)
	}
	deep := strings.Repeat(strings.Repeat("> ", maxContainerMarkers)+"x\n", DefaultMaxBodyBytes/(2*maxContainerMarkers+2))
	for _, c := range []struct{ name, body string }{{"form", string(form)}, {"checklist-64KiB", big.String()}, {"quotes-32-deep", deep}} {
		b.Run(c.name, func(b *testing.B) {
			src := []byte(c.body)
			var parse, extract time.Duration
			for b.Loop() {
				t0 := time.Now()
				newMarkdown().Parser().Parse(textReader(src))
				t1 := time.Now()
				Extract(c.body, Limits{})
				extract += time.Since(t1)
				parse += t1.Sub(t0)
			}
			b.ReportMetric(float64(extract)/float64(parse), "x-parse")
			b.ReportMetric(float64(extract.Nanoseconds())/float64(b.N)/1e6, "ms/extract")
		})
	}
}
