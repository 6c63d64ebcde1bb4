package llm

// EstimateInputTokens estimates the prompt tokens of req from above, in
// time proportional to the number of strings, not their length: a token
// per 2 bytes (English and code run at 3.5 to 4 bytes a token, CJK at 2 to
// 3, so this over-counts text of every script), plus framing per message,
// tool call and tool. Budgets reserve it before the call and settle on the
// provider's real count after.
func EstimateInputTokens(req Request) int64 {
	n := int64(len(req.System)) + 64
	for _, m := range req.Messages {
		n += int64(len(m.Text)) + 16
		for _, c := range m.ToolCalls {
			n += int64(len(c.ID)+len(c.Name)+len(c.Arguments)) + 24
		}
		for _, r := range m.ToolResults {
			n += int64(len(r.CallID)+len(r.Content)) + 24
		}
		for _, th := range m.Thinking {
			n += int64(len(th.Text)+len(th.Signature)+len(th.Redacted)) + 16
		}
	}
	for _, t := range req.Tools {
		n += int64(len(t.Name)+len(t.Description)+len(t.Schema)) + 32
	}
	return (n + 1) / 2
}
