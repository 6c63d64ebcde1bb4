package audit

import (
	"slices"
	"strings"
	"testing"
)

func TestReadAnchor(t *testing.T) {
	t.Parallel()
	const tn = "6f1b5c1e-0000-4000-8000-000000000001"
	h1, h2 := strings.Repeat("a", 64), strings.Repeat("b", 64)
	good := `{"tenant_id":"` + tn + `","seq":1}` + "\n" + // before the chain: no hash, skipped
		`{"tenant_id":"` + tn + `","seq":2,"hash":"` + h1 + `","actor":"ignored"}` + "\n\n" +
		`{"tenant_id":"` + tn + `","seq":3,"hash":"` + h2 + `"}` + "\n" +
		`{"tenant_id":"` + tn + `","seq":3,"hash":"` + h2 + `"}` // the same line twice is fine
	a, err := ReadAnchor(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if got := a.tenant(tn); len(got) != 2 || got[2] != h1 || got[3] != h2 || !slices.Equal(a.Tenants(), []string{tn}) {
		t.Fatalf("anchor %v", a.hashes)
	}
	for _, bad := range []string{
		`{"tenant_id":"x","seq":1,"hash":"` + h1 + `"}`,
		`{"tenant_id":"` + tn + `","seq":0,"hash":"` + h1 + `"}`,
		`{"tenant_id":"` + tn + `","seq":1,"hash":"` + strings.ToUpper(h1) + `"}`,
		`{"tenant_id":"` + tn + `","seq":1,"hash":"abc"}`,
		`{"tenant_id":"` + tn + `","seq":1,"hash":"` + h1 + `"}` + "\n" + `{"tenant_id":"` + tn + `","seq":1,"hash":"` + h2 + `"}`,
		`not json`,
		`{"tenant_id":"` + tn + `","seq":"1"}`,
		strings.Repeat("x", maxAnchorLine+1),
	} {
		if _, err := ReadAnchor(strings.NewReader(bad)); err == nil {
			t.Errorf("accepted %.80q", bad)
		}
	}
	var nilAnchor *Anchor
	if nilAnchor.tenant(tn) != nil || nilAnchor.Tenants() != nil {
		t.Fatal("a nil anchor anchors something")
	}
}
