// Package sariftest checks SARIF documents against the SARIF 2.1.0 JSON
// schema in tests. The schema is the copy that ships in gosec's module
// (gosec v2.30.0, located with `go mod download -json`; not
// copied into this repository).
package sariftest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var schema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = "/usr/local/go/bin/go"
	}
	out, err := exec.Command(goBin, "mod", "download", "-json", "github.com/securego/gosec/v2@v2.30.0").Output()
	if err != nil {
		return nil, fmt.Errorf("go mod download gosec: %w", err)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return nil, fmt.Errorf("go mod download gosec: %s %v", mod.Error, err)
	}
	f, err := os.Open(filepath.Join(mod.Dir, "report", "sarif", "testdata", "sarif-schema-2.1.0.json"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return nil, err
	}
	const url = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
})

// Validate fails the test unless data is a SARIF 2.1.0 document that the
// schema accepts.
func Validate(t testing.TB, data []byte) {
	t.Helper()
	sch, err := schema()
	if err != nil {
		t.Fatalf("SARIF schema: %v", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("SARIF is not JSON: %v", err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Fatalf("SARIF fails the 2.1.0 schema: %v", err)
	}
}
