package policy

import (
	"bytes"
	"reflect"
	"testing"
)

// FuzzParse: Parse never panics; whatever it accepts validates, marshals,
// and parses back to the same policy with the same canonical bytes; and
// Resolve never enables a feature of a document Parse refuses.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"version":1,"version":1}`))
	f.Add([]byte(fixDoc(`"mode":"auto","reviewFixes":"commit","deniedPaths":["**/*.snap"]`)))
	f.Add([]byte(fixDoc(`"egress":"registries","setupCommand":"npm ci","registries":["registry.npmjs.org"]`)))
	f.Add([]byte(sastDoc(`"scanners":["gosec","ruff"],"contextLines":0,"maxFindings":25000`)))
	f.Add([]byte(`{"features":{"x":[[[[[[[[[[]]]]]]]]]]}}`))
	f.Add([]byte(`{"features":{"fix":{"maxRunsPerDay":1e2}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		e := resolve(data, RepoFacts{}, signOffs{fix: true, reviewFix: true})
		if err != nil {
			if e.FixEnabled() || e.SASTMode() != ModeOff || e.AcceptanceMode() != ModeOff || e.ReviewFixDelivery() != ReviewFixesOff {
				t.Fatalf("refused document enables a feature: %+v", e)
			}
			return
		}
		if e.Invalid != nil || e.FixMode() == FixAuto {
			t.Fatalf("accepted document resolved to %+v", e)
		}
		if errs := p.Validate(); len(errs) != 0 {
			t.Fatalf("Parse accepted an invalid policy: %v", errs)
		}
		out, err := Marshal(p)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse(Marshal(p)): %v\n%s", err, out)
		}
		if !reflect.DeepEqual(back, p) {
			t.Fatalf("round trip changed the policy:\n%+v\n%+v", p, back)
		}
		if again, _ := Marshal(back); !bytes.Equal(again, out) {
			t.Fatalf("canonical form not stable:\n%s\n%s", out, again)
		}
		if len(Diff(p, back)) != 0 {
			t.Fatal("Diff of equal policies is not empty")
		}
	})
}
