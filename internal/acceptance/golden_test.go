package acceptance

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the testdata/issues/*.golden.json files")

// TestExtractGolden extracts every testdata/issues/*.md and compares the
// result with its .golden.json (go test -run Golden -update rewrites
// them; read the diff before committing it).
func TestExtractGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "issues", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("fixtures: %v", err)
	}
	for _, p := range files {
		body, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.MarshalIndent(Extract(string(body), Limits{}), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, '\n')
		golden := strings.TrimSuffix(p, ".md") + ".golden.json"
		if *update {
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: extraction differs from %s:\n%s", p, golden, got)
		}
	}
}
