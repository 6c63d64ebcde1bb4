// Package sast turns the output of the deterministic scanners, run inside
// the sandbox (image class "scanners"), into normalised findings: parsed
// with caps (the output is untrusted), filtered to changed lines, deduplicated
// by a line-independent fingerprint, capped, and rendered as SARIF 2.1.0.
//
// Each scanner lives in one file (tool_<name>.go): the files it scans, how
// the driver runs it, how its report is parsed and what SARIF says about
// it, registered in the table of scanner.go. This file is the contract
// between the in-sandbox driver (internal/sast/driver, run as
// /opt/quavon/bin/quavon-scan in the image) and the host side.
package sast

// Tool names one scanner.
type Tool string

// Tools is every scanner of the default image, in the order the driver
// lists them (the order of the table in scanner.go).
var Tools = func() []Tool {
	out := make([]Tool, len(scanners))
	for i, s := range scanners {
		out[i] = s.Tool
	}
	return out
}()

// Valid reports whether t is a known tool.
func (t Tool) Valid() bool { return ScannerOf(t) != nil }

// Status is how one tool's run ended.
type Status string

// Tool statuses. A tool that is absent from the image is StatusMissing,
// never "ok with no findings".
const (
	StatusOK       Status = "ok"
	StatusFailed   Status = "failed"
	StatusMissing  Status = "missing"
	StatusTimedOut Status = "timed_out"
	// StatusNoFiles: the change has no file this tool scans; it did not run.
	StatusNoFiles Status = "no_files"
)

// Severity of a finding, from the tool's own scale mapped onto ours.
type Severity string

// Severities, most severe first.
const (
	SeverityCritical Severity = "critical"
	SeverityHigh     Severity = "high"
	SeverityMedium   Severity = "medium"
	SeverityLow      Severity = "low"
	SeverityInfo     Severity = "info"
)

// ToolRun is the driver's record of one tool. Output names the artefact
// (a file in /out) that holds the tool's raw JSON report.
type ToolRun struct {
	Tool           Tool   `json:"tool"`
	Status         Status `json:"status"`
	ExitCode       int    `json:"exitCode"`
	Version        string `json:"version,omitempty"`
	Files          int    `json:"files"`
	DurationMillis int64  `json:"durationMillis"`
	Output         string `json:"output,omitempty"`
	// Stderr is the capped tail of the tool's standard error (untrusted).
	Stderr string `json:"stderr,omitempty"`
	// Error says why the driver gave this status (missing binary, exit code).
	Error string `json:"error,omitempty"`
	// Errors are the tool's own error reports found in its output (files
	// it could not parse, type-check errors), set by the host when it
	// parses the output (Normalise); capped, untrusted text.
	Errors []string `json:"errors,omitempty"`
}

// Manifest is the driver's artefact ManifestArtefact. Paths in every raw
// report are relative to the source root (the driver runs each tool from
// it) or absolute beneath Root.
type Manifest struct {
	Version int       `json:"version"`
	Root    string    `json:"root"`
	Tools   []ToolRun `json:"tools"`
}

// Request is what the host puts beside the source tree in the snapshot
// (RequestFile), naming the changed files the tools scan; every other file
// in the snapshot is context (the rest of a Go package, go.mod).
type Request struct {
	Version int      `json:"version"`
	Files   []string `json:"files"`
	// Tools limits the run to these tools; empty means all.
	Tools []Tool `json:"tools,omitempty"`
	// TimeoutSeconds bounds each tool's run.
	TimeoutSeconds int `json:"timeoutSeconds"`
}

// Snapshot layout and artefact names shared by host and driver.
const (
	// SourceDir is the snapshot directory that holds the repository files.
	SourceDir = "src"
	// RequestFile is the snapshot file that holds the Request.
	RequestFile = "scan-request.json"
	// ManifestArtefact is the driver's manifest in /out.
	ManifestArtefact = "scan.json"
)

// OutputArtefact is the artefact name of a tool's raw report.
func OutputArtefact(t Tool) string { return string(t) + ".json" }
