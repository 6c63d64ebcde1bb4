package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/llm"
)

type benchToolArgs struct {
	Path      string `json:"path" jsonschema:"maxLength=512"`
	Pattern   string `json:"pattern,omitempty"`
	StartLine int    `json:"startLine,omitempty"`
	EndLine   int    `json:"endLine,omitempty"`
}

// llmBenchRequest is a fix-agent-sized conversation: 20 tools with
// generated schemas, 50 messages (a task, then 24 rounds of a tool call
// and its result of about 2 KiB of file content, then a note).
func llmBenchRequest() llm.Request {
	req := llm.Request{System: llm.WithDataNotice(strings.Repeat("You fix issues in Go repositories with the tools given. ", 40)), MaxOutputTokens: 4096}
	for i := range 20 {
		req.Tools = append(req.Tools, llm.MustTool[benchToolArgs](fmt.Sprintf("tool_%02d", i), "Reads, searches or edits the repository.", llm.ToolLimits{}))
	}
	file := strings.Repeat("func handler(w http.ResponseWriter, r *http.Request) { _ = r.ParseForm() }\n", 28)
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Text: llm.Untrusted(llm.UntrustedIssue, "The handler panics on empty forms.")})
	for i := range 24 {
		id := fmt.Sprintf("call_%02d", i)
		args, _ := json.Marshal(benchToolArgs{Path: fmt.Sprintf("internal/h%02d.go", i)})
		req.Messages = append(req.Messages,
			llm.Message{Role: llm.RoleAssistant, Text: "Reading the next file.", ToolCalls: []llm.ToolCall{{ID: id, Name: "tool_03", Arguments: args}}},
			llm.Message{Role: llm.RoleUser, ToolResults: []llm.ToolResult{{CallID: id, Content: llm.Untrusted(llm.UntrustedFile, file)}}})
	}
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Text: "Now make the fix."})
	return req
}

// BenchmarkLLMLayer: one call through the layer the worker uses (budget
// with its reservation and settlement, logging to a JSON handler, retry
// wrapper) around the scripted model, against the scripted model called
// directly, interleaved in one loop. Goal: layer/direct ≤ 1.05 and the
// layer's own cost under 200 µs a call.
func BenchmarkLLMLayer(b *testing.B) {
	req := llmBenchRequest()
	if len(req.Messages) != 50 || len(req.Tools) != 20 {
		b.Fatalf("%d messages, %d tools", len(req.Messages), len(req.Tools))
	}
	step := llm.Step{Text: "Done.", Usage: &llm.Usage{InputTokens: 30_000, OutputTokens: 50}}
	script := func(int, llm.Request) llm.Step { return step }
	price := llm.DefaultPrices()["claude-sonnet-5-5"]
	direct := llm.NewScripted(script, "scripted", price)
	budget, err := llm.NewBudget(llm.Ceiling{Tokens: 1 << 60, Cost: llm.Micros(1 << 60)}, llm.BudgetOptions{Feature: llm.FeatureFix})
	if err != nil {
		b.Fatal(err)
	}
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	layered := budget.Model(llm.WithLogging(llm.WithRetry(llm.NewScripted(script, "scripted", price), llm.RetryPolicy{}), logger, llm.FeatureFix))
	ctx := context.Background()
	call := func(m llm.Model) time.Duration {
		t0 := time.Now()
		if _, err := m.Complete(ctx, req); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	for range 200 { // warm both
		call(direct)
		call(layered)
	}
	var d, l []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		for range 100 {
			if i%2 == 0 {
				d = append(d, call(direct))
				l = append(l, call(layered))
			} else {
				l = append(l, call(layered))
				d = append(d, call(direct))
			}
		}
	}
	med := func(x []time.Duration) float64 {
		slices.Sort(x)
		return float64(x[len(x)/2].Nanoseconds()) / 1000
	}
	dm, lm := med(d), med(l)
	b.ReportMetric(dm, "direct-µs/call")
	b.ReportMetric(lm, "layer-µs/call")
	b.ReportMetric(lm-dm, "overhead-µs/call")
	b.ReportMetric(lm/dm, "layer/direct")
}
