package review

import (
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/publish/render"
	"github.com/quavon/quavon/internal/sast"
)

// TestPayloadCarriesFilesNotScanned: files a scanner did not fully scan
// travel from the stored payload to the rendered review and check run,
// which then say the scan is incomplete.
func TestPayloadCarriesFilesNotScanned(t *testing.T) {
	p := Payload{HeadSHA: strings.Repeat("a", 40), SAST: &PayloadSAST{
		Tools:             []PayloadToolRun{{Tool: "gosec", Status: sast.StatusOK}},
		NotScanned:        []PayloadNotScanned{{Path: "cmd/x.go", Tool: "gosec", Reason: "build constraints exclude all Go files"}},
		NotScannedDropped: 2,
	}}
	rv := p.Render(render.Marker("review.1.2.abcdef"))
	if rv.SAST == nil || len(rv.SAST.NotScanned) != 1 || rv.SAST.NotScanned[0].Path != "cmd/x.go" || rv.SAST.NotScannedDropped != 2 {
		t.Fatalf("rendered SAST part %+v", rv.SAST)
	}
	r, err := render.New(render.Repo{Host: "github.com", Owner: "acme", Name: "app"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.CheckRun(rv)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.Title, "scanners incomplete") || !strings.Contains(out.Summary, "cmd/x.go") {
		t.Errorf("check run %q\n%s", out.Title, out.Summary)
	}
}
