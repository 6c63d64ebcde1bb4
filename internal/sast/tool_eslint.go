package sast

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// ToolESLint is ESLint with eslint-plugin-security (rules/eslint).
const ToolESLint Tool = "eslint"

var eslint = &Scanner{
	Tool:       ToolESLint,
	Extensions: []string{".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx"},
	InfoURI:    "https://eslint.org/",
	Cost:       7, // node, ESLint and the TypeScript parser start
	Programs:   []string{"node"},
	OptFiles:   []string{eslintProgram},
	Invoke:     invokeESLint,
	Neutral:    true,
	Numbering:  func([]byte) (Terminators, string) { return LinesJS, "" },
	parse:      parseESLint,
	compact:    compactESLint,
}

// eslintProgram is Quavon's ESLint program in the image's Quavon
// directory: rules/eslint/lint.mjs (ESLint's
// `--no-config-lookup --no-inline-config -c security.config.js -f json -o
// OUT` through its Node.js API) bundled by deploy/images/build with
// everything it imports, so that Node reads one file instead of resolving
// some 400 modules: under runsc ESLint on 17 files took 1.3–1.4 s instead
// of 2.0–2.4 s (deploy/images/README.md), the same report. Without
// --no-warn-ignored: a file ESLint ignores (its default ignores, a file no
// config entry matches) comes back as a warning without a rule, which the
// parser reports as a file not scanned.
const eslintProgram = "eslint/lint.bundle.mjs"

// eslintJitlessMaxFiles is the most files ESLint is given with V8's JIT
// off (node --jitless). Under gVisor every page of code V8 compiles costs
// an mprotect and page faults the sentry answers, so for a small change
// the interpreter alone is the faster: 17 JavaScript files took 0.72–0.85 s
// instead of 1.19–1.40 s under runsc (runc: 0.38 against 0.40 s). With
// more work the JIT pays for itself: 170 TypeScript files took as long
// either way under runsc and 37% longer jitless under runc. --jitless
// also means no code is generated at run time at all; the findings are
// the same (the same JavaScript, interpreted).
const eslintJitlessMaxFiles = 64

// invokeESLint runs Quavon's ESLint program (eslintProgram) under node
// over the neutral names.
func invokeESLint(w *Workspace, files []Target) (*Invocation, error) {
	node, err := w.LookPath("node")
	if err != nil {
		return nil, err
	}
	argv := []string{node}
	if len(files) <= eslintJitlessMaxFiles {
		argv = append(argv, "--jitless")
	}
	argv = append(argv, filepath.Join(w.Opt, eslintProgram), "-o", w.OutPath(ToolESLint), "--")
	argv = append(argv, neutralNames(files)...)
	return &Invocation{Files: len(files), Cmds: []Command{{Argv: argv, Dir: w.Changed, Env: w.Env(), OKExit: []int{0, 1}}}}, nil
}

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

// compactESLint keeps of ESLint's report what parseESLint reads: ESLint
// adds each file's source when it has messages, counts, suppressed
// messages and each message's fixes and suggestions.
func compactESLint(raw []byte) ([]byte, bool) {
	return compactArray[compactESLintFile](raw)
}

// compactESLintFile is an eslintFile that compacts its messages as it is
// decoded.
type compactESLintFile eslintFile

func (f *compactESLintFile) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, (*eslintFile)(f)); err != nil {
		return err
	}
	var ok bool
	if f.Messages, ok = compactElements[eslintMessage](f.Messages); !ok {
		return errors.New("malformed message")
	}
	return nil
}

// parseESLint reads ESLint's -f json: filePath is absolute; a message
// without a ruleId, or fatal, is a parse error of the file (tool error).
// Severities: 2 (error) → medium, 1 (warning) → low.
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
				c.fileError(file.FilePath, m.Line, m.Column, m.Message)
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
