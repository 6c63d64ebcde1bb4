package runner

import (
	"errors"
	"strings"
	"testing"
)

func TestLockfile(t *testing.T) {
	t.Parallel()
	id := "sha256:" + strings.Repeat("a", 64)
	good := `{"version":1,"classes":{"node":{"name":"quavon/sandbox-node","ref":"` + id + `"},
	  "go":{"name":"x","ref":"registry.example.com:5000/quavon/go@sha256:` + strings.Repeat("b", 64) + `"}},
	  "byo":{"smoke":{"name":"quavon/sandbox-smoke","ref":"` + id + `"}}}`
	lf, err := ParseLockfile([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	for class, want := range map[string]string{"node": id, "byo:smoke": id, "go": "registry.example.com:5000/quavon/go@sha256:" + strings.Repeat("b", 64)} {
		if got, err := lf.Resolve(class); err != nil || got != want {
			t.Errorf("Resolve(%s) = %q, %v", class, got, err)
		}
	}
	for _, class := range []string{"python", "byo:other", "smoke", "byo:", "node:latest"} {
		if _, err := lf.Resolve(class); !errors.Is(err, ErrUnknownImageClass) {
			t.Errorf("Resolve(%s) = %v, want unknown class", class, err)
		}
	}
	bad := []string{
		`{"version":2,"classes":{}}`,
		`{"version":1,"classes":{"node":{"name":"n","ref":"quavon/node:latest"}}}`,
		`{"version":1,"classes":{"node":{"name":"n","ref":"quavon/node"}}}`,
		`{"version":1,"classes":{"node":{"name":"n","ref":"sha256:abc"}}}`,
		`{"version":1,"classes":{"smoke":{"name":"n","ref":"` + id + `"}}}`,
		`{"version":1,"classes":{},"byo":{"Bad Name":{"name":"n","ref":"` + id + `"}}}`,
		`{"version":1,"classes":{},"extra":true}`,
		`{"version":1,"classes":{"node":{"name":"n","ref":"` + id + `","tag":"latest"}}}`,
	}
	for _, b := range bad {
		if _, err := ParseLockfile([]byte(b)); err == nil {
			t.Errorf("accepted %s", b)
		}
	}
}
