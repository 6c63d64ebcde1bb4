package sast

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// ErrReportTooLarge is returned by Parse for a report over MaxReportBytes.
var ErrReportTooLarge = errors.New("sast: report too large")

// Parse reads tool's raw JSON report. root is the source root the tool
// ran in (Manifest.Root): absolute paths must lie beneath it and are made
// relative; a finding whose path is anything but a clean relative path
// beneath root is dropped and reported in ToolErrors, as is any finding
// with impossible lines or an unknown severity.
//
// Malformed JSON (a tool that crashed mid-write, an empty file where the
// tool always writes a document) is an error: the caller marks the tool
// failed. Unknown fields are ignored.
//
// Severity mapping, from each tool's own scale:
//
//	ast-grep  error → high, warning → medium, info → low, hint → info
//	gitleaks  every finding → high (a secret in the change)
//	bandit    HIGH → high, MEDIUM → medium, LOW → low, UNDEFINED → info
//	gosec     HIGH → high, MEDIUM → medium, LOW → low
//	ESLint    2 (error) → medium, 1 (warning) → low
//	Ruff      S rules that bandit rates HIGH (S324, S501, S502, S507,
//	          S602, S701) → high, other S rules → medium, others → low
//
// Confidence (bandit, gosec) is not folded in: Quavon's configs decide
// which rules run.
func Parse(tool Tool, raw []byte, root string) (Parsed, error) {
	if len(raw) > MaxReportBytes {
		return Parsed{}, fmt.Errorf("sast.Parse %s: %w (%d bytes)", tool, ErrReportTooLarge, len(raw))
	}
	c := &collector{tool: tool, root: root}
	var err error
	switch tool {
	case ToolASTGrep:
		err = parseASTGrep(c, raw)
	case ToolGitleaks:
		err = parseGitleaks(c, raw)
	case ToolBandit:
		err = parseBandit(c, raw)
	case ToolGosec:
		err = parseGosec(c, raw)
	case ToolESLint:
		err = parseESLint(c, raw)
	case ToolRuff:
		err = parseRuff(c, raw)
	default:
		return Parsed{}, fmt.Errorf("sast.Parse: unknown tool %q", tool)
	}
	if err != nil {
		return Parsed{}, fmt.Errorf("sast.Parse %s: %w", tool, err)
	}
	return c.result(), nil
}

// decodeStrict decodes exactly one JSON document from raw into v; trailing
// data (two documents, garbage after a crash) is an error.
func decodeStrict(raw []byte, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return errors.New("empty report")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("malformed JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("malformed JSON: data after the document")
	}
	return nil
}

// decodeArray decodes a top-level JSON array element by element, calling
// fn for each until fn returns false; the rest is still checked to be
// well-formed JSON (json.RawMessage, not decoded).
func decodeArray(raw []byte, fn func(json.RawMessage) (bool, error)) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return errors.New("empty report")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("malformed JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return errors.New("malformed JSON: report is not an array")
	}
	more := true
	for dec.More() {
		var el json.RawMessage
		if err := dec.Decode(&el); err != nil {
			return fmt.Errorf("malformed JSON: %w", err)
		}
		if !more {
			continue
		}
		if more, err = fn(el); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("malformed JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("malformed JSON: data after the document")
	}
	return nil
}

// lineCol is a line or column number that a tool writes as a JSON number
// or string ("12", or a range "12-14" in gosec's line).
type lineCol struct{ start, end int }

func (l *lineCol) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	} else {
		s = string(b)
	}
	a, z, isRange := strings.Cut(strings.TrimSpace(s), "-")
	start, err := strconv.Atoi(a)
	if err != nil {
		return fmt.Errorf("bad position %q", clip(s, 40))
	}
	end := start
	if isRange {
		if end, err = strconv.Atoi(z); err != nil {
			return fmt.Errorf("bad position %q", clip(s, 40))
		}
	}
	l.start, l.end = start, end
	return nil
}

// ---------------------------------------------------------------- ast-grep

type astGrepPos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

type astGrepMatch struct {
	RuleID   string `json:"ruleId"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
	File     string `json:"file"`
	URL      string `json:"url"`
	Range    struct {
		Start astGrepPos `json:"start"`
		End   astGrepPos `json:"end"`
	} `json:"range"`
	// Metadata is only in the output with --include-metadata; Quavon's
	// rules carry cwe: "CWE-n" there.
	Metadata struct {
		CWE json.RawMessage `json:"cwe"`
	} `json:"metadata"`
}

var astGrepSeverity = map[string]Severity{
	"error": SeverityHigh, "warning": SeverityMedium, "info": SeverityLow, "hint": SeverityInfo,
}

// parseASTGrep reads `--json=stream`: one match per line, 0-based lines
// and columns (the end column exclusive). No output at all is no match.
func parseASTGrep(c *collector, raw []byte) error {
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, MaxReportBytes+1)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var m astGrepMatch
		if err := decodeStrict(line, &m); err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		sev, ok := astGrepSeverity[m.Severity]
		if !ok {
			c.toolError("ast-grep: finding of rule %q dropped: unknown severity %q", clip(m.RuleID, 100), clip(m.Severity, 20))
			continue
		}
		if m.Range.Start.Line < 0 || m.Range.End.Line < 0 || m.Range.Start.Line >= maxLine || m.Range.End.Line >= maxLine {
			c.toolError("ast-grep: finding of rule %q dropped: bad range", clip(m.RuleID, 100))
			continue
		}
		f := Finding{
			RuleID: m.RuleID, Severity: sev, Message: m.Message, HelpURI: m.URL,
			StartLine: m.Range.Start.Line + 1, EndLine: m.Range.End.Line + 1,
			StartColumn: m.Range.Start.Column + 1, EndColumn: m.Range.End.Column + 1,
		}
		if len(m.Metadata.CWE) > 0 {
			var s string
			if json.Unmarshal(m.Metadata.CWE, &s) != nil {
				s = string(m.Metadata.CWE)
			}
			f.CWE = s
		}
		if !c.add(f, m.File) {
			break
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading stream: %w", err)
	}
	return nil
}

// ---------------------------------------------------------------- gitleaks

type gitleaksFinding struct {
	RuleID      string `json:"RuleID"`
	Description string `json:"Description"`
	StartLine   int    `json:"StartLine"`
	EndLine     int    `json:"EndLine"`
	StartColumn int    `json:"StartColumn"`
	EndColumn   int    `json:"EndColumn"`
	File        string `json:"File"`
	// Match and Secret are read only to make sure they never reach the
	// message; they are never stored.
	Match  string `json:"Match"`
	Secret string `json:"Secret"`
}

// parseGitleaks reads gitleaks v8's JSON array. Its columns are 1-based
// with an inclusive end. The message names the rule and never contains
// the Secret or Match text.
func parseGitleaks(c *collector, raw []byte) error {
	return decodeArray(raw, func(el json.RawMessage) (bool, error) {
		var g gitleaksFinding
		if err := json.Unmarshal(el, &g); err != nil {
			return false, fmt.Errorf("malformed finding: %w", err)
		}
		rule := sanitise(g.RuleID, MaxRuleBytes)
		msg := fmt.Sprintf("Possible secret (gitleaks rule %s)", rule)
		if d := sanitise(g.Description, 300); d != "" {
			msg += ": " + d
		}
		for _, s := range []string{g.Secret, g.Match} {
			if s = strings.TrimSpace(s); len(s) >= 4 && s != "REDACTED" {
				msg = strings.ReplaceAll(msg, s, "REDACTED")
			}
		}
		f := Finding{
			RuleID: g.RuleID, Severity: SeverityHigh, Message: msg, CWE: "798",
			StartLine: g.StartLine, EndLine: g.EndLine, StartColumn: g.StartColumn,
		}
		if g.EndColumn > 0 && g.EndColumn < maxLine {
			f.EndColumn = g.EndColumn + 1
		}
		return c.add(f, g.File), nil
	})
}

// ---------------------------------------------------------------- bandit

type banditReport struct {
	Errors []struct {
		Filename string `json:"filename"`
		Reason   string `json:"reason"`
	} `json:"errors"`
	Results []json.RawMessage `json:"results"`
}

type banditResult struct {
	TestID       string `json:"test_id"`
	TestName     string `json:"test_name"`
	Severity     string `json:"issue_severity"`
	Text         string `json:"issue_text"`
	Filename     string `json:"filename"`
	LineNumber   int    `json:"line_number"`
	LineRange    []int  `json:"line_range"`
	ColOffset    *int   `json:"col_offset"`
	EndColOffset *int   `json:"end_col_offset"`
	MoreInfo     string `json:"more_info"`
	CWE          *struct {
		ID json.Number `json:"id"`
	} `json:"issue_cwe"`
}

var banditSeverity = map[string]Severity{
	"HIGH": SeverityHigh, "MEDIUM": SeverityMedium, "LOW": SeverityLow, "UNDEFINED": SeverityInfo,
}

// parseBandit reads bandit's -f json (1.6 and 1.7: 1.7 adds issue_cwe and
// 0-based col_offset/end_col_offset and prefixes paths with "./").
func parseBandit(c *collector, raw []byte) error {
	var r banditReport
	if err := decodeStrict(raw, &r); err != nil {
		return err
	}
	if r.Results == nil {
		return errors.New("report has no results array")
	}
	for _, e := range r.Errors {
		p, err := relPath(e.Filename, c.root)
		if err != nil {
			p = "(path outside the source root)"
		}
		c.toolError("%s: %s", p, e.Reason)
	}
	for _, el := range r.Results {
		var b banditResult
		if err := json.Unmarshal(el, &b); err != nil {
			return fmt.Errorf("malformed result: %w", err)
		}
		sev, ok := banditSeverity[b.Severity]
		if !ok {
			c.toolError("bandit: finding %q dropped: unknown severity %q", clip(b.TestID, 100), clip(b.Severity, 20))
			continue
		}
		f := Finding{
			RuleID: b.TestID, RuleName: b.TestName, Severity: sev, Message: b.Text, HelpURI: b.MoreInfo,
			StartLine: b.LineNumber, EndLine: b.LineNumber,
		}
		for _, l := range b.LineRange {
			if l > f.EndLine && l < maxLine {
				f.EndLine = l
			}
		}
		if b.ColOffset != nil && *b.ColOffset >= 0 && *b.ColOffset < maxLine {
			f.StartColumn = *b.ColOffset + 1
			if b.EndColOffset != nil && *b.EndColOffset >= 0 && *b.EndColOffset < maxLine {
				f.EndColumn = *b.EndColOffset + 1
			}
		}
		if b.CWE != nil {
			f.CWE = b.CWE.ID.String()
		}
		if !c.add(f, b.Filename) {
			break
		}
	}
	return nil
}

// ---------------------------------------------------------------- gosec

type gosecReport struct {
	Errors map[string][]struct {
		Line   int    `json:"line"`
		Column int    `json:"column"`
		Error  string `json:"error"`
	} `json:"Golang errors"`
	Issues []json.RawMessage `json:"Issues"`
}

type gosecIssue struct {
	Severity string `json:"severity"`
	CWE      *struct {
		ID  json.RawMessage `json:"id"`
		URL string          `json:"url"`
	} `json:"cwe"`
	RuleID  string  `json:"rule_id"`
	Details string  `json:"details"`
	File    string  `json:"file"`
	Line    lineCol `json:"line"`
	Column  lineCol `json:"column"`
}

var gosecSeverity = map[string]Severity{
	"HIGH": SeverityHigh, "MEDIUM": SeverityMedium, "LOW": SeverityLow,
}

// parseGosec reads gosec's -fmt json. Paths are absolute (beneath root);
// line is "12" or "12-14"; "Golang errors" (type-check errors, normal
// offline) become tool errors. Issues marked nosec or suppressed are still
// findings: Quavon ignores inline suppressions (spec SC1).
func parseGosec(c *collector, raw []byte) error {
	var r gosecReport
	if err := decodeStrict(raw, &r); err != nil {
		return err
	}
	if r.Issues == nil && r.Errors == nil {
		return errors.New("report has neither Issues nor Golang errors")
	}
	for _, file := range sortedKeys(r.Errors) {
		p, err := relPath(file, c.root)
		if err != nil {
			p = "(path outside the source root)"
		}
		for _, e := range r.Errors[file] {
			c.toolError("%s:%d:%d: %s", p, e.Line, e.Column, e.Error)
		}
	}
	for _, el := range r.Issues {
		var g gosecIssue
		if err := json.Unmarshal(el, &g); err != nil {
			return fmt.Errorf("malformed issue: %w", err)
		}
		sev, ok := gosecSeverity[g.Severity]
		if !ok {
			c.toolError("gosec: finding %q dropped: unknown severity %q", clip(g.RuleID, 100), clip(g.Severity, 20))
			continue
		}
		f := Finding{
			RuleID: g.RuleID, Severity: sev, Message: g.Details,
			StartLine: g.Line.start, EndLine: g.Line.end, StartColumn: g.Column.start,
		}
		if g.CWE != nil {
			var s string
			if json.Unmarshal(g.CWE.ID, &s) != nil {
				s = string(g.CWE.ID)
			}
			f.CWE, f.HelpURI = s, g.CWE.URL
		}
		if !c.add(f, g.File) {
			break
		}
	}
	return nil
}

// ---------------------------------------------------------------- ESLint

type eslintFile struct {
	FilePath string            `json:"filePath"`
	Messages []json.RawMessage `json:"messages"`
}

type eslintMessage struct {
	RuleID    *string `json:"ruleId"`
	Severity  int     `json:"severity"`
	Message   string  `json:"message"`
	Line      int     `json:"line"`
	Column    int     `json:"column"`
	EndLine   int     `json:"endLine"`
	EndColumn int     `json:"endColumn"`
	Fatal     bool    `json:"fatal"`
}

// parseESLint reads ESLint's -f json: filePath is absolute; a message
// without a ruleId, or fatal, is a parse error of the file (tool error).
func parseESLint(c *collector, raw []byte) error {
	return decodeArray(raw, func(el json.RawMessage) (bool, error) {
		var file eslintFile
		if err := json.Unmarshal(el, &file); err != nil {
			return false, fmt.Errorf("malformed file entry: %w", err)
		}
		for _, mel := range file.Messages {
			var m eslintMessage
			if err := json.Unmarshal(mel, &m); err != nil {
				return false, fmt.Errorf("malformed message: %w", err)
			}
			if m.RuleID == nil || *m.RuleID == "" || m.Fatal {
				p, err := relPath(file.FilePath, c.root)
				if err != nil {
					p = "(path outside the source root)"
				}
				c.toolError("%s:%d:%d: %s", p, m.Line, m.Column, m.Message)
				continue
			}
			var sev Severity
			switch m.Severity {
			case 2:
				sev = SeverityMedium
			case 1:
				sev = SeverityLow
			default:
				c.toolError("eslint: finding %q dropped: severity %d", clip(*m.RuleID, 100), m.Severity)
				continue
			}
			f := Finding{
				RuleID: *m.RuleID, Severity: sev, Message: m.Message, HelpURI: eslintRuleURI(*m.RuleID),
				StartLine: m.Line, EndLine: m.EndLine, StartColumn: m.Column, EndColumn: m.EndColumn,
			}
			if !c.add(f, file.FilePath) {
				return false, nil
			}
		}
		return true, nil
	})
}

// eslintRuleURI links core rules and eslint-plugin-security's rules to
// their documentation.
func eslintRuleURI(rule string) string {
	if name, ok := strings.CutPrefix(rule, "security/"); ok && isSlug(name) {
		return "https://github.com/eslint-community/eslint-plugin-security/blob/main/docs/rules/" + name + ".md"
	}
	if isSlug(rule) {
		return "https://eslint.org/docs/latest/rules/" + rule
	}
	return ""
}

func isSlug(s string) bool {
	if s == "" || len(s) > 100 {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return true
}

// ---------------------------------------------------------------- Ruff

type ruffPos struct {
	Row    int `json:"row"`
	Column int `json:"column"`
}

type ruffDiagnostic struct {
	Code        *string `json:"code"`
	Message     string  `json:"message"`
	Filename    string  `json:"filename"`
	Location    ruffPos `json:"location"`
	EndLocation ruffPos `json:"end_location"`
	URL         *string `json:"url"`
}

// ruffHigh are the S rules whose bandit counterparts bandit rates HIGH.
var ruffHigh = map[string]bool{"S324": true, "S501": true, "S502": true, "S507": true, "S602": true, "S701": true}

// parseRuff reads Ruff's --output-format json (from Quavon's wrapper):
// 1-based rows and columns, the end column exclusive. A diagnostic with a
// null code or code "invalid-syntax" is a parse error (tool error).
func parseRuff(c *collector, raw []byte) error {
	return decodeArray(raw, func(el json.RawMessage) (bool, error) {
		var d ruffDiagnostic
		if err := json.Unmarshal(el, &d); err != nil {
			return false, fmt.Errorf("malformed diagnostic: %w", err)
		}
		if d.Code == nil || !isRuffCode(*d.Code) {
			p, err := relPath(d.Filename, c.root)
			if err != nil {
				p = "(path outside the source root)"
			}
			c.toolError("%s:%d:%d: %s", p, d.Location.Row, d.Location.Column, d.Message)
			return true, nil
		}
		sev := SeverityLow
		switch {
		case ruffHigh[*d.Code]:
			sev = SeverityHigh
		case strings.HasPrefix(*d.Code, "S"):
			sev = SeverityMedium
		}
		f := Finding{
			RuleID: *d.Code, Severity: sev, Message: d.Message,
			StartLine: d.Location.Row, EndLine: d.EndLocation.Row,
			StartColumn: d.Location.Column, EndColumn: d.EndLocation.Column,
		}
		if d.URL != nil {
			f.HelpURI = *d.URL
		}
		return c.add(f, d.Filename), nil
	})
}

// isRuffCode reports whether s looks like a rule code (S602, PLW0603).
func isRuffCode(s string) bool {
	i := 0
	for i < len(s) && s[i] >= 'A' && s[i] <= 'Z' {
		i++
	}
	j := i
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	return i > 0 && i <= 4 && j > i && j == len(s) && len(s) <= 10
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
