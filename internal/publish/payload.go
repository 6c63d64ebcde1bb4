package publish

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

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

// FixPRPayload is the payload of a fix_pr output: typed fields the
// publisher renders, never rendered text. fixrun writes it.
type FixPRPayload struct {
	Issue        int    `json:"issue"`
	BaseRef      string `json:"baseRef"`
	BaseSHA      string `json:"baseSha"`
	Files        int    `json:"files"`
	Summary      string `json:"summary"`
	TestExitCode *int   `json:"testExitCode,omitempty"`
}

// FixPRTarget is what a fix_pr output publishes to, decoded strictly from
// its payload and checked against the output's bound hashes: the issue of
// the output's repository, the branch the draft pull request goes into,
// and the base commit and patch the approval bound.
type FixPRTarget struct {
	RepositoryID string
	FixRunID     string
	Issue        int
	BaseRef      string
	BaseSHA      string
	PatchSHA256  string
	// Files is the number of files the patch changes (as the run recorded
	// it; the publisher recounts).
	Files int
}

var baseRefRE = regexp.MustCompile(`^[A-Za-z0-9._/-]{1,255}$`)

// DecodeFixPRTarget reads a fix_pr output's payload strictly and returns
// its target, refusing (ErrInvalid) a payload whose base differs from the
// bound base, a missing issue or patch, or a branch name GitHub would not
// take.
func DecodeFixPRTarget(o *Output) (FixPRTarget, FixPRPayload, error) {
	if o == nil || o.Kind != KindFixPR {
		return FixPRTarget{}, FixPRPayload{}, fmt.Errorf("publish.DecodeFixPRTarget: %w: not a fix_pr output", ErrInvalid)
	}
	return decodeFixTarget(o)
}

// FixCommitTarget is what a fix_commit output (a review fix delivered as
// one commit on the pull request's head branch, spec §7b) publishes to.
// Its payload has FixPRPayload's fields: Issue is the pull request,
// BaseRef its head branch and BaseSHA the reviewed head, which the output
// binds twice (Bound.BaseSHA and Bound.HeadSHA, expectedHeadSha).
type FixCommitTarget struct {
	RepositoryID string
	FixRunID     string
	PullRequest  int
	HeadRef      string
	// ExpectedHeadSHA is the reviewed head: the commit the patch was made
	// on and the expectedHeadOid of createCommitOnBranch.
	ExpectedHeadSHA string
	PatchSHA256     string
	Files           int
}

// DecodeFixCommitTarget reads a fix_commit output's payload strictly, as
// DecodeFixPRTarget does, and also refuses one whose bound head is not its
// base.
func DecodeFixCommitTarget(o *Output) (FixCommitTarget, FixPRPayload, error) {
	if o == nil || o.Kind != KindFixCommit {
		return FixCommitTarget{}, FixPRPayload{}, fmt.Errorf("publish.DecodeFixCommitTarget: %w: not a fix_commit output", ErrInvalid)
	}
	t, p, err := decodeFixTarget(o)
	if err != nil {
		return FixCommitTarget{}, p, err
	}
	if o.Bound.HeadSHA != t.BaseSHA {
		return FixCommitTarget{}, p, fmt.Errorf("publish.DecodeFixCommitTarget: %w: the bound head is not the payload's head", ErrInvalid)
	}
	return FixCommitTarget{RepositoryID: t.RepositoryID, FixRunID: t.FixRunID, PullRequest: t.Issue, HeadRef: t.BaseRef,
		ExpectedHeadSHA: t.BaseSHA, PatchSHA256: t.PatchSHA256, Files: t.Files}, p, nil
}

func decodeFixTarget(o *Output) (FixPRTarget, FixPRPayload, error) {
	var p FixPRPayload
	if err := strictJSON(o.Payload, &p); err != nil {
		return FixPRTarget{}, p, fmt.Errorf("publish.DecodeFixPRTarget: %w", err)
	}
	switch {
	case p.Issue <= 0 || p.Issue > 1<<31-1:
		return FixPRTarget{}, p, fmt.Errorf("publish.DecodeFixPRTarget: %w: issue %d", ErrInvalid, p.Issue)
	case !baseRefRE.MatchString(p.BaseRef) || strings.Contains(p.BaseRef, "..") || strings.HasPrefix(p.BaseRef, "refs/") ||
		strings.HasPrefix(p.BaseRef, "/") || strings.HasSuffix(p.BaseRef, "/") || strings.HasSuffix(p.BaseRef, ".lock"):
		return FixPRTarget{}, p, fmt.Errorf("publish.DecodeFixPRTarget: %w: base branch %q", ErrInvalid, p.BaseRef)
	case !shaRE.MatchString(p.BaseSHA) || p.BaseSHA != o.Bound.BaseSHA:
		return FixPRTarget{}, p, fmt.Errorf("publish.DecodeFixPRTarget: %w: the payload's base is not the bound base", ErrInvalid)
	case !hash64RE.MatchString(o.Bound.PatchSHA256):
		return FixPRTarget{}, p, fmt.Errorf("publish.DecodeFixPRTarget: %w: no bound patch", ErrInvalid)
	case o.FixRunID == "" || o.RepositoryID == "":
		return FixPRTarget{}, p, fmt.Errorf("publish.DecodeFixPRTarget: %w: no fix run or repository", ErrInvalid)
	case p.Files < 0:
		return FixPRTarget{}, p, fmt.Errorf("publish.DecodeFixPRTarget: %w: files %d", ErrInvalid, p.Files)
	}
	return FixPRTarget{RepositoryID: o.RepositoryID, FixRunID: o.FixRunID, Issue: p.Issue, BaseRef: p.BaseRef, BaseSHA: p.BaseSHA,
		PatchSHA256: o.Bound.PatchSHA256, Files: p.Files}, p, nil
}
