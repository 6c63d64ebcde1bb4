package llm

import "unicode/utf8"

// EstimateInputTokens estimates the prompt tokens of req from above: a
// token per 3 bytes of ASCII (English and code run at 3.5 to 4), two per
// other rune (CJK and emoji run at 1 to 2), plus framing per message, tool
// call and tool. Budgets reserve it before the call and settle on the
// provider's real count after.
func EstimateInputTokens(req Request) int64 {
	var ascii, other int64
	add := func(s string) {
		for i := 0; i < len(s); {
			if s[i] < utf8.RuneSelf {
				ascii++
				i++
				continue
			}
			_, n := utf8.DecodeRuneInString(s[i:])
			other++
			i += n
		}
	}
	framing := int64(16)
	add(req.System)
	for _, m := range req.Messages {
		framing += 8
		add(m.Text)
		for _, c := range m.ToolCalls {
			framing += 12
			add(c.ID)
			add(c.Name)
			add(string(c.Arguments))
		}
		for _, r := range m.ToolResults {
			framing += 12
			add(r.CallID)
			add(r.Content)
		}
	}
	for _, t := range req.Tools {
		framing += 16
		add(t.Name)
		add(t.Description)
		add(string(t.Schema))
	}
	return (ascii+2)/3 + 2*other + framing
}
