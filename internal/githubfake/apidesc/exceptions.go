package apidesc

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Exception is one documented departure of the emulator from GitHub's
// descriptions, where a description is known to be wrong about what GitHub
// sends. Each carries the reason.
type Exception struct {
	// Doc is "rest", "webhooks" (@octokit/openapi-webhooks) or
	// "community" (@octokit/webhooks-schemas).
	Doc string
	// Def is the definition: a component or "op.<operationId>.<status>"
	// ($defs), or a community definition name.
	Def string
	// Path leads from Def to the object concerned: property names, "[]"
	// for array items; a $ref on the way is followed (so the exception
	// amends the referenced definition, everywhere it is used).
	Path []string
	// Property is the property of that object the exception is about.
	Property string
	// Kind is KindAdd (the default), KindNullable or KindAnyOf.
	Kind   string
	Reason string
}

// Exception kinds.
const (
	// KindAdd adds Property to the object, accepting any value.
	KindAdd = ""
	// KindNullable makes the existing Property accept null.
	KindNullable = "nullable"
	// KindAnyOf turns Property's allOf or oneOf into anyOf.
	KindAnyOf = "anyOf"
)

// Exceptions lists every place the emulator sends what a description does
// not allow. Keep it short: each entry is a place where the emulator
// follows GitHub's behaviour, not its description.
var Exceptions = []Exception{
	{Doc: "rest", Def: "validation-error", Property: "status",
		Reason: `GitHub's error bodies carry "status" (the code as a string) since 2023; basic-error defines it, validation-error does not`},
	{Doc: "rest", Def: "validation-error-simple", Property: "status",
		Reason: `as for validation-error: every GitHub error body carries "status"`},
	{Doc: "rest", Def: "pull-request", Path: []string{"head"}, Property: "repo", Kind: KindNullable,
		Reason: "a pull request whose head repository (a fork) was deleted has head.repo null (github/rest-api-description#161, #1811)"},
	{Doc: "rest", Def: "pull-request-simple", Path: []string{"head"}, Property: "repo", Kind: KindNullable,
		Reason: "as for pull-request: a deleted fork's pull requests list with head.repo null (github/rest-api-description#1811)"},
	{Doc: "rest", Def: "op.apps.list-installations.200", Path: []string{"[]"}, Property: "account", Kind: KindAnyOf,
		Reason: "the list's account is allOf(simple-user, enterprise), which no account satisfies; get-installation describes the same field as anyOf"},
	{Doc: "rest", Def: "op.git.create-blob.422", Kind: KindAnyOf,
		Reason: "oneOf(validation-error, repository-rule-violation-error): an error body GitHub sends matches both, so oneOf refuses every one"},
	{Doc: "webhooks", Def: "pull-request-webhook", Path: []string{"head", "repo"}, Property: "custom_properties",
		Reason: "webhook payloads carry custom_properties on every repository, a pull request's head and base included (@octokit/webhooks-schemas requires it there); the shared repository component the webhooks description reuses has none"},
	{Doc: "webhooks", Def: "webhook-pull-request-synchronize", Path: []string{"pull_request", "head", "repo"}, Property: "custom_properties",
		Reason: "synchronize describes its pull request inline; as for pull-request-webhook, head and base repositories carry custom_properties"},
	{Doc: "webhooks", Def: "webhook-pull-request-synchronize", Path: []string{"pull_request", "base", "repo"}, Property: "custom_properties",
		Reason: "as for the head: the base repository of a synchronize payload carries custom_properties"},
	{Doc: "webhooks", Def: "webhook-pull-request-synchronize", Path: []string{"pull_request", "head"}, Property: "repo", Kind: KindNullable,
		Reason: "a push to a pull request from a fork that was deleted has head.repo null, as in the REST API (github/rest-api-description#1811); @octokit/webhooks-schemas allows it"},
	{Doc: "community", Def: "repository$transferred", Path: []string{"changes", "owner", "from"}, Property: "organization",
		Reason: "a repository transferred from an organization names it under changes.owner.from.organization (as @octokit/openapi-webhooks describes); the community schema knows only user"},
}

// ErrorStatus is an error status at which the emulator answers with
// GitHub's generic error body (basic-error; validation-error or
// validation-error-simple for 422) although the operation's description
// does not describe that answer: it does not list the status, or lists it
// without a body. Op "" stands for every operation. Any other error
// status an operation does not document fails the check.
type ErrorStatus struct {
	Op     string
	Status int
	Reason string
}

// ErrorStatuses lists every such departure, with the reason GitHub's
// description is incomplete there.
var ErrorStatuses = []ErrorStatus{
	{Status: 400, Reason: `a write whose body is not JSON is answered 400 "Problems parsing JSON" on every route; the description lists 400 on few operations`},
	{Status: 401, Reason: `a missing, expired or revoked token is answered 401 "Requires authentication" or "Bad credentials" on every route; the description lists 401 on few operations`},
	{Status: 403, Reason: `a token without the permission a route needs is answered 403 "Resource not accessible by integration", and a write to an archived repository 403 "Repository was archived so is read-only", on every route; the description lists 403 on some operations only`},
	{Status: 404, Reason: `a repository, installation or object the token cannot see is answered 404 "Not Found" on every route (GitHub hides what it will not show); the description lists 404 on some operations only`},
	{Op: "checks/create", Status: 422, Reason: `an invalid check run (a conclusion or status outside the enum, completed without a conclusion, an output without title and summary, a head_sha that is no commit) is answered 422 Validation Failed; the description lists 201 only`},
	{Op: "checks/update", Status: 422, Reason: `as for checks/create: an invalid conclusion, status or output is answered 422 Validation Failed; the description lists 200 only`},
	{Op: "checks/list-for-ref", Status: 422, Reason: `a ref that names no commit is answered 422 "No commit found for SHA"; the description lists 200 only`},
	{Op: "code-scanning/upload-sarif", Status: 422, Reason: `a commit_sha or ref that does not match the documented pattern is answered 422 Validation Failed; the description lists 400, 403, 404, 413 and 503`},
	{Op: "code-scanning/upload-sarif", Status: 400, Reason: `documented without a body ("the sarif field is invalid"); GitHub sends its error body there as everywhere`},
	{Op: "code-scanning/upload-sarif", Status: 413, Reason: `documented without a body ("the sarif field is too large"); GitHub sends its error body there as everywhere`},
	{Op: "code-scanning/get-sarif", Status: 404, Reason: `documented without a body ("not found if the sarif id does not match any upload"); GitHub sends its error body there as everywhere`},
	{Op: "git/delete-ref", Status: 422, Reason: `documented without a body ("validation failed, an attempt was made to delete a ref that does not exist"); GitHub sends "Reference does not exist" in its error body`},
}

// errorStatusListed reports whether ErrorStatuses lets op answer status
// with a generic error body.
func errorStatusListed(op string, status int) bool {
	return slices.ContainsFunc(ErrorStatuses, func(e ErrorStatus) bool { return e.Status == status && (e.Op == "" || e.Op == op) })
}

// checkErrorStatuses refuses an entry GitHub's description makes
// unnecessary or that names no operation.
func checkErrorStatuses(d *Descriptions) error {
	for _, e := range ErrorStatuses {
		if e.Status < 400 || e.Status > 599 || len(e.Reason) < 20 {
			return fmt.Errorf("error status exception %s %d: an error status and a reason", e.Op, e.Status)
		}
		if e.Op == "" {
			continue
		}
		statuses, ok := d.ops[e.Op]
		if !ok {
			return fmt.Errorf("error status exception %s %d: no such operation", e.Op, e.Status)
		}
		if key, ok := statuses[strconv.Itoa(e.Status)]; ok && key != "" {
			return fmt.Errorf("error status exception %s %d: documented with a body already; drop the exception", e.Op, e.Status)
		}
	}
	return nil
}

func applyExceptions(d *Descriptions) error {
	if err := checkErrorStatuses(d); err != nil {
		return err
	}
	for _, e := range Exceptions {
		doc, defs := d.rest, asMap(d.rest["$defs"])
		switch e.Doc {
		case "webhooks":
			doc, defs = d.webhooks, asMap(d.webhooks["$defs"])
		case "community":
			doc, defs = d.community, asMap(d.community["definitions"])
		}
		where := e.Doc + " " + e.Def + " " + strings.Join(append(slices.Clone(e.Path), e.Property), ".")
		node := follow(doc, asMap(defs[e.Def]))
		if node == nil {
			return fmt.Errorf("exception %s: no such definition", where)
		}
		for _, p := range e.Path {
			if p == "[]" {
				node = follow(doc, asMap(node["items"]))
			} else {
				node = follow(doc, objectSchema(doc, node, p))
			}
			if node == nil {
				return fmt.Errorf("exception %s: nothing at %s", where, p)
			}
		}
		if e.Kind == KindAnyOf && e.Property == "" {
			if !toAnyOf(node) {
				return fmt.Errorf("exception %s: no allOf or oneOf", where)
			}
			continue
		}
		props := asMap(node["properties"])
		if props == nil {
			return fmt.Errorf("exception %s: not an object with properties", where)
		}
		p, defined := props[e.Property]
		switch e.Kind {
		case KindAdd:
			if defined {
				return fmt.Errorf("exception %s: defined already; drop the exception", where)
			}
			props[e.Property] = map[string]any{"description": "apidesc exception: " + e.Reason}
		case KindNullable:
			if !defined {
				return fmt.Errorf("exception %s: no such property", where)
			}
			props[e.Property] = map[string]any{"anyOf": []any{map[string]any{"type": "null"}, p}}
		case KindAnyOf:
			if !defined || !toAnyOf(asMap(p)) {
				return fmt.Errorf("exception %s: no allOf or oneOf there", where)
			}
		default:
			return fmt.Errorf("exception %s: unknown kind %q", where, e.Kind)
		}
	}
	return nil
}

// toAnyOf turns s's allOf or oneOf into anyOf, looking through the anyOf
// that a translated nullable adds.
func toAnyOf(s map[string]any) bool {
	for _, kw := range []string{"allOf", "oneOf"} {
		if l, ok := s[kw]; ok {
			delete(s, kw)
			s["anyOf"] = l
			return true
		}
	}
	for _, m := range asList(s["anyOf"]) {
		if toAnyOf(asMap(m)) {
			return true
		}
	}
	return false
}

// follow resolves a local $ref ("#/$defs/X", "#/definitions/X") in doc.
func follow(doc, s map[string]any) map[string]any {
	for i := 0; s != nil && i < 8; i++ {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		switch {
		case strings.HasPrefix(ref, "#/$defs/"):
			name := strings.NewReplacer("~1", "/", "~0", "~").Replace(strings.TrimPrefix(ref, "#/$defs/"))
			s = asMap(asMap(doc["$defs"])[name])
		case strings.HasPrefix(ref, "#/definitions/"):
			s = asMap(asMap(doc["definitions"])[strings.TrimPrefix(ref, "#/definitions/")])
		default:
			return nil
		}
	}
	return s
}

// objectSchema finds property p of object s, looking into allOf members.
func objectSchema(doc, s map[string]any, p string) map[string]any {
	if v := asMap(asMap(s["properties"])[p]); v != nil {
		return v
	}
	for _, m := range asList(s["allOf"]) {
		if v := objectSchema(doc, follow(doc, asMap(m)), p); v != nil {
			return v
		}
	}
	return nil
}
