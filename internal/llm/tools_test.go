package llm

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

type readFileArgs struct {
	Path      string `json:"path" jsonschema:"description=Path from the repository root,maxLength=512"`
	StartLine int    `json:"startLine,omitempty" jsonschema:"minimum=1"`
	EndLine   int    `json:"endLine,omitempty" jsonschema:"minimum=1"`
}

type editArgs struct {
	Path    string   `json:"path"`
	NewText string   `json:"newText" jsonschema:"maxLength=262144"`
	Tags    []string `json:"tags,omitempty"`
	Mode    string   `json:"mode,omitempty" jsonschema:"enum=replace,enum=append"`
}

func TestNewToolSchema(t *testing.T) {
	t.Parallel()
	tool, err := NewTool[readFileArgs]("read_file", "Reads a file", ToolLimits{})
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(tool.Schema, &s); err != nil {
		t.Fatal(err)
	}
	if s["type"] != "object" || s["additionalProperties"] != false {
		t.Fatalf("schema %s: want an object without additional properties", tool.Schema)
	}
	if _, ok := s["$schema"]; ok {
		t.Fatalf("schema keeps $schema: %s", tool.Schema)
	}
	props := s["properties"].(map[string]any)
	if props["path"].(map[string]any)["maxLength"] != float64(512) {
		t.Fatalf("path maxLength from the tag lost: %s", tool.Schema)
	}
	if req := s["required"].([]any); len(req) != 1 || req[0] != "path" {
		t.Fatalf("required = %v, want [path]", req)
	}
	edit := MustTool[editArgs]("edit_file", "", ToolLimits{ArgumentBytes: 512 << 10})
	var es map[string]any
	_ = json.Unmarshal(edit.Schema, &es)
	ep := es["properties"].(map[string]any)
	if ep["path"].(map[string]any)["maxLength"] != float64(DefaultStringLength) {
		t.Fatalf("untagged string gets no default maxLength: %s", edit.Schema)
	}
	if ep["tags"].(map[string]any)["maxItems"] != float64(DefaultArrayItems) {
		t.Fatalf("array gets no default maxItems: %s", edit.Schema)
	}
	if _, err := NewTool[string]("x", "", ToolLimits{}); err == nil {
		t.Fatal("a non-struct argument type was accepted")
	}
	if _, err := NewTool[readFileArgs]("bad name", "", ToolLimits{}); err == nil {
		t.Fatal("an invalid tool name was accepted")
	}
}

func TestDecodeArgsRefusesHostileInput(t *testing.T) {
	t.Parallel()
	tool := MustTool[editArgs]("edit_file", "", ToolLimits{ArgumentBytes: 300 << 10})
	good := `{"path":"a.go","newText":"x"}`
	if a, err := DecodeArgs[editArgs](tool, json.RawMessage(good)); err != nil || a.Path != "a.go" {
		t.Fatalf("good arguments: %+v %v", a, err)
	}
	cases := []struct{ name, raw, want string }{
		{"unknown field", `{"path":"a","newText":"x","cmd":"rm -rf /"}`, "additional"},
		{"wrong type", `{"path":1,"newText":"x"}`, "string"},
		{"missing required", `{"path":"a"}`, "newText"},
		{"oversize default string", `{"path":"` + strings.Repeat("a", DefaultStringLength+1) + `","newText":"x"}`, "length"},
		{"oversize tagged string", `{"path":"a","newText":"` + strings.Repeat("b", 262145) + `"}`, "length"},
		{"too many items", `{"path":"a","newText":"x","tags":[` + strings.Repeat(`"t",`, DefaultArrayItems) + `"t"]}`, "items"},
		{"enum", `{"path":"a","newText":"x","mode":"exec"}`, "replace"},
		{"duplicate key", `{"path":"a","path":"../../etc/passwd","newText":"x"}`, "duplicate"},
		{"nested duplicate", `{"path":"a","newText":"x","tags":[{"k":1,"k":2}]}`, "duplicate"},
		{"not an object", `["a"]`, "object"},
		{"string", `"{}"`, "object"},
		{"trailing data", `{"path":"a","newText":"x"} {"path":"b"}`, "trailing"},
		{"not JSON", `{"path": "a", `, "JSON"},
		{"empty", ``, "empty"},
		{"invalid UTF-8", "{\"path\":\"a\xff\",\"newText\":\"x\"}", "UTF-8"},
		{"too deep", strings.Repeat(`{"a":`, 40) + `1` + strings.Repeat(`}`, 40), "nested"},
		{"too large", `{"path":"a","newText":"` + strings.Repeat("c", 310<<10) + `"}`, "bytes"},
	}
	for _, c := range cases {
		_, err := DecodeArgs[editArgs](tool, json.RawMessage(c.raw))
		var ae *ArgumentError
		if !errors.As(err, &ae) {
			t.Errorf("%s: err = %v, want an ArgumentError", c.name, err)
			continue
		}
		if !strings.Contains(strings.ToLower(ae.Reason), strings.ToLower(c.want)) {
			t.Errorf("%s: reason %q does not mention %q", c.name, ae.Reason, c.want)
		}
		if len(ae.Reason) > 800 {
			t.Errorf("%s: reason is %d bytes: it must not echo the arguments", c.name, len(ae.Reason))
		}
	}
	if _, err := DecodeArgs[editArgs](Tool{Name: "hand", Schema: json.RawMessage(`{}`)}, json.RawMessage(good)); !errors.Is(err, ErrNotATool) {
		t.Fatalf("hand-made tool: %v", err)
	}
}

func FuzzDecodeArgs(f *testing.F) {
	tool := MustTool[editArgs]("edit_file", "", ToolLimits{})
	for _, s := range []string{`{"path":"a","newText":"x"}`, `{"path":"a","path":"b"}`, `{`, `[]`, `{"tags":[[[[]]]]}`, `{"mode":"append","path":"","newText":""}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := DecodeArgs[editArgs](tool, raw)
		if err != nil {
			var ae *ArgumentError
			if !errors.As(err, &ae) {
				t.Fatalf("error is not an ArgumentError: %v", err)
			}
			return
		}
		// Whatever is accepted holds to the schema.
		if len(a.Path) > DefaultStringLength || len(a.Tags) > DefaultArrayItems || (a.Mode != "" && a.Mode != "replace" && a.Mode != "append") {
			t.Fatalf("accepted arguments break the schema: %+v", a)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("accepted arguments are not an object: %v", err)
		}
		for k := range m {
			if k != "path" && k != "newText" && k != "tags" && k != "mode" {
				t.Fatalf("accepted an unknown field %q", k)
			}
		}
	})
}
