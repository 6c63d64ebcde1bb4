package patch

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// MatchCountError is EditFile's refusal when oldText does not occur exactly
// once. Count is the number of (possibly overlapping) occurrences.
type MatchCountError struct {
	Path  string
	Count int
}

func (e *MatchCountError) Error() string {
	if e.Count == 0 {
		return fmt.Sprintf("%s: oldText was not found; it must match exactly once", e.Path)
	}
	return fmt.Sprintf("%s: oldText matches %d times; it must match exactly once (add surrounding lines to make it unique)", e.Path, e.Count)
}

// Overlay is the fix agent's view of the repository: a base tree that is
// never modified plus in-memory edits. Every edit goes through
// PathViolation and is refused when it would break a Limit, make the file
// something other than UTF-8 text without NUL, or add a bidi control or
// zero-width character; the refused edit changes nothing. Rules that need
// the whole tree (case collisions, paths beneath symlinks found only in a
// listing) and the secret scan are ValidatePatch's.
//
// An Overlay is not safe for concurrent use.
type Overlay struct {
	base   Base
	policy PathPolicy
	limits Limits
	files  map[string]*overlayFile
}

type overlayFile struct {
	inBase      bool   // the base has a regular ModeFile file here
	baseContent string // read at first touch
	baseSHA     string
	deleted     bool
	content     string
	delta       fileDelta
}

// NewOverlay starts an empty overlay over base.
func NewOverlay(base Base, policy PathPolicy, limits Limits) (*Overlay, error) {
	if base == nil {
		return nil, errors.New("patch.NewOverlay: nil base")
	}
	if err := limits.Validate(); err != nil {
		return nil, err
	}
	if err := policy.Validate(); err != nil {
		return nil, err
	}
	return &Overlay{base: base, policy: policy, limits: limits.withDefaults(), files: map[string]*overlayFile{}}, nil
}

// readPath normalises a path for reading: any valid path outside .git.
func readPath(p string) (string, error) {
	n, err := NormalizePath(p)
	if err != nil {
		return "", &Violation{Path: p, Rule: RuleInvalidPath, Message: err.Error()}
	}
	if isGitPath(n) {
		return "", fmt.Errorf("%s: %w", p, fs.ErrNotExist)
	}
	return n, nil
}

// Read returns the file as the agent sees it: the overlay's content, or
// the base's when the overlay has not touched it.
func (o *Overlay) Read(path string) (string, error) {
	n, err := readPath(path)
	if err != nil {
		return "", err
	}
	if f, ok := o.files[n]; ok {
		if f.deleted {
			return "", fmt.Errorf("%s: %w", path, fs.ErrNotExist)
		}
		return f.content, nil
	}
	if o.createdBeneath(n) {
		return "", fmt.Errorf("%s: %w", path, ErrNotRegular)
	}
	b, err := o.base.Read(n)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// Exists reports whether path is a file in base + overlay.
func (o *Overlay) Exists(path string) bool {
	n, err := readPath(path)
	if err != nil {
		return false
	}
	if f, ok := o.files[n]; ok {
		return !f.deleted
	}
	e, ok := o.base.Stat(n)
	return ok && e.Mode != ModeTree
}

// writePath normalises a path for writing and applies the path rules.
func (o *Overlay) writePath(p string) (string, error) {
	n, err := NormalizePath(p)
	if err != nil {
		return "", &Violation{Path: p, Rule: RuleInvalidPath, Message: err.Error()}
	}
	if v := normalizedPathViolation(p, n, o.policy); v != nil {
		return "", v
	}
	return n, nil
}

// load returns the overlay's record of n, reading the base file on first
// touch. A nil record with nil error means n is in neither.
func (o *Overlay) load(p, n string) (*overlayFile, error) {
	if f, ok := o.files[n]; ok {
		return f, nil
	}
	e, ok := o.base.Stat(n)
	if !ok {
		return nil, nil
	}
	switch e.Mode {
	case ModeFile:
	case ModeSymlink, ModeGitlink:
		return nil, &Violation{Path: p, Rule: RuleLink, Message: fmt.Sprintf("is a %s at the base; links are never changed", modeName(e.Mode))}
	case ModeTree:
		return nil, &Violation{Path: p, Rule: RulePathConflict, Message: "is a directory at the base"}
	default:
		return nil, &Violation{Path: p, Rule: RuleMode, Message: fmt.Sprintf("has mode %s at the base; only %s files may change", e.Mode, ModeFile)}
	}
	b, err := o.base.Read(n)
	if err != nil {
		return nil, fmt.Errorf("patch.Overlay: read base %s: %w", n, err)
	}
	sha := BlobSHA(b)
	if e.BlobSHA != "" && e.BlobSHA != sha {
		return nil, fmt.Errorf("patch.Overlay: base %s changed while reading (listed %s, read %s)", n, e.BlobSHA, sha)
	}
	if rule, msg := textProblem(string(b)); rule != "" {
		return nil, &Violation{Path: p, Rule: rule, Message: "at the base: " + msg}
	}
	return &overlayFile{inBase: true, baseContent: string(b), baseSHA: sha, content: string(b)}, nil
}

// EditFile replaces the one occurrence of oldText in path with newText.
// When oldText occurs zero or several times it returns *MatchCountError.
func (o *Overlay) EditFile(path, oldText, newText string) error {
	n, err := o.writePath(path)
	if err != nil {
		return err
	}
	f, err := o.load(path, n)
	if err != nil {
		return err
	}
	if f == nil || f.deleted {
		return fmt.Errorf("%s: %w (use create_file for new files)", path, fs.ErrNotExist)
	}
	if oldText == "" {
		return fmt.Errorf("%s: oldText is empty; it must match exactly once", path)
	}
	first, count := -1, 0
	for i := 0; i <= len(f.content)-len(oldText); {
		j := strings.Index(f.content[i:], oldText)
		if j < 0 {
			break
		}
		if first < 0 {
			first = i + j
		}
		count++
		i += j + 1 // overlapping occurrences count: "aa" in "aaa" is ambiguous
	}
	if count != 1 {
		return &MatchCountError{Path: path, Count: count}
	}
	return o.apply(path, n, f, f.content[:first]+newText+f.content[first+len(oldText):], false)
}

// CreateFile adds a new file. It refuses a path that exists, one beneath a
// file or link, and one where a directory exists.
func (o *Overlay) CreateFile(path, content string) error {
	n, err := o.writePath(path)
	if err != nil {
		return err
	}
	if f, ok := o.files[n]; ok && !f.deleted {
		return fmt.Errorf("%s: %w (use edit_file)", path, fs.ErrExist)
	}
	f, err := o.load(path, n)
	if err != nil {
		return err
	}
	if f != nil && !f.deleted {
		return fmt.Errorf("%s: %w (use edit_file)", path, fs.ErrExist)
	}
	for d := range ancestors(n) {
		if af, ok := o.files[d]; ok && !af.deleted {
			return &Violation{Path: path, Rule: RulePathConflict, Message: fmt.Sprintf("%s is a file", d)}
		}
		if e, ok := o.base.Stat(d); ok && e.Mode != ModeTree {
			if e.Mode == ModeSymlink || e.Mode == ModeGitlink {
				return &Violation{Path: path, Rule: RuleLink, Message: fmt.Sprintf("%s is a %s at the base", d, modeName(e.Mode))}
			}
			// Even when deleted in this overlay: a file turning into a
			// directory in one patch is refused.
			return &Violation{Path: path, Rule: RulePathConflict, Message: fmt.Sprintf("%s is a file at the base", d)}
		}
	}
	if o.createdBeneath(n + "/") {
		return &Violation{Path: path, Rule: RulePathConflict, Message: "is a directory of files created earlier"}
	}
	if f == nil {
		f = &overlayFile{}
	}
	return o.apply(path, n, f, content, false)
}

// createdBeneath reports whether the overlay holds a live file whose path
// starts with prefix ("dir/"), or, for a path without a trailing slash,
// whether a live file lies beneath it.
func (o *Overlay) createdBeneath(prefix string) bool {
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	for p, f := range o.files {
		if !f.deleted && strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

// DeleteFile removes a file of the base or one created earlier.
func (o *Overlay) DeleteFile(path string) error {
	n, err := o.writePath(path)
	if err != nil {
		return err
	}
	f, err := o.load(path, n)
	if err != nil {
		return err
	}
	if f == nil || f.deleted {
		return fmt.Errorf("%s: %w", path, fs.ErrNotExist)
	}
	if !f.inBase {
		delete(o.files, n)
		return nil
	}
	return o.apply(path, n, f, "", true)
}

// apply checks the new state of one file against the content rules and
// the limits and commits it only when all pass.
func (o *Overlay) apply(p, n string, f *overlayFile, content string, deleted bool) error {
	next := *f
	next.deleted, next.content = deleted, content
	if deleted {
		next.content = ""
	}
	if !deleted {
		if rule, msg := textProblem(content); rule != "" {
			return &Violation{Path: p, Rule: rule, Message: msg}
		}
		if len(content) > o.limits.MaxFileBytes {
			return &Violation{Path: p, Rule: RuleLimitFileSize,
				Message: fmt.Sprintf("would be %d bytes; the limit is %d", len(content), o.limits.MaxFileBytes)}
		}
	}
	next.delta = computeDelta(f.baseContent, next.content, o.limits.MaxChangedLines+1)
	if rule, r, line := invisibleInDelta(next.delta); rule != "" {
		return &Violation{Path: p, Rule: rule, Message: fmt.Sprintf("line %d adds the invisible character %U", line, r)}
	}
	unchanged := next.inBase && !deleted && content == f.baseContent
	files, lines := 0, 0
	for q, g := range o.files {
		if q != n {
			files++
			lines += g.delta.added + g.delta.removed
		}
	}
	if !unchanged {
		files++
		lines += next.delta.added + next.delta.removed
	}
	if files > o.limits.MaxFiles {
		return &Violation{Path: p, Rule: RuleLimitFiles,
			Message: fmt.Sprintf("would make %d changed files; the limit is %d", files, o.limits.MaxFiles)}
	}
	if lines > o.limits.MaxChangedLines {
		return &Violation{Path: p, Rule: RuleLimitChangedLines,
			Message: fmt.Sprintf("would make %d changed lines; the limit is %d", lines, o.limits.MaxChangedLines)}
	}
	if unchanged {
		delete(o.files, n)
		return nil
	}
	o.files[n] = &next
	return nil
}

// ChangedLines is the number of added plus removed lines so far.
func (o *Overlay) ChangedLines() int {
	t := 0
	for _, f := range o.files {
		t += f.delta.added + f.delta.removed
	}
	return t
}

// Changes is the patch: one FixFileChange per changed file, in path order.
func (o *Overlay) Changes() []FixFileChange {
	paths := make([]string, 0, len(o.files))
	for p := range o.files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	out := make([]FixFileChange, 0, len(paths))
	for _, p := range paths {
		f := o.files[p]
		c := FixFileChange{Path: p, Mode: ModeFile}
		switch {
		case !f.inBase:
			c.Operation, c.NewContent = OpCreate, f.content
		case f.deleted:
			c.Operation, c.BaseBlobSHA = OpDelete, f.baseSHA
		default:
			c.Operation, c.BaseBlobSHA, c.NewContent = OpModify, f.baseSHA, f.content
		}
		out = append(out, c)
	}
	return out
}

// Diff renders Changes as a unified diff (RenderDiff).
func (o *Overlay) Diff() (string, error) {
	return RenderDiff(o.Changes(), o.base)
}

// ancestors yields the directories of n, outermost first ("a", "a/b" for
// "a/b/c").
func ancestors(n string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for i := 0; i < len(n); i++ {
			if n[i] == '/' && !yield(n[:i]) {
				return
			}
		}
	}
}

func modeName(m Mode) string {
	switch m {
	case ModeSymlink:
		return "symlink"
	case ModeGitlink:
		return "submodule (gitlink)"
	case ModeTree:
		return "directory"
	case ModeExecutable:
		return "executable file"
	}
	return "file"
}
