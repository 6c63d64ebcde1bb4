package policy

import (
	"github.com/quavon/quavon/internal/hostname"

	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/quavon/quavon/internal/sast"
	"github.com/quavon/quavon/internal/secret"
)

// Code is a stable, machine-readable reason of a [FieldError]. API clients
// branch on it; never rename one.
type Code string

// Field error codes.
const (
	CodeInvalidJSON    Code = "invalid_json"    // not UTF-8, syntax error, trailing data
	CodeTooLarge       Code = "too_large"       // document over MaxDocumentBytes
	CodeTooDeep        Code = "too_deep"        // nesting over MaxDepth
	CodeUnknownField   Code = "unknown_field"   // key not in the schema (exact, case-sensitive)
	CodeDuplicateKey   Code = "duplicate_key"   // the same key twice in one object
	CodeInvalidType    Code = "invalid_type"    // wrong JSON type, null, non-integer number
	CodeRequired       Code = "required"        // a value is needed here
	CodeInvalidEnum    Code = "invalid_enum"    // not one of the allowed values
	CodeOutOfRange     Code = "out_of_range"    // number outside its bounds
	CodeTooLong        Code = "too_long"        // string over its byte or character limit
	CodeTooMany        Code = "too_many"        // list over its entry limit
	CodeDuplicate      Code = "duplicate"       // the same list entry twice
	CodeInvalidLabel   Code = "invalid_label"   // label not printable or padded with spaces
	CodeInvalidCommand Code = "invalid_command" // control or bidi characters, blank
	CodeSecret         Code = "secret"          // a command holds something that looks like a credential
	CodeInvalidHost    Code = "invalid_host"    // not a lowercase fully qualified host name
	CodeInvalidPattern Code = "invalid_pattern" // not a path pattern of the documented syntax
	CodeConflict       Code = "conflict"        // contradicts another field
)

// FieldError is one problem with one field of a policy document.
type FieldError struct {
	// Path is a JSON pointer (RFC 6901) to the field, "" for the document.
	Path    string `json:"path"`
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

func (e FieldError) Error() string {
	p := e.Path
	if p == "" {
		p = "(document)"
	}
	return fmt.Sprintf("%s: %s: %s", p, e.Code, e.Message)
}

// ValidationError is what [Parse] and [Marshal] return for a document or
// policy they refuse. Match it with errors.As.
type ValidationError struct {
	Errors []FieldError
}

func (e *ValidationError) Error() string {
	const show = 3
	var b strings.Builder
	fmt.Fprintf(&b, "policy: %d invalid field(s): ", len(e.Errors))
	for i, fe := range e.Errors[:min(show, len(e.Errors))] {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(fe.Error())
	}
	if len(e.Errors) > show {
		b.WriteString("; …")
	}
	return b.String()
}

// Bounds of the schema.
const (
	MaxCommandBytes = 4096 // as the sandbox job contract
	MaxLabels       = 20
	MaxLabelChars   = 50
	MaxRegistries   = 16 // as the sandbox job contract's egress hosts
	MaxPatterns     = 100
	// MaxDisabledRules caps features.sast.disabledRules.
	MaxDisabledRules = 200
	MaxPatternBytes  = 512
	// MaxInstructionsBytes caps features.review.instructions.
	MaxInstructionsBytes = 4096
	MaxSkipAuthors       = 100
)

// intRange bounds one integer field.
type intRange struct{ min, max int64 }

var (
	rangeRunsPerIssuePerDay = intRange{1, 20}
	rangeRunsPerDay         = intRange{1, 500}
	rangeMaxSteps           = intRange{1, 100}
	rangeMaxSandboxRuns     = intRange{1, 20}
	rangeRunWallClock       = intRange{60, 3600}
	rangeMaxFiles           = intRange{1, 100}
	rangeMaxChangedLines    = intRange{1, 5000}
	rangeCPUMillis          = intRange{100, 16_000}
	rangeMemoryBytes        = intRange{64 << 20, 16 << 30}
	rangeWallClock          = intRange{10, 3600}
	rangeSetup              = intRange{1, 3600}
	rangeContextLines       = intRange{0, 1000}
	rangeMaxFindings        = intRange{1, 25_000}
	rangeReviewMaxFindings  = intRange{1, 100}
)

type checker struct{ errs []FieldError }

func (c *checker) add(p string, code Code, format string, args ...any) {
	c.errs = append(c.errs, FieldError{Path: p, Code: code, Message: fmt.Sprintf(format, args...)})
}

func (c *checker) rng(p string, v int64, r intRange) {
	if v < r.min || v > r.max {
		c.add(p, CodeOutOfRange, "want %d..%d", r.min, r.max)
	}
}

func enum[T ~string](c *checker, p string, v T, allowed ...T) {
	for _, a := range allowed {
		if v == a {
			return
		}
	}
	want := make([]string, len(allowed))
	for i, a := range allowed {
		want[i] = strconv.Quote(string(a))
	}
	c.add(p, CodeInvalidEnum, "want one of %s", strings.Join(want, ", "))
}

// Validate reports every problem with p, in schema order. A policy is
// valid when the result is empty.
func (p Policy) Validate() []FieldError {
	var c checker
	if p.Version != SchemaVersion {
		c.add("/version", CodeInvalidEnum, "want %d", SchemaVersion)
	}
	c.review("/features/review", p.Features.Review)
	c.fix("/features/fix", p.Features.Fix)
	c.sast("/features/sast", p.Features.SAST)
	enum(&c, "/features/acceptance/mode", p.Features.Acceptance.Mode, ModeOff, ModeShadow, ModeOn)
	return c.errs
}

func (c *checker) fix(base string, f Fix) {
	enum(c, base+"/mode", f.Mode, FixOff, FixApproval, FixAuto)

	list(c, base+"/triggerLabels", f.TriggerLabels, MaxLabels, strings.ToLower, c.label)

	c.command(base+"/setupCommand", f.SetupCommand)
	c.command(base+"/testCommand", f.TestCommand)
	c.command(base+"/lintCommand", f.LintCommand)

	enum(c, base+"/egress", f.Egress, EgressNone, EgressRegistries)
	list(c, base+"/registries", f.Registries, MaxRegistries, nil, func(p, h string) {
		if err := hostname.Validate(h); err != nil {
			c.add(p, CodeInvalidHost, "%v", err)
		}
	})
	switch {
	case f.Egress == EgressNone && len(f.Registries) > 0:
		c.add(base+"/registries", CodeConflict, "registries apply only with egress %q", EgressRegistries)
	case f.Egress == EgressRegistries:
		if len(f.Registries) == 0 {
			c.add(base+"/registries", CodeRequired, "egress %q needs at least one registry", EgressRegistries)
		}
		if f.SetupCommand == "" {
			c.add(base+"/setupCommand", CodeRequired, "egress %q applies only to the setup step; set a setupCommand", EgressRegistries)
		}
	}

	list(c, base+"/deniedPaths", f.DeniedPaths, MaxPatterns, strings.ToLower, c.pattern)
	list(c, base+"/allowedPaths", f.AllowedPaths, MaxPatterns, strings.ToLower, c.pattern)

	enum(c, base+"/reviewFixes", f.ReviewFixes, ReviewFixesOff, ReviewFixesStackedPR, ReviewFixesCommit)
	c.rng(base+"/maxRunsPerIssuePerDay", int64(f.MaxRunsPerIssuePerDay), rangeRunsPerIssuePerDay)
	c.rng(base+"/maxRunsPerDay", int64(f.MaxRunsPerDay), rangeRunsPerDay)

	l, lb := f.Limits, base+"/limits"
	c.rng(lb+"/maxSteps", int64(l.MaxSteps), rangeMaxSteps)
	c.rng(lb+"/maxSandboxRuns", int64(l.MaxSandboxRuns), rangeMaxSandboxRuns)
	c.rng(lb+"/runWallClockSeconds", l.RunWallClockSeconds, rangeRunWallClock)
	c.rng(lb+"/maxFiles", int64(l.MaxFiles), rangeMaxFiles)
	c.rng(lb+"/maxChangedLines", int64(l.MaxChangedLines), rangeMaxChangedLines)
	c.rng(lb+"/cpuMillis", l.CPUMillis, rangeCPUMillis)
	c.rng(lb+"/memoryBytes", l.MemoryBytes, rangeMemoryBytes)
	c.rng(lb+"/wallClockSeconds", l.WallClockSeconds, rangeWallClock)
	c.rng(lb+"/setupSeconds", l.SetupSeconds, rangeSetup)
	if l.SetupSeconds > l.WallClockSeconds {
		c.add(lb+"/setupSeconds", CodeConflict, "setupSeconds exceeds wallClockSeconds")
	}
}

func (c *checker) review(base string, r Review) {
	enum(c, base+"/mode", r.Mode, ModeOff, ModeShadow, ModeOn)
	list(c, base+"/skipAuthors", r.SkipAuthors, MaxSkipAuthors, strings.ToLower, func(p, login string) {
		if !loginRE.MatchString(login) {
			c.add(p, CodeInvalidEnum, "want a GitHub login (letters, digits, -, optionally ending in [bot])")
		}
	})
	list(c, base+"/pathFilters", r.PathFilters, MaxPatterns, strings.ToLower, c.pattern)
	switch {
	case len(r.Instructions) > MaxInstructionsBytes:
		c.add(base+"/instructions", CodeTooLong, "want at most %d bytes", MaxInstructionsBytes)
	case strings.ContainsFunc(r.Instructions, func(ch rune) bool {
		return (unicode.IsControl(ch) && ch != '\n' && ch != '\t') || isBidiControl(ch)
	}):
		c.add(base+"/instructions", CodeInvalidCommand, "control or bidirectional characters")
	}
	c.rng(base+"/maxFindings", int64(r.MaxFindings), rangeReviewMaxFindings)
	enum(c, base+"/minSeverity", r.MinSeverity, sast.SeverityCritical, sast.SeverityHigh, sast.SeverityMedium,
		sast.SeverityLow, sast.SeverityInfo)
}

// loginRE is a GitHub login, or an app's bot login.
var loginRE = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(\[bot\])?$`)

func (c *checker) sast(base string, s SAST) {
	enum(c, base+"/mode", s.Mode, ModeOff, ModeShadow, ModeOn)
	if len(s.Scanners) == 0 {
		c.add(base+"/scanners", CodeRequired, "want at least one scanner; set mode %q to disable scanning", ModeOff)
	}
	list(c, base+"/scanners", s.Scanners, len(sast.Tools), nil, func(p string, t sast.Tool) {
		enum(c, p, t, sast.Tools...)
	})
	c.rng(base+"/contextLines", int64(s.ContextLines), rangeContextLines)
	c.rng(base+"/maxFindings", int64(s.MaxFindings), rangeMaxFindings)
	enum(c, base+"/profile", s.Profile, sast.Profiles...)
	list(c, base+"/disabledRules", s.DisabledRules, MaxDisabledRules, nil, func(p, r string) {
		if !sast.KnownRuleName(r) {
			c.add(p, CodeInvalidEnum, "want tool:rule naming a rule the scanners can emit (rules/README.md)")
		}
	})
	list(c, base+"/testPaths", s.TestPaths, MaxPatterns, strings.ToLower, c.pattern)
	list(c, base+"/byo", s.BYO, sast.MaxBYOScanners, nil, func(p, name string) {
		if !sast.ValidBYOName(name) {
			c.add(p, CodeInvalidEnum, "want the name of a byo image of the instance's lockfile ([a-z0-9][a-z0-9._-], at most 63)")
		}
	})
}

// list checks the length of vs, each entry with item and duplicates under
// key (identity when nil).
func list[T ~string](c *checker, p string, vs []T, max int, key func(string) string, item func(string, T)) {
	if len(vs) > max {
		c.add(p, CodeTooMany, "want at most %d entries", max)
		return
	}
	seen := make(map[string]bool, len(vs))
	for i, v := range vs {
		ip := p + "/" + strconv.Itoa(i)
		k := string(v)
		if key != nil {
			k = key(k)
		}
		if seen[k] {
			c.add(ip, CodeDuplicate, "listed before")
			continue
		}
		seen[k] = true
		item(ip, v)
	}
}

func (c *checker) label(p, l string) {
	n := utf8.RuneCountInString(l)
	switch {
	case n == 0:
		c.add(p, CodeRequired, "want a label of 1..%d characters", MaxLabelChars)
	case n > MaxLabelChars:
		c.add(p, CodeTooLong, "want at most %d characters", MaxLabelChars)
	case !printable(l) || strings.TrimSpace(l) != l:
		c.add(p, CodeInvalidLabel, "want printable characters without leading or trailing spaces")
	}
}

// command applies the sandbox job contract's rule for commands (UTF-8,
// no NUL, at most MaxCommandBytes; internal/sandbox keeps it unexported)
// and is stricter: no control characters but tab and newline, no bidi
// controls (what the dashboard shows is what runs), not blank, and nothing
// that looks like a credential (the command is stored, audited and visible
// to repository code in the sandbox). The empty string means no command.
// Messages never echo the command.
func (c *checker) command(p, cmd string) {
	if cmd == "" {
		return
	}
	if len(cmd) > MaxCommandBytes {
		c.add(p, CodeTooLong, "want at most %d bytes", MaxCommandBytes)
		return
	}
	if !utf8.ValidString(cmd) {
		c.add(p, CodeInvalidCommand, "want UTF-8")
		return
	}
	for _, r := range cmd {
		if r == '\t' || r == '\n' {
			continue
		}
		if unicode.IsControl(r) || isBidiControl(r) {
			c.add(p, CodeInvalidCommand, "want no control characters other than tab and newline, no bidirectional controls")
			return
		}
	}
	if strings.TrimSpace(cmd) == "" {
		c.add(p, CodeInvalidCommand, "blank; leave it empty for no command")
		return
	}
	if secret.Contains(cmd) {
		c.add(p, CodeSecret, "looks like it holds a credential; the sandbox gets no secrets")
	}
}

func isBidiControl(r rune) bool {
	return r == '\u061c' || r == '\u200e' || r == '\u200f' ||
		('\u202a' <= r && r <= '\u202e') || ('\u2066' <= r && r <= '\u2069')
}

func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) || isBidiControl(r) {
			return false
		}
	}
	return true
}

func (c *checker) pattern(p, pat string) {
	if len(pat) > MaxPatternBytes {
		c.add(p, CodeTooLong, "want at most %d bytes", MaxPatternBytes)
		return
	}
	if err := validPattern(pat); err != "" {
		c.add(p, CodeInvalidPattern, "%s", err)
	}
}

// validPattern returns why pat is not a path pattern, or "".
func validPattern(pat string) string {
	switch {
	case pat == "":
		return "empty"
	case !printable(pat):
		return "want printable characters"
	case strings.HasPrefix(pat, "/"):
		return "want a path relative to the repository root, without a leading /"
	case strings.HasSuffix(pat, "/"):
		return "want no trailing /; use dir/** for a directory"
	case strings.ContainsAny(pat, `\[]{}`):
		return `only *, ** and ? are special; \ [ ] { } are not allowed`
	}
	for seg := range strings.SplitSeq(pat, "/") {
		switch {
		case seg == "":
			return "want no empty segment (//)"
		case seg == "." || seg == "..":
			return "want no . or .. segment"
		case seg != "**" && strings.Contains(seg, "**"):
			return "** must be a whole segment"
		}
	}
	return ""
}

// MatchPath reports whether the repository path name matches the policy
// path pattern pat (the syntax of deniedPaths and allowedPaths, see the
// package doc). Matching is case-insensitive, as for the built-in
// off-limits paths; the caller normalises name first (POSIX separators, no
// leading /, no . or .. segments). A pattern that fails validation matches
// nothing; an effective policy never holds one.
func MatchPath(pat, name string) bool {
	if len(pat) > MaxPatternBytes || validPattern(pat) != "" {
		return false
	}
	return matchSegments(strings.Split(strings.ToLower(pat), "/"), strings.Split(strings.ToLower(name), "/"))
}

// matchSegments matches segment by segment; ** matches zero or more
// segments. Dynamic programming over (pattern, name) suffixes keeps it
// O(len(pat)·len(name)) however many ** a pattern holds.
func matchSegments(pat, name []string) bool {
	next := make([]bool, len(name)+1) // pat[len(pat):] matches only the empty suffix
	next[len(name)] = true
	for i := len(pat) - 1; i >= 0; i-- {
		cur := make([]bool, len(name)+1)
		for j := len(name); j >= 0; j-- {
			switch {
			case pat[i] == "**":
				cur[j] = next[j] || (j < len(name) && cur[j+1])
			case j < len(name):
				// Validated patterns hold no \ or [, so path.Match sees only * and ?.
				ok, err := path.Match(pat[i], name[j])
				cur[j] = err == nil && ok && next[j+1]
			}
		}
		next = cur
	}
	return next[0]
}
