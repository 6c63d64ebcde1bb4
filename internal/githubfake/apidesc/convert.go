package apidesc

import "strings"

// fromOpenAPI30 translates an OpenAPI 3.0 Schema Object into JSON Schema
// 2020-12: nullable: true becomes a "null" type (or an anyOf with null
// where there is no type), and refs to components move to $defs. It
// recurses only through keywords that hold schemas, so a property called
// "nullable" stays a property.
func fromOpenAPI30(v any) any { return translate(v, true) }

// rewriteRefs moves refs to components into $defs in an OpenAPI 3.1 schema
// (already JSON Schema 2020-12).
func rewriteRefs(v any) any { return translate(v, false) }

func translate(v any, openapi30 bool) any {
	s, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(s))
	for k, x := range s {
		switch k {
		case "properties", "patternProperties", "$defs", "dependentSchemas":
			m := map[string]any{}
			for n, p := range asMap(x) {
				m[n] = translate(p, openapi30)
			}
			out[k] = m
		case "items", "additionalProperties", "unevaluatedProperties", "not", "contains", "if", "then", "else", "propertyNames":
			out[k] = translate(x, openapi30)
		case "allOf", "anyOf", "oneOf", "prefixItems":
			list, _ := x.([]any)
			l := make([]any, len(list))
			for i, m := range list {
				l[i] = translate(m, openapi30)
			}
			out[k] = l
		case "$ref":
			ref, _ := x.(string)
			out[k] = "#/$defs/" + strings.TrimPrefix(ref, "#/components/schemas/")
		case "nullable":
			if !openapi30 {
				out[k] = x
			}
		default:
			out[k] = x
		}
	}
	if openapi30 && s["nullable"] == true {
		if t, ok := out["type"].(string); ok {
			out["type"] = []any{t, "null"}
			if enum, ok := out["enum"].([]any); ok {
				out["enum"] = append(append([]any(nil), enum...), nil)
			}
			return out
		}
		return map[string]any{"anyOf": []any{map[string]any{"type": "null"}, out}}
	}
	return out
}

// closeObjects makes every object schema in doc's $defs refuse properties
// it does not define: unevaluatedProperties: false on each schema with
// properties or a composition. A composition's members are opened (a
// member must accept its siblings' properties) and the composition itself
// closed, so "allOf: [A, {extra}]" accepts A's and extra's properties and
// nothing else. A $ref in an open position points at the open variant
// "<name>~open" of the target, made on demand.
func closeObjects(doc map[string]any) {
	src := asMap(doc["$defs"])
	c := &closer{src: src, dst: make(map[string]any, len(src))}
	for name, s := range src {
		c.dst[name] = c.node(s, false)
	}
	doc["$defs"] = c.dst
}

type closer struct {
	src, dst map[string]any
}

const openSuffix = "~open"

func (c *closer) open(name string) string {
	key := name + openSuffix
	if _, ok := c.dst[key]; !ok && c.src[name] != nil {
		c.dst[key] = true // placeholder while recursing
		c.dst[key] = c.node(c.src[name], true)
	}
	return key
}

func (c *closer) node(v any, open bool) any {
	s, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(s)+1)
	for k, x := range s {
		out[k] = x
	}
	for _, kw := range []string{"properties", "patternProperties"} {
		if m, ok := s[kw].(map[string]any); ok {
			n := make(map[string]any, len(m))
			for name, p := range m {
				n[name] = c.node(p, false)
			}
			out[kw] = n
		}
	}
	for _, kw := range []string{"items", "additionalProperties"} {
		if _, ok := s[kw].(map[string]any); ok {
			out[kw] = c.node(s[kw], false)
		}
	}
	_, props := s["properties"]
	_, pattern := s["patternProperties"]
	_, additional := s["additionalProperties"]
	_, unevaluated := s["unevaluatedProperties"]
	contributing := props || pattern || additional
	comps := 0
	for _, kw := range []string{"allOf", "anyOf", "oneOf", "$ref"} {
		if _, ok := s[kw]; ok {
			comps++
		}
	}
	opened := false
	for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
		list, ok := s[kw].([]any)
		if !ok {
			continue
		}
		memberOpen := open || contributing || comps > 1 || (kw == "allOf" && len(list) > 1)
		opened = opened || memberOpen
		l := make([]any, len(list))
		for i, m := range list {
			l[i] = c.node(m, memberOpen)
		}
		out[kw] = l
	}
	if ref, ok := s["$ref"].(string); ok && (open || contributing || comps > 1) {
		if name, ok := strings.CutPrefix(ref, "#/$defs/"); ok && !strings.Contains(name, "/") {
			out["$ref"] = "#/$defs/" + escapePointer(c.open(name))
			opened = true
		}
	}
	if !open && (props || pattern || opened) && !additional && !unevaluated {
		out["unevaluatedProperties"] = false
	}
	return out
}
