package sandbox

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"
	"unicode/utf8"
)

// ResultStatus is how a job ended.
type ResultStatus string

// Result statuses.
const (
	// StatusCompleted: the commands ran; ExitCode is the run step's (or the
	// setup step's, when a failed setup step skipped the run step).
	StatusCompleted ResultStatus = "completed"
	// StatusTimedOut: the runner killed the job at its wall clock. The
	// result still holds what the job reported until then: Steps has the
	// steps that ended with their exit codes and the step that was cut off
	// (Ran, TimedOut, ExitCode 137), and the stdout.log and stderr.log
	// artefacts hold the head and tail of what the steps printed, up to
	// about a second before the kill. ExitCode is the container's (137).
	StatusTimedOut ResultStatus = "timed_out"
	// StatusFailed: the job has no verdict: the runner could not run it
	// (runtime, image, blob), or the sandbox did not report one it can
	// trust (output or input tampered with, PID 1 killed, the sandbox
	// killed at its memory limit). Error says which; ExitCode is
	// NoExitCode. Steps and the logs hold what arrived authenticated
	// before, as for StatusTimedOut.
	StatusFailed ResultStatus = "failed"
	// StatusRejected: verification refused the job; nothing ran.
	StatusRejected ResultStatus = "rejected"
)

// NoExitCode is the ExitCode of a failed job: there is no verdict, and
// nothing reads it as a pass.
const NoExitCode = -1

// RejectReason is the stable code of a verification failure.
type RejectReason string

// Reject reasons, one per verification step.
const (
	RejectMalformed     RejectReason = "malformed_envelope"
	RejectUnknownKey    RejectReason = "unknown_key"
	RejectBadSignature  RejectReason = "bad_signature"
	RejectSchemaInvalid RejectReason = "schema_invalid"
	RejectExpired       RejectReason = "expired"
	RejectTooFarAhead   RejectReason = "too_far_ahead"
	RejectReplayed      RejectReason = "replayed"
)

var rejectReasons = []RejectReason{
	RejectMalformed, RejectUnknownKey, RejectBadSignature, RejectSchemaInvalid,
	RejectExpired, RejectTooFarAhead, RejectReplayed,
}

// SandboxResult is what a runner reports for one job. Artefacts are
// untrusted text produced by repository code.
type SandboxResult struct {
	JobID        string       `json:"jobId"`
	RunnerID     string       `json:"runnerId"`
	Status       ResultStatus `json:"status"`
	RejectReason RejectReason `json:"rejectReason,omitempty"`
	Error        string       `json:"error,omitempty"`
	ImageDigest  string       `json:"imageDigest,omitempty"`
	// Runtime names the sandbox runtime and its pinned version, e.g.
	// "firecracker 1.13.1 (jailer 1.13.1)" or "runsc".
	Runtime         string            `json:"runtime,omitempty"`
	ExitCode        int               `json:"exitCode"`
	DurationMillis  int64             `json:"durationMillis"`
	OutputTruncated bool              `json:"outputTruncated,omitempty"`
	Steps           []Step            `json:"steps,omitempty"`
	Artefacts       map[string]string `json:"artefacts,omitempty"`
	FinishedAt      time.Time         `json:"finishedAt"`
}

// Step is the outcome of one command of a job (setup, run).
type Step struct {
	Name           string `json:"name"`
	Ran            bool   `json:"ran"`
	ExitCode       int    `json:"exitCode"`
	TimedOut       bool   `json:"timedOut,omitempty"`
	DurationMillis int64  `json:"durationMillis"`
}

const (
	maxErrorBytes        = 1024
	maxResultOutputBytes = 64 << 20
)

var (
	runnerIDRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)
	digestRE   = regexp.MustCompile(`^(?:[a-z0-9][a-z0-9._/:-]{0,254}@)?sha256:[0-9a-f]{64}$`)
)

// Validate checks a result's shape; the worker also checks that JobID is the
// job it waits for.
func (r *SandboxResult) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !idRE.MatchString(r.JobID) {
		bad("jobId: want 8-64 of [A-Za-z0-9_-]")
	}
	if !runnerIDRE.MatchString(r.RunnerID) {
		bad("runnerId: want 1-64 of [A-Za-z0-9._-]")
	}
	switch r.Status {
	case StatusRejected:
		if !slices.Contains(rejectReasons, r.RejectReason) {
			bad("rejectReason %q: unknown", clip(string(r.RejectReason)))
		}
		if len(r.Artefacts) != 0 || r.ImageDigest != "" {
			bad("a rejected job has no image and no artefacts")
		}
	case StatusCompleted, StatusTimedOut, StatusFailed:
		if r.RejectReason != "" {
			bad("rejectReason only with status rejected")
		}
	default:
		bad("status %q: unknown", clip(string(r.Status)))
	}
	if len(r.Error) > maxErrorBytes || !utf8.ValidString(r.Error) {
		bad("error: want at most %d bytes of UTF-8", maxErrorBytes)
	}
	if len(r.Runtime) > 64 || !utf8.ValidString(r.Runtime) {
		bad("runtime: want at most 64 bytes of UTF-8")
	}
	if r.ImageDigest != "" && !digestRE.MatchString(r.ImageDigest) {
		bad("imageDigest: want [repository@]sha256:<64 hex>")
	}
	if r.DurationMillis < 0 {
		bad("durationMillis: negative")
	}
	if len(r.Steps) > 2 {
		bad("steps: at most setup and run")
	}
	for i, st := range r.Steps {
		if (st.Name != "setup" && st.Name != "run") || st.DurationMillis < 0 || slices.ContainsFunc(r.Steps[:i], func(o Step) bool { return o.Name == st.Name }) {
			bad("steps[%d]: want setup or run once each, non-negative duration", i)
		}
	}
	var total int
	for name, content := range r.Artefacts {
		if len(name) > maxArtefactName || !artefactRE.MatchString(name) {
			bad("artefact name %q: invalid", clip(name))
		}
		if !utf8.ValidString(content) {
			bad("artefact %q: not UTF-8", clip(name))
		}
		total += len(content)
	}
	if total > maxResultOutputBytes {
		bad("artefacts: %d bytes, limit %d", total, maxResultOutputBytes)
	}
	if r.FinishedAt.IsZero() || r.FinishedAt.Location() != time.UTC {
		bad("finishedAt: required, UTC")
	}
	return errors.Join(errs...)
}

// Message is a fixed, human-readable text for a reject reason; results
// never quote the refused input.
func (r RejectReason) Message() string {
	switch r {
	case RejectMalformed:
		return "the job envelope is malformed"
	case RejectUnknownKey:
		return "the job is signed with a key this runner does not know"
	case RejectBadSignature:
		return "the job signature does not verify"
	case RejectSchemaInvalid:
		return "the job does not match the contract"
	case RejectExpired:
		return "the job expired before a runner took it"
	case RejectTooFarAhead:
		return "the job is dated too far in the future"
	case RejectReplayed:
		return "the job was already taken once and is never run twice"
	}
	return "the job was refused"
}

// UnknownImageClass is the Error of the failed result of a job whose image
// class is not in the runner's lockfile (nothing ran), so that a caller
// can tell an image the instance does not have from one that failed.
func UnknownImageClass(class string) string {
	return fmt.Sprintf("image class %q is not in this runner's lockfile", clip(class))
}
