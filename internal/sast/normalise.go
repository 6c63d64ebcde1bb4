package sast

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Input is what Normalise works on: the driver's manifest and raw reports
// (both from the sandbox, so untrusted), the change, and the head version
// of the files.
type Input struct {
	Manifest Manifest
	// Outputs holds each tool's raw report (artefact OutputArtefact(tool)).
	Outputs map[Tool][]byte
	// Root is the source root the tools ran in; "" means Manifest.Root.
	// The neutral names (ChangedDir) are beside it.
	Root string
	// Files are the request's files, by the paths that findings and
	// Report.NotScanned name them with, in request order. Tools given
	// neutral names report them; they are mapped back through Files.
	// Without Files (fixtures of tools run on a repository by hand) every
	// tool's paths are taken as repository paths beneath Root.
	Files []string
	// Exts are the files' extensions as in the request (NeutralExt of
	// their repository paths); nil means NeutralExt of Files.
	Exts []string
	// NotScanned are the changed files the host left out (caps, links),
	// reported first.
	NotScanned []NotScanned
	// Changed is the change (ChangedLineRanges of each file).
	Changed ChangedLines
	// Source returns the head-version content of a file, for fingerprints;
	// nil, or false, falls back to the finding's message.
	Source func(path string) ([]byte, bool)
	// Expected are the tools the job asked for; one the manifest leaves
	// out is reported failed, never as a tool without findings.
	Expected []Tool
}

// Options tunes Normalise.
type Options struct {
	// ContextLines widens every changed range by this many lines on each
	// side. The zero value keeps changed lines only (the narrowest
	// filter); callers wanting the usual context pass DefaultContextLines.
	// Clamped to [0, MaxContextLines].
	ContextLines int
	// MaxFindings caps the report; 0 (or less) means DefaultMaxFindings.
	// Clamped to MaxMaxFindings.
	MaxFindings int
	// Profile is ProfileReview (the zero value) or ProfileAudit.
	Profile Profile
	// DisabledRules are rules ("tool:rule", features.sast.disabledRules)
	// whose findings are left out in every profile.
	DisabledRules []string
	// TestPath, when set, adds test files (features.sast.testPaths) to
	// the language conventions of IsTestPath.
	TestPath func(path string) bool
}

// Normalise defaults and bounds.
const (
	DefaultContextLines = 3
	MaxContextLines     = 1000
	DefaultMaxFindings  = 50
	MaxMaxFindings      = MaxSARIFResults
	// maxRunText clips the driver's free-text fields of a ToolRun.
	maxRunText = 4 << 10
	// maxSnippetLines bounds the source lines hashed into a fingerprint.
	maxSnippetLines = 200
)

// NotScanned is a changed file that a tool which covers it did not fully
// scan, or that no tool was given (Tool ""), and why. Any of them makes
// the scan incomplete.
type NotScanned struct {
	Path   string `json:"path"`
	Tool   Tool   `json:"tool,omitempty"`
	Reason string `json:"reason"`
}

// MaxNotScanned caps Report.NotScanned; NotScannedDropped counts the rest.
const MaxNotScanned = 2000

// Report is the normalised result of one scan.
type Report struct {
	// Tools is each known tool of the manifest, in manifest order, with
	// the status after parsing (ok can become partial or failed).
	Tools []ToolRun `json:"tools"`
	// NotScanned lists what was not fully scanned, with the reason.
	NotScanned        []NotScanned `json:"notScanned"`
	NotScannedDropped int          `json:"notScannedDropped,omitempty"`
	// Findings on changed lines (± context), deduplicated, most severe
	// first, at most MaxFindings.
	Findings []Finding `json:"findings"`
	// Dropped is how many findings the MaxFindings cap removed.
	Dropped int `json:"dropped"`
	// OutsideChange is how many findings lay outside the change.
	OutsideChange int `json:"outsideChange"`
	// Profile is the profile the report was made with.
	Profile Profile `json:"profile"`
	// Muted is how many findings on changed lines the profile or the
	// policy's disabledRules left out.
	Muted int `json:"muted"`
}

// Incomplete reports whether anything the scan should have covered was
// not fully scanned: a tool that did not finish (failed, missing, timed
// out, partial) or a changed file in NotScanned. A report that is not
// incomplete means every changed file went through every tool of its
// language; "no findings" is only worth something then.
func (r *Report) Incomplete() bool {
	if len(r.NotScanned) > 0 || r.NotScannedDropped > 0 {
		return true
	}
	for _, t := range r.Tools {
		if t.Status != StatusOK && t.Status != StatusNoFiles {
			return true
		}
	}
	return false
}

// notScanned adds an entry under the cap.
func (r *Report) notScanned(n NotScanned) {
	if len(r.NotScanned) >= MaxNotScanned {
		r.NotScannedDropped++
		return
	}
	r.NotScanned = append(r.NotScanned, n)
}

// Normalise turns the driver's output into a Report (spec SC2):
//
//  1. each tool keeps the manifest's status, except that a tool with
//     status ok whose report is missing or does not parse becomes failed;
//     unknown tools and repeated entries are dropped; an expected tool the
//     manifest leaves out is failed; tool errors found in a report go to
//     ToolRun.Errors;
//  2. coverage: every file of Files that a tool covers and did not fully
//     scan goes to NotScanned with the reason (the driver's notes, the
//     tool's errors about the file or its package, or the tool's failure),
//     after the host's own entries; a tool that ran but left any of its
//     files unscanned, or reported any error, is partial;
//  3. every finding's lines are mapped from the tool's numbering onto
//     Quavon's (lines.go); a finding whose lines cannot be mapped keeps
//     the tool's numbers and says why in Unmapped;
//  4. every finding gets a fingerprint (see fingerprint);
//  5. findings whose start line (where the tool places the statement or
//     expression) is not in a changed range of their file, widened by
//     ContextLines, are counted in OutsideChange and dropped, so a tool
//     reporting a long range cannot attach a finding to a changed line it
//     does not start on; an Unmapped finding in a changed file is always
//     kept;
//  6. findings with equal fingerprints are merged;
//  7. the profile (Options.Profile, DisabledRules, TestPath) leaves out
//     or downgrades findings, counted in Muted (profile.go);
//  8. the rest are sorted by severity, path, line, tool and rule, and the
//     first MaxFindings kept; Dropped counts the others.
func Normalise(in Input, opt Options) Report {
	ctxLines, maxFindings := normaliseBounds(&opt)
	root := in.Root
	if root == "" {
		root = in.Manifest.Root
	}
	changedRoot := path.Join(path.Dir(path.Clean(root)), ChangedDir)
	index := make(map[string]int, len(in.Files))
	for i, f := range in.Files {
		index[f] = i
	}
	exts := in.Exts
	if len(exts) != len(in.Files) {
		exts = make([]string, len(in.Files))
		for i, f := range in.Files {
			exts[i] = NeutralExt(f)
		}
	}

	rep := Report{Tools: []ToolRun{}, Findings: []Finding{}, NotScanned: []NotScanned{}, Profile: opt.Profile}
	for _, n := range in.NotScanned {
		rep.notScanned(NotScanned{Path: n.Path, Tool: n.Tool, Reason: sanitise(n.Reason, maxRunText)})
	}
	src := newSourceCache(in.Source)
	seenTool := map[Tool]bool{}
	var runs []ToolRun
	for _, run := range in.Manifest.Tools {
		if !run.Tool.Valid() || seenTool[run.Tool] {
			continue
		}
		seenTool[run.Tool] = true
		runs = append(runs, sanitiseRun(run))
	}
	for _, t := range in.Expected {
		if t.Valid() && !seenTool[t] {
			seenTool[t] = true
			runs = append(runs, ToolRun{Tool: t, Status: StatusFailed, Error: "the driver's manifest does not mention this tool"})
		}
	}
	var all []Finding
	for _, run := range runs {
		s := ScannerOf(run.Tool)
		var covered []int
		if in.Files != nil {
			covered = s.Pick(exts)
			switch {
			case run.Status == StatusOK && run.Files != len(covered):
				run.Status, run.Error = StatusFailed, fmt.Sprintf("the driver gave the tool %d of the %d files it covers", run.Files, len(covered))
			case run.Status == StatusNoFiles && len(covered) > 0:
				run.Status, run.Error = StatusFailed, fmt.Sprintf("the driver gave the tool none of the %d files it covers", len(covered))
			}
		}
		notes := map[string]string{}
		if run.Status == StatusOK {
			raw, ok := in.Outputs[run.Tool]
			c := &collector{tool: run.Tool, root: root}
			if s.Neutral && in.Files != nil {
				c.root = changedRoot
				c.resolve = func(p string) (string, bool) {
					i, ok := NeutralIndex(p)
					if !ok || i >= len(in.Files) {
						return "", false
					}
					return in.Files[i], true
				}
			}
			if !ok {
				run.Status, run.Error = StatusFailed, "the tool's report "+OutputArtefact(run.Tool)+" is missing"
			} else if parsed, err := parseWith(c, raw); err != nil {
				run.Status, run.Error = StatusFailed, clip(sanitise(err.Error(), maxRunText), maxRunText)
			} else {
				run.Errors = parsed.ToolErrors
				for _, f := range parsed.Findings {
					all = append(all, src.mapLines(f, s))
				}
				for _, n := range run.NotCovered {
					if n.File >= 0 && n.File < len(in.Files) && slices.Contains(covered, n.File) {
						addNote(notes, in.Files[n.File], n.Reason)
					}
				}
				for _, p := range sortedKeys(parsed.FileErrors) {
					if _, changed := index[p]; changed || in.Files == nil {
						addNote(notes, p, parsed.FileErrors[p])
						continue
					}
					// An error in a file of the same package (Go context)
					// leaves the package's changed files partly checked.
					for _, i := range covered {
						if path.Dir(in.Files[i]) == path.Dir(p) {
							addNote(notes, in.Files[i], "an error in "+p+" of the same package: "+parsed.FileErrors[p])
						}
					}
				}
				if len(notes) > 0 || len(run.Errors) > 0 {
					run.Status = StatusPartial
				}
			}
		}
		switch run.Status {
		case StatusFailed, StatusMissing, StatusTimedOut:
			why := string(run.Status)
			if run.Error != "" {
				why += ": " + run.Error
			}
			for _, i := range covered {
				addNote(notes, in.Files[i], why)
			}
		}
		for _, p := range sortedKeys(notes) {
			rep.notScanned(NotScanned{Path: p, Tool: run.Tool, Reason: clip(sanitise(notes[p], maxRunText), maxRunText)})
		}
		run.NotCovered = nil // now in rep.NotScanned
		rep.Tools = append(rep.Tools, run)
	}
	rep.keep(all, index, in.Changed, ctxLines, maxFindings, opt, src)
	return rep
}

// keep is Normalise's steps 4 to 8 over the parsed findings of every tool:
// fingerprints, the changed-line filter, merging, the profile and the cap.
func (rep *Report) keep(all []Finding, index map[string]int, changed ChangedLines, ctxLines, maxFindings int, opt Options, src *sourceCache) {
	all = fingerprintAll(all, src)

	seen := map[string]bool{}
	var kept []Finding
	for _, f := range all {
		_, inFiles := index[f.Path]
		if f.Unmapped != "" && (inFiles || len(changed[f.Path]) > 0) {
			kept = append(kept, f)
			continue
		}
		if !changed.Contains(f.Path, f.StartLine, f.StartLine, ctxLines) {
			rep.OutsideChange++
			continue
		}
		kept = append(kept, f)
	}
	slices.SortStableFunc(kept, compareFindings)
	var posted []Finding
	for _, f := range kept {
		if seen[f.Fingerprint] {
			continue
		}
		seen[f.Fingerprint] = true
		why, sev := opt.muteReason(f, src.line(f.Path, f.StartLine))
		if why != "" {
			rep.Muted++
			continue
		}
		f.Severity = sev
		posted = append(posted, f)
	}
	slices.SortStableFunc(posted, compareFindings) // downgrades move findings
	for _, f := range posted {
		if len(rep.Findings) >= maxFindings {
			rep.Dropped++
			continue
		}
		rep.Findings = append(rep.Findings, f)
	}
}

// addNote keeps the first reason given for a file.
func addNote(notes map[string]string, p, why string) {
	if _, ok := notes[p]; !ok {
		notes[p] = why
	}
}

// compareFindings orders by severity (most severe first), path, line,
// tool, rule, then the remaining fields for a total order.
func compareFindings(a, b Finding) int {
	return cmp.Or(
		cmp.Compare(severityRank[a.Severity], severityRank[b.Severity]),
		strings.Compare(a.Path, b.Path),
		cmp.Compare(a.StartLine, b.StartLine),
		strings.Compare(string(a.Tool), string(b.Tool)),
		strings.Compare(a.RuleID, b.RuleID),
		cmp.Compare(a.StartColumn, b.StartColumn),
		cmp.Compare(a.EndLine, b.EndLine),
		cmp.Compare(a.EndColumn, b.EndColumn),
		strings.Compare(a.Message, b.Message),
		strings.Compare(a.Fingerprint, b.Fingerprint),
	)
}

var knownStatus = map[Status]bool{
	StatusOK: true, StatusPartial: true, StatusFailed: true, StatusMissing: true, StatusTimedOut: true, StatusNoFiles: true,
}

// sanitiseRun bounds the driver's free text and refuses unknown statuses.
func sanitiseRun(r ToolRun) ToolRun {
	if !knownStatus[r.Status] {
		r.Error = fmt.Sprintf("unknown status %q from the driver", clip(sanitise(string(r.Status), 40), 40))
		r.Status = StatusFailed
	}
	r.Version = sanitise(r.Version, 100)
	r.Output = sanitise(r.Output, 200)
	r.Stderr = clip(strings.ToValidUTF8(r.Stderr, "\uFFFD"), maxRunText)
	r.Error = sanitise(r.Error, maxRunText)
	r.Errors = nil                 // only the host's parse sets it
	if r.Status == StatusPartial { // the host decides what is partial
		r.Status = StatusOK
	}
	if len(r.NotCovered) > MaxNotScanned {
		r.NotCovered = r.NotCovered[:MaxNotScanned]
	}
	for i := range r.NotCovered {
		r.NotCovered[i].Reason = sanitise(r.NotCovered[i].Reason, MaxToolErrorBytes)
	}
	return r
}

// fingerprintAll sets every finding's Fingerprint: the hex SHA-256
// (first 32 digits) of tool, rule, path, the normalised snippet (the
// finding's source lines with whitespace collapsed; the message when the
// source is unavailable) and the occurrence index of that (tool, rule,
// path, snippet) among the file's distinct positions in line order. No
// line number goes in, so a finding moved by lines inserted above it keeps
// its fingerprint; two identical snippets differ by their index, and the
// same finding reported twice at one position shares one.
func fingerprintAll(fs []Finding, src *sourceCache) []Finding {
	type key struct {
		tool          Tool
		rule, path    string
		snippetDigest [32]byte
	}
	type pos struct{ sl, sc, el, ec int }
	snippets := make([]string, len(fs))
	keys := make([]key, len(fs))
	for i, f := range fs {
		snippets[i] = src.snippet(f)
		keys[i] = key{f.Tool, f.RuleID, f.Path, sha256.Sum256([]byte(snippets[i]))}
	}
	order := make([]int, len(fs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		fa, fb := fs[a], fs[b]
		return cmp.Or(cmp.Compare(fa.StartLine, fb.StartLine), cmp.Compare(fa.StartColumn, fb.StartColumn),
			cmp.Compare(fa.EndLine, fb.EndLine), cmp.Compare(fa.EndColumn, fb.EndColumn))
	})
	next := map[key]int{}
	at := map[key]map[pos]int{}
	out := slices.Clone(fs)
	for _, i := range order {
		f, k := fs[i], keys[i]
		p := pos{f.StartLine, f.StartColumn, f.EndLine, f.EndColumn}
		if at[k] == nil {
			at[k] = map[pos]int{}
		}
		idx, ok := at[k][p]
		if !ok {
			idx = next[k]
			next[k]++
			at[k][p] = idx
		}
		h := sha256.New()
		for _, part := range []string{"quavon-sast-v1", string(f.Tool), f.RuleID, f.Path, snippets[i], strconv.Itoa(idx)} {
			h.Write([]byte(part))
			h.Write([]byte{0})
		}
		out[i].Fingerprint = hex.EncodeToString(h.Sum(nil))[:32]
	}
	return out
}

// sourceCache reads each file once (as Text returns it) and splits it
// into lines.
type sourceCache struct {
	read  func(string) ([]byte, bool)
	texts map[string][]byte
	files map[string][][]byte
	maps  map[lineMapKey]*lineMap
}

type lineMapKey struct {
	path string
	tool Tool
}

func newSourceCache(read func(string) ([]byte, bool)) *sourceCache {
	return &sourceCache{read: read, texts: map[string][]byte{}, files: map[string][][]byte{}, maps: map[lineMapKey]*lineMap{}}
}

// text returns the file as the tools saw it; false when it is unavailable.
func (s *sourceCache) text(p string) ([]byte, bool) {
	if s.read == nil {
		return nil, false
	}
	if t, ok := s.texts[p]; ok {
		return t, t != nil
	}
	var t []byte
	if data, ok := s.read(p); ok {
		t, _ = Text(data)
		if t == nil {
			t = []byte{}
		}
	}
	s.texts[p] = t
	return t, t != nil
}

func (s *sourceCache) lines(p string) [][]byte {
	if ls, ok := s.files[p]; ok {
		return ls
	}
	var ls [][]byte
	if t, ok := s.text(p); ok {
		ls = bytes.Split(t, []byte("\n"))
	}
	s.files[p] = ls
	return ls
}

// mapLines maps f's lines from its tool's numbering onto Quavon's (see
// lines.go). Columns are kept only where the tool's line starts where
// Quavon's does. Without the file's text the tool's numbers stay.
func (s *sourceCache) mapLines(f Finding, sc *Scanner) Finding {
	t, ok := s.text(f.Path)
	if !ok {
		return f
	}
	k := lineMapKey{f.Path, sc.Tool}
	m := s.maps[k]
	if m == nil {
		terms, why := sc.numbering(t)
		m = newLineMap(t, terms, why)
		s.maps[k] = m
	}
	if m.why != "" {
		f.Unmapped = m.why
		return f
	}
	start, exactStart, ok1 := m.line(f.StartLine)
	end, exactEnd, ok2 := m.line(f.EndLine)
	if !ok1 || !ok2 {
		f.Unmapped = fmt.Sprintf("%s reports line %d, but the file has %d lines as %s counts them", sc.Tool, f.EndLine, len(m.theirs), sc.Tool)
		if !ok1 {
			f.Unmapped = fmt.Sprintf("%s reports line %d, but the file has %d lines as %s counts them", sc.Tool, f.StartLine, len(m.theirs), sc.Tool)
		}
		return f
	}
	if !exactStart || !exactEnd || start != f.StartLine || end != f.EndLine {
		f.StartColumn, f.EndColumn = 0, 0
	}
	f.StartLine, f.EndLine = start, end
	return f
}

// line is line n of file p as the tools saw it, "" when unavailable.
func (s *sourceCache) line(p string, n int) string {
	ls := s.lines(p)
	if n < 1 || n > len(ls) {
		return ""
	}
	return string(ls[n-1])
}

// snippet is the finding's source lines, whitespace collapsed and
// trimmed; "m:" and the message when the lines are not available.
func (s *sourceCache) snippet(f Finding) string {
	ls := s.lines(f.Path)
	if f.StartLine >= 1 && f.StartLine <= len(ls) {
		end := min(f.EndLine, len(ls), f.StartLine+maxSnippetLines-1)
		var b strings.Builder
		for _, l := range ls[f.StartLine-1 : end] {
			b.Write(l)
			b.WriteByte(' ')
		}
		if sn := strings.Join(strings.Fields(strings.ToValidUTF8(b.String(), "\uFFFD")), " "); sn != "" {
			return "s:" + sn
		}
	}
	return "m:" + strings.Join(strings.Fields(f.Message), " ")
}

// Summary is the report's coverage in one line, for the CLI, the review
// summary and the check run: "complete: …" or "incomplete: …" with what
// was not fully scanned, counted.
func (r *Report) Summary() string {
	if !r.Incomplete() {
		return "complete: every changed file was scanned by every tool that covers it"
	}
	files := map[string]bool{}
	for _, n := range r.NotScanned {
		files[n.Path] = true
	}
	var parts []string
	if n := len(files) + r.NotScannedDropped; n > 0 {
		parts = append(parts, fmt.Sprintf("%d changed file(s) not fully scanned", n))
	}
	for _, t := range r.Tools {
		if t.Status != StatusOK && t.Status != StatusNoFiles {
			parts = append(parts, fmt.Sprintf("%s %s", t.Tool, t.Status))
		}
	}
	return "incomplete: " + strings.Join(parts, "; ")
}
