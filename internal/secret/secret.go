// Package secret detects credentials in text that Quavon is about to store,
// forward or publish.
//
// The patterns here are Quavon's own: well-known token formats with a fixed
// prefix or structure, so a hit is almost never a false positive. They are
// used where a false positive is cheap and a miss is not (sandbox job env
// values, stored output tails). Scanning patches with gitleaks' full rule set
// is a separate, heavier check.
package secret

import (
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// A Match is one detected secret: the rule that found it and its byte range.
type Match struct {
	Rule  string
	Start int
	End   int
}

type rule struct {
	id string
	re *regexp.Regexp
	// hints are literals one of which every match contains (case-folded
	// when fold is set): a cheap necessary condition checked before the
	// expression runs.
	hints []string
	fold  bool
}

// rules are ordered by id; every expression is RE2, so matching is linear in
// the input and safe on hostile text.
var rules = []rule{
	{"anthropic-api-key", regexp.MustCompile(`sk-ant-[A-Za-z0-9_-]{20,}`), []string{"sk-ant-"}, false},
	{"aws-access-key-id", regexp.MustCompile(`\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b`), []string{"AKIA", "ASIA", "ABIA", "ACCA"}, false},
	{"aws-secret-access-key", regexp.MustCompile(`(?i)aws.{0,20}?(?:secret|private).{0,20}?['"=:\s]{1,4}[A-Za-z0-9/+]{40}\b`), []string{"aws"}, true},
	{"gcp-api-key", regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}\b`), []string{"AIza"}, false},
	{"github-fine-grained-pat", regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{82}\b`), []string{"github_pat_"}, false},
	{"github-token", regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{36,255}\b`), []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}, false},
	{"gitlab-token", regexp.MustCompile(`\bglpat-[A-Za-z0-9_-]{20,}\b`), []string{"glpat-"}, false},
	{"jwt", regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), []string{"eyJ"}, false},
	{"npm-token", regexp.MustCompile(`\bnpm_[A-Za-z0-9]{36}\b`), []string{"npm_"}, false},
	{"openai-api-key", regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}\b`), []string{"T3BlbkFJ"}, false},
	{"private-key", regexp.MustCompile(`-----BEGIN[ A-Z0-9]{0,32}PRIVATE KEY(?: BLOCK)?-----`), []string{"-----BEGIN"}, false},
	{"pypi-token", regexp.MustCompile(`\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}`), []string{"pypi-AgEIcHlwaS5vcmc"}, false},
	{"slack-token", regexp.MustCompile(`\bxox[abposr]-[0-9A-Za-z-]{10,}`), []string{"xox"}, false},
	{"slack-webhook", regexp.MustCompile(`https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9+/]{40,}`), []string{"https://hooks.slack.com/"}, false},
	{"stripe-key", regexp.MustCompile(`\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{20,}\b`), []string{"_live_", "_test_"}, false},
	{"url-credentials", regexp.MustCompile(`\b[a-z][a-z0-9+.-]{1,20}://[^\s/:@'"]{1,64}:[^\s/@'"]{3,128}@[A-Za-z0-9.-]+`), []string{"://"}, false},
}

// foldLower lower-cases s so that every string a (?i) expression matches
// contains its lower-case hint: RE2's case folding also pairs 's' with 'ſ'
// (U+017F) and 'k' with 'K' (U+212A).
func foldLower(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case 'ſ':
			return 's'
		case 'K':
			return 'k'
		}
		return unicode.ToLower(r)
	}, s)
}

// mayMatch checks the rule's hints; lower is s in lower case, computed
// once per call by the caller when some rule folds.
func (r *rule) mayMatch(s, lower string) bool {
	t := s
	if r.fold {
		t = lower
	}
	for _, h := range r.hints {
		if strings.Contains(t, h) {
			return true
		}
	}
	return false
}

// Find returns every match of every rule in s, ordered by position.
func Find(s string) []Match {
	var out []Match
	lower := foldLower(s)
	for i := range rules {
		r := &rules[i]
		if !r.mayMatch(s, lower) {
			continue
		}
		for _, loc := range r.re.FindAllStringIndex(s, -1) {
			out = append(out, Match{Rule: r.id, Start: loc[0], End: loc[1]})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Start != out[j].Start {
			return out[i].Start < out[j].Start
		}
		return out[i].Rule < out[j].Rule
	})
	return out
}

// Contains reports whether s holds anything that looks like a secret.
func Contains(s string) bool {
	lower := foldLower(s)
	for i := range rules {
		r := &rules[i]
		if r.mayMatch(s, lower) && r.re.MatchString(s) {
			return true
		}
	}
	return false
}

// Redact replaces every match in s with [REDACTED:<rule>].
func Redact(s string) string {
	ms := Find(s)
	if len(ms) == 0 {
		return s
	}
	var b []byte
	last := 0
	for _, m := range ms {
		if m.Start < last { // overlapping match: already covered
			if m.End > last {
				last = m.End
			}
			continue
		}
		b = append(b, s[last:m.Start]...)
		b = append(b, "[REDACTED:"+m.Rule+"]"...)
		last = m.End
	}
	b = append(b, s[last:]...)
	return string(b)
}
