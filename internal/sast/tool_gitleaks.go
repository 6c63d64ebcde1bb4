package sast

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// ToolGitleaks is gitleaks with Quavon's configuration (rules/gitleaks.toml).
const ToolGitleaks Tool = "gitleaks"

var gitleaks = &Scanner{
	Tool:       ToolGitleaks,
	Extensions: nil, // every file
	InfoURI:    "https://github.com/gitleaks/gitleaks",
	Cost:       1,
	Programs:   []string{"gitleaks"},
	Invoke:     invokeGitleaks,
	Neutral:    true,
	parse:      parseGitleaks,
}

// gitleaksKeptExts are the extensions a copy for gitleaks keeps: those the
// path conditions of its rules look for (gitleaks' default config: .php,
// .tf, .hcl, .yaml, .yml, .p12, .pfx, nuget.config). Every other copy is
// named "f", which no path of gitleaks' global allowlist matches (images,
// lock files, go.sum, vendor/, node_modules/, "gitleaks.toml" …):
// TestGitleaksNamesEscapeTheAllowlist checks both against the default
// config of the gitleaks version in go.mod.
var gitleaksKeptExts = map[string]string{
	".php": "f.php", ".tf": "f.tf", ".hcl": "f.hcl", ".yaml": "f.yaml", ".yml": "f.yml",
	".p12": "f.p12", ".pfx": "f.pfx", ".config": "nuget.config",
}

// gitleaksName is the name of a file's copy for gitleaks, beneath the
// directory of its index.
func gitleaksName(ext string) string {
	if n, ok := gitleaksKeptExts[ext]; ok {
		return n
	}
	return "f"
}

// gitleaksLog is the log gitleaks writes at debug level, from which the
// driver learns which files it skipped.
const gitleaksLog = "gitleaks.log"

// invokeGitleaks scans a copy of the files named <index>/<gitleaksName>:
// no .gitleaksignore at its root (gitleaks loads <source>/.gitleaksignore
// whatever the flags say) and no path its global allowlist skips. The
// files gitleaks still skips (those it takes for binary by their first
// bytes) it logs, and finish reports them.
func invokeGitleaks(w *Workspace, files []Target) (*Invocation, error) {
	bin, err := w.LookPath("gitleaks")
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(w.Home, "scan-gitleaks")
	copies := map[string]string{}
	for _, f := range files {
		copies[f.Neutral] = path.Join(strconv.Itoa(f.Index), gitleaksName(path.Ext(f.Neutral)))
	}
	if err := w.CopyTree(dir, copies, nil); err != nil {
		return nil, fmt.Errorf("copy: %w", err)
	}
	logFile := filepath.Join(w.Home, gitleaksLog)
	argv := []string{bin, "dir", "--config", filepath.Join(w.Opt, "gitleaks.toml"),
		"--gitleaks-ignore-path", filepath.Join(w.Opt, "empty"), "--ignore-gitleaks-allow",
		"--no-banner", "--no-color", "--redact", "--report-format", "json", "--report-path", w.OutPath(ToolGitleaks),
		"--exit-code", "0", "--log-level", "debug", "."}
	return &Invocation{Files: len(files),
		Cmds: []Command{{Argv: argv, Dir: dir, Env: w.Env(), OKExit: []int{0}, Stderr: logFile}},
		Finish: func() ([]FileNote, error) {
			data, err := os.ReadFile(logFile)
			if err != nil {
				return nil, fmt.Errorf("gitleaks log: %w", err)
			}
			return GitleaksSkipped(data, len(files)), nil
		}}, nil
}

// ansiEscape matches the colour sequences gitleaks writes despite --no-color.
var ansiEscape = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

// GitleaksSkipped reads gitleaks' debug log (zerolog's console format) for
// the files it skipped ("skipping binary file mime_type=… path=3/f",
// "skipping file: global allowlist path=…") or could not read, and
// returns a note for each: the copy names (<index>/…) say which request
// file it was. At most max notes.
func GitleaksSkipped(log []byte, max int) []FileNote {
	var out []FileNote
	seen := map[int]bool{}
	for _, line := range strings.Split(string(log), "\n") {
		line = ansiEscape.ReplaceAllString(line, "")
		i := strings.Index(line, " path=")
		if i < 0 || !(strings.Contains(line, "skipping") || strings.Contains(line, " ERR ") || strings.Contains(line, " WRN ")) {
			continue
		}
		p, _, _ := strings.Cut(line[i+len(" path="):], " ")
		idx, ok := NeutralIndex(p)
		if !ok || seen[idx] || len(out) >= max {
			continue
		}
		seen[idx] = true
		msg := line[:i]
		// Drop the time and level: "9:20AM DBG skipping binary file mime_type=application/zip".
		if f := strings.Fields(msg); len(f) > 2 {
			msg = strings.Join(f[2:], " ")
		}
		out = append(out, FileNote{File: idx, Reason: "gitleaks: " + sanitise(msg, 200)})
	}
	return out
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
