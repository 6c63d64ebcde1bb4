package devgithub

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/llm"
)

// The development model quotes the planted file exactly (the review run
// drops findings whose quote is not at the line) and its fix edits text
// the file holds; each conversation ends with finish.
func TestModelScript(t *testing.T) {
	script := ModelScript()
	src := plantedFiles["server/server.go"]
	lines := strings.Split(src, "\n")
	tools := func(names ...string) []llm.Tool {
		var ts []llm.Tool
		for _, n := range names {
			ts = append(ts, llm.Tool{Name: n})
		}
		return ts
	}
	later := []llm.Message{{Role: llm.RoleUser, Text: "x"}, {Role: llm.RoleAssistant, Text: "y"}}
	for _, tc := range []struct {
		name  string
		req   llm.Request
		tool  string
		check func(args map[string]any) bool
	}{
		{"review", llm.Request{Tools: tools("report_finding", "finish")}, "report_finding", func(a map[string]any) bool {
			line := int(a["startLine"].(float64))
			return a["path"] == "server/server.go" && line > 0 && strings.Contains(lines[line-1], a["quote"].(string)) &&
				strings.Contains(a["quote"].(string), "SELECT")
		}},
		{"fix", llm.Request{Tools: tools("edit_file", "finish")}, "edit_file", func(a map[string]any) bool {
			return a["path"] == "calc/calc.go" && strings.Count(demoFiles["calc/calc.go"], a["oldText"].(string)) == 1 &&
				strings.Contains(a["newText"].(string), "i := 0")
		}},
		{"review ends", llm.Request{Tools: tools("report_finding", "finish"), Messages: later}, "finish", nil},
		{"fix ends", llm.Request{Tools: tools("edit_file", "finish"), Messages: later}, "finish", nil},
	} {
		st := script(0, tc.req)
		if len(st.ToolCalls) != 1 || st.ToolCalls[0].Name != tc.tool {
			t.Errorf("%s: %+v", tc.name, st)
			continue
		}
		var args map[string]any
		if err := json.Unmarshal(st.ToolCalls[0].Arguments, &args); err != nil {
			t.Fatal(err)
		}
		if tc.check != nil && !tc.check(args) {
			t.Errorf("%s: %v", tc.name, args)
		}
	}
	if st := script(0, llm.Request{}); st.Text == "" || len(st.ToolCalls) != 0 {
		t.Errorf("no tools: %+v", st)
	}
}

// quavon doctor's model check passes against the development model.
func TestModelScriptPassesProbe(t *testing.T) {
	m := llm.NewScripted(ModelScript(), DevModel, llm.Price{Input: 3, Output: 15})
	if _, err := llm.Probe(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}
