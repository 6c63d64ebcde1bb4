package fix

import (
	"strings"
	"unicode/utf8"

	"github.com/quavon/quavon/internal/secret"
)

// MaxTailBytes caps all output tails stored on one fix run together (DT5:
// 8 KiB per run): a test and a lint result, each a stdout and a stderr
// tail.
const MaxTailBytes = 8 << 10

// tailBudget is one result's share (stdout and stderr together).
const tailBudget = MaxTailBytes / 2

// TestKind says which policy command a result is of.
type TestKind string

// The kinds.
const (
	KindTest TestKind = "test"
	KindLint TestKind = "lint"
)

// TestResult is what a run keeps of one sandbox test or lint run. Tails are
// untrusted text produced by repository code.
type TestResult struct {
	SandboxRunID   string `json:"sandboxRunId,omitempty"`
	Status         string `json:"status"` // the sandbox result's status
	ExitCode       int    `json:"exitCode"`
	TimedOut       bool   `json:"timedOut,omitempty"`
	DurationMillis int64  `json:"durationMillis"`
	StdoutTail     string `json:"stdoutTail"`
	StderrTail     string `json:"stderrTail"`
	// Truncated: the tails are not the whole output (cut here, or already
	// by the sandbox's output cap).
	Truncated bool `json:"truncated,omitempty"`
	// Redacted counts the secrets replaced in the output.
	Redacted int `json:"redacted,omitempty"`
}

// TestResults are the last result of each kind.
type TestResults struct {
	Test *TestResult `json:"test,omitempty"`
	Lint *TestResult `json:"lint,omitempty"`
}

// SetTails fills r's tails from the whole stdout and stderr of a run:
// secrets redacted first, then the tails cut to this result's share of
// MaxTailBytes. sandboxTruncated says the sandbox already cut the output.
func (r *TestResult) SetTails(stdout, stderr string, sandboxTruncated bool) {
	out, nOut := redact(stdout)
	errs, nErr := redact(stderr)
	r.Redacted = nOut + nErr
	outBudget, errBudget := split(len(out), len(errs), tailBudget)
	var cutOut, cutErr bool
	r.StdoutTail, cutOut = Tail(out, outBudget)
	r.StderrTail, cutErr = Tail(errs, errBudget)
	r.Truncated = sandboxTruncated || cutOut || cutErr
}

// split shares budget between two texts: each gets half, and what one does
// not use goes to the other.
func split(a, b, budget int) (int, int) {
	half := budget / 2
	switch {
	case a+b <= budget:
		return a, b
	case a < half:
		return a, budget - a
	case b < half:
		return budget - b, b
	}
	return half, budget - half
}

// redact replaces every secret in s (internal/secret) and strips control
// characters other than newline and tab, which a terminal or the JSON
// encoding would otherwise turn into something larger or misleading.
func redact(s string) (string, int) {
	s = strings.ToValidUTF8(s, "\uFFFD")
	n := len(secret.Find(s))
	if n > 0 {
		s = secret.Redact(s)
	}
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, s)
	return s, n
}

// tailMarker starts a tail that is not the whole text.
const tailMarker = "[…]\n"

// Tail returns the end of s in at most max bytes and whether it cut. A cut
// tail starts after a line break (or, in a text without one, after a space),
// so it never begins with the second half of a word a redaction pattern
// would have recognised whole; a tail that finds neither is dropped. s
// should be redacted already.
func Tail(s string, max int) (string, bool) {
	if len(s) <= max {
		return s, false
	}
	if max <= len(tailMarker) {
		return "", true
	}
	t := s[len(s)-(max-len(tailMarker)):]
	for len(t) > 0 && !utf8.RuneStart(t[0]) {
		t = t[1:]
	}
	if i := strings.IndexByte(t, '\n'); i >= 0 {
		t = t[i+1:]
	} else if i := strings.IndexAny(t, " \t"); i >= 0 {
		t = t[i+1:]
	} else {
		t = ""
	}
	return tailMarker + t, true
}

// clip cuts s to at most max bytes of valid UTF-8.
func clip(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= max {
		return s
	}
	s = s[:max]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// safeText is model or tool text stored on a run: redacted, valid UTF-8,
// capped.
func safeText(s string, max int) string {
	s, _ = redact(s)
	return clip(s, max)
}
