package apidesc

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// compile closes doc's $defs and compiles $defs/name.
func compile(t *testing.T, defs map[string]any, name string) *jsonschema.Schema {
	t.Helper()
	doc := map[string]any{"$defs": defs}
	closeObjects(doc)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("https://t.invalid/s.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("https://t.invalid/s.json#/$defs/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func valid(t *testing.T, s *jsonschema.Schema, doc string) bool {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v) == nil
}

func parse(t *testing.T, doc string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestFromOpenAPI30Nullable(t *testing.T) {
	defs := map[string]any{
		"user": fromOpenAPI30(parse(t, `{"type":"object","properties":{"login":{"type":"string"}},"required":["login"]}`)),
		"x": fromOpenAPI30(parse(t, `{"type":"object","properties":{
			"name":{"type":"string","nullable":true},
			"kind":{"type":"string","enum":["a","b"],"nullable":true},
			"owner":{"allOf":[{"$ref":"#/components/schemas/user"}],"nullable":true},
			"nullable":{"type":"integer"}
		},"required":["name","owner"]}`)),
	}
	s := compile(t, defs, "x")
	for doc, want := range map[string]bool{
		`{"name":null,"owner":null}`:                          true,
		`{"name":"n","owner":{"login":"l"},"kind":null}`:      true,
		`{"name":"n","owner":{"login":"l"},"kind":"c"}`:       false,
		`{"name":"n","owner":{"login":"l"},"nullable":3}`:     true, // a property called nullable stays one
		`{"name":"n","owner":{"login":"l"},"nullable":"x"}`:   false,
		`{"name":"n","owner":{"login":"l","extra":1}}`:        false, // closed through the ref
		`{"name":"n","owner":{"login":"l"},"undefined":true}`: false,
		`{"owner":null}`: false,
	} {
		if got := valid(t, s, doc); got != want {
			t.Errorf("%s: valid %v, want %v", doc, got, want)
		}
	}
}

// TestCloseObjectsCompositions: allOf members see each other's properties;
// oneOf alternatives stay closed each; a ref used both alone and in an
// allOf is closed alone and open inside.
func TestCloseObjectsCompositions(t *testing.T) {
	defs := map[string]any{
		"base": parse(t, `{"type":"object","properties":{"a":{"type":"integer"}}}`),
		"both": parse(t, `{"allOf":[{"$ref":"#/$defs/base"},{"type":"object","properties":{"b":{"type":"integer"}}}]}`),
		"alt":  parse(t, `{"oneOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},{"type":"object","properties":{"b":{"type":"integer"}},"required":["b"]}]}`),
		"free": parse(t, `{"type":"object","additionalProperties":{"type":"string"}}`),
	}
	cases := []struct {
		def, doc string
		want     bool
	}{
		{"base", `{"a":1}`, true},
		{"base", `{"a":1,"b":2}`, false},
		{"both", `{"a":1,"b":2}`, true},
		{"both", `{"a":1,"b":2,"c":3}`, false},
		{"alt", `{"a":1}`, true},
		{"alt", `{"a":1,"b":2}`, false},
		{"free", `{"any":"thing"}`, true},
	}
	for _, c := range cases {
		if got := valid(t, compile(t, defs, c.def), c.doc); got != c.want {
			t.Errorf("%s %s: valid %v, want %v", c.def, c.doc, got, c.want)
		}
	}
}

func TestValidateURITemplate(t *testing.T) {
	for s, ok := range map[string]bool{
		"https://api.github.com/repos/o/r/git/refs{/sha}":            true,
		"https://api.github.com/repos/o/r/notifications{?since,all}": true,
		"https://api.github.com/repos/o/r/compare/{base}...{head}":   true,
		"https://api.github.com/repos/o/r/x{/a":                      false,
		"https://api.github.com/repos/o/r/x{{a}}":                    false,
	} {
		if err := validateURITemplate(s); (err == nil) != ok {
			t.Errorf("%s: %v", s, err)
		}
	}
}
