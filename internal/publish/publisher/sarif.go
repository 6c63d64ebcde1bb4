package publisher

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/github/writer"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/publish/render"
	"github.com/quavon/quavon/internal/review"
	"github.com/quavon/quavon/internal/sast"
)

// SARIFCategory is the code scanning category of Quavon's uploads
// (automationDetails.id up to its last "/"); the part after it, the run
// id, is the intent's marker.
const SARIFCategory = "quavon/"

// SARIFFromFindings regenerates the SARIF of a review run from its stored,
// normalised SAST findings and the tools' outcomes (spec SC3: never the
// raw tool output), capped as GitHub's limits ask (sast.SARIF).
func SARIFFromFindings(tools []render.ToolRun, stored []review.StoredFinding, automationID string) ([]byte, error) {
	var rep sast.Report
	for _, t := range tools {
		rep.Tools = append(rep.Tools, sast.ToolRun{Tool: sast.Tool(t.Tool), Status: t.Status})
	}
	for _, f := range stored {
		if f.Source != review.SourceSAST {
			continue
		}
		for i, tool := range f.Tools {
			rule := ""
			if i < len(f.RuleIDs) {
				rule = f.RuleIDs[i]
			}
			msg := f.Title
			if f.Body != "" {
				msg += " — " + f.Body
			}
			rep.Findings = append(rep.Findings, sast.Finding{Tool: sast.Tool(tool), RuleID: rule, Severity: sast.Severity(f.Severity),
				Path: f.Path, StartLine: f.StartLine, EndLine: max(f.EndLine, f.StartLine), Message: oneLine(msg, sast.MaxMessageBytes),
				CWE: cweOf(f.Weakness), Fingerprint: f.Fingerprint})
		}
	}
	return sast.SARIF(rep, sast.SARIFOptions{AutomationID: automationID})
}

func cweOf(w string) string {
	if len(w) > 4 && w[:4] == "CWE-" {
		return w
	}
	return ""
}

// oneLine makes stored (untrusted, already redacted) text a SARIF message:
// control and bidi characters become spaces, cut to n bytes.
func oneLine(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069 || r == 0x200E || r == 0x200F || r == 0x061C {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

func (p *Publisher) sarifOperation(ctx context.Context, tx pgx.Tx, f facts, marker render.Marker) (operation, error) {
	pl, err := publish.DecodeSARIFPayload(f.out.Payload)
	if err != nil {
		return operation{}, err
	}
	ref := pl.Ref
	if ref == "" {
		ref = fmt.Sprintf("refs/pull/%d/head", pl.PullRequest)
	}
	stored, err := review.Findings(ctx, tx, f.out.ReviewRunID)
	if err != nil {
		return operation{}, err
	}
	doc, err := SARIFFromFindings(pl.Tools, stored, SARIFCategory+string(marker))
	if err != nil {
		return operation{}, err
	}
	return operation{
		write: func(ctx context.Context, w *writer.Reviewer) (string, error) {
			return w.UploadSARIF(ctx, pl.HeadSHA, ref, doc)
		},
		find: func(ctx context.Context, w *writer.Reviewer) (string, bool, error) {
			as, err := w.Analyses(ctx, ref)
			if err != nil {
				return "", false, err
			}
			for _, a := range as {
				// GitHub lists analyses by category, not by run id: an
				// upload of this commit and ref in Quavon's category is
				// this intent's (a run of the same head would upload the
				// same findings, and GitHub replaces an analysis of the
				// same commit, ref and category).
				if a.CommitSHA == pl.HeadSHA && a.Category == SARIFCategory {
					return a.SARIFID, true, nil
				}
			}
			return "", false, nil
		},
	}, nil
}
