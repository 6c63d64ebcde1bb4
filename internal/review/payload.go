package review

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/quavon/quavon/internal/publish/render"
	"github.com/quavon/quavon/internal/sast"
)

// PayloadVersion is the version of Payload's shape.
const PayloadVersion = 1

// Payload is the typed content of a review run's outputs (pending_outputs
// kinds review and check_run): the publisher renders it with
// internal/publish/render (Payload.Render) and never sees rendered text
// from the run. Text fields are untrusted and stored redacted; the
// renderer sanitises them.
type Payload struct {
	Version int    `json:"version"`
	RunID   string `json:"runId"`
	PR      int    `json:"pr"`
	HeadSHA string `json:"headSha"`
	// Model is the model of the LLM review ("" when it did not run);
	// ModelFailed says why it did not complete.
	Model       string `json:"model,omitempty"`
	ModelFailed string `json:"modelFailed,omitempty"`
	// Inline are the new findings posted as comments (at most the
	// policy's maxFindings, most severe first); Outside are new findings
	// listed in the summary only: those on no changed line, and those
	// beyond the cap (Capped counts these).
	Inline   []PayloadFinding `json:"inline"`
	Outside  []PayloadFinding `json:"outside"`
	Capped   int              `json:"capped"`
	Repeated int              `json:"repeated"`
	Resolved []PayloadFinding `json:"resolved"`
	// SAST is nil when the scanners are off.
	SAST    *PayloadSAST  `json:"sast,omitempty"`
	Skipped []SkippedFile `json:"skipped"`
	Usage   Usage         `json:"usage"`
	// AC is the acceptance-criteria check (nil when it is not shown:
	// mode off or shadow, or no linked issue).
	AC *PayloadAC `json:"ac,omitempty"`
	// Incomplete is set (Quavon's words) when the run failed and only a
	// short "review incomplete" note is to be published.
	Incomplete string `json:"incomplete,omitempty"`
}

// PayloadFinding is one finding of a payload.
type PayloadFinding struct {
	Fingerprint string   `json:"fingerprint"`
	Source      Source   `json:"source"`
	Tools       []string `json:"tools,omitempty"`
	RuleIDs     []string `json:"ruleIds,omitempty"`
	Weakness    string   `json:"weakness,omitempty"`
	Path        string   `json:"path"`
	StartLine   int      `json:"startLine"`
	EndLine     int      `json:"endLine"`
	Severity    string   `json:"severity"`
	Title       string   `json:"title"`
	Body        string   `json:"body,omitempty"`
}

// PayloadAC is the acceptance-criteria check of the linked issue.
type PayloadAC struct {
	Issue int                `json:"issue"`
	Items []PayloadCriterion `json:"items"`
}

// PayloadCriterion is one criterion and its verified verdict. Text and
// Note are untrusted (the issue's author, the judge).
type PayloadCriterion struct {
	Text     string            `json:"text"`
	Status   string            `json:"status"`
	Inferred bool              `json:"inferred,omitempty"`
	Evidence []PayloadLocation `json:"evidence,omitempty"`
	Note     string            `json:"note,omitempty"`
}

// PayloadLocation is a changed file, or a line of it.
type PayloadLocation struct {
	Path string `json:"path"`
	Line int    `json:"line,omitempty"`
}

// PayloadSAST is the scanners' part.
type PayloadSAST struct {
	// Failed says why the scanner job did not run or return.
	Failed string           `json:"failed,omitempty"`
	Tools  []PayloadToolRun `json:"tools"`
	// NotScanned are changed files a scanner did not fully scan (capped
	// at MaxNotScanned; NotScannedDropped counts the rest): the scan is
	// incomplete, never "no findings".
	NotScanned        []PayloadNotScanned `json:"notScanned,omitempty"`
	NotScannedDropped int                 `json:"notScannedDropped,omitempty"`
}

// MaxNotScanned caps PayloadSAST.NotScanned.
const MaxNotScanned = 100

// PayloadNotScanned is a changed file a scanner did not fully scan.
type PayloadNotScanned struct {
	Path   string `json:"path"`
	Tool   string `json:"tool,omitempty"`
	Reason string `json:"reason"`
}

// PayloadToolRun is one scanner's outcome.
type PayloadToolRun struct {
	Tool     string      `json:"tool"`
	Status   sast.Status `json:"status"`
	Findings int         `json:"findings"`
	Detail   string      `json:"detail,omitempty"`
}

func payloadFinding(f Finding) PayloadFinding {
	return PayloadFinding{Fingerprint: f.Fingerprint, Source: f.Source, Tools: f.Tools, RuleIDs: f.RuleIDs, Weakness: f.Weakness,
		Path: f.Path, StartLine: f.StartLine, EndLine: f.EndLine, Severity: f.Severity, Title: safeText(f.Title, MaxTitleBytes),
		Body: safeText(f.Body, MaxBodyBytes)}
}

// NewPayload builds a run's payload from its classified findings: new
// findings on changed lines go inline, most severe first, up to
// maxFindings; the rest of the new ones are listed in the summary.
func NewPayload(run *Run, c Classified, changed sast.ChangedLines, maxFindings int) Payload {
	p := Payload{Version: PayloadVersion, RunID: run.ID, PR: run.PRNumber, HeadSHA: run.HeadSHA,
		Inline: []PayloadFinding{}, Outside: []PayloadFinding{}, Resolved: []PayloadFinding{}, Skipped: []SkippedFile{},
		Repeated: len(c.Repeated)}
	fresh := slices.Clone(c.New)
	SortFindings(fresh)
	for _, f := range fresh {
		switch {
		case !changed.Contains(f.Path, f.StartLine, f.EndLine, 0):
			p.Outside = append(p.Outside, payloadFinding(f))
		case len(p.Inline) < maxFindings:
			p.Inline = append(p.Inline, payloadFinding(f))
		default:
			p.Capped++
			p.Outside = append(p.Outside, payloadFinding(f))
		}
	}
	for _, f := range c.Resolved {
		p.Resolved = append(p.Resolved, payloadFinding(f))
	}
	return p
}

func (f PayloadFinding) render() render.Finding {
	var srcs []render.Source
	for i, t := range f.Tools {
		if t == ToolLLM {
			srcs = append(srcs, render.Source{Kind: render.SourceModel})
			continue
		}
		s := render.Source{Kind: render.SourceScanner, Tool: t}
		if i < len(f.RuleIDs) {
			s.RuleID = f.RuleIDs[i]
		}
		if len(f.Weakness) > 4 && f.Weakness[:4] == "CWE-" {
			s.CWE = f.Weakness
		}
		srcs = append(srcs, s)
	}
	if f.Source == SourceLLM {
		srcs = []render.Source{{Kind: render.SourceModel}}
	}
	return render.Finding{Severity: sast.Severity(f.Severity), Title: f.Title, Body: f.Body, Path: f.Path, Line: f.StartLine,
		EndLine: f.EndLine, Sources: srcs, Fingerprint: f.Fingerprint}
}

// Render is the payload as internal/publish/render takes it, with the
// publisher's intent marker.
func (p Payload) Render(marker render.Marker) render.Review {
	rv := render.Review{Marker: marker, HeadSHA: p.HeadSHA, Model: p.Model, ModelFailed: p.ModelFailed, Repeated: p.Repeated,
		Usage: render.Usage{Calls: p.Usage.Calls, InputTokens: p.Usage.InputTokens, OutputTokens: p.Usage.OutputTokens,
			CostMicroUSD: p.Usage.CostMicros}}
	if p.Incomplete != "" && rv.ModelFailed == "" {
		rv.ModelFailed = p.Incomplete
	}
	for _, f := range p.Inline {
		rv.Inline = append(rv.Inline, f.render())
	}
	for _, f := range p.Outside {
		rv.Outside = append(rv.Outside, f.render())
	}
	for _, f := range p.Resolved {
		rv.Resolved = append(rv.Resolved, render.FindingRef{Severity: sast.Severity(f.Severity), Title: f.Title, Path: f.Path, Line: f.StartLine})
	}
	if p.SAST != nil {
		rv.SAST = &render.SAST{Failed: p.SAST.Failed}
		for _, t := range p.SAST.Tools {
			rv.SAST.Tools = append(rv.SAST.Tools, render.ToolRun{Tool: t.Tool, Status: t.Status, Findings: t.Findings,
				Incomplete: t.Status == sast.StatusPartial, Detail: t.Detail})
		}
		for _, n := range p.SAST.NotScanned {
			rv.SAST.NotScanned = append(rv.SAST.NotScanned, render.NotScanned{Path: n.Path, Tool: n.Tool, Reason: n.Reason})
		}
		rv.SAST.NotScannedDropped = p.SAST.NotScannedDropped
	}
	if p.AC != nil {
		rv.AC = &render.AC{Issue: p.AC.Issue}
		for _, c := range p.AC.Items {
			rc := render.Criterion{Text: c.Text, Status: render.ACStatus(c.Status), Inferred: c.Inferred, Note: c.Note}
			for _, l := range c.Evidence {
				rc.Evidence = append(rc.Evidence, render.Location{Path: l.Path, Line: l.Line})
			}
			rv.AC.Items = append(rv.AC.Items, rc)
		}
	}
	for _, s := range p.Skipped {
		rv.Skipped = append(rv.Skipped, render.Skipped{Path: s.Path, Reason: render.SkipReason(s.Reason)})
	}
	return rv
}

// SafeText is text as the payload stores it: valid UTF-8 without NULs,
// secret-redacted, at most max bytes.
func SafeText(s string, max int) string { return safeText(s, max) }

// MaxPayloadBytes caps a stored payload (the publish store's own cap).
const MaxPayloadBytes = 4 << 20

// DecodePayload reads a stored review or check_run payload strictly: the
// publisher's one way to read what a review run stored.
func DecodePayload(raw []byte) (Payload, error) {
	var p Payload
	if len(raw) > MaxPayloadBytes {
		return p, fmt.Errorf("review.DecodePayload: %w: %d bytes", ErrInvalid, len(raw))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("review.DecodePayload: %w: %v", ErrInvalid, err)
	}
	if dec.More() {
		return p, fmt.Errorf("review.DecodePayload: %w: trailing data", ErrInvalid)
	}
	if p.Version != PayloadVersion || p.PR <= 0 {
		return p, fmt.Errorf("review.DecodePayload: %w: version %d, pull request %d", ErrInvalid, p.Version, p.PR)
	}
	return p, nil
}

// Shows lists the fingerprints of the findings the payload shows (inline
// and in the summary): once published, the pull request never shows them
// again.
func (p Payload) Shows() []string {
	var out []string
	for _, f := range p.Inline {
		out = append(out, f.Fingerprint)
	}
	for _, f := range p.Outside {
		out = append(out, f.Fingerprint)
	}
	return out
}
