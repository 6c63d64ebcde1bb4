package apidesc

import (
	"fmt"
	"strings"
)

// Exception is one documented departure of the emulator from GitHub's
// descriptions, where the description is known to be wrong about what
// GitHub sends. Each carries the reason.
type Exception struct {
	// Doc is "rest" or "webhooks".
	Doc string
	// Def is the $defs name (a component, or "op.<operationId>.<status>").
	Def string
	// Path is the chain of property names from Def to the object concerned
	// (empty for Def itself).
	Path []string
	// Property is the property of that object the exception is about.
	Property string
	// Nullable makes an existing Property accept null; otherwise Property
	// is added to the object's properties, accepting any value.
	Nullable bool
	Reason   string
}

// Exceptions lists every place the emulator sends what a description does
// not allow. Keep it short: each entry is a place where the emulator
// follows GitHub's behaviour, not its description.
var Exceptions = []Exception{
	{Doc: "rest", Def: "validation-error", Property: "status",
		Reason: `GitHub's error bodies carry "status" (the code as a string) since 2023; basic-error defines it, validation-error does not`},
	{Doc: "rest", Def: "validation-error-simple", Property: "status",
		Reason: `as for validation-error: every GitHub error body carries "status"`},
	{Doc: "rest", Def: "pull-request", Path: []string{"head"}, Property: "repo", Nullable: true,
		Reason: "a pull request whose head repository (a fork) was deleted has head.repo null (github/rest-api-description#161, #1811)"},
	{Doc: "rest", Def: "pull-request-simple", Path: []string{"head"}, Property: "repo", Nullable: true,
		Reason: "as for pull-request: a deleted fork's pull requests list with head.repo null (github/rest-api-description#1811)"},
}

func applyExceptions(d *Descriptions) error {
	for _, e := range Exceptions {
		doc := d.rest
		if e.Doc == "webhooks" {
			doc = d.webhooks
		}
		node := asMap(asMap(doc["$defs"])[e.Def])
		if node == nil {
			return fmt.Errorf("exception %s %s: no such definition", e.Doc, e.Def)
		}
		for _, p := range e.Path {
			node = objectOf(asMap(asMap(node["properties"])[p]), doc)
			if node == nil {
				return fmt.Errorf("exception %s %s: no object at %s", e.Doc, e.Def, strings.Join(e.Path, "."))
			}
		}
		props := asMap(node["properties"])
		if props == nil {
			props = map[string]any{}
			node["properties"] = props
		}
		if !e.Nullable {
			if _, ok := props[e.Property]; ok {
				return fmt.Errorf("exception %s %s: %s is defined already; drop the exception", e.Doc, e.Def, e.Property)
			}
			props[e.Property] = map[string]any{"description": "apidesc exception: " + e.Reason}
			continue
		}
		p, ok := props[e.Property]
		if !ok {
			return fmt.Errorf("exception %s %s: no property %s to make nullable", e.Doc, e.Def, e.Property)
		}
		props[e.Property] = map[string]any{"anyOf": []any{map[string]any{"type": "null"}, p}}
	}
	return nil
}

// objectOf follows a single $ref (or returns s itself) to the object
// schema to amend; inline objects only, so an exception changes one place.
func objectOf(s map[string]any, doc map[string]any) map[string]any {
	if s == nil {
		return nil
	}
	if _, ok := s["properties"]; ok {
		return s
	}
	return nil
}
