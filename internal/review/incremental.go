package review

import (
	"bytes"
	"slices"
	"strings"

	"github.com/quavon/quavon/internal/sast"
)

// Head is what Classify knows of the reviewed head: a file's content, and
// whether a scanner's result for it can be trusted to be complete.
type Head struct {
	// Read returns the head version of a file; false when the file is not
	// in the head commit.
	Read func(path string) ([]byte, bool)
	// ScannedClean reports whether tool ran to completion over path in
	// this run (so a finding of it that is gone is really gone).
	ScannedClean func(tool, path string) bool
}

// Classified is a run's findings sorted against what the pull request
// already showed.
type Classified struct {
	// New are found now and never shown: to post.
	New []Finding
	// Repeated are shown before and still present (found again, or
	// carried over because their quoted code is unchanged): never posted
	// again.
	Repeated []Finding
	// Dismissed are found now, but a maintainer dismissed them: never
	// posted again.
	Dismissed []Finding
	// Resolved were shown before and are gone: their quoted code changed
	// or disappeared, or the scanner that found them ran clean over the
	// file.
	Resolved []Finding
}

// All is every finding to store for the run, with its status.
func (c Classified) All() []Finding {
	var out []Finding
	for _, set := range []struct {
		fs []Finding
		st FindingStatus
	}{{c.New, FindingNew}, {c.Repeated, FindingPosted}, {c.Dismissed, FindingDismissed}, {c.Resolved, FindingResolved}} {
		for _, f := range set.fs {
			f.Status = set.st
			out = append(out, f)
		}
	}
	return out
}

// Classify compares current (this run's joined findings) with shown (the
// pull request's fingerprints and their latest standing, Shown) and
// previous (the findings of the pull request's latest completed run,
// whatever their standing there):
//
//   - a dismissed fingerprint is never posted again;
//   - a fingerprint the pull request showed (posted or resolved) is not
//     posted again;
//   - a previous finding not found now is carried over as repeated while
//     its quoted code is still at its lines' file (the model may simply
//     not have looked again: an incremental review reads only what changed
//     since), and resolved when that code changed or disappeared, or, for
//     a scanner's finding, when every tool that found it ran clean over
//     the file.
func Classify(current []Finding, shown map[string]FindingStatus, previous []StoredFinding, head Head) Classified {
	var c Classified
	seen := map[string]bool{}
	for _, f := range current {
		seen[f.Fingerprint] = true
		switch shown[f.Fingerprint] {
		case FindingDismissed:
			c.Dismissed = append(c.Dismissed, f)
		case FindingPosted, FindingResolved:
			c.Repeated = append(c.Repeated, f)
		default:
			c.New = append(c.New, f)
		}
	}
	for _, p := range previous {
		if seen[p.Fingerprint] || p.Status == FindingResolved {
			continue
		}
		seen[p.Fingerprint] = true
		f := p.Finding
		f.Status = ""
		switch {
		case shown[f.Fingerprint] == FindingDismissed:
			c.Dismissed = append(c.Dismissed, f)
		case stillThere(f, head):
			if p.Status == FindingPosted {
				c.Repeated = append(c.Repeated, f)
			} else if p.Status == FindingNew {
				// Found by an earlier run whose output was never
				// published (superseded, shadow): still new.
				c.New = append(c.New, f)
			}
		default:
			if p.Status == FindingPosted {
				c.Resolved = append(c.Resolved, f)
			}
		}
	}
	return c
}

// stillThere reports whether an earlier finding not found now stands: its
// file exists, and for a model finding its quote is still in the file;
// for a scanner finding, some tool that found it did not run clean over
// the file.
func stillThere(f Finding, head Head) bool {
	data, ok := head.Read(f.Path)
	if !ok {
		return false
	}
	if f.Source == SourceSAST {
		for _, t := range f.Tools {
			if t == ToolLLM {
				continue
			}
			if head.ScannedClean == nil || !head.ScannedClean(t, f.Path) {
				return true
			}
		}
		return false
	}
	text, _ := sast.Text(data)
	q := NormaliseSpace(f.Quote)
	return q != "" && strings.Contains(NormaliseSpace(string(text)), q)
}

// ChangedSince returns, of the pull request's changed lines, those whose
// text differs between since (the last reviewed head) and head: what an
// incremental review reads. readSince returns a file at since.
func ChangedSince(changed sast.ChangedLines, readSince, readHead func(string) ([]byte, bool)) sast.ChangedLines {
	out := sast.ChangedLines{}
	for p, prRanges := range changed {
		h, ok := readHead(p)
		if !ok {
			continue
		}
		b, _ := readSince(p)
		if b != nil && bytes.Equal(b, h) {
			continue
		}
		var keep []sast.LineRange
		for _, r := range sast.ChangedLineRanges(b, h) {
			for _, pr := range prRanges {
				if s, e := max(r.Start, pr.Start), min(r.End, pr.End); s <= e {
					keep = append(keep, sast.LineRange{Start: s, End: e})
				}
			}
		}
		if len(keep) > 0 {
			slices.SortFunc(keep, func(a, b sast.LineRange) int { return a.Start - b.Start })
			out[p] = keep
		}
	}
	return out
}
