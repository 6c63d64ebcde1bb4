package devgithub

import (
	"strings"

	"github.com/quavon/quavon/internal/llm"
)

// DevModel is the model name the development stack's workers ask for.
const DevModel = "claude-sonnet-5-5"

// ModelScript is the development stack's model (served by llmfake on
// the Anthropic API): in a review conversation it reports the demo pull
// request's SQL built by concatenation with its exact quote and line,
// then finishes; in a fix conversation it edits the demo issue's bug and
// finishes; quavon doctor's probe gets its tool call; anything else gets a
// plain answer.
// Each conversation is told apart by its tools and the assistant turns it
// already holds, so concurrent runs do not share a step counter.
func ModelScript() llm.Script {
	return func(_ int, req llm.Request) llm.Step {
		turns := 0
		for _, m := range req.Messages {
			if m.Role == llm.RoleAssistant {
				turns++
			}
		}
		has := func(name string) bool {
			for _, t := range req.Tools {
				if t.Name == name {
					return true
				}
			}
			return false
		}
		path, line, quote := plantedSQL()
		switch {
		case has("quavon_probe"): // quavon doctor's llm.Probe
			return llm.Call("quavon_probe", map[string]string{"word": "ready"})
		case has("report_finding") && turns == 0:
			return llm.Call("report_finding", map[string]any{"path": path, "startLine": line, "endLine": line, "severity": "high",
				"category": "security", "title": "SQL built from request input",
				"body": "`name` comes from the query string and is concatenated into the SQL text: use a placeholder.", "quote": quote})
		case has("edit_file") && turns == 0:
			return llm.Call("edit_file", map[string]string{"path": "calc/calc.go", "oldText": fixOld, "newText": fixNew})
		case has("edit_file"):
			return llm.Call("finish", map[string]string{"summary": "Sum starts at the first element."})
		case has("finish"):
			return llm.Call("finish", map[string]string{"summary": "SQL built from request input in server/server.go"})
		}
		return llm.Answer("ok")
	}
}

// The demo issue's fix.
const (
	fixOld = "for i := 1; i < len(xs); i++ { // bug: skips the first element"
	fixNew = "for i := 0; i < len(xs); i++ {"
)

// plantedSQL finds the planted SQL concatenation: path, line, quote.
func plantedSQL() (string, int, string) {
	const path = "server/server.go"
	for i, l := range strings.Split(plantedFiles[path], "\n") {
		if j := strings.Index(l, "db.Query("); j >= 0 {
			return path, i + 1, l[j:]
		}
	}
	return path, 0, ""
}
