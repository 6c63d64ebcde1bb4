package apidesc

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Field says what a description promises about one field of a body,
// given that the object holding it is there (a field of an optional or
// nullable object is listed separately from that object).
type Field struct {
	// Required: the object holding the field lists it as required.
	Required bool
	// Nullable: the field may be null.
	Nullable bool
}

// Absent reports whether GitHub may omit the field or send it as null.
func (f Field) Absent() bool { return !f.Required || f.Nullable }

func (f Field) String() string {
	return fmt.Sprintf("required=%v nullable=%v", f.Required, f.Nullable)
}

// ResponseField looks up a dotted path ("head.repo.id"; "[]" steps into
// array items) in the documented response of operationID with status.
func (d *Descriptions) ResponseField(operationID string, status int, path string) (Field, error) {
	key := d.ops[operationID][strconv.Itoa(status)]
	if key == "" {
		return Field{}, fmt.Errorf("operation %s status %d: %w", operationID, status, ErrUndocumented)
	}
	return lookup(d.rest, asMap(asMap(d.rest["$defs"])[key]), path)
}

// WebhookField looks up path in the payload of event and action, in both
// webhook descriptions: the field is required only if both require it,
// nullable if either allows null.
func (d *Descriptions) WebhookField(event, action, path string) (Field, error) {
	key, ok := d.hooks[HookName(event, action)]
	if !ok {
		return Field{}, fmt.Errorf("webhook %s.%s: %w", event, action, ErrUndocumented)
	}
	f1, err := lookup(d.webhooks, asMap(asMap(d.webhooks["$defs"])[key]), path)
	if err != nil {
		return Field{}, fmt.Errorf("openapi-webhooks %s: %w", key, err)
	}
	ckey := event + "$" + action
	f2, err := lookup(d.community, asMap(asMap(d.community["definitions"])[ckey]), path)
	if err != nil {
		return Field{}, fmt.Errorf("webhooks-schemas %s: %w", ckey, err)
	}
	return Field{Required: f1.Required && f2.Required, Nullable: f1.Nullable || f2.Nullable}, nil
}

func lookup(doc, root map[string]any, path string) (Field, error) {
	f := Field{Required: true}
	nodes := alternatives(doc, root)
	for _, step := range strings.Split(path, ".") {
		var next []map[string]any
		found, required := false, true
		for _, n := range nodes {
			if step == "[]" {
				if it := asMap(n["items"]); it != nil {
					found = true
					next = append(next, it)
				}
				continue
			}
			p, req, ok := property(doc, n, step)
			if !ok {
				continue
			}
			found = true
			required = required && req
			next = append(next, p)
		}
		if !found {
			return Field{}, fmt.Errorf("no field %q in %s", step, path)
		}
		f = Field{Required: required}
		nodes = nil
		for _, n := range next {
			if admitsNull(doc, n) {
				f.Nullable = true
			}
			nodes = append(nodes, alternatives(doc, n)...)
		}
	}
	return f, nil
}

// alternatives are the non-null object schemas s may be: itself, through
// $ref, anyOf and oneOf (each member an alternative) and allOf (merged by
// property lookup below, so each member is kept).
func alternatives(doc, s map[string]any) []map[string]any {
	s = follow(doc, s)
	if s == nil {
		return nil
	}
	out := []map[string]any{s}
	for _, kw := range []string{"anyOf", "oneOf"} {
		for _, m := range asList(s[kw]) {
			if !isNull(asMap(m)) {
				out = append(out, alternatives(doc, asMap(m))...)
			}
		}
	}
	return out
}

// property finds name in object schema s (or its allOf members) and says
// whether s requires it.
func property(doc, s map[string]any, name string) (map[string]any, bool, bool) {
	if p, ok := asMap(s["properties"])[name]; ok {
		return asMap(p), slices.Contains(asList(s["required"]), any(name)), true
	}
	for _, m := range asList(s["allOf"]) {
		for _, alt := range alternatives(doc, asMap(m)) {
			if p, req, ok := property(doc, alt, name); ok {
				return p, req || requiredIn(doc, s, name), true
			}
		}
	}
	return nil, false, false
}

func requiredIn(doc, s map[string]any, name string) bool {
	if slices.Contains(asList(s["required"]), any(name)) {
		return true
	}
	for _, m := range asList(s["allOf"]) {
		if requiredIn(doc, follow(doc, asMap(m)), name) {
			return true
		}
	}
	return false
}

func isNull(s map[string]any) bool { return s["type"] == "null" }

func admitsNull(doc, s map[string]any) bool {
	s = follow(doc, s)
	if s == nil {
		return false
	}
	switch t := s["type"].(type) {
	case string:
		if t == "null" {
			return true
		}
	case []any:
		if slices.Contains(t, any("null")) {
			return true
		}
	}
	if s["nullable"] == true {
		return true
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		for _, m := range asList(s[kw]) {
			if admitsNull(doc, asMap(m)) {
				return true
			}
		}
	}
	for _, m := range asList(s["allOf"]) {
		if !admitsNull(doc, asMap(m)) {
			return false
		}
	}
	return len(asList(s["allOf"])) > 0
}
