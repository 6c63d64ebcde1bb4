// Package leaks is secret detection with gitleaks' detector used as a
// library plus Quavon's own patterns (package secret). It lives apart from
// package secret because gitleaks pulls in a large dependency tree
// (viper, sprig, archive readers) that the sandbox runner and the egress
// proxy, which use package secret, must not link.
package leaks

import (
	"fmt"
	"github.com/quavon/quavon/internal/secret"
	"sort"
	"strings"

	"github.com/spf13/viper"
	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
)

// GitleaksRulePrefix starts the Rule of every Match found by gitleaks'
// rules, so callers can tell them from Quavon's own (e.g.
// "gitleaks:generic-api-key" next to "github-token").
const GitleaksRulePrefix = "gitleaks:"

// gitleaksDecodeDepth is the gitleaks CLI's default: base64, hex and
// percent-encoded text is decoded and rescanned up to this many times.
const gitleaksDecodeDepth = 5

// Scanner finds secrets with gitleaks' default rule set (as shipped in the
// gitleaks module, used as a library) plus Quavon's own patterns (Find).
// Build it once with NewScanner; it is safe for concurrent use.
//
// Differences from running the gitleaks CLI on a file, all of them
// stricter:
//   - `gitleaks:allow` comments are ignored: the text being scanned is
//     hostile and must not be able to exempt itself.
//   - Scan never passes a file path to gitleaks, so its path allowlists
//     (vendor/, node_modules/, lockfiles, images…) cannot exempt content.
//     ScanFile additionally runs the few rules that gitleaks scopes to file
//     names (e.g. PHP, Terraform, Kubernetes YAML, NuGet config) with no
//     global allowlist at all.
//
// gitleaks' own per-rule entropy thresholds, stopwords and allowlisted
// placeholder shapes still apply to its rules; Quavon's patterns have none.
type Scanner struct {
	all    *detect.Detector // every rule, scanned without a path
	scoped *detect.Detector // only path-scoped content rules, no global allowlist
}

// NewScanner compiles gitleaks' default configuration. It reads no files and
// no environment, and does not touch viper's global instance.
func NewScanner() (*Scanner, error) {
	v := viper.New()
	v.SetConfigType("toml")
	if err := v.ReadConfig(strings.NewReader(config.DefaultConfig)); err != nil {
		return nil, fmt.Errorf("secret.NewScanner: read gitleaks config: %w", err)
	}
	var vc config.ViperConfig
	if err := v.Unmarshal(&vc); err != nil {
		return nil, fmt.Errorf("secret.NewScanner: decode gitleaks config: %w", err)
	}
	cfg, err := vc.Translate()
	if err != nil {
		return nil, fmt.Errorf("secret.NewScanner: gitleaks config: %w", err)
	}
	if len(cfg.Rules) == 0 {
		return nil, fmt.Errorf("secret.NewScanner: gitleaks config has no rules")
	}

	scopedCfg := cfg
	scopedCfg.Allowlists = nil
	scopedCfg.Rules = map[string]config.Rule{}
	scopedCfg.OrderedRules = nil
	for id, r := range cfg.Rules {
		if r.Path != nil && r.Regex != nil {
			scopedCfg.Rules[id] = r
			scopedCfg.OrderedRules = append(scopedCfg.OrderedRules, id)
		}
	}
	sort.Strings(scopedCfg.OrderedRules)

	return &Scanner{all: newDetector(cfg), scoped: newDetector(scopedCfg)}, nil
}

func newDetector(cfg config.Config) *detect.Detector {
	d := detect.NewDetector(cfg)
	d.IgnoreGitleaksAllow = true
	d.MaxDecodeDepth = gitleaksDecodeDepth
	return d
}

// Scan returns every secret found in text by gitleaks' content rules or by
// Find, ordered by position. It never returns the secret itself.
func (s *Scanner) Scan(text string) []secret.Match {
	return s.scan("", text)
}

// ScanFile is Scan plus gitleaks' rules that apply only to files whose name
// matches the rule (path is the file's repository path).
func (s *Scanner) ScanFile(path, text string) []secret.Match {
	return s.scan(path, text)
}

func (s *Scanner) scan(path, text string) []secret.Match {
	out := secret.Find(text)
	if text == "" {
		return out
	}
	// Detect (unlike DetectSource) keeps no state on the detector except an
	// atomic byte counter, so concurrent calls are safe.
	for _, f := range s.all.Detect(detect.Fragment{Raw: text}) {
		out = append(out, gitleaksMatch(text, f.RuleID, f.StartLine, f.Match))
	}
	if path != "" && len(s.scoped.Config.Rules) > 0 {
		for _, f := range s.scoped.Detect(detect.Fragment{Raw: text, FilePath: path}) {
			out = append(out, gitleaksMatch(text, f.RuleID, f.StartLine, f.Match))
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Start != out[j].Start {
			return out[i].Start < out[j].Start
		}
		return out[i].Rule < out[j].Rule
	})
	return out
}

// gitleaksMatch turns a finding into a byte range of text: the first
// occurrence of the matched text at or after the start of the reported line
// (gitleaks reports lines and columns, and matches found after decoding
// are not in text at all: those cover their line).
func gitleaksMatch(text, rule string, line int, match string) secret.Match {
	lineStart := 0
	for i := 0; i < line && lineStart < len(text); i++ {
		nl := strings.IndexByte(text[lineStart:], '\n')
		if nl < 0 {
			break
		}
		lineStart += nl + 1
	}
	m := secret.Match{Rule: GitleaksRulePrefix + rule}
	if match != "" {
		if i := strings.Index(text[lineStart:], match); i >= 0 {
			m.Start, m.End = lineStart+i, lineStart+i+len(match)
			return m
		}
		if i := strings.Index(text, match); i >= 0 {
			m.Start, m.End = i, i+len(match)
			return m
		}
	}
	end := len(text)
	if nl := strings.IndexByte(text[lineStart:], '\n'); nl >= 0 {
		end = lineStart + nl
	}
	if end <= lineStart { // empty line: cover at least one byte
		if lineStart >= len(text) {
			lineStart = len(text) - 1
		}
		end = lineStart + 1
	}
	m.Start, m.End = lineStart, end
	return m
}
