package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/invopop/jsonschema"
	validator "github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

var english = message.NewPrinter(language.English)

// Tool is a tool the model may call. Build it with NewTool from the Go
// struct its arguments decode into, so the schema the model sees is the
// schema DecodeArgs enforces.
type Tool struct {
	Name        string
	Description string
	// Schema is the JSON Schema (an object) of the arguments.
	Schema json.RawMessage

	compiled *validator.Schema
	maxBytes int
}

// ToolLimits bound a tool's arguments. Zero fields take the defaults.
type ToolLimits struct {
	// ArgumentBytes caps the raw JSON (default 64 KiB).
	ArgumentBytes int
	// String is the maxLength given to every string without a maxLength
	// tag of its own (default 8 KiB).
	String int
	// Items is the maxItems given to every array without one (default 256).
	Items int
}

// Default tool limits.
const (
	DefaultArgumentBytes = 64 << 10
	DefaultStringLength  = 8 << 10
	DefaultArrayItems    = 256
	maxArgumentDepth     = 32
)

// NewTool builds the tool name whose arguments are a T (a struct): its
// JSON Schema comes from T's fields and json/jsonschema tags (invopop's
// reflector: a field is required unless omitempty; jsonschema:"maxLength=…",
// "enum=…", "description=…"), with additionalProperties false and the
// default caps on every string and array that sets none.
func NewTool[T any](name, description string, lim ToolLimits) (Tool, error) {
	var zero T
	if reflect.TypeOf(zero) == nil || reflect.TypeOf(zero).Kind() != reflect.Struct {
		return Tool{}, fmt.Errorf("llm.NewTool %s: arguments must be a struct, not %T", name, zero)
	}
	if !toolName.MatchString(name) {
		return Tool{}, fmt.Errorf("llm.NewTool %q: want 1-64 of [a-zA-Z0-9_-]", name)
	}
	if lim.ArgumentBytes <= 0 {
		lim.ArgumentBytes = DefaultArgumentBytes
	}
	if lim.String <= 0 {
		lim.String = DefaultStringLength
	}
	if lim.Items <= 0 {
		lim.Items = DefaultArrayItems
	}
	r := jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true, AllowAdditionalProperties: false, Anonymous: true}
	raw, err := json.Marshal(r.Reflect(zero))
	if err != nil {
		return Tool{}, fmt.Errorf("llm.NewTool %s: %w", name, err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return Tool{}, fmt.Errorf("llm.NewTool %s: %w", name, err)
	}
	delete(doc, "$schema")
	delete(doc, "$id")
	capSchema(doc, lim)
	if _, ok := doc["properties"]; !ok {
		doc["properties"] = map[string]any{} // APIs want properties even for no arguments
	}
	schema, err := json.Marshal(doc)
	if err != nil {
		return Tool{}, fmt.Errorf("llm.NewTool %s: %w", name, err)
	}
	compiled, err := compileSchema(name, schema)
	if err != nil {
		return Tool{}, fmt.Errorf("llm.NewTool %s: %w", name, err)
	}
	return Tool{Name: name, Description: description, Schema: schema, compiled: compiled, maxBytes: lim.ArgumentBytes}, nil
}

// MustTool is NewTool for tool sets defined by the program itself; it
// panics on a programming error.
func MustTool[T any](name, description string, lim ToolLimits) Tool {
	t, err := NewTool[T](name, description, lim)
	if err != nil {
		panic(err)
	}
	return t
}

func compileSchema(name string, schema []byte) (*validator.Schema, error) {
	doc, err := validator.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, err
	}
	url := "urn:quavon:tool:" + name
	c := validator.NewCompiler()
	c.DefaultDraft(validator.Draft2020)
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// capSchema walks a schema: objects get additionalProperties false,
// strings and arrays without bounds get the defaults.
func capSchema(v any, lim ToolLimits) {
	switch s := v.(type) {
	case map[string]any:
		switch s["type"] {
		case "string":
			if _, ok := s["maxLength"]; !ok {
				s["maxLength"] = lim.String
			}
		case "array":
			if _, ok := s["maxItems"]; !ok {
				s["maxItems"] = lim.Items
			}
		case "object":
			if _, ok := s["additionalProperties"]; !ok {
				s["additionalProperties"] = false
			}
		}
		for _, child := range s {
			capSchema(child, lim)
		}
	case []any:
		for _, child := range s {
			capSchema(child, lim)
		}
	}
}

// ArgumentError says why a tool call's arguments were refused. Reason is
// short, never echoes the arguments, and is meant to go back to the model
// as the tool's error result.
type ArgumentError struct {
	Tool   string
	Reason string
}

func (e *ArgumentError) Error() string {
	return fmt.Sprintf("llm: arguments of %s refused: %s", e.Tool, e.Reason)
}

// ErrNotATool is returned by DecodeArgs for a Tool not built by NewTool.
var ErrNotATool = errors.New("llm: tool was not built with NewTool")

// DecodeArgs decodes a tool call's raw arguments into T strictly: at most
// the tool's byte cap, valid UTF-8, one JSON object with no duplicate keys
// and bounded nesting, valid against the tool's schema (types, required
// fields, lengths, enums, no unknown fields), then decoded with unknown
// fields refused. T must be the type the tool was built from.
func DecodeArgs[T any](t Tool, raw json.RawMessage) (T, error) {
	var out T
	if t.compiled == nil {
		return out, ErrNotATool
	}
	refuse := func(format string, args ...any) (T, error) {
		return out, &ArgumentError{Tool: t.Name, Reason: fmt.Sprintf(format, args...)}
	}
	if len(raw) > t.maxBytes {
		return refuse("%d bytes of arguments: at most %d", len(raw), t.maxBytes)
	}
	if !utf8.Valid(raw) {
		return refuse("arguments are not valid UTF-8")
	}
	if err := checkShape(raw); err != nil {
		return refuse("%s", err)
	}
	inst, err := validator.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return refuse("arguments are not JSON")
	}
	if err := t.compiled.Validate(inst); err != nil {
		var ve *validator.ValidationError
		if errors.As(err, &ve) {
			return refuse("%s", flattenValidation(ve))
		}
		return refuse("arguments do not match the schema")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		var zero T
		return zero, &ArgumentError{Tool: t.Name, Reason: "arguments do not decode: " + capText(err.Error(), 200)}
	}
	return out, nil
}

// checkShape walks the tokens: exactly one object, no duplicate keys at
// any level, nesting at most maxArgumentDepth.
func checkShape(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	type frame struct {
		object  bool
		keys    map[string]bool
		wantKey bool
	}
	var stack []*frame
	first := true
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return errors.New("arguments are not valid JSON")
		}
		if first {
			if d, ok := tok.(json.Delim); !ok || d != '{' {
				return errors.New("arguments must be a JSON object")
			}
			first = false
		} else if len(stack) == 0 {
			return errors.New("trailing data after the arguments object")
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.wantKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].object {
					stack[len(stack)-1].wantKey = true
				}
				continue
			}
			key, _ := tok.(string)
			if top.keys[key] {
				return fmt.Errorf("duplicate key %q", capText(key, 64))
			}
			top.keys[key] = true
			top.wantKey = false
			continue
		}
		switch d, _ := tok.(json.Delim); d {
		case '{', '[':
			if len(stack) >= maxArgumentDepth {
				return fmt.Errorf("nested deeper than %d levels", maxArgumentDepth)
			}
			stack = append(stack, &frame{object: d == '{', keys: map[string]bool{}, wantKey: d == '{'})
			continue
		case ']':
			stack = stack[:len(stack)-1]
		}
		// A value (or a closed array) ends; an enclosing object wants a key next.
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].wantKey = true
		}
	}
	if first {
		return errors.New("empty arguments")
	}
	return nil
}

func flattenValidation(ve *validator.ValidationError) string {
	var parts []string
	var walk func(e *validator.ValidationError)
	walk = func(e *validator.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			parts = append(parts, fmt.Sprintf("at %s: %s", capText(loc, 80), capText(e.ErrorKind.LocalizedString(english), 120)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(parts) > 5 {
		parts = append(parts[:5], fmt.Sprintf("and %d more", len(parts)-5))
	}
	return strings.Join(parts, "; ")
}
