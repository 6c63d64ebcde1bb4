package publish

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/quavon/quavon/internal/publish/render"
)

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
