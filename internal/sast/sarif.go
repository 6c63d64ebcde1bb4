package sast

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// GitHub code scanning's limits on an uploaded SARIF file.
const (
	// MaxSARIFRuns is the most runs per file.
	MaxSARIFRuns = 20
	// MaxSARIFResults is the most results per run.
	MaxSARIFResults = 25_000
	// MaxSARIFGzipBytes is the largest gzip-compressed file.
	MaxSARIFGzipBytes = 10 << 20
	// maxAutomationID bounds SARIFOptions.AutomationID.
	maxAutomationID = 255
)

// SARIF errors.
var (
	ErrSARIFTooManyRuns = errors.New("sast: SARIF would have more runs than GitHub accepts")
	ErrSARIFTooLarge    = errors.New("sast: gzipped SARIF is larger than GitHub accepts")
	ErrSARIFOption      = errors.New("sast: invalid SARIF option")
)

// SARIFOptions tunes SARIF.
type SARIFOptions struct {
	// AutomationID is run.automationDetails.id (GitHub's category is the
	// part up to the last "/"); "" leaves it out.
	AutomationID string
	// Source returns the head-version content of a file, for GitHub's
	// primaryLocationLineHash; without it that fingerprint is left out.
	Source func(path string) ([]byte, bool)
	// MaxResultsPerRun lowers MaxSARIFResults (for tests); 0 = the limit.
	MaxResultsPerRun int
}

// SARIF renders the normalised report as SARIF 2.1.0 for GitHub code
// scanning (spec SC3: regenerated from normalised findings, never the raw
// tool output). There is one run per tool with status ok or partial, in
// report order; each file a tool did not fully scan is an error-level
// toolExecutionNotification of its run, located at the file. A tool that
// did not finish gets no run of its own (an empty run would tell GitHub
// its alerts were fixed): it, and the files no tool was given, are
// notifications of a last run of the driver "quavon", whose invocation is
// not successful. A complete scan has no such run.
// A run over MaxSARIFResults keeps the first (most severe) results and
// says so in a toolExecutionNotification; more than MaxSARIFRuns runs or a
// gzipped size over MaxSARIFGzipBytes is an error.
//
// Each result carries partialFingerprints.primaryLocationLineHash,
// computed as github/codeql-action's uploader does (when Source has the
// file), and "quavon/v1", the finding's own fingerprint.
func SARIF(r Report, opt SARIFOptions) ([]byte, error) {
	if len(opt.AutomationID) > maxAutomationID || !utf8.ValidString(opt.AutomationID) ||
		strings.ContainsFunc(opt.AutomationID, isStripped) {
		return nil, fmt.Errorf("sast.SARIF: %w: automation id", ErrSARIFOption)
	}
	limit := MaxSARIFResults
	if opt.MaxResultsPerRun > 0 {
		limit = min(limit, opt.MaxResultsPerRun)
	}
	hashes := map[string][]string{}
	lineHash := func(path string, line int) string {
		if opt.Source == nil {
			return ""
		}
		hs, ok := hashes[path]
		if !ok {
			if data, ok := opt.Source(path); ok {
				hs = LineHashes(data)
			}
			hashes[path] = hs
		}
		if line >= 1 && line < len(hs) {
			return hs[line]
		}
		return ""
	}

	log := sarifLog{Schema: "https://json.schemastore.org/sarif-2.1.0.json", Version: "2.1.0", Runs: []sarifRun{}}
	done := map[Tool]bool{}
	for _, tr := range r.Tools {
		if (tr.Status != StatusOK && tr.Status != StatusPartial) || !tr.Tool.known() || done[tr.Tool] {
			continue
		}
		done[tr.Tool] = true
		// Only valid findings: a report read back from storage is checked
		// again rather than trusted.
		var fs []Finding
		for _, f := range r.Findings {
			if f.Tool == tr.Tool && f.Validate() == nil {
				fs = append(fs, f)
			}
		}
		run := sarifRun{Tool: sarifTool{Driver: sarifDriver{
			Name: string(tr.Tool), Version: sanitise(tr.Version, 100), InformationURI: tr.Tool.infoURI(),
			Rules: []sarifRule{},
		}}, Results: []sarifResult{}}
		if run.Tool.Driver.InformationURI == "" {
			run.Tool.Driver.InformationURI = "https://github.com/quavon/quavon"
		}
		if opt.AutomationID != "" {
			run.AutomationDetails = &sarifAutomation{ID: opt.AutomationID}
		}
		var notes []sarifNotification
		if len(fs) > limit {
			notes = append(notes, sarifNotification{
				Level: "warning",
				Message: sarifMessage{Text: fmt.Sprintf("%d results; only the %d most severe are included (GitHub accepts at most %d per run).",
					len(fs), limit, MaxSARIFResults)},
			})
			fs = fs[:limit]
		}
		if tr.Status == StatusPartial {
			cov := coverageNotes(r, tr.Tool)
			if len(cov) == 0 {
				cov = []sarifNotification{{Level: "error", Message: sarifMessage{Text: "The tool reported errors: the scan is incomplete."}}}
			}
			notes = append(notes, cov...)
		}
		if len(notes) > 0 {
			run.Invocations = []sarifInvocation{{ExecutionSuccessful: true, Notifications: notes}}
		}
		ruleIndex := map[string]int{}
		for _, f := range fs {
			idx, ok := ruleIndex[f.RuleID]
			if !ok {
				idx = len(run.Tool.Driver.Rules)
				ruleIndex[f.RuleID] = idx
				run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, newSARIFRule(f))
			}
			rule := &run.Tool.Driver.Rules[idx]
			rule.mergeFinding(f)
			res := sarifResult{
				RuleID: f.RuleID, RuleIndex: idx, Level: sarifLevel(f.Severity),
				Message: sarifMessage{Text: orDefault(f.Message, f.RuleID)},
				Locations: []sarifLocation{{PhysicalLocation: sarifPhysical{
					ArtifactLocation: sarifArtifact{URI: uriEscape(f.Path), URIBaseID: "%SRCROOT%"},
					Region:           &sarifRegion{StartLine: f.StartLine, EndLine: f.EndLine},
				}}},
				PartialFingerprints: map[string]string{"quavon/v1": f.Fingerprint},
			}
			if f.Fingerprint == "" {
				delete(res.PartialFingerprints, "quavon/v1")
			}
			if f.StartColumn > 0 {
				res.Locations[0].PhysicalLocation.Region.StartColumn = f.StartColumn
				if f.EndColumn > 0 && (f.EndLine > f.StartLine || f.EndColumn > f.StartColumn) {
					res.Locations[0].PhysicalLocation.Region.EndColumn = f.EndColumn
				}
			}
			if h := lineHash(f.Path, f.StartLine); h != "" {
				res.PartialFingerprints["primaryLocationLineHash"] = h
			}
			run.Results = append(run.Results, res)
		}
		for i := range run.Tool.Driver.Rules {
			run.Tool.Driver.Rules[i].finish()
		}
		log.Runs = append(log.Runs, run)
	}
	if r.Incomplete() { // what no run of a tool says
		var notes []sarifNotification
		for _, tr := range r.Tools {
			if tr.Status == StatusFailed || tr.Status == StatusMissing || tr.Status == StatusTimedOut {
				notes = append(notes, sarifNotification{Level: "error", Message: sarifMessage{
					Text: fmt.Sprintf("%s did not finish (%s): %s", tr.Tool, tr.Status, orDefault(sanitise(tr.Error, maxRunText), "no reason given"))}})
				notes = append(notes, coverageNotes(r, tr.Tool)...)
			}
		}
		notes = append(notes, coverageNotes(r, "")...)
		if r.NotScannedDropped > 0 {
			notes = append(notes, sarifNotification{Level: "error", Message: sarifMessage{
				Text: fmt.Sprintf("%d more files not fully scanned are not listed.", r.NotScannedDropped)}})
		}
		if len(notes) > 0 {
			run := sarifRun{Tool: sarifTool{Driver: sarifDriver{Name: "quavon", InformationURI: "https://github.com/quavon/quavon",
				Rules: []sarifRule{}}}, Results: []sarifResult{},
				Invocations: []sarifInvocation{{ExecutionSuccessful: false, Notifications: notes}}}
			if opt.AutomationID != "" {
				run.AutomationDetails = &sarifAutomation{ID: opt.AutomationID}
			}
			log.Runs = append(log.Runs, run)
		}
	}
	if len(log.Runs) > MaxSARIFRuns {
		return nil, fmt.Errorf("sast.SARIF: %w (%d > %d)", ErrSARIFTooManyRuns, len(log.Runs), MaxSARIFRuns)
	}
	out, err := json.Marshal(log)
	if err != nil {
		return nil, fmt.Errorf("sast.SARIF: %w", err)
	}
	if n, err := gzipSize(out); err != nil {
		return nil, fmt.Errorf("sast.SARIF: %w", err)
	} else if n > MaxSARIFGzipBytes {
		return nil, fmt.Errorf("sast.SARIF: %w (%d bytes gzipped > %d)", ErrSARIFTooLarge, n, MaxSARIFGzipBytes)
	}
	return out, nil
}

// coverageNotes are the NotScanned entries of tool as notifications.
func coverageNotes(r Report, tool Tool) []sarifNotification {
	var out []sarifNotification
	for _, n := range r.NotScanned {
		if n.Tool != tool {
			continue
		}
		text := "Not scanned: " + sanitise(n.Reason, maxRunText)
		if tool != "" {
			text = "Not fully scanned by " + string(tool) + ": " + sanitise(n.Reason, maxRunText)
		}
		out = append(out, sarifNotification{Level: "error", Message: sarifMessage{Text: text},
			Locations: []sarifLocation{{PhysicalLocation: sarifPhysical{
				ArtifactLocation: sarifArtifact{URI: uriEscape(n.Path), URIBaseID: "%SRCROOT%"}}}}})
	}
	return out
}

func orDefault(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// sarifLevel maps our severity onto SARIF's result level.
func sarifLevel(s Severity) string {
	switch s {
	case SeverityCritical, SeverityHigh:
		return "error"
	case SeverityMedium:
		return "warning"
	default:
		return "note"
	}
}

// securitySeverity is GitHub's "security-severity" score for a severity
// (critical ≥ 9.0, high 7.0–8.9, medium 4.0–6.9, low 0.1–3.9).
var securitySeverity = map[Severity]string{
	SeverityCritical: "9.5", SeverityHigh: "8.0", SeverityMedium: "5.5", SeverityLow: "2.0",
}

// uriEscape percent-encodes a relative path for artifactLocation.uri,
// keeping "/" and RFC 3986's unreserved characters.
func uriEscape(p string) string {
	const hexd = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~/", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexd[c>>4])
		b.WriteByte(hexd[c&15])
	}
	return b.String()
}

func gzipSize(data []byte) (int, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		return 0, err
	}
	if err := zw.Close(); err != nil {
		return 0, err
	}
	return buf.Len(), nil
}

// LineHashes returns GitHub's primaryLocationLineHash of every line of
// content (index = 1-based line number; index 0 is unused), computed as
// github/codeql-action's uploader does (src/fingerprints.ts): a rolling
// hash (base 37, 64-bit wrapping arithmetic) over a window of the next 100
// UTF-16 code units from the start of each line, skipping spaces and tabs,
// with \r\n and \r read as \n, a 65535 marker at the end of the file and
// zero padding; the hash is written in lowercase hex followed by ":<n>",
// n counting earlier lines of the file with the same hash. Invalid UTF-8
// reads as U+FFFD per byte (Node's decoder may replace a truncated
// sequence with a single U+FFFD).
func LineHashes(content []byte) []string {
	const blockSize = 100
	const mod uint64 = 37
	const eof = 65535
	firstMod := uint64(1)
	for range blockSize {
		firstMod *= mod
	}
	var window [blockSize]uint64
	var lineNumbers [blockSize]int
	for i := range lineNumbers {
		lineNumbers[i] = -1
	}
	var hashRaw uint64
	index, lineNumber := 0, 0
	lineStart, prevCR := true, false
	counts := map[uint64]int{}
	out := []string{""}

	outputHash := func() {
		counts[hashRaw]++
		// Lines come out in order, so lineNumbers[index] == len(out).
		out = append(out, strconv.FormatUint(hashRaw, 16)+":"+strconv.Itoa(counts[hashRaw]))
		lineNumbers[index] = -1
	}
	updateHash := func(current uint64) {
		begin := window[index]
		window[index] = current
		hashRaw = mod*hashRaw + current - firstMod*begin
		index = (index + 1) % blockSize
	}
	process := func(current uint64) {
		if current == ' ' || current == '\t' || (prevCR && current == '\n') {
			prevCR = false
			return
		}
		if current == '\r' {
			current = '\n'
			prevCR = true
		} else {
			prevCR = false
		}
		if lineNumbers[index] != -1 {
			outputHash()
		}
		if lineStart {
			lineStart = false
			lineNumber++
			lineNumbers[index] = lineNumber
		}
		if current == '\n' {
			lineStart = true
		}
		updateHash(current)
	}
	s := string(content)
	for _, r := range s { // invalid bytes come as utf8.RuneError (U+FFFD)
		if r >= 0x10000 {
			hi, lo := utf16.EncodeRune(r)
			process(uint64(hi))
			process(uint64(lo))
			continue
		}
		process(uint64(r))
	}
	process(eof)
	for range blockSize {
		if lineNumbers[index] != -1 {
			outputHash()
		}
		updateHash(0)
	}
	return out
}

// The SARIF 2.1.0 subset Quavon writes.
type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool              sarifTool         `json:"tool"`
	AutomationDetails *sarifAutomation  `json:"automationDetails,omitempty"`
	Invocations       []sarifInvocation `json:"invocations,omitempty"`
	Results           []sarifResult     `json:"results"`
}

type sarifAutomation struct {
	ID string `json:"id"`
}

type sarifInvocation struct {
	ExecutionSuccessful bool                `json:"executionSuccessful"`
	Notifications       []sarifNotification `json:"toolExecutionNotifications,omitempty"`
}

type sarifNotification struct {
	Level     string          `json:"level"`
	Message   sarifMessage    `json:"message"`
	Locations []sarifLocation `json:"locations,omitempty"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID               string             `json:"id"`
	Name             string             `json:"name,omitempty"`
	ShortDescription sarifMessage       `json:"shortDescription"`
	HelpURI          string             `json:"helpUri,omitempty"`
	DefaultConfig    sarifRuleConfig    `json:"defaultConfiguration"`
	Properties       sarifRuleProperies `json:"properties"`

	severity Severity
	cwes     []string
}

type sarifRuleConfig struct {
	Level string `json:"level"`
}

type sarifRuleProperies struct {
	Tags             []string `json:"tags"`
	SecuritySeverity string   `json:"security-severity,omitempty"`
}

func newSARIFRule(f Finding) sarifRule {
	desc := f.RuleID
	if f.RuleName != "" {
		desc = f.RuleID + ": " + f.RuleName
	}
	return sarifRule{ID: f.RuleID, ShortDescription: sarifMessage{Text: desc}, severity: f.Severity}
}

// mergeFinding folds one of the rule's findings in: the rule takes the
// highest severity, the first help link, and every CWE.
func (r *sarifRule) mergeFinding(f Finding) {
	if severityRank[f.Severity] < severityRank[r.severity] {
		r.severity = f.Severity
	}
	if r.HelpURI == "" {
		r.HelpURI = f.HelpURI
	}
	if f.CWE != "" && !slices.Contains(r.cwes, f.CWE) {
		r.cwes = append(r.cwes, f.CWE)
	}
}

func (r *sarifRule) finish() {
	r.DefaultConfig.Level = sarifLevel(r.severity)
	r.Properties.SecuritySeverity = securitySeverity[r.severity]
	r.Properties.Tags = []string{"security"}
	slices.Sort(r.cwes)
	for _, c := range r.cwes {
		if n, err := strconv.Atoi(strings.TrimPrefix(c, "CWE-")); err == nil && len(r.Properties.Tags) < 20 {
			// CodeQL's form, which GitHub shows as a CWE link.
			r.Properties.Tags = append(r.Properties.Tags, fmt.Sprintf("external/cwe/cwe-%03d", n))
		}
	}
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifResult struct {
	RuleID              string            `json:"ruleId"`
	RuleIndex           int               `json:"ruleIndex"`
	Level               string            `json:"level"`
	Message             sarifMessage      `json:"message"`
	Locations           []sarifLocation   `json:"locations"`
	PartialFingerprints map[string]string `json:"partialFingerprints,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI       string `json:"uri"`
	URIBaseID string `json:"uriBaseId"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	EndLine     int `json:"endLine"`
	StartColumn int `json:"startColumn,omitempty"`
	EndColumn   int `json:"endColumn,omitempty"`
}
