package patch

import (
	"cmp"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/quavon/quavon/internal/secret"
)

// Patch and content rules (ValidatePatch; the overlay checks the ones it
// can at edit time).
const (
	RuleOperation         Rule = "patch.operation"      // unknown operation, or fields that contradict it
	RuleDuplicatePath     Rule = "patch.duplicate_path" // a path appears twice
	RuleNoChange          Rule = "patch.no_change"      // a modify whose content equals the base
	RuleMode              Rule = "mode"                 // not 100644 (new file, or at the base)
	RuleLink              Rule = "link"                 // a symlink or gitlink touched, or a path beneath one
	RulePathConflict      Rule = "collision.path"       // file/directory conflict with the base or the patch
	RuleCaseCollision     Rule = "collision.case"       // equal to another path when case and Unicode form are ignored
	RuleBaseMissing       Rule = "base.missing"         // modify/delete of a path the base does not have
	RuleBaseExists        Rule = "base.exists"          // create of a path the base has
	RuleBaseMoved         Rule = "base.moved"           // BaseBlobSHA differs from the fresh base
	RuleBinary            Rule = "content.binary"       // NUL byte
	RuleNotUTF8           Rule = "content.not_utf8"     // invalid UTF-8
	RuleBidi              Rule = "content.bidi"         // bidi control in an added line
	RuleZeroWidth         Rule = "content.zero_width"   // zero-width character in an added line
	RuleSecret            Rule = "content.secret"       // the secret scan found something in an added line
	RuleLimitFiles        Rule = "limit.files"          // more than Limits.MaxFiles files
	RuleLimitChangedLines Rule = "limit.changed_lines"  // more than Limits.MaxChangedLines added+removed lines
	RuleLimitFileSize     Rule = "limit.file_size"      // new content over Limits.MaxFileBytes
)

// RejectedError is ValidatePatch's verdict on a patch it refuses: every
// violation found, sorted by path, then rule.
type RejectedError struct {
	Violations []Violation
}

func (e *RejectedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "patch rejected (%d violation", len(e.Violations))
	if len(e.Violations) != 1 {
		b.WriteByte('s')
	}
	b.WriteString(")")
	for i, v := range e.Violations {
		if i == 5 {
			fmt.Fprintf(&b, "; and %d more", len(e.Violations)-5)
			break
		}
		b.WriteString("; ")
		b.WriteString(v.Error())
	}
	return b.String()
}

// Has reports whether the verdict includes rule for path.
func (e *RejectedError) Has(path string, rule Rule) bool {
	for _, v := range e.Violations {
		if v.Path == path && v.Rule == rule {
			return true
		}
	}
	return false
}

// SecretScanner finds secrets in text; *leaks.Scanner is the production
// implementation (gitleaks' default rules plus Quavon's patterns). It must
// be safe for concurrent use: ValidatePatch scans files in parallel.
type SecretScanner interface {
	ScanFile(path, text string) []secret.Match
}

// ValidatePatch checks a patch against a fresh listing of its base commit
// and returns nil, a *RejectedError listing every violation, or another
// error when it could not decide (a base blob could not be read). It
// checks, for every change: the path rules (PathViolation, and the path
// must already be canonical); operation fields; mode 100644 (new, and at
// the base for modify/delete); no symlink or gitlink touched and nothing
// beneath one or beneath a file; create only where the base has nothing,
// modify/delete only where it has a file whose blob SHA equals
// BaseBlobSHA (a moved base is base.moved); no case- or
// Unicode-form-insensitive collision with a base path or another change;
// text content (UTF-8, no NUL) at both ends; no bidi control or
// zero-width character in added lines; the secret scan of added lines;
// and the patch-wide limits. base must be able to Read the modified and
// deleted files (Listing.Read verifies them against their blob SHA).
func ValidatePatch(changes []FixFileChange, base *Listing, policy PathPolicy, limits Limits, scanner SecretScanner) error {
	if base == nil {
		return errors.New("patch.ValidatePatch: nil base listing")
	}
	if scanner == nil {
		return errors.New("patch.ValidatePatch: nil secret scanner")
	}
	if err := limits.Validate(); err != nil {
		return err
	}
	limits = limits.withDefaults()
	var vs []Violation
	add := func(path string, rule Rule, format string, args ...any) {
		vs = append(vs, Violation{Path: path, Rule: rule, Message: fmt.Sprintf(format, args...)})
	}
	if len(changes) > limits.MaxFiles {
		add("", RuleLimitFiles, "%d files changed; the limit is %d", len(changes), limits.MaxFiles)
	}
	seen := make(map[string]bool, len(changes))
	var created []string // canonical paths created, for the tree-shape checks
	var changed []string // every valid canonical path
	totalLines := 0
	var scans []scanJob
	for _, c := range changes {
		n, err := NormalizePath(c.Path)
		if err != nil {
			add(c.Path, RuleInvalidPath, "%s", err.Error())
			continue
		}
		if n != c.Path {
			add(c.Path, RuleInvalidPath, "path is not in canonical form (it normalises to %q)", n)
			continue
		}
		if seen[n] {
			add(n, RuleDuplicatePath, "the path appears more than once in the patch")
			continue
		}
		seen[n] = true
		changed = append(changed, n)
		if v := normalizedPathViolation(n, n, policy); v != nil {
			vs = append(vs, *v)
		}
		if c.Mode != ModeFile {
			add(n, RuleMode, "mode %s; only %s is allowed", c.Mode, ModeFile)
		}
		for d := range ancestors(n) {
			if e, ok := base.Stat(d); ok {
				if e.Mode == ModeSymlink || e.Mode == ModeGitlink {
					add(n, RuleLink, "%s is a %s at the base", d, modeName(e.Mode))
				} else {
					add(n, RulePathConflict, "%s is a file at the base", d)
				}
			}
		}
		e, inBase := base.Stat(n)
		var old string
		readable := false
		switch c.Operation {
		case OpCreate:
			created = append(created, n)
			if c.BaseBlobSHA != "" {
				add(n, RuleOperation, "a created file has no base blob SHA")
			}
			if inBase {
				if e.Mode == ModeSymlink || e.Mode == ModeGitlink {
					add(n, RuleLink, "is a %s at the base", modeName(e.Mode))
				} else {
					add(n, RuleBaseExists, "the base already has this path")
				}
			}
		case OpModify, OpDelete:
			if c.Operation == OpDelete && c.NewContent != "" {
				add(n, RuleOperation, "a deleted file has no new content")
			}
			switch {
			case !inBase:
				add(n, RuleBaseMissing, "the base has no file at this path")
			case e.Mode == ModeSymlink || e.Mode == ModeGitlink:
				add(n, RuleLink, "is a %s at the base; links are never changed", modeName(e.Mode))
			case e.Mode != ModeFile:
				add(n, RuleMode, "has mode %s at the base; only %s files may change", e.Mode, ModeFile)
			case e.BlobSHA != c.BaseBlobSHA:
				add(n, RuleBaseMoved, "the base blob is %s, the patch was made against %s", e.BlobSHA, shortSHA(c.BaseBlobSHA))
			default:
				b, err := base.Read(n)
				if err != nil {
					return fmt.Errorf("patch.ValidatePatch: %w", err)
				}
				old, readable = string(b), true
				if rule, msg := textProblem(old); rule != "" {
					add(n, rule, "at the base: %s", msg)
					readable = false
				}
			}
		default:
			add(n, RuleOperation, "unknown operation %q", c.Operation)
			continue
		}
		if c.Operation != OpDelete {
			if rule, msg := textProblem(c.NewContent); rule != "" {
				add(n, rule, "%s", msg)
				continue
			}
			if len(c.NewContent) > limits.MaxFileBytes {
				add(n, RuleLimitFileSize, "%d bytes; the limit is %d", len(c.NewContent), limits.MaxFileBytes)
				continue
			}
		}
		if c.Operation != OpCreate && !readable {
			continue
		}
		if c.Operation == OpModify && old == c.NewContent {
			add(n, RuleNoChange, "the new content equals the base")
			continue
		}
		d := computeDelta(old, c.NewContent, limits.MaxChangedLines+1)
		totalLines += d.added + d.removed
		for _, l := range d.addedLines {
			if rule, r := invisibleInLine(l.text, l.n == 1); rule != "" {
				add(n, rule, "line %d adds the invisible character %U", l.n, r)
			}
		}
		if len(d.addedLines) > 0 {
			scans = append(scans, scanJob{path: n, delta: d})
		}
	}
	for _, j := range runScans(scans, scanner) {
		add(j.path, RuleSecret, "line %d looks like a secret (%s)", j.line, j.rule)
	}
	if totalLines > limits.MaxChangedLines {
		add("", RuleLimitChangedLines, "%d lines added or removed; the limit is %d", totalLines, limits.MaxChangedLines)
	}
	vs = append(vs, treeShape(base, created, changed)...)
	if len(vs) == 0 {
		return nil
	}
	slices.SortStableFunc(vs, func(a, b Violation) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), strings.Compare(string(a.Rule), string(b.Rule)))
	})
	return &RejectedError{Violations: vs}
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	if s == "" {
		return "(none)"
	}
	return s
}

type scanJob struct {
	path  string
	delta fileDelta
}

type secretHit struct {
	path, rule string
	line       int
}

// runScans runs the secret scan over the added lines of each file, files
// in parallel (up to GOMAXPROCS: gitleaks' generic rule costs about a
// quarter of a microsecond per byte), and reports each hit by rule and
// line, never by value, in file order.
func runScans(jobs []scanJob, scanner SecretScanner) []secretHit {
	results := make([][]secretHit, len(jobs))
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i] = scanAdded(jobs[i], scanner)
		})
	}
	wg.Wait()
	var out []secretHit
	for _, r := range results {
		out = append(out, r...)
	}
	return out
}

func scanAdded(j scanJob, scanner SecretScanner) []secretHit {
	var b strings.Builder
	starts := make([]int, len(j.delta.addedLines))
	for i, l := range j.delta.addedLines {
		starts[i] = b.Len()
		b.WriteString(l.text)
		if !strings.HasSuffix(l.text, "\n") {
			b.WriteByte('\n')
		}
	}
	var out []secretHit
	reported := map[string]bool{}
	for _, m := range scanner.ScanFile(j.path, b.String()) {
		i, _ := slices.BinarySearch(starts, m.Start+1)
		line := j.delta.addedLines[max(0, i-1)].n
		key := fmt.Sprintf("%s:%d", m.Rule, line)
		if reported[key] {
			continue
		}
		reported[key] = true
		out = append(out, secretHit{path: j.path, rule: m.Rule, line: line})
	}
	return out
}

// treeShape checks created paths against the whole base listing and all
// changed paths against each other: a created path (or one of its
// directories) equal to an existing one when case and Unicode form are
// ignored, and a created path where the base has a directory.
func treeShape(base *Listing, created, changed []string) []Violation {
	var vs []Violation
	if len(created) > 0 {
		cs := make([]splitPath, len(created))
		for i, p := range created {
			cs[i] = newSplitPath(p)
		}
		reported := map[string]bool{}
		for p := range base.entries {
			for i := range cs {
				if v, ok := comparePaths(cs[i], p); ok && !reported[cs[i].path+"\x00"+string(v.Rule)] {
					reported[cs[i].path+"\x00"+string(v.Rule)] = true
					vs = append(vs, v)
				}
			}
		}
	}
	// within the patch
	for i := range changed {
		si := newSplitPath(changed[i])
		for j := range changed {
			if i == j {
				continue
			}
			if v, ok := comparePaths(si, changed[j]); ok {
				v.Message = strings.Replace(v.Message, "at the base", "in the patch", 1)
				vs = append(vs, v)
			}
		}
	}
	return vs
}

type splitPath struct {
	path string
	segs []string
}

func newSplitPath(p string) splitPath { return splitPath{path: p, segs: strings.Split(p, "/")} }

// comparePaths compares the new path c with an other path p segment by
// segment, reporting a collision when p shares a leading run of c's
// segments except that one differs only by case or Unicode form, and a
// conflict when p lies beneath c.
func comparePaths(c splitPath, p string) (Violation, bool) {
	rest := p
	for i, cs := range c.segs {
		if rest == "" {
			return Violation{}, false
		}
		seg := rest
		if k := strings.IndexByte(rest, '/'); k >= 0 {
			seg, rest = rest[:k], rest[k+1:]
		} else {
			rest = ""
		}
		if seg != cs {
			if foldEqual(seg, cs) {
				existing := strings.Join(append(slices.Clone(c.segs[:i]), seg), "/")
				return Violation{Path: c.path, Rule: RuleCaseCollision,
					Message: fmt.Sprintf("collides with %q at the base when case and Unicode form are ignored", existing)}, true
			}
			return Violation{}, false
		}
	}
	if rest != "" {
		return Violation{Path: c.path, Rule: RulePathConflict, Message: "is a directory at the base"}, true
	}
	return Violation{}, false
}

// foldEqual compares two different segments the way a case-insensitive,
// normalisation-insensitive file system would.
func foldEqual(a, b string) bool {
	if isASCII(a) && isASCII(b) {
		return len(a) == len(b) && strings.EqualFold(a, b)
	}
	return foldPath(a) == foldPath(b)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
