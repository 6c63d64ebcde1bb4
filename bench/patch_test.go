package bench

import (
	"github.com/quavon/quavon/internal/gitrepo"

	"bytes"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/patch"
	"github.com/quavon/quavon/internal/secret"
	"github.com/quavon/quavon/internal/secret/leaks"
)

// patchBench is a 5,000-file base and a 10-file, 300-changed-line patch
// against it: 8 modified files (15 lines replaced in each of 100: 30
// changed lines) and 2 created files of 30 lines.
type patchBench struct {
	lsTree   []byte            // `git ls-tree -r -z -l --full-tree` output of the base
	contents map[string][]byte // blobs of the modified files, served by the BlobReader
	changes  []patch.FixFileChange
}

func goFile(pkg string, n int, variant string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "package %s\n\nimport \"fmt\"\n\n", pkg)
	for i := 4; i < n; i++ {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, "// handler%d reads the request token and key from the config%s.\n", i, variant)
		case 1:
			fmt.Fprintf(&b, "func handler%d(cfg map[string]string) string { return fmt.Sprint(cfg[\"api_key_%d\"]) }\n", i, i)
		case 2:
			fmt.Fprintf(&b, "var secretName%d = \"QUAVON_SECRET_%d%s\"\n", i, i, variant)
		default:
			b.WriteString("\n")
		}
	}
	return b.String()
}

func newPatchBench(b *testing.B) *patchBench {
	pb := &patchBench{contents: map[string][]byte{}}
	var ls bytes.Buffer
	modified := map[string]bool{}
	for i := range 8 {
		modified[fmt.Sprintf("internal/mod%02d/file%04d.go", i*7, i*7*10)] = true
	}
	for i := range 5000 {
		p := fmt.Sprintf("internal/mod%02d/file%04d.go", i/10, i)
		content := goFile(fmt.Sprintf("mod%02d", i/10), 100, "")
		if modified[p] {
			pb.contents[p] = []byte(content)
			lines := strings.SplitAfter(content, "\n")
			for j := 40; j < 55; j++ {
				lines[j] = fmt.Sprintf("\tlog.Printf(\"changed line %d of %s\")\n", j, p)
			}
			pb.changes = append(pb.changes, patch.FixFileChange{Path: p, Operation: patch.OpModify,
				BaseBlobSHA: patch.BlobSHA([]byte(content)), NewContent: strings.Join(lines, ""), Mode: patch.ModeFile})
		}
		fmt.Fprintf(&ls, "100644 blob %s %7d\t%s\x00", patch.BlobSHA([]byte(content)), len(content), p)
	}
	for i := range 2 {
		pb.changes = append(pb.changes, patch.FixFileChange{Path: fmt.Sprintf("internal/mod%02d/new%d.go", 10+i, i),
			Operation: patch.OpCreate, NewContent: goFile("mod", 30, "_new"), Mode: patch.ModeFile})
	}
	pb.lsTree = ls.Bytes()
	return pb
}

func (pb *patchBench) read(path string, _ patch.Entry) ([]byte, error) {
	if b, ok := pb.contents[path]; ok {
		return b, nil
	}
	return nil, fs.ErrNotExist
}

func (pb *patchBench) parse(b *testing.B) *patch.Listing {
	entries, err := gitrepo.ParseLsTree(pb.lsTree)
	l := patch.NewListing(entries, pb.read)
	if err != nil || l.Len() != 5000 {
		b.Fatalf("ParseLsTree: %d entries, %v", l.Len(), err)
	}
	return l
}

// nopScanner isolates the cost of everything but the secret scan.
type nopScanner struct{}

func (nopScanner) ScanFile(string, string) []secret.Match { return nil }

// BenchmarkValidatePatch: ValidatePatch (every rule, including gitleaks'
// and Quavon's secret scan of the 300 changed lines' added half and the
// collision pass over all 5,000 base paths) on a 10-file, 300-changed-line
// patch, against the baseline of reading the base listing: parsing the
// 5,000-entry `git ls-tree -r -z -l` output (≈ 480 KB, as the publisher
// gets it) into the map ValidatePatch takes. Both run interleaved in one
// loop. Reported: validate/read (goal ≤ 1.5) and (read+validate)/read,
// the publisher's whole check against reading alone, and
// validate-without-secret-scan/read, the same call with a scanner that finds
// nothing (the share of every other rule). The blob reads of the 8
// modified files are in-memory here, so network time is excluded from both
// sides. The secret scan dominates: gitleaks' generic-api-key expression has
// no literal prefix and costs about 0.25 µs per byte of added text that
// holds one of its keywords (key, token, secret, api, …), which this patch's
// Go code does on every other line.
func BenchmarkValidatePatch(b *testing.B) {
	pb := newPatchBench(b)
	sc, err := leaks.NewScanner()
	if err != nil {
		b.Fatal(err)
	}
	lines := 0
	for _, c := range pb.changes {
		lines += strings.Count(c.NewContent, "\n")
	}
	listing := pb.parse(b)
	if err := patch.ValidatePatch(pb.changes, listing, patch.PathPolicy{}, patch.Limits{}, sc); err != nil {
		b.Fatalf("the benchmark patch must be valid: %v", err)
	}
	tooMany := patch.Limits{MaxChangedLines: 299}
	if err := patch.ValidatePatch(pb.changes, listing, patch.PathPolicy{}, tooMany, sc); err == nil {
		b.Fatal("the benchmark patch must have exactly 300 changed lines")
	}
	var read, validate, noScan time.Duration
	for b.Loop() {
		t0 := time.Now()
		l := pb.parse(b)
		t1 := time.Now()
		if err := patch.ValidatePatch(pb.changes, l, patch.PathPolicy{}, patch.Limits{}, sc); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if err := patch.ValidatePatch(pb.changes, l, patch.PathPolicy{}, patch.Limits{}, nopScanner{}); err != nil {
			b.Fatal(err)
		}
		read += t1.Sub(t0)
		validate += t2.Sub(t1)
		noScan += time.Since(t2)
	}
	n := float64(b.N)
	b.ReportMetric(float64(read.Nanoseconds())/n, "read-ns/op")
	b.ReportMetric(float64(validate.Nanoseconds())/n, "validate-ns/op")
	b.ReportMetric(float64(validate)/float64(read), "validate/read")
	b.ReportMetric(float64(read+validate)/float64(read), "(read+validate)/read")
	b.ReportMetric(float64(noScan)/float64(read), "validate-without-secret-scan/read")
}
