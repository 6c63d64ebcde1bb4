package sast

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ToolGitleaks is gitleaks with Quavon's configuration (rules/gitleaks.toml).
const ToolGitleaks Tool = "gitleaks"

var gitleaks = &Scanner{
	Tool:       ToolGitleaks,
	Extensions: nil, // every file
	InfoURI:    "https://github.com/gitleaks/gitleaks",
	Programs:   []string{"gitleaks"},
	Invoke:     invokeGitleaks,
	parse:      parseGitleaks,
}

// invokeGitleaks scans a copy of the files without a root .gitleaksignore:
// gitleaks loads <source>/.gitleaksignore whatever the flags say.
func invokeGitleaks(w *Workspace, files []string) (*Invocation, error) {
	bin, err := w.LookPath("gitleaks")
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(w.Home, "scan-gitleaks")
	if err := w.CopyTree(dir, files, nil); err != nil {
		return nil, fmt.Errorf("copy: %w", err)
	}
	if err := os.Remove(filepath.Join(dir, ".gitleaksignore")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	argv := []string{bin, "dir", "--config", filepath.Join(w.Opt, "gitleaks.toml"),
		"--gitleaks-ignore-path", filepath.Join(w.Opt, "empty"), "--ignore-gitleaks-allow",
		"--no-banner", "--no-color", "--redact", "--report-format", "json", "--report-path", w.OutPath(ToolGitleaks),
		"--exit-code", "0", "--log-level", "error", "."}
	return &Invocation{Files: len(files), Cmds: []Command{{Argv: argv, Dir: dir, Env: w.Env(), OKExit: []int{0}}}}, nil
}

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
// the Secret or Match text. Every finding is high: a secret in the change.
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
