package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/quavon/quavon/internal/fix/fixagent"
	"github.com/quavon/quavon/internal/patch"
	"github.com/quavon/quavon/internal/policy"
)

// Kinds of task.
const (
	KindFix         = "fix"
	KindAdversarial = "adversarial"
	KindReview      = "review"
)

// Caps on a task directory (tasks may come from users: hostile input).
const (
	MaxTaskJSONBytes = 64 << 10
	MaxIssueBytes    = 32 << 10
	MaxTreeFiles     = 500
	MaxFileBytes     = 256 << 10
	MaxTreeBytes     = 8 << 20
	MaxTests         = 64
	MaxCommandBytes  = 4096
)

// CanaryPlaceholder in a base file is replaced by the run's repository
// canary: a secret the agent may read but must never publish.
const CanaryPlaceholder = "{{QUAVON_EVAL_CANARY}}"

// Test is one hidden test: a name and the shell command that passes (exit
// 0) or fails. Commands are the task author's, never the model's.
type Test struct {
	Name    string `json:"name"`
	Command string `json:"command"`
}

// Policy is the repository policy of a task: the commands behind run_tests
// and run_linter.
type Policy struct {
	SetupCommand string `json:"setup_command,omitempty"`
	TestCommand  string `json:"test_command,omitempty"`
	LintCommand  string `json:"lint_command,omitempty"`
}

// Spec is task.json, decoded strictly.
type Spec struct {
	ID         string `json:"id"`
	Kind       string `json:"kind"`
	Language   string `json:"language"`
	Difficulty string `json:"difficulty"`
	License    string `json:"license"`
	ImageClass string `json:"image_class"`
	Policy     Policy `json:"policy"`
	// FailToPass fail on the base and pass with a correct fix;
	// PassToPass pass on both.
	FailToPass []Test `json:"fail_to_pass"`
	PassToPass []Test `json:"pass_to_pass"`
	// ReferenceDeletions are files the reference patch deletes (its other
	// changes are the files under reference/).
	ReferenceDeletions []string `json:"reference_deletions,omitempty"`
	// Expected are a review task's planted problems, by file and head
	// line range; every other changed line is a clean change on which a
	// finding is a false positive.
	Expected []ExpectedFinding `json:"expected,omitempty"`
	// CI puts the task in the subset the package tests run.
	CI bool `json:"ci,omitempty"`
}

// ExpectedFinding is one planted problem of a review task: lines
// StartLine..EndLine of Path at the head (a finding overlapping them finds
// it).
type ExpectedFinding struct {
	Path      string `json:"path"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
	// What names the problem (for people; not scored).
	What string `json:"what"`
}

// MaxExpected caps a review task's planted problems.
const MaxExpected = 64

// Task is one loaded task directory:
//
//	task.json   the Spec
//	issue.md    the issue (first line the title)
//	base/       the repository the agent works on
//	hidden/     the hidden tests, laid over the patched tree (never shown to the agent)
//	reference/  the reference patch: each changed or created file, whole
//
// A review task has base/ and head/ (the pull request's head tree, whole)
// and issue.md is the pull request's title and description.
type Task struct {
	Spec
	Dir        string
	IssueTitle string
	IssueBody  string
	Base       map[string]string
	Hidden     map[string]string
	Reference  map[string]string
	Head       map[string]string
}

var (
	idRe       = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)
	testNameRe = regexp.MustCompile(`^[A-Za-z0-9_.:/-]{1,128}$`)
	languages  = []string{"go", "python", "javascript"}
	difficulty = []string{"one-line", "multi-file", "feature", "read-tests", "adversarial", "review"}
)

// DecodeSpec decodes task.json strictly: unknown fields, trailing data and
// invalid values are errors.
func DecodeSpec(b []byte) (Spec, error) {
	var s Spec
	if len(b) > MaxTaskJSONBytes {
		return s, fmt.Errorf("task.json: over %d bytes", MaxTaskJSONBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Spec{}, fmt.Errorf("task.json: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Spec{}, errors.New("task.json: data after the object")
	}
	if err := s.Validate(); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// Validate checks a Spec.
func (s Spec) Validate() error {
	var errs []error
	bad := func(f string, a ...any) { errs = append(errs, fmt.Errorf(f, a...)) }
	if !idRe.MatchString(s.ID) {
		bad("id %q: want [a-z0-9-], at most 64", clip(s.ID))
	}
	switch s.Kind {
	case KindFix:
		if len(s.FailToPass) == 0 {
			bad("a fix task needs fail_to_pass tests")
		}
	case KindAdversarial:
	case KindReview:
		if len(s.FailToPass)+len(s.PassToPass) > 0 || len(s.ReferenceDeletions) > 0 {
			bad("a review task has no tests and no reference patch")
		}
	default:
		bad("kind %q: want fix, adversarial or review", clip(s.Kind))
	}
	if s.Kind != KindReview && len(s.Expected) > 0 {
		bad("expected: only for review tasks")
	}
	if len(s.Expected) > MaxExpected {
		bad("more than %d expected findings", MaxExpected)
	}
	for _, e := range s.Expected {
		if n, err := patch.NormalizePath(e.Path); err != nil || n != e.Path {
			bad("expected: path %q is not a valid repository path", clip(e.Path))
		}
		if e.StartLine < 1 || e.EndLine < e.StartLine || e.EndLine-e.StartLine > 60 {
			bad("expected %s: lines %d-%d: want 1 <= start_line <= end_line, at most 60 lines", clip(e.Path), e.StartLine, e.EndLine)
		}
	}
	if !slices.Contains(languages, s.Language) {
		bad("language %q: want one of %v", clip(s.Language), languages)
	}
	if !slices.Contains(difficulty, s.Difficulty) {
		bad("difficulty %q: want one of %v", clip(s.Difficulty), difficulty)
	}
	if s.License != "Apache-2.0" && s.License != "proprietary" {
		bad("license %q: want Apache-2.0 or proprietary", clip(s.License))
	}
	if s.ImageClass == "" || len(s.ImageClass) > 64 {
		bad("image_class: required")
	}
	for _, c := range []string{s.Policy.SetupCommand, s.Policy.TestCommand, s.Policy.LintCommand} {
		if len(c) > MaxCommandBytes {
			bad("policy: a command over %d bytes", MaxCommandBytes)
		}
	}
	if len(s.FailToPass)+len(s.PassToPass) > MaxTests {
		bad("more than %d tests", MaxTests)
	}
	seen := map[string]bool{}
	for _, t := range append(slices.Clone(s.FailToPass), s.PassToPass...) {
		switch {
		case !testNameRe.MatchString(t.Name):
			bad("test name %q: want [A-Za-z0-9_.:/-], at most 128", clip(t.Name))
		case seen[t.Name]:
			bad("test %q twice", t.Name)
		case strings.TrimSpace(t.Command) == "" || len(t.Command) > MaxCommandBytes || strings.ContainsAny(t.Command, "\n\r\x00"):
			bad("test %q: command empty, multi-line or over %d bytes", t.Name, MaxCommandBytes)
		}
		seen[t.Name] = true
	}
	for _, p := range s.ReferenceDeletions {
		if _, err := patch.NormalizePath(p); err != nil {
			bad("reference_deletions: %v", err)
		}
	}
	return errors.Join(errs...)
}

// Load reads every task directory under dir (one per subdirectory with a
// task.json), sorted by id.
func Load(dir string) ([]*Task, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("eval.Load: %w", err)
	}
	var out []*Task
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "task.json")); err != nil {
			continue
		}
		t, err := LoadTask(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("eval.Load: no task directories (with a task.json) in %s", dir)
	}
	return out, nil
}

// LoadTask reads and checks one task directory.
func LoadTask(dir string) (*Task, error) {
	fail := func(err error) (*Task, error) { return nil, fmt.Errorf("task %s: %w", filepath.Base(dir), err) }
	b, err := readCapped(filepath.Join(dir, "task.json"), MaxTaskJSONBytes)
	if err != nil {
		return fail(err)
	}
	spec, err := DecodeSpec(b)
	if err != nil {
		return fail(err)
	}
	if spec.ID != filepath.Base(dir) {
		return fail(fmt.Errorf("id %q differs from the directory name", spec.ID))
	}
	t := &Task{Spec: spec, Dir: dir}
	issue, err := readCapped(filepath.Join(dir, "issue.md"), MaxIssueBytes)
	if err != nil {
		return fail(err)
	}
	text := strings.TrimLeft(string(issue), "\r\n\t ")
	title, body, _ := strings.Cut(text, "\n")
	t.IssueTitle, t.IssueBody = strings.TrimSpace(strings.TrimLeft(title, "#")), strings.TrimSpace(body)
	if t.IssueTitle == "" {
		return fail(errors.New("issue.md: no title on the first line"))
	}
	if t.Base, err = readTree(filepath.Join(dir, "base"), true); err != nil {
		return fail(err)
	}
	if len(t.Base) == 0 {
		return fail(errors.New("base/: empty"))
	}
	if t.Hidden, err = readTree(filepath.Join(dir, "hidden"), spec.Kind == KindFix); err != nil {
		return fail(err)
	}
	if t.Reference, err = readTree(filepath.Join(dir, "reference"), spec.Kind == KindFix); err != nil {
		return fail(err)
	}
	if spec.Kind == KindReview {
		if t.Head, err = readTree(filepath.Join(dir, "head"), true); err != nil {
			return fail(err)
		}
		for _, e := range spec.Expected {
			c, ok := t.Head[e.Path]
			if !ok {
				return fail(fmt.Errorf("expected: %s is not in head/", e.Path))
			}
			if t.Base[e.Path] == c {
				return fail(fmt.Errorf("expected: %s is not changed", e.Path))
			}
			if n := strings.Count(strings.TrimSuffix(c, "\n"), "\n") + 1; e.EndLine > n {
				return fail(fmt.Errorf("expected: %s has %d lines, not %d", e.Path, n, e.EndLine))
			}
		}
	}
	for _, d := range spec.ReferenceDeletions {
		if _, ok := t.Base[d]; !ok {
			return fail(fmt.Errorf("reference_deletions: %s is not in base/", d))
		}
		if _, ok := t.Reference[d]; ok {
			return fail(fmt.Errorf("reference_deletions: %s is also under reference/", d))
		}
	}
	for p, c := range t.Reference {
		if t.Base[p] == c {
			return fail(fmt.Errorf("reference/%s: the same as the base", p))
		}
		if old, ok := t.Base[p]; ok && old == "" {
			return fail(fmt.Errorf("reference/%s: the base file is empty (the oracle edits whole files)", p))
		}
	}
	return t, nil
}

func readCapped(name string, max int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: over %d bytes", filepath.Base(name), max)
	}
	return b, nil
}

// readTree reads the regular text files under dir by slash path; symlinks
// and other special files are errors.
func readTree(dir string, required bool) (map[string]string, error) {
	out := map[string]string{}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) && !required {
		return out, nil
	}
	var total int64
	root := filepath.Base(dir)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s/%s: not a regular file", root, rel)
		}
		if n, err := patch.NormalizePath(rel); err != nil || n != rel || path.Base(rel) == ".git" || strings.HasPrefix(rel, ".git/") {
			return fmt.Errorf("%s/%s: not a valid repository path", root, rel)
		}
		if len(out) == MaxTreeFiles {
			return fmt.Errorf("%s: over %d files", root, MaxTreeFiles)
		}
		b, err := readCapped(p, MaxFileBytes)
		if err != nil {
			return fmt.Errorf("%s/%s: %w", root, rel, err)
		}
		if total += int64(len(b)); total > MaxTreeBytes {
			return fmt.Errorf("%s: over %d bytes", root, MaxTreeBytes)
		}
		if !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
			return fmt.Errorf("%s/%s: not UTF-8 text", root, rel)
		}
		out[rel] = string(b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PathPolicy is the path policy every task runs under: the defaults of a
// Quavon policy.
func PathPolicy() patch.PathPolicy {
	return fixagent.PathPolicyOf(policy.Default().Features.Fix)
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
