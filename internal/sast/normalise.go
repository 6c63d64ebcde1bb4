package sast

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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
	Root string
	// Changed is the change (ParseUnifiedDiff).
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

// Report is the normalised result of one scan.
type Report struct {
	// Tools is each known tool of the manifest, in manifest order, with
	// the status after parsing (ok can become failed).
	Tools []ToolRun `json:"tools"`
	// Findings on changed lines (± context), deduplicated, most severe
	// first, at most MaxFindings.
	Findings []Finding `json:"findings"`
	// Dropped is how many findings the MaxFindings cap removed.
	Dropped int `json:"dropped"`
	// OutsideChange is how many findings lay outside the change.
	OutsideChange int `json:"outsideChange"`
}

// Normalise turns the driver's output into a Report (spec SC2):
//
//  1. each tool keeps the manifest's status, except that a tool with
//     status ok whose report is missing or does not parse becomes failed;
//     unknown tools and repeated entries are dropped; an expected tool the
//     manifest leaves out is failed; tool errors found in a report go to
//     ToolRun.Errors;
//  2. every finding gets a fingerprint (see fingerprint);
//  3. findings whose lines do not meet a changed range of their file,
//     widened by ContextLines, are counted in OutsideChange and dropped;
//  4. findings with equal fingerprints are merged;
//  5. the rest are sorted by severity, path, line, tool and rule, and the
//     first MaxFindings kept; Dropped counts the others.
func Normalise(in Input, opt Options) Report {
	ctxLines := min(max(opt.ContextLines, 0), MaxContextLines)
	maxFindings := opt.MaxFindings
	if maxFindings <= 0 {
		maxFindings = DefaultMaxFindings
	}
	maxFindings = min(maxFindings, MaxMaxFindings)
	root := in.Root
	if root == "" {
		root = in.Manifest.Root
	}

	rep := Report{Tools: []ToolRun{}, Findings: []Finding{}}
	src := newSourceCache(in.Source)
	seenTool := map[Tool]bool{}
	var all []Finding
	for _, run := range in.Manifest.Tools {
		if !run.Tool.Valid() || seenTool[run.Tool] {
			continue
		}
		seenTool[run.Tool] = true
		run = sanitiseRun(run)
		if run.Status == StatusOK {
			raw, ok := in.Outputs[run.Tool]
			if !ok {
				run.Status, run.Error = StatusFailed, "the tool's report "+OutputArtefact(run.Tool)+" is missing"
			} else if parsed, err := Parse(run.Tool, raw, root); err != nil {
				run.Status, run.Error = StatusFailed, clip(sanitise(err.Error(), maxRunText), maxRunText)
			} else {
				run.Errors = parsed.ToolErrors
				all = append(all, fingerprintAll(parsed.Findings, src)...)
			}
		}
		rep.Tools = append(rep.Tools, run)
	}
	for _, t := range in.Expected {
		if t.Valid() && !seenTool[t] {
			seenTool[t] = true
			rep.Tools = append(rep.Tools, ToolRun{Tool: t, Status: StatusFailed, Error: "the driver's manifest does not mention this tool"})
		}
	}

	seen := map[string]bool{}
	var kept []Finding
	for _, f := range all {
		if !in.Changed.Contains(f.Path, f.StartLine, f.EndLine, ctxLines) {
			rep.OutsideChange++
			continue
		}
		kept = append(kept, f)
	}
	slices.SortStableFunc(kept, compareFindings)
	for _, f := range kept {
		if seen[f.Fingerprint] {
			continue
		}
		seen[f.Fingerprint] = true
		if len(rep.Findings) >= maxFindings {
			rep.Dropped++
			continue
		}
		rep.Findings = append(rep.Findings, f)
	}
	return rep
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
	StatusOK: true, StatusFailed: true, StatusMissing: true, StatusTimedOut: true, StatusNoFiles: true,
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
	r.Errors = nil // only the host's parse sets it
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

// sourceCache reads each file once and splits it into lines.
type sourceCache struct {
	read  func(string) ([]byte, bool)
	files map[string][][]byte
}

func newSourceCache(read func(string) ([]byte, bool)) *sourceCache {
	return &sourceCache{read: read, files: map[string][][]byte{}}
}

func (s *sourceCache) lines(p string) [][]byte {
	if s.read == nil {
		return nil
	}
	if ls, ok := s.files[p]; ok {
		return ls
	}
	var ls [][]byte
	if data, ok := s.read(p); ok {
		ls = bytes.Split(data, []byte("\n"))
	}
	s.files[p] = ls
	return ls
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
