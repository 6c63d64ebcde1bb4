package sast

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"
)

// ToolASTGrep is ast-grep with the Quavon rule pack (rules/ast-grep).
const ToolASTGrep Tool = "ast-grep"

var astGrep = &Scanner{
	Tool: ToolASTGrep,
	Extensions: []string{".go", ".py", ".pyi", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx",
		".java", ".rb"},
	InfoURI:  "https://ast-grep.github.io/",
	Cost:     6, // compiling the rules of the files' languages, then every file
	Programs: []string{"ast-grep"},
	Invoke:   invokeASTGrep,
	Neutral:  true,
	parse:    parseASTGrep,
	compact:  compactASTGrep,
}

// invokeASTGrep scans a copy of the files alone (no repository sgconfig.yml
// beside them) in which ast-grep-ignore is blanked; ast-grep writes its
// report to stdout. ast-grep skips a file that is not UTF-8 without a
// word, so such a file is not given to it and is reported instead. Only
// the pack's rules for the files' languages are loaded (astGrepConfig).
func invokeASTGrep(w *Workspace, files []Target) (*Invocation, error) {
	bin, err := w.LookPath("ast-grep")
	if err != nil {
		return nil, err
	}
	inv := &Invocation{Files: len(files)}
	copies := map[string]string{}
	var names []string
	langs := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(w.Changed, filepath.FromSlash(f.Neutral)))
		if err != nil {
			return nil, err
		}
		if !utf8.Valid(data) {
			inv.NotCovered = append(inv.NotCovered, FileNote{f.Index, "not UTF-8 text: ast-grep skips such files"})
			continue
		}
		copies[f.Neutral] = f.Neutral
		names = append(names, f.Neutral)
		langs[astGrepRuleDirs[strings.ToLower(filepath.Ext(f.Neutral))]] = true
	}
	config, err := astGrepConfig(w, langs)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 || config == "" { // an empty stream is a report without matches
		return inv, os.WriteFile(w.OutPath(ToolASTGrep), nil, 0o644)
	}
	dir := filepath.Join(w.Home, "scan-ast-grep")
	if err := w.CopyTree(dir, copies, blankASTGrepIgnore); err != nil {
		return nil, fmt.Errorf("copy: %w", err)
	}
	argv := append([]string{bin, "scan", "-c", config,
		"--json=stream", "--include-metadata", "--"}, names...)
	inv.Cmds = []Command{{Argv: argv, Dir: dir, Env: w.Env(astGrepMalloc), OKExit: []int{0, 1}, Stdout: w.OutPath(ToolASTGrep)}}
	return inv, nil
}

// compactASTGrep keeps of each match what parseASTGrep reads. A match is
// ~2 KB in ast-grep's JSON (the rule's note, the matched text and lines,
// meta-variables, labels, byte offsets) and ~0.27 KB without them: on the
// 50-file benchmark the report shrank from 497 KB to 65 KB (compact.go). A
// line that does not decode as a match stays as it is, for the parser to
// report.
func compactASTGrep(raw []byte) ([]byte, bool) {
	var b bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, MaxReportBytes+1)
	for sc.Scan() {
		line := sc.Bytes()
		var m astGrepMatch
		if len(bytes.TrimSpace(line)) > 0 && decodeStrict(line, &m) == nil {
			if c, err := json.Marshal(&m); err == nil {
				line = c
			}
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes(), sc.Err() == nil
}

// astGrepMalloc has glibc's malloc grow its heaps in 64 MiB steps and keep
// what is freed (ast-grep is a short-lived process). By default the heaps
// of its worker threads grow 128 KiB at a time, each step an mprotect,
// and under gVisor every mprotect is a round trip through the sentry that
// also drops the range's host mappings: 540 of them made loading the Go,
// JavaScript and Python rules 2.0–2.2 s under runsc, 1.5–1.7 s with this
// (runc: 0.70–0.75 s either way), with the same report. The three go
// together: setting one alone fixes glibc's dynamic mmap threshold at
// 128 KiB, and every larger allocation then maps and unmaps memory of its
// own (3.3–4.1 s). Memory never touched costs nothing, so the job's
// memory limit holds as before.
const astGrepMalloc = "GLIBC_TUNABLES=glibc.malloc.top_pad=67108864:glibc.malloc.trim_threshold=268435456:glibc.malloc.mmap_threshold=33554432"

// blankASTGrepIgnore replaces every ast-grep-ignore suppression marker with
// spaces of the same length, so Quavon's rules report what a repository
// tried to suppress and every line and column stays where it was.
// astGrepRuleDirs maps an extension to the directory of the pack's rules
// (rules/ast-grep/rules/<dir>) for the language ast-grep parses it as (its
// own table: crates/language, SupportLang's extensions). Every rule of a
// directory is of that language (TestASTGrepRuleDirsHoldOneLanguage).
var astGrepRuleDirs = map[string]string{
	".go": "go", ".py": "python", ".pyi": "python",
	".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
	".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
	".java": "java", ".rb": "ruby",
}

// astGrepConfig writes the configuration of one scan into HOME: the pack's
// sgconfig.yml with ruleDirs cut to the languages of the files (dirs), as
// absolute paths. ast-grep compiles every rule it loads before it reads a
// file, and a rule of another language cannot match, so the findings are
// the whole pack's; under gVisor compiling the pack's 221 rules was most
// of ast-grep's time (a Python-only change compiles 50). "" when the pack
// has no rule for any of the languages.
func astGrepConfig(w *Workspace, dirs map[string]bool) (string, error) {
	var lines []string
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		abs := filepath.Join(w.Opt, "ast-grep", "rules", d)
		if fi, err := os.Stat(abs); d == "" || err != nil || !fi.IsDir() {
			continue
		}
		q, _ := json.Marshal(abs) // a JSON string is a YAML scalar
		lines = append(lines, "  - "+string(q)+"\n")
	}
	if len(lines) == 0 {
		return "", nil
	}
	config := filepath.Join(w.Home, "ast-grep-sgconfig.yml")
	if err := os.WriteFile(config, []byte("ruleDirs:\n"+strings.Join(lines, "")), 0o600); err != nil {
		return "", fmt.Errorf("ast-grep config: %w", err)
	}
	return config, nil
}

func blankASTGrepIgnore(data []byte) []byte {
	const marker = "ast-grep-ignore"
	if !bytes.Contains(data, []byte(marker)) {
		return data
	}
	return bytes.ReplaceAll(data, []byte(marker), bytes.Repeat([]byte(" "), len(marker)))
}

type astGrepPos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

type astGrepMatch struct {
	RuleID   string `json:"ruleId"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
	File     string `json:"file"`
	URL      string `json:"url,omitempty"`
	Range    struct {
		Start astGrepPos `json:"start"`
		End   astGrepPos `json:"end"`
	} `json:"range"`
	// Metadata is only in the output with --include-metadata; Quavon's
	// rules carry cwe: "CWE-n" there.
	Metadata struct {
		CWE json.RawMessage `json:"cwe,omitempty"`
	} `json:"metadata"`
}

// astGrepSeverity maps ast-grep's severities onto ours.
var astGrepSeverity = map[string]Severity{
	"error": SeverityHigh, "warning": SeverityMedium, "info": SeverityLow, "hint": SeverityInfo,
}

// parseASTGrep reads `--json=stream`: one match per line, 0-based lines
// and columns (the end column exclusive). No output at all is no match.
// Severities: error → high, warning → medium, info → low, hint → info.
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
