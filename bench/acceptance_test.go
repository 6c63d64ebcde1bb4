package bench

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"

	"github.com/quavon/quavon/internal/acceptance"
)

// BenchmarkExtract measures acceptance.Extract against goldmark parsing
// the same body alone with the extensions Extract's parser enables
// (internal/acceptance/markdown.go), the baseline, in the same run, and
// reports the ratio: what the extraction itself adds to parsing. Bodies:
// the issue-form fixture, a 64 KiB issue of 4 000 checklist items and the
// nesting guard's worst accepted shape (256 KiB of lines 32 block quotes
// deep, the most Extract accepts).
func BenchmarkExtract(b *testing.B) {
	form, err := os.ReadFile("../internal/acceptance/testdata/issues/issue-form.md")
	if err != nil {
		b.Fatal(err)
	}
	var big strings.Builder
	for i := 0; big.Len() < 64<<10; i++ {
		fmt.Fprintf(&big, "- [ ] criterion number %d\n", i)
	}
	const depth = 32
	deep := strings.Repeat(strings.Repeat("> ", depth)+"x\n", acceptance.DefaultMaxBodyBytes/(2*depth+2))
	md := goldmark.New(goldmark.WithExtensions(extension.TaskList, extension.Table, extension.Strikethrough))
	for _, c := range []struct{ name, body string }{{"form", string(form)}, {"checklist-64KiB", big.String()}, {"quotes-32-deep", deep}} {
		b.Run(c.name, func(b *testing.B) {
			src := []byte(c.body)
			var parse, extract time.Duration
			for b.Loop() {
				t0 := time.Now()
				md.Parser().Parse(text.NewReader(src))
				t1 := time.Now()
				acceptance.Extract(c.body, acceptance.Limits{})
				extract += time.Since(t1)
				parse += t1.Sub(t0)
			}
			b.ReportMetric(float64(extract)/float64(parse), "x-parse")
			b.ReportMetric(float64(extract.Nanoseconds())/float64(b.N)/1e6, "ms/extract")
		})
	}
}
