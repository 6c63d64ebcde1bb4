// Package apidesc checks JSON against GitHub's own published descriptions
// of its API: the REST OpenAPI description (npm @octokit/openapi, generated
// from github/rest-api-description), the webhooks section of
// @octokit/openapi-webhooks and the community webhook schemas
// (@octokit/webhooks-schemas). scripts/test installs the pinned versions
// below and names the directory in QUAVON_TEST_GITHUB_DESCRIPTIONS.
//
// The descriptions are loaded with santhosh-tekuri/jsonschema (JSON Schema
// 2020-12, $ref resolution). OpenAPI 3.0's schema dialect is translated
// first (nullable → a "null" type, components → $defs). GitHub's schemas
// leave objects open, so a response carrying a property GitHub never sends
// would pass; Load closes them: every object schema gets
// unevaluatedProperties: false (allOf members are opened and their parent
// closed, so a composition still sees all its members' properties). What
// the emulator sends beyond a description is listed in Exceptions, each with
// its reason.
package apidesc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The pinned npm packages (scripts/test installs exactly these).
const (
	OpenAPIPackage        = "@octokit/openapi"
	OpenAPIVersion        = "23.0.2"
	WebhooksPackage       = "@octokit/openapi-webhooks"
	WebhooksVersion       = "12.1.0"
	WebhookSchemasPackage = "@octokit/webhooks-schemas"
	WebhookSchemasVersion = "7.6.1"
)

// EnvDir names the directory holding node_modules/@octokit/... .
const EnvDir = "QUAVON_TEST_GITHUB_DESCRIPTIONS"

// Resource URLs of the three documents inside the compiler.
const (
	restURL      = "https://descriptions.quavon.invalid/rest.json"
	webhooksURL  = "https://descriptions.quavon.invalid/webhooks.json"
	communityURL = "https://descriptions.quavon.invalid/webhooks-schemas.json"
)

// Descriptions are GitHub's descriptions, translated and ready to validate.
// Safe for concurrent use.
type Descriptions struct {
	rest      map[string]any // {"$defs": ...}
	webhooks  map[string]any
	community map[string]any

	// ops maps an operationId to its documented statuses and the $defs key
	// of each status's JSON body ("" when the status has none).
	ops map[string]map[string]string
	// hooks maps "event.action" to the $defs key of its payload.
	hooks map[string]string
	// ruleTypes are the repository rule types GitHub describes.
	ruleTypes []string

	mu       sync.Mutex
	c        *jsonschema.Compiler
	compiled map[string]*jsonschema.Schema
}

// Load reads the descriptions from dir (see EnvDir) and checks that they
// are the pinned versions.
func Load(dir string) (*Descriptions, error) {
	pkg := func(name string) string { return filepath.Join(dir, "node_modules", filepath.FromSlash(name)) }
	for _, p := range []struct{ name, version string }{
		{OpenAPIPackage, OpenAPIVersion}, {WebhooksPackage, WebhooksVersion}, {WebhookSchemasPackage, WebhookSchemasVersion},
	} {
		var meta struct{ Version string }
		if err := readJSON(filepath.Join(pkg(p.name), "package.json"), &meta); err != nil {
			return nil, fmt.Errorf("apidesc.Load: %s: %w", p.name, err)
		}
		if meta.Version != p.version {
			return nil, fmt.Errorf("apidesc.Load: %s is %s, want the pinned %s (scripts/test installs it)", p.name, meta.Version, p.version)
		}
	}
	d := &Descriptions{ops: map[string]map[string]string{}, hooks: map[string]string{}, compiled: map[string]*jsonschema.Schema{}}

	var rest map[string]any
	if err := readJSON(filepath.Join(pkg(OpenAPIPackage), "generated", "api.github.com.json"), &rest); err != nil {
		return nil, fmt.Errorf("apidesc.Load: %w", err)
	}
	defs := map[string]any{}
	for name, s := range asMap(asMap(rest["components"])["schemas"]) {
		defs[name] = fromOpenAPI30(s)
	}
	responses := asMap(asMap(rest["components"])["responses"])
	for _, item := range asMap(rest["paths"]) {
		for method, o := range asMap(item) {
			op := asMap(o)
			id, _ := op["operationId"].(string)
			if id == "" || !slices.Contains([]string{"get", "post", "put", "patch", "delete"}, method) {
				continue
			}
			statuses := map[string]string{}
			for status, r := range asMap(op["responses"]) {
				resp := asMap(r)
				if ref, ok := resp["$ref"].(string); ok {
					resp = asMap(responses[strings.TrimPrefix(ref, "#/components/responses/")])
				}
				schema := asMap(asMap(asMap(resp["content"])["application/json"])["schema"])
				if schema == nil {
					statuses[status] = ""
					continue
				}
				key := "op." + strings.ReplaceAll(id, "/", ".") + "." + status
				defs[key] = fromOpenAPI30(schema)
				statuses[status] = key
			}
			d.ops[id] = statuses
		}
	}
	d.rest = map[string]any{"$defs": defs}
	for _, m := range asList(asMap(defs["repository-rule"])["oneOf"]) {
		target := asMap(defs[strings.TrimPrefix(asMap(m)["$ref"].(string), "#/$defs/")])
		for _, t := range asList(asMap(asMap(target["properties"])["type"])["enum"]) {
			d.ruleTypes = append(d.ruleTypes, t.(string))
		}
	}

	var hooks map[string]any
	if err := readJSON(filepath.Join(pkg(WebhooksPackage), "generated", "api.github.com.json"), &hooks); err != nil {
		return nil, fmt.Errorf("apidesc.Load: %w", err)
	}
	hdefs := map[string]any{}
	for name, s := range asMap(asMap(hooks["components"])["schemas"]) {
		hdefs[name] = rewriteRefs(s)
	}
	for name, w := range asMap(hooks["webhooks"]) {
		ref, _ := asMap(asMap(asMap(asMap(asMap(w)["post"])["requestBody"])["content"])["application/json"])["schema"].(map[string]any)["$ref"].(string)
		if ref == "" {
			continue
		}
		d.hooks[name] = strings.TrimPrefix(ref, "#/components/schemas/")
	}
	d.webhooks = map[string]any{"$defs": hdefs}

	var community map[string]any
	if err := readJSON(filepath.Join(pkg(WebhookSchemasPackage), "schema.json"), &community); err != nil {
		return nil, fmt.Errorf("apidesc.Load: %w", err)
	}
	d.community = community

	if err := applyExceptions(d); err != nil {
		return nil, fmt.Errorf("apidesc.Load: %w", err)
	}
	closeObjects(d.rest)
	closeObjects(d.webhooks)

	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.RegisterFormat(&jsonschema.Format{Name: "uri-template", Validate: validateURITemplate})
	for url, doc := range map[string]any{restURL: d.rest, webhooksURL: d.webhooks, communityURL: d.community} {
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("apidesc.Load: %s: %w", url, err)
		}
	}
	d.c = c
	return d, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }

func asList(v any) []any { l, _ := v.([]any); return l }

// RuleTypes returns the repository rule types GitHub's description
// defines (a rule of another type is one GitHub added since).
func (d *Descriptions) RuleTypes() []string { return slices.Clone(d.ruleTypes) }

// ErrUndocumented means the operation, status or webhook is not in GitHub's
// description at all.
var ErrUndocumented = errors.New("not in GitHub's description")

// HasOperation reports whether operationID is described.
func (d *Descriptions) HasOperation(operationID string) bool { _, ok := d.ops[operationID]; return ok }

// CheckResponse validates body, the answer with status to operationID,
// against the documented response. An error status the description does
// not describe there is checked against GitHub's generic error shapes
// (CheckError) when ErrorStatuses lists it, and refused otherwise; any
// other status the operation does not document is ErrUndocumented.
func (d *Descriptions) CheckResponse(operationID string, status int, body []byte) error {
	statuses, ok := d.ops[operationID]
	if !ok {
		return fmt.Errorf("operation %s: %w", operationID, ErrUndocumented)
	}
	key, ok := statuses[strconv.Itoa(status)]
	if key == "" && status >= 400 && errorStatusListed(operationID, status) {
		// GitHub's generic error body where the description has none
		// (ErrorStatuses says why).
		return d.CheckError(status, body)
	}
	switch {
	case !ok:
		return fmt.Errorf("operation %s status %d: %w (nor in apidesc.ErrorStatuses)", operationID, status, ErrUndocumented)
	case key == "" && status >= 400:
		return fmt.Errorf("operation %s status %d: documented without a body, and not in apidesc.ErrorStatuses", operationID, status)
	case key == "":
		if len(bytes.TrimSpace(body)) != 0 {
			return fmt.Errorf("operation %s status %d: GitHub sends no body, got %d bytes", operationID, status, len(body))
		}
		return nil
	}
	return d.validate(restURL, key, body)
}

// CheckError validates an error body against GitHub's generic error shape:
// basic-error, or validation-error (422, "errors" objects) or
// validation-error-simple (422, "errors" strings).
func (d *Descriptions) CheckError(status int, body []byte) error {
	if status == 422 {
		e1 := d.validate(restURL, "validation-error", body)
		if e1 == nil {
			return nil
		}
		if d.validate(restURL, "validation-error-simple", body) == nil {
			return nil
		}
		return e1
	}
	return d.validate(restURL, "basic-error", body)
}

// HookName is the webhooks' key of event and action: "issues-labeled",
// "pull-request-ready-for-review".
func HookName(event, action string) string {
	return strings.ReplaceAll(event, "_", "-") + "-" + strings.ReplaceAll(action, "_", "-")
}

// CheckWebhook validates a payload of event (X-GitHub-Event) against the
// webhooks section of @octokit/openapi-webhooks and against the community
// schema of @octokit/webhooks-schemas.
func (d *Descriptions) CheckWebhook(event string, body []byte) error {
	var head struct {
		Action string `json:"action"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return fmt.Errorf("webhook %s: %w", event, err)
	}
	name := HookName(event, head.Action)
	key, ok := d.hooks[name]
	if !ok {
		return fmt.Errorf("webhook %s: %w", name, ErrUndocumented)
	}
	var errs []error
	if err := d.validate(webhooksURL, key, body); err != nil {
		errs = append(errs, fmt.Errorf("%s (openapi-webhooks %s): %w", name, key, err))
	}
	ckey := event + "$" + head.Action
	if _, ok := asMap(d.community["definitions"])[ckey]; !ok {
		errs = append(errs, fmt.Errorf("webhook %s: %w (webhooks-schemas)", ckey, ErrUndocumented))
	} else if err := d.validate(communityURL, "#/definitions/"+escapePointer(ckey), body); err != nil {
		errs = append(errs, fmt.Errorf("%s (webhooks-schemas): %w", ckey, err))
	}
	return errors.Join(errs...)
}

// HasWebhook reports whether event and action are described in both
// webhook descriptions.
func (d *Descriptions) HasWebhook(event, action string) bool {
	_, ok1 := d.hooks[HookName(event, action)]
	_, ok2 := asMap(d.community["definitions"])[event+"$"+action]
	return ok1 && ok2
}

func (d *Descriptions) validate(resource, key string, body []byte) error {
	ptr := key
	if !strings.HasPrefix(key, "#") {
		ptr = "#/$defs/" + escapePointer(key)
	}
	sch, err := d.schema(resource + ptr)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("body is not JSON: %w", err)
	}
	return sch.Validate(v)
}

func (d *Descriptions) schema(loc string) (*jsonschema.Schema, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s := d.compiled[loc]; s != nil {
		return s, nil
	}
	s, err := d.c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", loc, err)
	}
	d.compiled[loc] = s
	return s, nil
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// validateURITemplate checks an RFC 6570 template: expressions in braces,
// not nested, and a URI around them. (The validator's own splits the path
// at "/" first, so it refuses GitHub's "{/sha}" expressions.)
func validateURITemplate(v any) error {
	s, ok := v.(string)
	if !ok {
		return nil
	}
	var b strings.Builder
	depth := 0
	for _, ch := range s {
		switch {
		case ch == '{':
			depth++
		case ch == '}':
			depth--
		case depth == 0:
			b.WriteRune(ch)
		}
		if depth < 0 || depth > 1 {
			return errors.New("unbalanced or nested braces")
		}
	}
	if depth != 0 {
		return errors.New("no matching closing brace")
	}
	if _, err := url.Parse(b.String()); err != nil {
		return err
	}
	return nil
}

var (
	sharedOnce sync.Once
	shared     *Descriptions
	sharedErr  error
)

// Shared loads the descriptions from $QUAVON_TEST_GITHUB_DESCRIPTIONS once
// per process. ok is false when the variable is unset.
func Shared() (d *Descriptions, ok bool, err error) {
	dir := os.Getenv(EnvDir)
	if dir == "" {
		return nil, false, nil
	}
	sharedOnce.Do(func() { shared, sharedErr = Load(dir) })
	return shared, true, sharedErr
}
