package sast

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
)

// ToolRuff is Ruff (WebAssembly, through rules/ruff/check.mjs).
const ToolRuff Tool = "ruff"

var ruff = &Scanner{
	Tool:       ToolRuff,
	Extensions: []string{".py", ".pyi"},
	InfoURI:    "https://docs.astral.sh/ruff/",
	Cost:       3, // node and a 10 MB WebAssembly module
	Programs:   []string{"node"},
	OptFiles:   []string{"ruff/check.mjs"},
	Invoke:     invokeRuff,
	Neutral:    true,
	Numbering:  pythonNumbering,
	parse:      parseRuff,
	compact:    compactArray[ruffDiagnostic],
}

// invokeRuff runs Quavon's wrapper, which reads no configuration file and
// blanks noqa comments itself.
func invokeRuff(w *Workspace, files []Target) (*Invocation, error) {
	node, err := w.LookPath("node")
	if err != nil {
		return nil, err
	}
	script := filepath.Join(w.Opt, "ruff", "check.mjs")
	argv := append([]string{node, script, "--output", w.OutPath(ToolRuff), "--"}, neutralNames(files)...)
	return &Invocation{Files: len(files), Cmds: []Command{{Argv: argv, Dir: w.Changed, Env: w.Env(), OKExit: []int{0}}}}, nil
}

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
// null code or code "invalid-syntax" is a parse error, E902 (io-error: a
// file the wrapper could not read, over its size cap or not UTF-8) a file
// not scanned: both are tool errors of that file.
// Severities: the S rules in ruffHigh → high, other S rules → medium,
// others → low.
func parseRuff(c *collector, raw []byte) error {
	return decodeArray(raw, func(el json.RawMessage) (bool, error) {
		var d ruffDiagnostic
		if err := json.Unmarshal(el, &d); err != nil {
			return false, fmt.Errorf("malformed diagnostic: %w", err)
		}
		if d.Code == nil || !isRuffCode(*d.Code) || *d.Code == "E902" {
			c.fileError(d.Filename, d.Location.Row, d.Location.Column, d.Message)
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
