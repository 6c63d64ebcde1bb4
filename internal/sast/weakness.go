package sast

import (
	"slices"
	"strings"
)

// WeaknessID names a Quavon weakness: one kind of defect, whichever tool
// found it. Every rule of every shipped tool maps onto one (rules.go), and
// a finding's severity is its weakness's, so the same problem has the same
// severity whichever tool reports it.
type WeaknessID string

// Weakness is one row of the weakness table.
type Weakness struct {
	ID WeaknessID `json:"id"`
	// CWE is "CWE-<n>", "" where no CWE fits.
	CWE      string   `json:"cwe,omitempty"`
	Title    string   `json:"title"`
	Severity Severity `json:"severity"`
}

// The weaknesses. Severities are Quavon's: high for what lets an attacker
// run code, read or write data or impersonate (injections, traversal,
// verification turned off, real secrets), medium for weaknesses that need
// more to be exploited, low for hygiene, info for what only an audit wants.
var weaknesses = []Weakness{
	{"command-injection", "CWE-78", "OS command built from data run through a shell", SeverityHigh},
	{"process-start", "CWE-78", "Program started with arguments that may come from data", SeverityLow},
	{"argument-injection", "CWE-88", "Request data passed as a program argument", SeverityHigh},
	{"code-injection", "CWE-95", "Code evaluated from data", SeverityHigh},
	{"dynamic-module-load", "CWE-829", "Module loaded by a computed name", SeverityLow},
	{"sql-injection", "CWE-89", "SQL built from data", SeverityHigh},
	{"nosql-injection", "CWE-943", "Database query built from request data", SeverityHigh},
	{"ldap-injection", "CWE-90", "LDAP filter built from data", SeverityHigh},
	{"xpath-injection", "CWE-643", "XPath expression built from data", SeverityHigh},
	{"xss", "CWE-79", "Markup emitted without escaping", SeverityHigh},
	{"template-injection", "CWE-1336", "Template compiled from data", SeverityHigh},
	{"path-traversal", "CWE-22", "File path taken from data", SeverityHigh},
	{"ssrf", "CWE-918", "URL or host fetched from data", SeverityHigh},
	{"open-redirect", "CWE-601", "Redirect to a location taken from data", SeverityMedium},
	{"insecure-deserialization", "CWE-502", "Untrusted data deserialised into objects", SeverityHigh},
	{"xxe", "CWE-611", "XML parsed with external entities", SeverityMedium},
	{"insecure-tls", "CWE-295", "TLS or SSH peer verification off, or an obsolete protocol", SeverityHigh},
	{"weak-hash", "CWE-328", "Broken hash function (MD4, MD5, SHA-1) used for security", SeverityMedium},
	{"weak-cipher", "CWE-327", "Broken cipher or cipher mode", SeverityHigh},
	{"weak-key", "CWE-326", "Key too short", SeverityMedium},
	{"weak-random", "CWE-338", "Predictable random numbers where secrets are made", SeverityMedium},
	{"hardcoded-secret", "CWE-798", "Secret or credential in the source", SeverityHigh},
	{"debug-enabled", "CWE-489", "Debug mode or debug endpoints on", SeverityMedium},
	{"bind-all-interfaces", "CWE-605", "Server bound to every network interface", SeverityLow},
	{"insecure-temp-file", "CWE-377", "Temporary file at a predictable name", SeverityMedium},
	{"file-permissions", "CWE-732", "File or directory created with broad permissions", SeverityMedium},
	{"error-swallowed", "CWE-703", "Exception or error swallowed", SeverityLow},
	{"unchecked-error", "CWE-703", "Error result not checked", SeverityLow},
	{"assertion", "CWE-703", "assert used for a check that optimised code skips", SeverityInfo},
	{"integer-overflow", "CWE-190", "Integer conversion that can overflow", SeverityMedium},
	{"resource-exhaustion", "CWE-400", "Unbounded resource use (timeouts, decompression, request size)", SeverityLow},
	{"regex-dos", "CWE-1333", "Regular expression with catastrophic backtracking or from data", SeverityMedium},
	{"prototype-pollution", "CWE-1321", "Object keys taken from request data", SeverityHigh},
	{"dynamic-property-access", "CWE-915", "Object property chosen by a computed key", SeverityInfo},
	{"unsafe-reflection", "CWE-470", "Class or function chosen by data", SeverityMedium},
	{"unsafe-language-feature", "", "Deprecated or unsafe language feature", SeverityLow},
	{"timing-attack", "CWE-208", "Secret compared in variable time", SeverityLow},
	{"csrf", "CWE-352", "CSRF protection off", SeverityHigh},
	{"cors-misconfiguration", "CWE-942", "CORS allows any origin with credentials", SeverityHigh},
	{"origin-not-checked", "CWE-346", "Origin or host not checked", SeverityMedium},
	{"jwt-unverified", "CWE-347", "Token signature not verified", SeverityHigh},
	{"cookie-flags", "CWE-614", "Session cookie without Secure, HttpOnly or SameSite", SeverityMedium},
	{"nan-injection", "CWE-704", "Float parsed from data without a NaN check", SeverityLow},
	{"cleartext-protocol", "CWE-319", "Cleartext or obsolete network protocol", SeverityMedium},
	{"hidden-characters", "CWE-451", "Bidirectional control characters in the source (Trojan Source)", SeverityMedium},
	{"unsafe-preexec-fn", "CWE-362", "subprocess preexec_fn, unsafe with threads", SeverityLow},
	{"risky-import", "", "Import of a module with unsafe uses", SeverityInfo},
	{"memory-safety", "CWE-119", "Memory access the compiler cannot check", SeverityMedium},
	{"request-smuggling", "CWE-444", "HTTP request smuggling", SeverityMedium},
	{"secret-exposure", "CWE-200", "Secret exposed by serialisation or forwarded headers", SeverityMedium},
	{"race-condition", "CWE-367", "Time-of-check to time-of-use race on the file system", SeverityLow},
	{"auth-bypass", "CWE-287", "Authentication that can be bypassed", SeverityHigh},
	{"log-injection", "CWE-117", "Log entry built from request data", SeverityLow},
	{"header-injection", "CWE-93", "Protocol header or command built from data", SeverityMedium},
}

// Weaknesses returns the weakness table, in its order.
func Weaknesses() []Weakness { return slices.Clone(weaknesses) }

// WeaknessOf returns the weakness with id, or false.
func WeaknessOf(id WeaknessID) (Weakness, bool) {
	for _, w := range weaknesses {
		if w.ID == id {
			return w, true
		}
	}
	return Weakness{}, false
}

// Treatment is what the review profile does with a rule's findings.
type Treatment string

// Treatments. The audit profile keeps every finding at its weakness's
// severity; the review profile applies the rule's treatment.
const (
	// Keep: posted at the weakness's severity.
	Keep Treatment = "keep"
	// Drop: an audit hint, not a defect: left out of reviews.
	Drop Treatment = "drop"
	// Downgrade: posted as low.
	Downgrade Treatment = "downgrade"
)

// RuleClass is what Quavon knows about one rule of one tool.
type RuleClass struct {
	Tool Tool   `json:"tool"`
	Rule string `json:"rule"`
	// Weakness is the rule's weakness (its severity is the finding's).
	Weakness WeaknessID `json:"weakness"`
	// Review is the review profile's treatment, Reason why when it is not
	// Keep.
	Review Treatment `json:"review"`
	Reason string    `json:"reason,omitempty"`
	// InTests is the review profile's treatment in test files (test paths
	// by the language's conventions and the policy's testPaths), at least
	// as strict as Review; TestReason says why it is Drop there.
	InTests    Treatment `json:"inTests"`
	TestReason string    `json:"testReason,omitempty"`
	// DropOnLine, when set, drops the finding in the review profile when
	// the first line of the statement contains one of these words (case
	// insensitive, whole words): a context where the rule's advice would
	// be wrong (an HMAC digest is not a weak hash).
	DropOnLine []string `json:"dropOnLine,omitempty"`
	LineReason string   `json:"lineReason,omitempty"`
}

// QualifiedRule is how rules are named outside a tool's report, in
// policies (features.sast.disabledRules) and documentation: "tool:rule".
func QualifiedRule(t Tool, rule string) string { return string(t) + ":" + rule }

// ParseQualifiedRule splits "tool:rule" and reports whether it names a
// rule the shipped tools can emit.
func ParseQualifiedRule(s string) (Tool, string, bool) {
	tool, rule, ok := strings.Cut(s, ":")
	if !ok || !Tool(tool).Valid() || !KnownRule(Tool(tool), rule) {
		return "", "", false
	}
	return Tool(tool), rule, true
}

// KnownRuleName reports whether s ("tool:rule") names a rule the shipped
// tools can emit.
func KnownRuleName(s string) bool { _, _, ok := ParseQualifiedRule(s); return ok }
