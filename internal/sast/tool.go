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

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

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
	StatusOK Status = "ok"
	// StatusPartial: the tool ran, but did not fully scan some of its
	// files (a file it could not parse, a package it could not load, any
	// error it reported while exiting 0); Report.NotScanned says which.
	StatusPartial  Status = "partial"
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
	// NotCovered are the driver's notes on request files of the tool's
	// language that it did not pass to the tool, or that the tool said it
	// skipped (untrusted; Normalise turns them into Report.NotScanned).
	NotCovered []FileNote `json:"notCovered,omitempty"`
}

// FileNote says why the request file with index File was not fully
// scanned by a tool.
type FileNote struct {
	File   int    `json:"file"`
	Reason string `json:"reason"`
}

// Manifest is the driver's artefact ManifestArtefact. Paths in every raw
// report are relative to the source root (the driver runs each tool from
// it) or absolute beneath Root.
type Manifest struct {
	Version int       `json:"version"`
	Root    string    `json:"root"`
	Tools   []ToolRun `json:"tools"`
}

// Request is what the host puts in the snapshot (RequestFile): the changed
// files the tools scan, each at NeutralName(i, Ext) in ChangedDir, and for
// those the Go toolchain needs in their package (Src) also at their own
// path in SourceDir, beside the context (the rest of the package, go.mod).
// Every tool but gosec scans the neutral names, so no name in the
// repository can be taken for an option, steer a tool's path rules or be
// refused by a tool; the host maps the names back.
type Request struct {
	Version int        `json:"version"`
	Files   []ScanFile `json:"files"`
	// Tools limits the run to these tools; empty means all.
	Tools []Tool `json:"tools,omitempty"`
	// TimeoutSeconds bounds each tool's run.
	TimeoutSeconds int `json:"timeoutSeconds"`
}

// RequestVersion is the version of Request and Manifest.
const RequestVersion = 2

// ScanFile is one changed file of a Request.
type ScanFile struct {
	// Ext is the file's extension (NeutralExt of its path).
	Ext string `json:"ext"`
	// Src is its path beneath SourceDir, for tools that need the
	// repository's layout (gosec); "" when it has none there.
	Src string `json:"src,omitempty"`
}

// NeutralExt is the extension a file's neutral name keeps: its own in
// lower case when that is a plain one (a dot and up to 16 letters, digits,
// "_", "+" or "-"), else none.
func NeutralExt(name string) string {
	ext := strings.ToLower(path.Ext(name))
	if len(ext) < 2 || len(ext) > 17 {
		return ""
	}
	for _, r := range ext[1:] {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_' && r != '+' && r != '-' {
			return ""
		}
	}
	return ext
}

// NeutralName is where request file i is beneath ChangedDir.
func NeutralName(i int, ext string) string { return strconv.Itoa(i) + "/f" + ext }

// NeutralIndex reads the index back from a neutral name (or any path
// beneath its directory, such as a tool's copy with another file name).
func NeutralIndex(p string) (int, bool) {
	dir, _, ok := strings.Cut(p, "/")
	if !ok || dir == "" || len(dir) > 9 || strings.TrimLeft(dir, "0123456789") != "" || (len(dir) > 1 && dir[0] == '0') {
		return 0, false
	}
	i, err := strconv.Atoi(dir)
	return i, err == nil
}

// Snapshot layout and artefact names shared by host and driver.
const (
	// SourceDir is the snapshot directory that holds files at their
	// repository paths (Go packages and their context).
	SourceDir = "src"
	// ChangedDir is the snapshot directory that holds every changed file
	// under its neutral name.
	ChangedDir = "changed"
	// RequestFile is the snapshot file that holds the Request.
	RequestFile = "scan-request.json"
	// ManifestArtefact is the driver's manifest in /out.
	ManifestArtefact = "scan.json"
)

// OutputArtefact is the artefact name of a tool's raw report.
func OutputArtefact(t Tool) string { return string(t) + ".json" }

// DisplayPath is how a repository path is named in reports: as it is when
// it is UTF-8 without control characters (and does not start with a
// quote), otherwise quoted as git quotes paths ("a\nb.py", octal escapes
// for bytes that are not UTF-8), so every path git can store has one
// distinct, printable name.
func DisplayPath(name string) string {
	if utf8.ValidString(name) && !strings.HasPrefix(name, `"`) && !strings.ContainsFunc(name, unicode.IsControl) {
		return name
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(name); {
		r, n := utf8.DecodeRuneInString(name[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\%03o`, name[i])
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case unicode.IsControl(r):
			for _, c := range []byte(name[i : i+n]) {
				fmt.Fprintf(&b, `\%03o`, c)
			}
		default:
			b.WriteString(name[i : i+n])
		}
		i += n
	}
	b.WriteByte('"')
	return b.String()
}
