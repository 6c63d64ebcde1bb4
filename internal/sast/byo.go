package sast

// Bring-your-own scanners (spec §1): an image an instance admin allowlisted
// (byo:<name> in the runner's image lockfile) runs in the same sandbox job
// shape as the scanners image, over the same snapshot, and writes a SARIF
// 2.1.0 log to /out. Everything in that log is hostile: ParseBYOSARIF reads
// it under caps, keeps only locations that name a file of the snapshot,
// and NormaliseBYO keeps only results on changed lines, exactly as the
// built-in tools' findings.
//
// The image's contract (deploy/images/README.md):
//
//   - the job runs BYORunCommand (/opt/quavon/byo/scan), no arguments,
//     in /work, as user 65532, without network;
//   - /work holds the snapshot of the scanners job: scan-request.json (the
//     changed files in order, with their extensions), changed/<i>/f<ext>
//     (every changed file under its neutral name) and src/ (Go packages
//     at their repository paths);
//   - it writes BYOArtefact (/out/results.sarif); a location's
//     artifactLocation.uri is relative to /work ("changed/0/f.py",
//     "src/cmd/main.go"), absolute beneath it, or a file:///work/ URI;
//   - exit 0 means it ran (with or without results); any other exit code
//     is a failed run, 127 (the shell's "not found") a missing scanner.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// BYO contract and caps.
const (
	// BYOPrefix starts the image class and the tool name of a BYO scanner.
	BYOPrefix = "byo:"
	// BYORunCommand is what a BYO scanner job runs.
	BYORunCommand = "/opt/quavon/byo/scan"
	// BYOArtefact is the SARIF log the job returns from /out.
	BYOArtefact = "results.sarif"
	// BYOWorkRoot is where the snapshot is in the sandbox.
	BYOWorkRoot = "/work"
	// MaxBYOSARIFBytes is the largest log read (the job's output cap is
	// no larger).
	MaxBYOSARIFBytes = 8 << 20
	// MaxBYOResults is how many results of one log are read; the rest
	// are ignored and the run is partial.
	MaxBYOResults = 10_000
	// MaxBYORules bounds the rules of one run read for lookups.
	MaxBYORules = 10_000
	// MaxBYOScanners bounds the BYO scanners of one review.
	MaxBYOScanners = 8
)

var byoNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// ValidBYOName reports whether name is a lockfile byo name.
func ValidBYOName(name string) bool { return byoNameRE.MatchString(name) }

// BYOTool is the tool name of BYO scanner name: its image class.
func BYOTool(name string) Tool { return Tool(BYOPrefix + name) }

// BYOName returns the image's name of a BYO tool, and whether t is one.
func (t Tool) BYOName() (string, bool) {
	name, ok := strings.CutPrefix(string(t), BYOPrefix)
	return name, ok && ValidBYOName(name)
}

// known reports whether t is a built-in tool or a BYO scanner.
func (t Tool) known() bool {
	_, byo := t.BYOName()
	return t.Valid() || byo
}

// infoURI is SARIF's informationUri of t ("" for a BYO scanner).
func (t Tool) infoURI() string {
	if s := ScannerOf(t); s != nil {
		return s.InfoURI
	}
	return ""
}

// ErrSARIF is wrapped by ParseBYOSARIF for a log it refuses whole.
var ErrSARIF = errors.New("sast: invalid SARIF log")

// BYOFiles maps the snapshot's paths back to the files they stand for.
type BYOFiles struct {
	// Files are the changed files in request order (the neutral names'
	// indexes), by their display paths.
	Files []string
	// Src maps a path beneath the snapshot's src directory to its display
	// path.
	Src map[string]string
}

// resolve maps a clean path relative to /work to the file it names.
func (b BYOFiles) resolve(p string) (string, bool) {
	if rest, ok := strings.CutPrefix(p, ChangedDir+"/"); ok {
		i, ok := NeutralIndex(rest)
		if !ok || i >= len(b.Files) {
			return "", false
		}
		return b.Files[i], true
	}
	if rest, ok := strings.CutPrefix(p, SourceDir+"/"); ok {
		shown, ok := b.Src[rest]
		return shown, ok
	}
	return "", false
}

// The part of SARIF 2.1.0 read; everything else is ignored.
type byoLog struct {
	Version *string  `json:"version"`
	Runs    []byoRun `json:"runs"`
}

type byoRun struct {
	Tool struct {
		Driver struct {
			Name  string    `json:"name"`
			Rules []byoRule `json:"rules"`
		} `json:"driver"`
	} `json:"tool"`
	OriginalURIBaseIDs map[string]byoArtifactLocation `json:"originalUriBaseIds"`
	Artifacts          []struct {
		Location byoArtifactLocation `json:"location"`
	} `json:"artifacts"`
	Results []json.RawMessage `json:"results"`
}

type byoRule struct {
	ID               string      `json:"id"`
	Name             string      `json:"name"`
	ShortDescription *byoMessage `json:"shortDescription"`
	HelpURI          string      `json:"helpUri"`
	Default          *struct {
		Level string `json:"level"`
	} `json:"defaultConfiguration"`
	Properties byoProperties `json:"properties"`
}

type byoProperties struct {
	Tags             []string        `json:"tags"`
	SecuritySeverity json.RawMessage `json:"security-severity"`
}

type byoMessage struct {
	Text string `json:"text"`
}

type byoArtifactLocation struct {
	URI       string `json:"uri"`
	URIBaseID string `json:"uriBaseId"`
	Index     *int   `json:"index"`
}

type byoResult struct {
	RuleID    string     `json:"ruleId"`
	RuleIndex *int       `json:"ruleIndex"`
	Level     string     `json:"level"`
	Message   byoMessage `json:"message"`
	Locations []struct {
		Physical *struct {
			Artifact byoArtifactLocation `json:"artifactLocation"`
			Region   *struct {
				StartLine   int `json:"startLine"`
				EndLine     int `json:"endLine"`
				StartColumn int `json:"startColumn"`
				EndColumn   int `json:"endColumn"`
			} `json:"region"`
		} `json:"physicalLocation"`
	} `json:"locations"`
	Properties byoProperties `json:"properties"`
}

// ParseBYOSARIF reads a BYO scanner's SARIF log as tool (BYOTool(name)).
// The log is refused whole (an error wrapping ErrSARIF) when it is over
// MaxBYOSARIFBytes, not one JSON document, not version "2.1.0", or has no
// runs array. Within it, a result is dropped and counted as a tool error
// when it has no location with a start line, when its path is not a
// changed file or a file of src/ of the snapshot (absolute paths must lie
// beneath /work; file: URIs only; no "..", no other scheme or host), or
// when its fields do not validate; text is sanitised and clipped; at most
// MaxBYOResults results are read.
//
// Severity: the rule's security-severity (GitHub's CVSS convention:
// ≥ 9 critical, ≥ 7 high, ≥ 4 medium, above 0 low), else the result's or
// the rule's level (error high, warning medium, note low, none info;
// SARIF's default is warning). CWE: a "CWE-<n>" or "external/cwe/cwe-<n>"
// tag of the result or its rule.
func ParseBYOSARIF(tool Tool, raw []byte, files BYOFiles) (Parsed, error) {
	if _, ok := tool.BYOName(); !ok {
		return Parsed{}, fmt.Errorf("sast.ParseBYOSARIF: %q is not a BYO tool", tool)
	}
	if len(raw) > MaxBYOSARIFBytes {
		return Parsed{}, fmt.Errorf("sast.ParseBYOSARIF %s: %w: %d bytes, over %d", tool, ErrSARIF, len(raw), MaxBYOSARIFBytes)
	}
	var log byoLog
	if err := decodeStrict(bytes.TrimPrefix(raw, []byte("\xEF\xBB\xBF")), &log); err != nil {
		return Parsed{}, fmt.Errorf("sast.ParseBYOSARIF %s: %w: %v", tool, ErrSARIF, err)
	}
	switch {
	case log.Version == nil || *log.Version != "2.1.0":
		return Parsed{}, fmt.Errorf("sast.ParseBYOSARIF %s: %w: version is not \"2.1.0\"", tool, ErrSARIF)
	case log.Runs == nil:
		return Parsed{}, fmt.Errorf("sast.ParseBYOSARIF %s: %w: no runs array", tool, ErrSARIF)
	case len(log.Runs) > MaxSARIFRuns:
		return Parsed{}, fmt.Errorf("sast.ParseBYOSARIF %s: %w: %d runs, over %d", tool, ErrSARIF, len(log.Runs), MaxSARIFRuns)
	}
	c := &collector{tool: tool, root: BYOWorkRoot, resolve: files.resolve}
	read := 0
	for ri, run := range log.Runs {
		rules := run.Tool.Driver.Rules
		if len(rules) > MaxBYORules {
			c.toolError("%s: run %d has %d rules; only the first %d are used", tool, ri, len(rules), MaxBYORules)
			rules = rules[:MaxBYORules]
		}
		byID := make(map[string]int, len(rules))
		for i, r := range rules {
			if _, dup := byID[r.ID]; !dup && r.ID != "" {
				byID[r.ID] = i
			}
		}
		for _, rawResult := range run.Results {
			if read >= MaxBYOResults {
				c.toolError("%s: more than %d results; the rest were ignored", tool, MaxBYOResults)
				return c.result(), nil
			}
			read++
			var res byoResult
			if err := json.Unmarshal(rawResult, &res); err != nil {
				c.toolError("%s: result dropped: %v", tool, err)
				continue
			}
			var rule *byoRule
			if res.RuleIndex != nil && *res.RuleIndex >= 0 && *res.RuleIndex < len(rules) {
				rule = &rules[*res.RuleIndex]
			} else if i, ok := byID[res.RuleID]; ok {
				rule = &rules[i]
			}
			if !c.addBYO(res, rule, run) {
				return c.result(), nil
			}
		}
	}
	return c.result(), nil
}

// addBYO turns one result into a finding (or a tool error); false once the
// collector is full.
func (c *collector) addBYO(res byoResult, rule *byoRule, run byoRun) bool {
	ruleID := res.RuleID
	if ruleID == "" && rule != nil {
		ruleID = rule.ID
	}
	if len(res.Locations) == 0 || res.Locations[0].Physical == nil || res.Locations[0].Physical.Region == nil ||
		res.Locations[0].Physical.Region.StartLine < 1 {
		c.toolError("%s: result %q dropped: no location with a start line", c.tool, clip(sanitise(ruleID, 80), 80))
		return true
	}
	loc := res.Locations[0].Physical
	p, err := byoLocation(loc.Artifact, run)
	if err != nil {
		c.toolError("%s: result %q dropped: %v", c.tool, clip(sanitise(ruleID, 80), 80), err)
		return true
	}
	f := Finding{RuleID: ruleID, Message: res.Message.Text, StartLine: loc.Region.StartLine, EndLine: loc.Region.EndLine,
		StartColumn: loc.Region.StartColumn, EndColumn: loc.Region.EndColumn}
	level := res.Level
	var tags []string
	tags = append(tags, res.Properties.Tags...)
	if rule != nil {
		f.RuleName = rule.Name
		if f.RuleName == "" && rule.ShortDescription != nil {
			f.RuleName = rule.ShortDescription.Text
		}
		f.HelpURI = rule.HelpURI
		if level == "" && rule.Default != nil {
			level = rule.Default.Level
		}
		tags = append(tags, rule.Properties.Tags...)
		if f.Message == "" && rule.ShortDescription != nil {
			f.Message = rule.ShortDescription.Text
		}
	}
	f.Severity = levelSeverity(level)
	if rule != nil {
		if s, ok := byoSecuritySeverity(rule.Properties.SecuritySeverity); ok {
			f.Severity = s
		}
	}
	for i, t := range tags {
		if i >= 64 {
			break
		}
		if cwe := tagCWE(t); cwe != "" {
			f.CWE = cwe
			break
		}
	}
	return c.add(f, p)
}

// byoLocation turns an artifact location into a path for the collector
// (relative to /work, or absolute).
func byoLocation(a byoArtifactLocation, run byoRun) (string, error) {
	if a.URI == "" && a.Index != nil && *a.Index >= 0 && *a.Index < len(run.Artifacts) {
		a = run.Artifacts[*a.Index].Location
	}
	if a.URI == "" {
		return "", errors.New("location without a uri")
	}
	p, err := uriPath(a.URI)
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(p, "/") && a.URIBaseID != "" {
		base, ok := run.OriginalURIBaseIDs[a.URIBaseID]
		if !ok || base.URIBaseID != "" {
			return "", fmt.Errorf("unknown uriBaseId %q", clip(sanitise(a.URIBaseID, 80), 80))
		}
		bp, err := uriPath(base.URI)
		if err != nil {
			return "", err
		}
		p = strings.TrimSuffix(bp, "/") + "/" + p
		if bp == "" {
			p = strings.TrimPrefix(p, "/")
		}
	}
	if len(p) > MaxPathBytes {
		return "", errors.New("path too long")
	}
	// Reject any ".." segment, before cleaning could hide it.
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "", errors.New("path climbs out with ..")
		}
	}
	return path.Clean(p), nil
}

// uriPath is the path of a SARIF uri: a file URI without host (or
// localhost), or a relative reference; percent-escapes decoded.
func uriPath(u string) (string, error) {
	if len(u) > 2*MaxPathBytes {
		return "", errors.New("uri too long")
	}
	if u == "" {
		return "", nil
	}
	pu, err := url.Parse(u)
	if err != nil {
		return "", errors.New("not a uri")
	}
	switch {
	case pu.Scheme == "" && pu.Host == "" && pu.Opaque == "":
	case strings.EqualFold(pu.Scheme, "file") && (pu.Host == "" || pu.Host == "localhost") && pu.Opaque == "":
		if !strings.HasPrefix(pu.Path, "/") {
			return "", errors.New("file uri without an absolute path")
		}
	default:
		return "", errors.New("not a file uri or relative reference")
	}
	if pu.RawQuery != "" || pu.Fragment != "" || pu.User != nil {
		return "", errors.New("uri with a query, fragment or user")
	}
	return pu.Path, nil
}

func levelSeverity(level string) Severity {
	switch level {
	case "error":
		return SeverityHigh
	case "note":
		return SeverityLow
	case "none":
		return SeverityInfo
	default: // "warning", absent, or anything else
		return SeverityMedium
	}
}

// byoSecuritySeverity reads GitHub's security-severity property (a number as
// a string, 0.0 to 10.0).
func byoSecuritySeverity(raw json.RawMessage) (Severity, bool) {
	if len(raw) == 0 || len(raw) > 32 {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		s = string(raw)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || v < 0 || v > 10 {
		return "", false
	}
	switch {
	case v >= 9:
		return SeverityCritical, true
	case v >= 7:
		return SeverityHigh, true
	case v >= 4:
		return SeverityMedium, true
	case v > 0:
		return SeverityLow, true
	}
	return SeverityInfo, true
}

// tagCWE reads "CWE-79", "cwe-79" or "external/cwe/cwe-79".
func tagCWE(tag string) string {
	if len(tag) > 64 {
		return ""
	}
	t := strings.ToLower(strings.TrimSpace(tag))
	t = strings.TrimPrefix(t, "external/cwe/")
	if !strings.HasPrefix(t, "cwe-") {
		return ""
	}
	return cweID(t)
}

// BYORun is one BYO scanner's job as the caller saw it: the status of the
// job (ok when it completed with exit 0 and returned its log), why it is
// not ok, and the log.
type BYORun struct {
	Tool   Tool
	Status Status
	Error  string
	// SARIF is the returned log (when Status is ok).
	SARIF []byte
	// Files maps the snapshot's paths back to the change's files.
	Files BYOFiles
}

// NormaliseBYO is Normalise for one BYO scanner: its log parsed with
// ParseBYOSARIF (a log it refuses makes the run failed; dropped results
// make it partial), each finding's lines checked against its file (a
// finding past the file's end is dropped as a tool error: a BYO scanner's
// numbers are never kept unmapped), then Normalise's steps 4 to 8 with the
// same change, context and cap. A run that is not ok lists every changed
// file as not scanned by it.
func NormaliseBYO(in Input, run BYORun, opt Options) Report {
	ctxLines, maxFindings := normaliseBounds(&opt)
	rep := Report{Tools: []ToolRun{}, Findings: []Finding{}, NotScanned: []NotScanned{}, Profile: opt.Profile}
	index := make(map[string]int, len(in.Files))
	for i, f := range in.Files {
		index[f] = i
	}
	tr := ToolRun{Tool: run.Tool, Status: run.Status, Files: len(in.Files), Error: sanitise(run.Error, maxRunText)}
	if !knownStatus[tr.Status] {
		tr.Status, tr.Error = StatusFailed, "unknown status"
	}
	if _, ok := run.Tool.BYOName(); !ok {
		tr.Status, tr.Error = StatusFailed, "not a BYO tool"
	}
	src := newSourceCache(in.Source)
	var all []Finding
	if tr.Status == StatusOK {
		parsed, err := ParseBYOSARIF(run.Tool, run.SARIF, run.Files)
		if err != nil {
			tr.Status, tr.Error = StatusFailed, clip(sanitise(err.Error(), maxRunText), maxRunText)
		} else {
			errs := parsed.ToolErrors
			sc := &Scanner{Tool: run.Tool}
			for _, f := range parsed.Findings {
				m := src.mapLines(f, sc)
				if m.Unmapped != "" {
					if len(errs) < MaxToolErrors {
						errs = append(errs, clip(sanitise(fmt.Sprintf("%s: finding dropped in %s: %s", run.Tool, f.Path, m.Unmapped), MaxToolErrorBytes), MaxToolErrorBytes))
					}
					continue
				}
				all = append(all, m)
			}
			tr.Errors = errs
			if len(errs) > 0 {
				tr.Status = StatusPartial
			}
		}
	}
	switch tr.Status {
	case StatusFailed, StatusMissing, StatusTimedOut:
		why := string(tr.Status)
		if tr.Error != "" {
			why += ": " + tr.Error
		}
		for _, f := range in.Files {
			rep.notScanned(NotScanned{Path: f, Tool: run.Tool, Reason: clip(sanitise(why, maxRunText), maxRunText)})
		}
	}
	rep.Tools = append(rep.Tools, tr)
	rep.keep(all, index, in.Changed, ctxLines, maxFindings, opt, src)
	return rep
}

// normaliseBounds applies Options' defaults and clamps.
func normaliseBounds(opt *Options) (ctxLines, maxFindings int) {
	ctxLines = min(max(opt.ContextLines, 0), MaxContextLines)
	maxFindings = opt.MaxFindings
	if maxFindings <= 0 {
		maxFindings = DefaultMaxFindings
	}
	maxFindings = min(maxFindings, MaxMaxFindings)
	if opt.Profile == "" {
		opt.Profile = ProfileReview
	}
	return ctxLines, maxFindings
}
