package acceptance

import (
	"path"
	"slices"
	"strings"
	"unicode"
)

// LineRange is an inclusive range of 1-based line numbers.
type LineRange struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// FileChange is one file the pull request changes.
type FileChange struct {
	// Deleted: the file is gone at head; it can be cited as a file only.
	Deleted bool
	// Lines are the head lines the pull request adds or modifies.
	Lines []LineRange
}

// Diff is what a pull request changes, the only ground evidence may
// stand on.
type Diff struct {
	// Files maps each changed file's path at head (a deleted file's path
	// at base; a renamed file under its new path) to its change. Paths
	// are clean and relative, as git prints them.
	Files map[string]FileChange
	// TestFiles optionally lists test files at head that the pull
	// request does not change (path → number of lines). Only a criterion
	// about tests (AboutTests) may cite them, and only if IsTestPath
	// agrees: "the existing tests in x_test.go cover this".
	TestFiles map[string]int
}

// VerifyOptions tune Verify. Zero or negative fields take the defaults.
type VerifyOptions struct {
	// ContextLines: a cited line range may reach this many lines beyond
	// the changed lines (the hunk's context), as long as it touches a
	// changed line.
	ContextLines int
	// MaxReasonBytes caps a verdict's reason.
	MaxReasonBytes int
}

// Default verification options.
const (
	DefaultContextLines   = 3
	DefaultMaxReasonBytes = 500
)

// Note says why Verify did not take the judge's status.
type Note string

// Notes.
const (
	// NoteNoAnswer: the judge said nothing about the criterion (or its
	// answer was refused).
	NoteNoAnswer Note = "no_answer"
	// NoteNoEvidence: "met" without any evidence.
	NoteNoEvidence Note = "no_evidence"
	// NoteOutsideDiff: a cited location is not a changed line or file of
	// the pull request.
	NoteOutsideDiff Note = "evidence_outside_diff"
)

// Verdict is a criterion's verified result.
type Verdict struct {
	CriterionID string `json:"criterion_id"`
	Status      Status `json:"status"`
	// Claimed is the judge's status, empty without an answer.
	Claimed Status `json:"claimed,omitempty"`
	// Evidence holds the verified locations only.
	Evidence []Location `json:"evidence,omitempty"`
	// Rejected counts cited locations that failed verification.
	Rejected int `json:"rejected,omitempty"`
	// Reason is the judge's, without control or format characters, one
	// line, at most MaxReasonBytes. Still untrusted: the publisher
	// sanitises it.
	Reason string `json:"reason,omitempty"`
	Note   Note   `json:"note,omitempty"`
}

// Verification is Verify's result.
type Verification struct {
	// Verdicts, one per criterion, in the criteria's order.
	Verdicts []Verdict `json:"verdicts"`
	// Unknown counts judgements for ids that are not criteria.
	Unknown int `json:"unknown,omitempty"`
}

// Counts returns how many verdicts have each status.
func (v Verification) Counts() (met, unmet, unclear int) {
	for _, d := range v.Verdicts {
		switch d.Status {
		case StatusMet:
			met++
		case StatusUnmet:
			unmet++
		default:
			unclear++
		}
	}
	return met, unmet, unclear
}

// Verify turns the judge's answer into verdicts that stand on the diff
// (AC1). For each criterion:
//
//   - no judgement: unclear (NoteNoAnswer);
//   - any cited location that is not a changed file (cited whole) or
//     within ContextLines of changed lines while touching one, or, for a
//     criterion about tests, a listed test file: unclear
//     (NoteOutsideDiff), whatever the judge said;
//   - met without a verified location: unclear (NoteNoEvidence);
//   - otherwise the judge's status; unmet and unclear need no evidence.
//
// So a judge that obeys injected text can move a criterion to unmet or
// unclear, never to a met that the diff does not show. Judgements for
// unknown ids are counted and ignored. Verify never fails: a refused
// answer is verified as the empty Answer.
func Verify(criteria []Criterion, ans Answer, diff Diff, opt VerifyOptions) Verification {
	if opt.ContextLines <= 0 {
		opt.ContextLines = DefaultContextLines
	}
	if opt.MaxReasonBytes <= 0 {
		opt.MaxReasonBytes = DefaultMaxReasonBytes
	}
	byID := make(map[string]Judgement, len(ans.Criteria))
	for _, j := range ans.Criteria {
		if _, dup := byID[j.ID]; !dup {
			byID[j.ID] = j
		}
	}
	known := make(map[string]bool, len(criteria))
	out := Verification{Verdicts: make([]Verdict, 0, len(criteria))}
	for _, c := range criteria {
		known[c.ID] = true
		j, ok := byID[c.ID]
		if !ok {
			out.Verdicts = append(out.Verdicts, Verdict{CriterionID: c.ID, Status: StatusUnclear, Note: NoteNoAnswer})
			continue
		}
		v := Verdict{CriterionID: c.ID, Claimed: j.Status, Reason: cleanReason(j.Reason, opt.MaxReasonBytes)}
		tests := AboutTests(c)
		for _, loc := range j.Evidence {
			if diff.verifies(loc, tests, opt.ContextLines) {
				v.Evidence = append(v.Evidence, loc)
			} else {
				v.Rejected++
			}
		}
		switch {
		case !j.Status.valid():
			v.Status, v.Note = StatusUnclear, NoteNoAnswer
		case v.Rejected > 0:
			v.Status, v.Note = StatusUnclear, NoteOutsideDiff
		case j.Status == StatusMet && len(v.Evidence) == 0:
			v.Status, v.Note = StatusUnclear, NoteNoEvidence
		default:
			v.Status = j.Status
		}
		out.Verdicts = append(out.Verdicts, v)
	}
	for id := range byID {
		if !known[id] {
			out.Unknown++
		}
	}
	return out
}

// verifies reports whether loc stands on d.
func (d Diff) verifies(loc Location, aboutTests bool, context int) bool {
	if !cleanRelativePath(loc.Path) {
		return false
	}
	start, end := loc.StartLine, loc.EndLine
	if end == 0 {
		end = start
	}
	if !loc.WholeFile() && (start < 1 || end < start) {
		return false
	}
	if fc, ok := d.Files[loc.Path]; ok {
		if loc.WholeFile() {
			return true
		}
		return !fc.Deleted && covered(fc.Lines, start, end, context)
	}
	if aboutTests && IsTestPath(loc.Path) {
		if n, ok := d.TestFiles[loc.Path]; ok {
			return loc.WholeFile() || end <= n
		}
	}
	return false
}

// covered reports whether [start, end] touches a changed line and lies
// within context lines of changed lines throughout.
func covered(lines []LineRange, start, end, context int) bool {
	rs := make([]LineRange, 0, len(lines))
	for _, r := range lines {
		if r.Start >= 1 && r.End >= r.Start {
			rs = append(rs, r)
		}
	}
	slices.SortFunc(rs, func(a, b LineRange) int { return a.Start - b.Start })
	touches := false
	for _, r := range rs {
		if start <= r.End && end >= r.Start {
			touches = true
			break
		}
	}
	if !touches {
		return false
	}
	// Merge the ranges widened by context; one merged range must hold
	// the whole citation.
	var merged []LineRange
	for _, r := range rs {
		w := LineRange{Start: r.Start - context, End: r.End + context}
		if n := len(merged); n > 0 && w.Start <= merged[n-1].End+1 {
			merged[n-1].End = max(merged[n-1].End, w.End)
			continue
		}
		merged = append(merged, w)
	}
	for _, m := range merged {
		if start >= m.Start && end <= m.End {
			return true
		}
	}
	return false
}

// cleanRelativePath accepts the paths git prints: relative, clean, no
// "." or ".." segment, no backslash, NUL or other control character.
func cleanRelativePath(p string) bool {
	if p == "" || len(p) > MaxPathBytes || strings.HasPrefix(p, "/") || path.Clean(p) != p ||
		p == "." || p == ".." || strings.HasPrefix(p, "../") || strings.ContainsRune(p, '\\') {
		return false
	}
	for _, r := range p {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return false
		}
	}
	return true
}

// testWords make a criterion about tests when one of them is a whole word
// of its text or context, in any letter case.
var testWords = map[string]bool{
	"test": true, "tests": true, "tested": true, "testing": true,
	"unittest": true, "unittests": true, "coverage": true,
	"fuzz": true, "fuzzing": true, "fuzzed": true,
}

// AboutTests reports whether criterion c is about tests: its text or
// context has one of the words test, tests, tested, testing, unittest(s),
// coverage, fuzz, fuzzing, fuzzed ("unit-tests" counts: the dash splits
// words). Such a criterion may cite test files the pull request does not
// change (Diff.TestFiles). The text is the issue author's, so this grants
// nothing but that.
func AboutTests(c Criterion) bool {
	for _, s := range []string{c.Text, c.Context} {
		for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r)
		}) {
			if testWords[w] {
				return true
			}
		}
	}
	return false
}

// testDirs are directory names that hold tests, compared case-insensitively.
var testDirs = map[string]bool{"test": true, "tests": true, "__tests__": true, "spec": true, "specs": true, "testdata": true, "e2e": true}

// testScriptExts are the JavaScript family's extensions for *.test.* and
// *.spec.* files.
var testScriptExts = map[string]bool{".js": true, ".jsx": true, ".mjs": true, ".cjs": true, ".ts": true, ".tsx": true, ".mts": true, ".cts": true}

// IsTestPath reports whether p is a test file by the common conventions:
// a directory named test, tests, __tests__, spec, specs, testdata or e2e;
// or a file named *_test.go, test_*.py, *_test.py, *.test.js / *.spec.ts
// (and the other JavaScript and TypeScript extensions), *_spec.rb,
// *Test.java, *Tests.java, *Test.kt, *Tests.cs, *Test.php or *.feature.
func IsTestPath(p string) bool {
	dir, base := path.Split(p)
	for _, seg := range strings.Split(strings.Trim(dir, "/"), "/") {
		if testDirs[strings.ToLower(seg)] {
			return true
		}
	}
	ext := path.Ext(base)
	stem := strings.TrimSuffix(base, ext)
	switch {
	case ext == ".go":
		return strings.HasSuffix(stem, "_test")
	case ext == ".py":
		return strings.HasPrefix(stem, "test_") || strings.HasSuffix(stem, "_test")
	case testScriptExts[ext]:
		return strings.HasSuffix(stem, ".test") || strings.HasSuffix(stem, ".spec")
	case ext == ".rb":
		return strings.HasSuffix(stem, "_spec")
	case ext == ".java":
		return strings.HasSuffix(stem, "Test") || strings.HasSuffix(stem, "Tests")
	case ext == ".kt":
		return strings.HasSuffix(stem, "Test")
	case ext == ".cs":
		return strings.HasSuffix(stem, "Tests")
	case ext == ".php":
		return strings.HasSuffix(stem, "Test")
	case ext == ".feature":
		return true
	}
	return false
}

// cleanReason makes the judge's reason one line without control or format
// characters, at most max bytes. Sanitising for publication is the
// publisher's.
func cleanReason(s string, max int) string {
	s, _ = truncate(cleanLine(s), max)
	return s
}
