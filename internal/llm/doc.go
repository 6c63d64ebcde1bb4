// Package llm is Quavon's model layer: one small interface for the review,
// the acceptance-criteria check and the fix agent, and the controls around
// every model call.
//
//   - Model is one call: Request (system text, messages with tool calls and
//     tool results, tools with JSON Schemas, output cap, stop sequences) in,
//     Response (text, tool calls with raw arguments, stop reason, usage,
//     cost, latency) out. Request.Validate holds callers to what both
//     providers' APIs accept.
//   - Tools are built from Go structs (NewTool: invopop/jsonschema, with
//     additionalProperties false and default caps on strings and arrays);
//     DecodeArgs decodes a call's arguments strictly against that schema.
//     Model output is hostile: nothing else reads raw arguments.
//   - Providers live in internal/llm/provider, the only package importing
//     the Anthropic and OpenAI SDKs, so a binary that links this package
//     links no SDK. The service assembly builds a feature's model with
//     provider.FromConfig(cfg.LLM, llm.FeatureFix, logger) (provider, retry
//     and logging wrappers) and each run's budget with provider.RunBudget.
//     Scripted is the deterministic model of tests and the demo; it plays
//     the same Script as the provider emulator llmfake.
//   - Budget holds a run's token and cost ceilings and, through Daily
//     (DailyLedger: table llm_budget_days), the feature's daily ceiling of a
//     tenant. Budget.Model wraps the model, so a loop cannot call around
//     it: each call reserves its worst case first and is refused with
//     *BudgetExceededError (not retried) when it does not fit.
//   - WithRetry retries 429, 529/overloaded and 5xx only, honouring
//     retry-after, bounded in count and total wait; WithLogging logs the
//     call's numbers and never its content or a key.
//   - Untrusted wraps text from outside (issues, pull requests, diffs,
//     files, test output, findings) in delimiters with a fresh nonce, after
//     neutralising look-alikes; WithDataNotice tells the model it is data.
//   - Probe checks a model really calls tools.
//
// Costs are Micros (millionths of a dollar); prices are USD per million
// tokens, so a price is exactly µUSD per token.
package llm
