package sast

import (
	"cmp"
	"slices"
)

// The rule tables: every rule each shipped tool can emit, its weakness and
// its treatment in the review profile. TestRuleTablesMatchTools holds the
// tables against the rule lists of the tools in the scanners image, both
// ways, so a new tool version cannot add an unmapped rule silently;
// rules/README.md ("One severity per weakness") lists them.

// Reasons shared by several rules.
const (
	whyAssert       = "assert statements are an audit hint (optimised Python skips them), not a defect a reviewer acts on"
	whyImport       = "an import alone is not a defect; the calls that misuse the module are reported by their own rules"
	whySubprocess   = "fires on every program started without a shell, constant or not; commands built from request data are reported by argument-injection rules (ast-grep) and shell commands by command-injection rules"
	whyPartialPath  = "starting a program by name through PATH is how most programs are started"
	whySwallow      = "an except that passes or continues is often deliberate; an audit hint"
	whyBareExcept   = "style: a bare except is not a security defect"
	whyRandom       = "fires on every use of the random module; random values made into secrets are reported by insecure-random-secret (ast-grep)"
	whyMathRand     = "fires on every use of math/rand; random values made into secrets are reported by insecure-random-secret (ast-grep)"
	whyUnchecked    = "unchecked errors of writes and closes are code quality, not security, and most are harmless"
	whyFilePath     = "fires on every file path that is not a constant; paths taken from request data are reported by path-traversal rules (ast-grep, gosec G703)"
	whyURLVar       = "fires on every URL that is not a constant; URLs taken from request data are reported by SSRF rules (ast-grep, gosec G704)"
	whyURLOpen      = "fires on every urlopen call; URLs taken from request data are reported by SSRF rules (ast-grep)"
	whyObjectInj    = "fires on every obj[key] with a computed key; keys from request data are reported by prototype-pollution-request-key (ast-grep)"
	whyNonLitRegexp = "fires on every RegExp built from a variable; expressions from request data are reported by regex-from-request (ast-grep)"
	whyNonLitReq    = "fires on every require of a computed name; names from request data are reported by dynamic-require-request (ast-grep)"
	whyTiming       = "matches variable names, not secrets: most comparisons it reports are not of secrets"
	whyPerm         = "0644 files and 0755 directories are what most programs create; an audit hint"
	whyBind         = "servers in containers bind every interface by design"
	whyTmpPath      = "a literal /tmp path is an audit hint; mktemp-style races are reported by their own rules"
	whyUnsafe       = "package unsafe is used deliberately; an audit hint"
	whyIntConv      = "fires on most integer conversions; an audit hint"
	whyWeakHashImp  = "the import alone; the weak hash calls are reported by G401/G406"
	whyHMAC         = "MD5 and SHA-1 remain sound inside HMAC; the weak-hash advice would be wrong there"
	whyTLSDefaults  = "fires on default protocol versions that current libraries already restrict; an audit hint"
	whyParamiko     = "fires on every paramiko exec_command call, constant or not"
	whyMako         = "using Mako is not a defect; templates compiled from data are reported by template rules"
	whyPy2Input     = "input() evaluates only in Python 2"
	whyTimeout      = "a missing timeout is a robustness hint, not a security defect in review"
	whyNoProto      = "style: __proto__ and arguments.caller are deprecated, not a vulnerability"
	whyBuffer       = "deprecated Buffer APIs; an audit hint"
	whyMarshal      = "fires on every marshalled struct field named like a secret, most of them configuration that is never sent; an audit hint"
	whyContext      = "context propagation is code quality; an audit hint"

	whyTestSecret  = "tests hold made-up credentials; secrets that look real are still reported everywhere by gitleaks"
	whyTestFixture = "tests set up servers, files, random data, TLS and debug settings on purpose"
	whyTestSQL     = "tests build queries from their own constants"
	whyTestHash    = "tests hash fixtures, not secrets"
	whyTestProcess = "tests start programs with their own arguments"
)

// keep, drop and downgrade build rule classes.
func keep(w WeaknessID) RuleClass { return RuleClass{Weakness: w, Review: Keep, InTests: Keep} }

func drop(w WeaknessID, why string) RuleClass {
	return RuleClass{Weakness: w, Review: Drop, Reason: why, InTests: Drop, TestReason: why}
}

func downgrade(w WeaknessID, why string) RuleClass {
	return RuleClass{Weakness: w, Review: Downgrade, Reason: why, InTests: Downgrade}
}

// tests drops the rule's findings in test files.
func (r RuleClass) tests(why string) RuleClass {
	r.InTests, r.TestReason = Drop, why
	return r
}

// onLine drops the rule's findings in the review profile when the
// statement's first line has one of words.
func (r RuleClass) onLine(why string, words ...string) RuleClass {
	r.DropOnLine, r.LineReason = words, why
	return r
}

// banditRules: bandit 1.6.2 (Debian bookworm's python3-bandit), every test
// of `bandit -h` (plugins and blacklist calls and imports).
var banditRules = map[string]RuleClass{
	"B101": drop("assertion", whyAssert),
	"B102": keep("code-injection"),
	"B103": keep("file-permissions").tests(whyTestFixture),
	"B104": drop("bind-all-interfaces", whyBind),
	"B105": keep("hardcoded-secret").tests(whyTestSecret),
	"B106": keep("hardcoded-secret").tests(whyTestSecret),
	"B107": keep("hardcoded-secret").tests(whyTestSecret),
	"B108": drop("insecure-temp-file", whyTmpPath),
	"B110": drop("error-swallowed", whySwallow),
	"B112": drop("error-swallowed", whySwallow),
	"B201": keep("debug-enabled").tests(whyTestFixture),
	"B301": keep("insecure-deserialization"),
	"B302": keep("insecure-deserialization"),
	"B303": keep("weak-hash").tests(whyTestHash).onLine(whyHMAC, "hmac"),
	"B304": keep("weak-cipher"),
	"B305": keep("weak-cipher"),
	"B306": keep("insecure-temp-file").tests(whyTestFixture),
	"B307": keep("code-injection"),
	"B308": keep("xss"),
	"B309": keep("insecure-tls").tests(whyTestFixture),
	"B310": drop("ssrf", whyURLOpen),
	"B311": drop("weak-random", whyRandom),
	"B312": keep("cleartext-protocol").tests(whyTestFixture),
	"B313": keep("xxe"),
	"B314": keep("xxe"),
	"B315": keep("xxe"),
	"B316": keep("xxe"),
	"B317": keep("xxe"),
	"B318": keep("xxe"),
	"B319": keep("xxe"),
	"B320": keep("xxe"),
	"B321": keep("cleartext-protocol").tests(whyTestFixture),
	"B322": drop("code-injection", whyPy2Input),
	"B323": keep("insecure-tls").tests(whyTestFixture),
	"B324": keep("weak-hash").tests(whyTestHash).onLine(whyHMAC, "hmac"),
	"B325": keep("insecure-temp-file").tests(whyTestFixture),
	"B401": drop("risky-import", whyImport),
	"B402": drop("risky-import", whyImport),
	"B403": drop("risky-import", whyImport),
	"B404": drop("risky-import", whyImport),
	"B405": drop("risky-import", whyImport),
	"B406": drop("risky-import", whyImport),
	"B407": drop("risky-import", whyImport),
	"B408": drop("risky-import", whyImport),
	"B409": drop("risky-import", whyImport),
	"B410": drop("risky-import", whyImport),
	"B411": drop("risky-import", whyImport),
	"B412": drop("risky-import", whyImport),
	"B413": drop("risky-import", whyImport),
	"B501": keep("insecure-tls").tests(whyTestFixture),
	"B502": keep("insecure-tls").tests(whyTestFixture),
	"B503": drop("insecure-tls", whyTLSDefaults),
	"B504": drop("insecure-tls", whyTLSDefaults),
	"B505": keep("weak-key").tests(whyTestFixture),
	"B506": keep("insecure-deserialization"),
	"B507": keep("insecure-tls").tests(whyTestFixture),
	"B601": drop("command-injection", whyParamiko),
	"B602": keep("command-injection").tests(whyTestProcess),
	"B603": drop("process-start", whySubprocess),
	"B604": keep("command-injection").tests(whyTestProcess),
	"B605": keep("command-injection").tests(whyTestProcess),
	"B606": drop("process-start", whySubprocess),
	"B607": drop("process-start", whyPartialPath),
	"B608": keep("sql-injection").tests(whyTestSQL),
	"B609": keep("command-injection").tests(whyTestProcess),
	"B610": keep("sql-injection").tests(whyTestSQL),
	"B611": keep("sql-injection").tests(whyTestSQL),
	"B701": keep("xss").tests(whyTestFixture),
	"B702": drop("xss", whyMako),
	"B703": keep("xss"),
}

// ruffRules: Ruff 0.17 (ruff-wasm-nodejs), every rule settings.json
// selects: flake8-bandit (S, stable rules) plus E722, B012 and PLW1509.
var ruffRules = map[string]RuleClass{
	"S101":    drop("assertion", whyAssert),
	"S102":    keep("code-injection"),
	"S103":    keep("file-permissions").tests(whyTestFixture),
	"S104":    drop("bind-all-interfaces", whyBind),
	"S105":    keep("hardcoded-secret").tests(whyTestSecret),
	"S106":    keep("hardcoded-secret").tests(whyTestSecret),
	"S107":    keep("hardcoded-secret").tests(whyTestSecret),
	"S108":    drop("insecure-temp-file", whyTmpPath),
	"S110":    drop("error-swallowed", whySwallow),
	"S112":    drop("error-swallowed", whySwallow),
	"S113":    drop("resource-exhaustion", whyTimeout),
	"S201":    keep("debug-enabled").tests(whyTestFixture),
	"S202":    keep("path-traversal"),
	"S301":    keep("insecure-deserialization"),
	"S302":    keep("insecure-deserialization"),
	"S303":    keep("weak-hash").tests(whyTestHash).onLine(whyHMAC, "hmac"),
	"S304":    keep("weak-cipher"),
	"S305":    keep("weak-cipher"),
	"S306":    keep("insecure-temp-file").tests(whyTestFixture),
	"S307":    keep("code-injection"),
	"S308":    keep("xss"),
	"S310":    drop("ssrf", whyURLOpen),
	"S311":    drop("weak-random", whyRandom),
	"S312":    keep("cleartext-protocol").tests(whyTestFixture),
	"S313":    keep("xxe"),
	"S314":    keep("xxe"),
	"S315":    keep("xxe"),
	"S316":    keep("xxe"),
	"S317":    keep("xxe"),
	"S318":    keep("xxe"),
	"S319":    keep("xxe"),
	"S321":    keep("cleartext-protocol").tests(whyTestFixture),
	"S323":    keep("insecure-tls").tests(whyTestFixture),
	"S324":    keep("weak-hash").tests(whyTestHash).onLine(whyHMAC, "hmac"),
	"S401":    drop("risky-import", whyImport),
	"S402":    drop("risky-import", whyImport),
	"S403":    drop("risky-import", whyImport),
	"S404":    drop("risky-import", whyImport),
	"S405":    drop("risky-import", whyImport),
	"S406":    drop("risky-import", whyImport),
	"S407":    drop("risky-import", whyImport),
	"S408":    drop("risky-import", whyImport),
	"S409":    drop("risky-import", whyImport),
	"S411":    drop("risky-import", whyImport),
	"S412":    drop("risky-import", whyImport),
	"S413":    drop("risky-import", whyImport),
	"S415":    drop("risky-import", whyImport),
	"S501":    keep("insecure-tls").tests(whyTestFixture),
	"S502":    keep("insecure-tls").tests(whyTestFixture),
	"S503":    drop("insecure-tls", whyTLSDefaults),
	"S504":    drop("insecure-tls", whyTLSDefaults),
	"S505":    keep("weak-key").tests(whyTestFixture),
	"S506":    keep("insecure-deserialization"),
	"S507":    keep("insecure-tls").tests(whyTestFixture),
	"S508":    keep("cleartext-protocol").tests(whyTestFixture),
	"S509":    keep("weak-cipher").tests(whyTestFixture),
	"S601":    drop("command-injection", whyParamiko),
	"S602":    keep("command-injection").tests(whyTestProcess),
	"S603":    drop("process-start", whySubprocess),
	"S604":    keep("command-injection").tests(whyTestProcess),
	"S605":    keep("command-injection").tests(whyTestProcess),
	"S606":    drop("process-start", whySubprocess),
	"S607":    drop("process-start", whyPartialPath),
	"S608":    keep("sql-injection").tests(whyTestSQL),
	"S609":    keep("command-injection").tests(whyTestProcess),
	"S610":    keep("sql-injection").tests(whyTestSQL),
	"S611":    keep("sql-injection").tests(whyTestSQL),
	"S612":    keep("code-injection"),
	"S701":    keep("xss").tests(whyTestFixture),
	"S702":    drop("xss", whyMako),
	"S704":    keep("xss"),
	"E722":    drop("error-swallowed", whyBareExcept),
	"B012":    keep("error-swallowed"),
	"PLW1509": keep("unsafe-preexec-fn"),
}

// gosecRules: gosec 2.30.0, every rule of `gosec -h`.
var gosecRules = map[string]RuleClass{
	"G101": keep("hardcoded-secret").tests(whyTestSecret),
	"G102": drop("bind-all-interfaces", whyBind),
	"G103": drop("memory-safety", whyUnsafe),
	"G104": drop("unchecked-error", whyUnchecked),
	"G106": keep("insecure-tls").tests(whyTestFixture),
	"G107": drop("ssrf", whyURLVar),
	"G108": keep("debug-enabled").tests(whyTestFixture),
	"G109": keep("integer-overflow"),
	"G110": keep("resource-exhaustion").tests(whyTestFixture),
	"G111": keep("path-traversal"),
	"G112": keep("resource-exhaustion").tests(whyTestFixture),
	"G113": keep("request-smuggling"),
	"G114": keep("resource-exhaustion").tests(whyTestFixture),
	"G115": drop("integer-overflow", whyIntConv),
	"G116": keep("hidden-characters"),
	"G117": drop("secret-exposure", whyMarshal),
	"G118": drop("resource-exhaustion", whyContext),
	"G119": keep("secret-exposure").tests(whyTestFixture),
	"G120": keep("resource-exhaustion").tests(whyTestFixture),
	"G121": keep("csrf"),
	"G122": keep("race-condition").tests(whyTestFixture),
	"G123": keep("insecure-tls").tests(whyTestFixture),
	"G124": keep("cookie-flags").tests(whyTestFixture),
	"G125": keep("path-traversal"),
	"G201": keep("sql-injection").tests(whyTestSQL),
	"G202": keep("sql-injection").tests(whyTestSQL),
	"G203": keep("xss"),
	"G204": keep("process-start").tests(whyTestProcess),
	"G301": drop("file-permissions", whyPerm),
	"G302": drop("file-permissions", whyPerm),
	"G303": keep("insecure-temp-file").tests(whyTestFixture),
	"G304": drop("path-traversal", whyFilePath),
	"G305": keep("path-traversal"),
	"G306": drop("file-permissions", whyPerm),
	"G307": drop("file-permissions", whyPerm),
	"G401": keep("weak-hash").tests(whyTestHash).onLine(whyHMAC, "hmac"),
	"G402": keep("insecure-tls").tests(whyTestFixture),
	"G403": keep("weak-key").tests(whyTestFixture),
	"G404": drop("weak-random", whyMathRand),
	"G405": keep("weak-cipher"),
	"G406": keep("weak-hash").tests(whyTestHash).onLine(whyHMAC, "hmac"),
	"G407": keep("weak-cipher"),
	"G408": keep("auth-bypass"),
	"G501": drop("weak-hash", whyWeakHashImp),
	"G502": drop("weak-cipher", whyImport),
	"G503": drop("weak-cipher", whyImport),
	"G504": drop("cleartext-protocol", whyImport),
	"G505": drop("weak-hash", whyWeakHashImp),
	"G506": drop("weak-hash", whyWeakHashImp),
	"G507": drop("weak-hash", whyWeakHashImp),
	"G601": keep("memory-safety"),
	"G602": keep("memory-safety"),
	"G701": keep("sql-injection"),
	"G702": keep("command-injection"),
	"G703": keep("path-traversal"),
	"G704": keep("ssrf"),
	"G705": keep("xss"),
	"G706": keep("log-injection"),
	"G707": keep("header-injection"),
	"G708": keep("template-injection"),
	"G709": keep("insecure-deserialization"),
	"G710": keep("open-redirect"),
}

// eslintRules: the rules rules/eslint/security.config.js turns on
// (eslint-plugin-security 4.1.0's recommended set and six core rules).
var eslintRules = map[string]RuleClass{
	"security/detect-bidi-characters":                keep("hidden-characters"),
	"security/detect-buffer-noassert":                drop("unsafe-language-feature", whyBuffer),
	"security/detect-child-process":                  keep("process-start").tests(whyTestProcess),
	"security/detect-disable-mustache-escape":        keep("xss"),
	"security/detect-invisible-characters":           keep("hidden-characters"),
	"security/detect-eval-with-expression":           keep("code-injection"),
	"security/detect-new-buffer":                     drop("unsafe-language-feature", whyBuffer),
	"security/detect-no-csrf-before-method-override": keep("csrf"),
	"security/detect-non-literal-fs-filename":        drop("path-traversal", whyFilePath),
	"security/detect-non-literal-regexp":             drop("regex-dos", whyNonLitRegexp),
	"security/detect-non-literal-require":            drop("dynamic-module-load", whyNonLitReq),
	"security/detect-object-injection":               drop("dynamic-property-access", whyObjectInj),
	"security/detect-possible-timing-attacks":        drop("timing-attack", whyTiming),
	"security/detect-pseudoRandomBytes":              keep("weak-random").tests(whyTestFixture),
	"security/detect-unsafe-regex":                   keep("regex-dos").tests(whyTestFixture),
	"no-eval":                                        keep("code-injection"),
	"no-implied-eval":                                keep("code-injection"),
	"no-new-func":                                    keep("code-injection"),
	"no-script-url":                                  keep("xss"),
	"no-proto":                                       drop("unsafe-language-feature", whyNoProto),
	"no-caller":                                      drop("unsafe-language-feature", whyNoProto),
}

// astGrepByCWE classifies Quavon's ast-grep rules by the CWE in their
// metadata (astGrepRuleCWE, generated from rules/ast-grep).
var astGrepByCWE = map[string]RuleClass{
	"CWE-22":   keep("path-traversal"),
	"CWE-73":   keep("path-traversal"),
	"CWE-78":   keep("command-injection"),
	"CWE-79":   keep("xss"),
	"CWE-88":   keep("argument-injection"),
	"CWE-89":   keep("sql-injection"),
	"CWE-90":   keep("ldap-injection"),
	"CWE-94":   keep("code-injection"),
	"CWE-95":   keep("code-injection"),
	"CWE-295":  keep("insecure-tls").tests(whyTestFixture),
	"CWE-328":  keep("weak-hash").tests(whyTestHash).onLine(whyHMAC, "hmac"),
	"CWE-338":  keep("weak-random").tests(whyTestFixture),
	"CWE-346":  keep("origin-not-checked"),
	"CWE-347":  keep("jwt-unverified").tests(whyTestFixture),
	"CWE-352":  keep("csrf").tests(whyTestFixture),
	"CWE-377":  keep("insecure-temp-file").tests(whyTestFixture),
	"CWE-470":  keep("unsafe-reflection"),
	"CWE-489":  keep("debug-enabled").tests(whyTestFixture),
	"CWE-502":  keep("insecure-deserialization"),
	"CWE-601":  keep("open-redirect"),
	"CWE-611":  keep("xxe"),
	"CWE-614":  keep("cookie-flags").tests(whyTestFixture),
	"CWE-643":  keep("xpath-injection"),
	"CWE-704":  keep("nan-injection"),
	"CWE-798":  keep("hardcoded-secret").tests(whyTestSecret),
	"CWE-829":  keep("code-injection"),
	"CWE-918":  keep("ssrf"),
	"CWE-942":  keep("cors-misconfiguration"),
	"CWE-943":  keep("nosql-injection"),
	"CWE-1321": keep("prototype-pollution"),
	"CWE-1333": keep("regex-dos"),
	"CWE-1336": keep("template-injection"),
}

// gitleaksRule is every gitleaks rule: each one matches a credential by
// its format or its entropy, so it looks real, and stays reported in
// tests too.
var gitleaksRule = keep("hardcoded-secret")

// Classify returns the class of tool's rule; false for a rule the tables
// do not know (a finding of it keeps the tool's severity and no weakness).
func Classify(tool Tool, rule string) (RuleClass, bool) {
	var rc RuleClass
	var ok bool
	switch tool {
	case ToolBandit:
		rc, ok = banditRules[rule]
	case ToolRuff:
		rc, ok = ruffRules[rule]
	case ToolGosec:
		rc, ok = gosecRules[rule]
	case ToolESLint:
		rc, ok = eslintRules[rule]
	case ToolASTGrep:
		var cwe string
		if cwe, ok = astGrepRuleCWE[rule]; ok {
			rc, ok = astGrepByCWE[cwe]
		}
	case ToolGitleaks:
		if ok = slices.Contains(gitleaksRuleIDs, rule); ok {
			rc = gitleaksRule
		}
	}
	if !ok {
		return RuleClass{}, false
	}
	rc.Tool, rc.Rule = tool, rule
	return rc, true
}

// KnownRule reports whether rule is one tool can emit (in Quavon's
// configuration of the scanners image).
func KnownRule(tool Tool, rule string) bool {
	_, ok := Classify(tool, rule)
	return ok
}

// Rules returns the class of every known rule, by tool (scanner table
// order) and rule.
func Rules() []RuleClass {
	var out []RuleClass
	for _, t := range Tools {
		var ids []string
		switch t {
		case ToolBandit:
			ids = keys(banditRules)
		case ToolRuff:
			ids = keys(ruffRules)
		case ToolGosec:
			ids = keys(gosecRules)
		case ToolESLint:
			ids = keys(eslintRules)
		case ToolASTGrep:
			ids = keys(astGrepRuleCWE)
		case ToolGitleaks:
			ids = slices.Clone(gitleaksRuleIDs)
		}
		slices.Sort(ids)
		for _, id := range ids {
			rc, _ := Classify(t, id)
			out = append(out, rc)
		}
	}
	return out
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, cmp.Compare)
	return out
}
