package sast

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Finding is one normalised result of a scanner. Every text field is
// untrusted: it comes from a tool that read the pull request's files.
type Finding struct {
	Tool Tool `json:"tool"`
	// RuleID is the tool's rule identifier (B602, G402, no-eval …).
	RuleID string `json:"ruleId"`
	// RuleName is the tool's human name of the rule, when it has one.
	RuleName string   `json:"ruleName,omitempty"`
	Severity Severity `json:"severity"`
	// Path is relative to the source root, slash-separated and clean.
	Path string `json:"path"`
	// StartLine and EndLine are 1-based and inclusive.
	StartLine int `json:"startLine"`
	EndLine   int `json:"endLine"`
	// StartColumn is 1-based; EndColumn is 1-based and exclusive (the
	// column after the region's last character), as in SARIF. 0 = unknown.
	StartColumn int `json:"startColumn,omitempty"`
	EndColumn   int `json:"endColumn,omitempty"`
	// Message is the tool's text (untrusted), sanitised and clipped.
	Message string `json:"message"`
	// HelpURI is an http(s) link to the rule's documentation.
	HelpURI string `json:"helpUri,omitempty"`
	// CWE is "CWE-<n>" when the tool names one.
	CWE string `json:"cwe,omitempty"`
	// Fingerprint is set by Normalise (see fingerprint).
	Fingerprint string `json:"fingerprint,omitempty"`
	// Unmapped says why the tool's line numbers could not be mapped onto
	// the file's lines (lines.go); the lines are then the tool's own and
	// the finding is kept whatever the change.
	Unmapped string `json:"unmappedLines,omitempty"`
	// Weakness is the rule's weakness (rules.go); Severity is then the
	// weakness's. "" for a rule the tables do not know, which keeps the
	// tool's severity.
	Weakness WeaknessID `json:"weakness,omitempty"`
	// hint, when set, is why the tool itself says this occurrence is
	// harmless (a constant command): the review profile leaves it out.
	hint string
}

// Parsed is what one tool's report holds.
type Parsed struct {
	Findings []Finding
	// ToolErrors are the tool's own error reports (a file it could not
	// parse) and entries the parser dropped as invalid; untrusted text.
	ToolErrors []string
	// FileErrors maps each file the tool reported an error for (so did
	// not fully scan) to its first error, sanitised.
	FileErrors map[string]string
}

// Caps on untrusted tool output.
const (
	// MaxReportBytes is the largest raw report Parse accepts.
	MaxReportBytes = 32 << 20
	// MaxParsedFindings is how many findings Parse keeps from one report.
	MaxParsedFindings = 100_000
	// MaxMessageBytes clips Finding.Message.
	MaxMessageBytes = 2 << 10
	// MaxRuleBytes clips RuleID and RuleName.
	MaxRuleBytes = 256
	// MaxPathBytes is the longest path accepted (longer ones are dropped,
	// never clipped: a clipped path names another file).
	MaxPathBytes = 4 << 10
	// MaxURIBytes is the longest HelpURI kept.
	MaxURIBytes = 1 << 10
	// MaxToolErrors is how many tool errors one report contributes.
	MaxToolErrors = 50
	// MaxToolErrorBytes clips each tool error.
	MaxToolErrorBytes = 512
	// maxLine bounds line and column numbers, so that ±context cannot
	// overflow and no tool can claim absurd positions.
	maxLine = 1 << 30
)

var severityRank = map[Severity]int{
	SeverityCritical: 0, SeverityHigh: 1, SeverityMedium: 2, SeverityLow: 3, SeverityInfo: 4,
}

// Valid reports whether s is one of the five severities.
func (s Severity) Valid() bool { _, ok := severityRank[s]; return ok }

// Validate reports why f is not a finding Parse may return, or nil.
func (f Finding) Validate() error {
	if !f.Tool.known() {
		return fmt.Errorf("unknown tool %q", f.Tool)
	}
	return f.validateFields()
}

// validateFields is Validate without the tool, which the parsers know (and
// which would make the scanner table depend on itself).
func (f Finding) validateFields() error {
	switch {
	case !f.Severity.Valid():
		return fmt.Errorf("unknown severity %q", f.Severity)
	case f.RuleID == "" || len(f.RuleID) > MaxRuleBytes || len(f.RuleName) > MaxRuleBytes:
		return errors.New("rule id empty or too long")
	case len(f.Message) > MaxMessageBytes:
		return errors.New("message too long")
	case len(f.HelpURI) > MaxURIBytes:
		return errors.New("help URI too long")
	case f.StartLine < 1 || f.EndLine < f.StartLine || f.EndLine > maxLine:
		return fmt.Errorf("bad lines %d-%d", f.StartLine, f.EndLine)
	case f.StartColumn < 0 || f.EndColumn < 0 || f.StartColumn > maxLine || f.EndColumn > maxLine:
		return errors.New("bad columns")
	}
	if p, err := cleanRelPath(f.Path); err != nil || p != f.Path {
		return fmt.Errorf("bad path %q", f.Path)
	}
	for _, s := range []string{f.RuleID, f.RuleName, f.Message, f.HelpURI, f.CWE, f.Unmapped} {
		if !utf8.ValidString(s) || strings.ContainsFunc(s, isStripped) {
			return errors.New("invalid text")
		}
	}
	return nil
}

// errPath is the error for a path that is not a clean relative path
// beneath the root.
var errPath = errors.New("path is not a clean relative path beneath the root")

// cleanRelPath accepts a relative, slash-separated path that path.Clean
// leaves as it is (an optional leading "./" is removed first, as bandit
// writes one) and that neither is "." nor climbs out with "..".
func cleanRelPath(p string) (string, error) {
	p = strings.TrimPrefix(p, "./")
	if p == "" || len(p) > MaxPathBytes || strings.ContainsRune(p, 0) || !utf8.ValidString(p) ||
		strings.HasPrefix(p, "/") || p == "." || p == ".." || strings.HasPrefix(p, "../") ||
		path.Clean(p) != p {
		return "", errPath
	}
	return p, nil
}

// relPath turns a tool's path into one relative to root: an absolute path
// must lie beneath root (which is cleaned first), a relative one is taken
// as relative to root (the tools run from it).
func relPath(p, root string) (string, error) {
	if strings.HasPrefix(p, "/") {
		root = path.Clean(root)
		if !strings.HasPrefix(root, "/") {
			return "", errPath
		}
		prefix := strings.TrimSuffix(root, "/") + "/"
		if !strings.HasPrefix(p, prefix) {
			return "", errPath
		}
		p = p[len(prefix):]
	}
	return cleanRelPath(p)
}

// isStripped reports whether r is removed from untrusted text: control
// characters, and the bidirectional formatting characters that can make
// text display differently from what it says.
func isStripped(r rune) bool {
	switch {
	case unicode.IsControl(r):
		return true
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069, r == 0x200E, r == 0x200F, r == 0x061C:
		return true
	}
	return false
}

// sanitise makes untrusted text safe to store and show: invalid UTF-8
// becomes U+FFFD, control and bidi characters become spaces, runs of
// spaces collapse, and the result is clipped to max bytes on a rune
// boundary.
func sanitise(s string, max int) string {
	if len(s) > 4*max+16 { // bound the work on hostile input
		s = s[:4*max+16]
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if isStripped(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	return clip(s, max)
}

// clip cuts s to at most max bytes without splitting a rune.
func clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// helpURI keeps u if it is an absolute http(s) URL of sane length.
func helpURI(u string) string {
	if u == "" || len(u) > MaxURIBytes || !utf8.ValidString(u) || strings.ContainsFunc(u, func(r rune) bool {
		return isStripped(r) || unicode.IsSpace(r)
	}) {
		return ""
	}
	pu, err := url.Parse(u)
	if err != nil || (pu.Scheme != "https" && pu.Scheme != "http") || pu.Host == "" {
		return ""
	}
	return u
}

// cweID formats a CWE number ("78", 78, "CWE-78") as "CWE-78"; "" when
// it is not one.
func cweID(s string) string {
	s = strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(s), "CWE-"), "cwe-")
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > 100000 {
		return ""
	}
	return "CWE-" + strconv.Itoa(n)
}

// collector gathers one report's findings and tool errors under the caps.
type collector struct {
	tool Tool
	root string
	// resolve, when set, maps a path relative to root (a neutral name) to
	// the file it stands for.
	resolve func(string) (string, bool)
	out     Parsed
	// dropped counts tool errors beyond MaxToolErrors.
	dropped int
	full    bool
}

// toolError records a tool error (sanitised, capped).
func (c *collector) toolError(format string, args ...any) {
	if len(c.out.ToolErrors) >= MaxToolErrors {
		c.dropped++
		return
	}
	c.out.ToolErrors = append(c.out.ToolErrors, sanitise(fmt.Sprintf(format, args...), MaxToolErrorBytes))
}

// path turns a tool's path into the file it names.
func (c *collector) path(raw string) (string, error) {
	p, err := relPath(raw, c.root)
	if err != nil || c.resolve == nil {
		return p, err
	}
	if p, ok := c.resolve(p); ok {
		return p, nil
	}
	return "", errPath
}

// fileError records a tool's error about one file (line and column 0
// when it gave none): a tool error, and that file was not fully scanned.
func (c *collector) fileError(rawPath string, line, col int, msg string) {
	p, err := c.path(rawPath)
	if err != nil {
		p = "(path outside the source root)"
	}
	text := fmt.Sprintf("%s: %s", p, msg)
	if line != 0 || col != 0 {
		text = fmt.Sprintf("%s:%d:%d: %s", p, line, col, msg)
	}
	c.toolError("%s", text)
	if err != nil {
		return
	}
	if c.out.FileErrors == nil {
		c.out.FileErrors = map[string]string{}
	}
	if _, ok := c.out.FileErrors[p]; !ok && len(c.out.FileErrors) < MaxParsedFindings {
		c.out.FileErrors[p] = sanitise(msg, MaxToolErrorBytes)
	}
}

// add sanitises f, checks it and keeps it; an invalid finding becomes a
// tool error. It reports false once MaxParsedFindings are kept.
func (c *collector) add(f Finding, rawPath string) bool {
	if c.full {
		return false
	}
	f.Tool = c.tool
	p, err := c.path(rawPath)
	if err != nil {
		c.toolError("%s: finding dropped: path %q is not beneath the source root", c.tool, clip(rawPath, 200))
		return true
	}
	f.Path = p
	f.RuleID = sanitise(f.RuleID, MaxRuleBytes)
	f.RuleName = sanitise(f.RuleName, MaxRuleBytes)
	f.Message = sanitise(f.Message, MaxMessageBytes)
	f.HelpURI = helpURI(f.HelpURI)
	f.CWE = cweID(f.CWE)
	if f.EndLine < f.StartLine {
		f.EndLine = f.StartLine
	}
	if f.StartColumn < 0 || f.StartColumn > maxLine {
		f.StartColumn = 0
	}
	if f.EndColumn < 0 || f.EndColumn > maxLine || f.StartColumn == 0 ||
		(f.EndLine == f.StartLine && f.EndColumn <= f.StartColumn) {
		f.EndColumn = 0
	}
	if err := f.validateFields(); err != nil {
		c.toolError("%s: finding dropped in %s: %v", c.tool, p, err)
		return true
	}
	classify(&f)
	if len(c.out.Findings) >= MaxParsedFindings {
		c.full = true
		c.toolError("%s: more than %d findings; the rest were ignored", c.tool, MaxParsedFindings)
		return false
	}
	c.out.Findings = append(c.out.Findings, f)
	return true
}

func (c *collector) result() Parsed {
	if c.dropped > 0 {
		c.out.ToolErrors = append(c.out.ToolErrors, fmt.Sprintf("%d more tool errors not shown", c.dropped))
	}
	return c.out
}

// classify gives f its rule's weakness and the weakness's severity (and
// CWE when the tool named none), and notes when the tool's own message
// says the occurrence is a constant command.
func classify(f *Finding) {
	rc, ok := Classify(f.Tool, f.RuleID)
	if !ok {
		return
	}
	w, _ := WeaknessOf(rc.Weakness)
	f.Weakness, f.Severity = w.ID, w.Severity
	if cwe := astGrepRuleCWE[f.RuleID]; f.CWE == "" && f.Tool == ToolASTGrep {
		f.CWE = cwe
	} else if f.CWE == "" {
		f.CWE = w.CWE
	}
	switch {
	case (f.Tool == ToolBandit || f.Tool == ToolRuff) && rc.Weakness == "command-injection" &&
		strings.Contains(f.Message, "seems safe"):
		f.hint = string(f.Tool) + " says the command is a constant"
	case f.Tool == ToolESLint && f.RuleID == "security/detect-child-process" && strings.Contains(f.Message, "require("):
		f.hint = "requiring child_process is not a defect; calls with a non-literal command are reported"
	}
}
