package publish

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/quavon/quavon/internal/publish/render"
)

// ReviewPayload is the payload of a review run's review and check_run
// outputs: the typed fields the publisher renders (never rendered text).
// The review run stores the same payload in both outputs.
type ReviewPayload struct {
	// PullRequest is the pull request's number.
	PullRequest int `json:"pullRequest"`
	// Review is what render.ReviewBody and render.CheckRun take; its
	// Marker is left empty: the publisher sets each intent's own. Its
	// HeadSHA is the reviewed head the review and the check run go on.
	Review render.Review `json:"review"`
	// Shown are the review_findings ids the review shows (its Inline and
	// Outside findings): marked posted once the review is published, so
	// the pull request never shows them again.
	Shown []string `json:"shown,omitempty"`
}

// SARIFPayload is the payload of a review run's sarif output. The SARIF
// itself is regenerated at publish time from the run's stored,
// normalised SAST findings (spec SC3), never from raw tool output.
type SARIFPayload struct {
	PullRequest int `json:"pullRequest"`
	// HeadSHA is the analysed commit; Ref its full ref
	// (refs/pull/<n>/head).
	HeadSHA string `json:"headSha"`
	Ref     string `json:"ref"`
	// Tools are the scanners that ran and how they ended: a tool that did
	// not finish gets no run of its own in the SARIF (an empty run would
	// tell GitHub its alerts were fixed).
	Tools []render.ToolRun `json:"tools"`
}

// DecodeReviewPayload reads a review or check_run output's payload
// strictly.
func DecodeReviewPayload(raw []byte) (ReviewPayload, error) {
	var p ReviewPayload
	if err := strictJSON(raw, &p); err != nil {
		return p, fmt.Errorf("publish.DecodeReviewPayload: %w", err)
	}
	if p.PullRequest <= 0 {
		return p, fmt.Errorf("publish.DecodeReviewPayload: %w: no pull request", ErrInvalid)
	}
	return p, nil
}

// DecodeSARIFPayload reads a sarif output's payload strictly.
func DecodeSARIFPayload(raw []byte) (SARIFPayload, error) {
	var p SARIFPayload
	if err := strictJSON(raw, &p); err != nil {
		return p, fmt.Errorf("publish.DecodeSARIFPayload: %w", err)
	}
	if p.PullRequest <= 0 || !shaRE.MatchString(p.HeadSHA) {
		return p, fmt.Errorf("publish.DecodeSARIFPayload: %w: pull request and head required", ErrInvalid)
	}
	return p, nil
}

func strictJSON(raw []byte, v any) error {
	if len(raw) > MaxPayloadBytes {
		return fmt.Errorf("%w: payload of %d bytes", ErrInvalid, len(raw))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: trailing data", ErrInvalid)
	}
	return nil
}
