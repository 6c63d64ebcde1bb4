package sast

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// LineRange is an inclusive range of 1-based line numbers.
type LineRange struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// ChangedLines maps a path (relative to the repository root, clean) to
// the sorted, merged ranges of lines added or modified in the head
// version. A file that was deleted, or only lost lines, has no entry.
type ChangedLines map[string][]LineRange

// Contains reports whether any line of [start, end] lies within context
// lines of a changed line of p.
func (c ChangedLines) Contains(p string, start, end, context int) bool {
	for _, r := range c[p] {
		if start <= r.End+context && end >= r.Start-context {
			return true
		}
	}
	return false
}

// DiffLimits caps ParseUnifiedDiff. Zero fields take the defaults.
type DiffLimits struct {
	MaxBytes int64
	MaxFiles int
	MaxHunks int
}

// Default diff limits.
const (
	DefaultDiffMaxBytes = 64 << 20
	DefaultDiffMaxFiles = 10_000
	DefaultDiffMaxHunks = 200_000
)

// ErrDiffTooLarge is returned when a diff exceeds a DiffLimits cap.
var ErrDiffTooLarge = errors.New("sast: diff too large")

// ParseUnifiedDiff reads the output of
//
//	git diff -U0 --no-color --no-ext-diff --no-renames BASE HEAD
//
// (any -U works: context lines are counted, not recorded) and returns the
// lines added in HEAD. It understands quoted paths with C escapes, the
// tab git appends to a path with a space, /dev/null for a deleted file,
// "\ No newline at end of file", binary files (no lines) and hunk headers
// with omitted counts. A hunk whose body does not match its header, a
// path that is not clean and relative, or a combined diff is an error.
func ParseUnifiedDiff(r io.Reader, lim DiffLimits) (ChangedLines, error) {
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = DefaultDiffMaxBytes
	}
	if lim.MaxFiles <= 0 {
		lim.MaxFiles = DefaultDiffMaxFiles
	}
	if lim.MaxHunks <= 0 {
		lim.MaxHunks = DefaultDiffMaxHunks
	}
	p := diffParser{lim: lim, out: ChangedLines{}, inHeader: true}
	br := bufio.NewReader(io.LimitReader(r, lim.MaxBytes+1))
	var total int64
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A long line: only its prefix matters (hunk bodies are
			// counted, not read), so gather it without keeping it whole.
			head := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				total += int64(len(line))
				line, err = br.ReadSlice('\n')
			}
			total += int64(len(line))
			if total > lim.MaxBytes {
				return nil, fmt.Errorf("sast.ParseUnifiedDiff: %w (over %d bytes)", ErrDiffTooLarge, lim.MaxBytes)
			}
			if perr := p.line(head); perr != nil {
				return nil, perr
			}
		} else {
			total += int64(len(line))
			if total > lim.MaxBytes {
				return nil, fmt.Errorf("sast.ParseUnifiedDiff: %w (over %d bytes)", ErrDiffTooLarge, lim.MaxBytes)
			}
			if len(line) > 0 {
				if perr := p.line(bytes.TrimSuffix(line, []byte("\n"))); perr != nil {
					return nil, perr
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("sast.ParseUnifiedDiff: %w", err)
		}
	}
	if p.oldLeft > 0 || p.newLeft > 0 {
		return nil, errors.New("sast.ParseUnifiedDiff: diff ends inside a hunk")
	}
	for path, rs := range p.out {
		p.out[path] = mergeRanges(rs)
	}
	return p.out, nil
}

type diffParser struct {
	lim   DiffLimits
	out   ChangedLines
	files int
	hunks int
	// inHeader: after "diff --git" and before the first hunk.
	inHeader bool
	// path is the new path of the current file ("" for /dev/null or
	// before "+++"); havePath says "+++" was seen.
	path     string
	havePath bool
	// Hunk body state.
	oldLeft, newLeft int
	newLine          int
}

func (p *diffParser) line(l []byte) error {
	if p.oldLeft > 0 || p.newLeft > 0 {
		return p.body(l)
	}
	s := string(l)
	switch {
	case strings.HasPrefix(s, "diff --git "):
		p.inHeader, p.path, p.havePath = true, "", false
	case strings.HasPrefix(s, "diff --cc ") || strings.HasPrefix(s, "diff --combined ") || strings.HasPrefix(s, "@@@"):
		return errors.New("sast.ParseUnifiedDiff: combined diffs are not supported")
	case strings.HasPrefix(s, "+++ ") && p.inHeader:
		p.files++
		if p.files > p.lim.MaxFiles {
			return fmt.Errorf("sast.ParseUnifiedDiff: %w (over %d files)", ErrDiffTooLarge, p.lim.MaxFiles)
		}
		name, err := diffPath(s[4:])
		if err != nil {
			return fmt.Errorf("sast.ParseUnifiedDiff: %w", err)
		}
		p.path, p.havePath = name, true
	case strings.HasPrefix(s, "@@ "):
		if !p.havePath {
			return errors.New("sast.ParseUnifiedDiff: hunk before a +++ line")
		}
		p.hunks++
		if p.hunks > p.lim.MaxHunks {
			return fmt.Errorf("sast.ParseUnifiedDiff: %w (over %d hunks)", ErrDiffTooLarge, p.lim.MaxHunks)
		}
		oldN, newStart, newN, err := hunkHeader(s)
		if err != nil {
			return fmt.Errorf("sast.ParseUnifiedDiff: %w", err)
		}
		if newN > 0 && p.path == "" {
			return errors.New("sast.ParseUnifiedDiff: lines added to /dev/null")
		}
		p.inHeader = false
		p.oldLeft, p.newLeft, p.newLine = oldN, newN, newStart
	case !p.inHeader && !strings.HasPrefix(s, "\\"):
		// Between hunks only "@@", "diff" and "\ No newline" may come.
		return fmt.Errorf("sast.ParseUnifiedDiff: unexpected line after a hunk: %q", clip(s, 40))
	default:
		// Extended headers (index, mode, new file, deleted file, similarity,
		// Binary files … differ) and "--- ".
	}
	return nil
}

func (p *diffParser) body(l []byte) error {
	if len(l) == 0 {
		// Some tools strip the space of an empty context line.
		l = []byte(" ")
	}
	switch l[0] {
	case ' ':
		if p.oldLeft == 0 || p.newLeft == 0 {
			return errors.New("sast.ParseUnifiedDiff: hunk body longer than its header says")
		}
		p.oldLeft--
		p.newLeft--
		p.newLine++
	case '-':
		if p.oldLeft == 0 {
			return errors.New("sast.ParseUnifiedDiff: hunk body longer than its header says")
		}
		p.oldLeft--
	case '+':
		if p.newLeft == 0 {
			return errors.New("sast.ParseUnifiedDiff: hunk body longer than its header says")
		}
		p.newLeft--
		rs := p.out[p.path]
		if n := len(rs); n > 0 && rs[n-1].End+1 == p.newLine {
			rs[n-1].End = p.newLine
		} else {
			p.out[p.path] = append(rs, LineRange{p.newLine, p.newLine})
		}
		p.newLine++
	case '\\':
		// "\ No newline at end of file"
	default:
		return fmt.Errorf("sast.ParseUnifiedDiff: unexpected line in hunk body: %q", clip(string(l), 40))
	}
	return nil
}

// hunkHeader parses "@@ -a[,b] +c[,d] @@ …".
func hunkHeader(s string) (oldN, newStart, newN int, err error) {
	rest, ok := strings.CutPrefix(s, "@@ -")
	if !ok {
		return 0, 0, 0, fmt.Errorf("bad hunk header %q", clip(s, 60))
	}
	oldSpec, rest, ok1 := strings.Cut(rest, " +")
	newSpec, _, ok2 := strings.Cut(rest, " @@")
	if !ok1 || !ok2 {
		return 0, 0, 0, fmt.Errorf("bad hunk header %q", clip(s, 60))
	}
	_, oldN, err1 := hunkRange(oldSpec)
	newStart, newN, err2 := hunkRange(newSpec)
	if err1 != nil || err2 != nil || (newN > 0 && newStart < 1) {
		return 0, 0, 0, fmt.Errorf("bad hunk header %q", clip(s, 60))
	}
	return oldN, newStart, newN, nil
}

// hunkRange parses "start[,count]"; the count defaults to 1.
func hunkRange(s string) (start, n int, err error) {
	a, b, hasCount := strings.Cut(s, ",")
	if start, err = atoiBounded(a); err != nil {
		return 0, 0, err
	}
	n = 1
	if hasCount {
		if n, err = atoiBounded(b); err != nil {
			return 0, 0, err
		}
	}
	if start+n > maxLine {
		return 0, 0, errors.New("range too large")
	}
	return start, n, nil
}

func atoiBounded(s string) (int, error) {
	if s == "" || len(s) > 10 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, errors.New("not a number")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > maxLine {
		return 0, errors.New("not a number")
	}
	return n, nil
}

// diffPath reads the path of a "+++ " line: /dev/null (returned as ""),
// b/path, or "b/quoted\tpath"; git appends a tab to an unquoted path that
// holds a space.
func diffPath(s string) (string, error) {
	if s == "/dev/null" {
		return "", nil
	}
	if strings.HasPrefix(s, `"`) {
		u, err := unquoteC(s)
		if err != nil {
			return "", err
		}
		s = u
	} else {
		s = strings.TrimSuffix(s, "\t")
	}
	rel, ok := strings.CutPrefix(s, "b/")
	if !ok {
		return "", fmt.Errorf("path %q has no b/ prefix", clip(s, 60))
	}
	p, err := cleanRelPath(rel)
	if err != nil || p != rel {
		return "", fmt.Errorf("path %q is not clean and relative", clip(rel, 60))
	}
	return p, nil
}

// unquoteC undoes git's C-style quoting of a path: "…" with \a \b \t \n
// \v \f \r \" \\ and three-digit octal escapes (bytes of non-ASCII names).
func unquoteC(s string) (string, error) {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return "", fmt.Errorf("bad quoted path %q", clip(s, 60))
	}
	s = s[1 : len(s)-1]
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '"' {
			return "", errors.New("unescaped quote in quoted path")
		}
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			return "", errors.New("trailing backslash in quoted path")
		}
		switch e := s[i]; e {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'v':
			b.WriteByte('\v')
		case 'f':
			b.WriteByte('\f')
		case 'r':
			b.WriteByte('\r')
		case '"', '\\':
			b.WriteByte(e)
		case '0', '1', '2', '3':
			if i+2 >= len(s) || !isOctal(s[i+1]) || !isOctal(s[i+2]) {
				return "", errors.New("bad octal escape in quoted path")
			}
			b.WriteByte((e-'0')<<6 | (s[i+1]-'0')<<3 | (s[i+2] - '0'))
			i += 2
		default:
			return "", fmt.Errorf("unknown escape \\%c in quoted path", e)
		}
	}
	return b.String(), nil
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// mergeRanges sorts ranges and merges overlapping and adjacent ones.
func mergeRanges(rs []LineRange) []LineRange {
	slices.SortFunc(rs, func(a, b LineRange) int { return a.Start - b.Start })
	var out []LineRange
	for _, r := range rs {
		if n := len(out); n > 0 && r.Start <= out[n-1].End+1 {
			out[n-1].End = max(out[n-1].End, r.End)
			continue
		}
		out = append(out, r)
	}
	return out
}
