package sast

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
)

// ToolBandit is bandit with Quavon's configuration (rules/bandit.yaml).
const ToolBandit Tool = "bandit"

var bandit = &Scanner{
	Tool:       ToolBandit,
	Extensions: []string{".py", ".pyi"},
	InfoURI:    "https://bandit.readthedocs.io/",
	Cost:       2, // Python
	Programs:   []string{"bandit"},
	Invoke:     invokeBandit,
	Neutral:    true,
	Numbering:  pythonNumbering,
	parse:      parseBandit,
	compact:    compactBandit,
}

// invokeBandit runs bandit over the neutral names: --ini so no .bandit is
// read, -c for Quavon's tests, --ignore-nosec.
func invokeBandit(w *Workspace, files []Target) (*Invocation, error) {
	bin, err := w.LookPath("bandit")
	if err != nil {
		return nil, err
	}
	argv := append([]string{bin, "--ini", filepath.Join(w.Opt, "bandit.ini"),
		"-c", filepath.Join(w.Opt, "bandit.yaml"), "--ignore-nosec", "-q",
		"-f", "json", "-o", w.OutPath(ToolBandit), "--"}, neutralNames(files)...)
	return &Invocation{Files: len(files), Cmds: []Command{{Argv: argv, Dir: w.Changed,
		Env: w.Env("PYTHONDONTWRITEBYTECODE=1", "PYTHONNOUSERSITE=1"), OKExit: []int{0, 1}}}}, nil
}

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

// compactBandit keeps of bandit's report what parseBandit reads: bandit
// adds each result's code, confidence and more, and per-file metrics.
func compactBandit(raw []byte) ([]byte, bool) {
	var r banditReport
	if decodeStrict(raw, &r) != nil {
		return nil, false
	}
	var ok bool
	if r.Results, ok = compactElements[banditResult](r.Results); !ok {
		return nil, false
	}
	b, err := json.Marshal(&r)
	return b, err == nil
}

// banditSeverity maps bandit's issue severity onto ours. Confidence is not
// folded in: Quavon's config decides which tests run.
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
		c.fileError(e.Filename, 0, 0, e.Reason)
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
