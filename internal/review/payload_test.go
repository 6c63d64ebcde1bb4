package review

import (
	"encoding/json"
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

// FuzzDecodePayload: whatever a stored payload holds, decoding never
// panics, accepts only the current version with a pull request, and what
// it accepts renders (the publisher's path) without panicking and encodes
// back to a payload that decodes the same.
func FuzzDecodePayload(f *testing.F) {
	f.Add([]byte(`{"version":1,"runId":"r","pr":3,"headSha":"` + strings.Repeat("a", 40) + `","inline":[{"fingerprint":"x","source":"llm","path":"a.go","startLine":2,"endLine":2,"severity":"high","title":"t"}],"outside":[],"capped":0,"repeated":0,"resolved":[],"skipped":[],"usage":{}}`))
	f.Add([]byte(`{"version":1,"pr":1,"sast":{"tools":[{"tool":"gosec","status":"partial","findings":1}],"notScanned":[{"path":"a","reason":"r"}]}}`))
	f.Add([]byte(`{"version":2,"pr":1}`))
	f.Add([]byte(`{"version":1,"pr":1,"unknown":true}`))
	f.Add([]byte(`{"version":1,"pr":1}{}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := DecodePayload(raw)
		if err != nil {
			return
		}
		if p.Version != PayloadVersion || p.PR <= 0 {
			t.Fatalf("accepted %+v", p)
		}
		_ = p.Render(render.Marker("review.1.2.abcdef"))
		_ = p.Shows()
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		q, err := DecodePayload(b)
		if err != nil {
			t.Fatalf("re-encoded payload refused: %v", err)
		}
		b2, err := json.Marshal(q)
		if err != nil || string(b) != string(b2) {
			t.Fatalf("round trip changed the payload:\n%s\n%s", b, b2)
		}
	})
}
