package patch

import (
	"fmt"
	"strconv"
	"strings"
)

const zeroOID = "0000000000000000000000000000000000000000"

// RenderDiff renders changes as a git unified diff (the `git diff
// --full-index` format) that `git apply` applies to the base: create and
// delete headers with "new file mode"/"deleted file mode", full blob ids on
// the index lines, three lines of context, "\ No newline at end of file"
// where a side does not end in a newline, and paths quoted as git quotes
// them. The base content of every modified or deleted file is read from
// base and must hash to its BaseBlobSHA. Files whose content does not
// change are left out, as git does. Content with NUL is refused: it would
// be a binary diff.
func RenderDiff(changes []FixFileChange, base Base) (string, error) {
	var sb strings.Builder
	for _, c := range changes {
		if err := renderFile(&sb, c, base); err != nil {
			return "", fmt.Errorf("patch.RenderDiff %s: %w", c.Path, err)
		}
	}
	return sb.String(), nil
}

func renderFile(sb *strings.Builder, c FixFileChange, base Base) error {
	var old string
	if c.Operation == OpModify || c.Operation == OpDelete {
		b, err := base.Read(c.Path)
		if err != nil {
			return err
		}
		if got := BlobSHA(b); got != c.BaseBlobSHA {
			return fmt.Errorf("base content hashes to %s, the change says %s", got, c.BaseBlobSHA)
		}
		old = string(b)
	}
	if strings.IndexByte(old, 0) >= 0 || strings.IndexByte(c.NewContent, 0) >= 0 {
		return fmt.Errorf("content contains NUL (binary)")
	}
	a, b := quoteGitPath("a/"+c.Path), quoteGitPath("b/"+c.Path)
	mode := c.Mode.String()
	switch c.Operation {
	case OpCreate:
		fmt.Fprintf(sb, "diff --git %s %s\nnew file mode %s\nindex %s..%s\n", a, b, mode, zeroOID, BlobSHA([]byte(c.NewContent)))
		if c.NewContent == "" {
			return nil
		}
		fmt.Fprintf(sb, "--- /dev/null\n+++ %s%s\n", b, nameTab(b))
	case OpDelete:
		fmt.Fprintf(sb, "diff --git %s %s\ndeleted file mode %s\nindex %s..%s\n", a, b, mode, c.BaseBlobSHA, zeroOID)
		if old == "" {
			return nil
		}
		fmt.Fprintf(sb, "--- %s%s\n+++ /dev/null\n", a, nameTab(a))
	case OpModify:
		if old == c.NewContent {
			return nil
		}
		fmt.Fprintf(sb, "diff --git %s %s\nindex %s..%s %s\n--- %s%s\n+++ %s%s\n", a, b,
			c.BaseBlobSHA, BlobSHA([]byte(c.NewContent)), mode, a, nameTab(a), b, nameTab(b))
	default:
		return fmt.Errorf("unknown operation %q", c.Operation)
	}
	new := c.NewContent
	if c.Operation == OpDelete {
		new = ""
	}
	writeHunks(sb, diffLines(splitLines(old), splitLines(new), renderMaxEdits))
	return nil
}

// nameTab is git's marker for names with spaces on ---/+++ lines.
func nameTab(name string) string {
	if strings.IndexByte(name, ' ') >= 0 {
		return "\t"
	}
	return ""
}

// writeHunks groups ops into hunks with diffContext lines of context,
// merging hunks whose contexts would touch, as git does.
func writeHunks(sb *strings.Builder, ops []lineOp) {
	var changes []int
	for i, op := range ops {
		if op.kind != opEqual {
			changes = append(changes, i)
		}
	}
	// oldLine[i], newLine[i]: lines of each side before ops[i].
	oldBefore, newBefore := make([]int, len(ops)+1), make([]int, len(ops)+1)
	for i, op := range ops {
		oldBefore[i+1], newBefore[i+1] = oldBefore[i], newBefore[i]
		if op.kind != opInsert {
			oldBefore[i+1]++
		}
		if op.kind != opDelete {
			newBefore[i+1]++
		}
	}
	for i := 0; i < len(changes); {
		j := i
		for j+1 < len(changes) && changes[j+1]-changes[j]-1 <= 2*diffContext {
			j++
		}
		start := max(0, changes[i]-diffContext)
		end := min(len(ops), changes[j]+diffContext+1)
		oldStart, oldCount := oldBefore[start], oldBefore[end]-oldBefore[start]
		newStart, newCount := newBefore[start], newBefore[end]-newBefore[start]
		fmt.Fprintf(sb, "@@ -%s +%s @@\n", hunkRange(oldStart, oldCount), hunkRange(newStart, newCount))
		for _, op := range ops[start:end] {
			sb.WriteByte(byte(op.kind))
			sb.WriteString(op.line)
			if !strings.HasSuffix(op.line, "\n") {
				sb.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = j + 1
	}
}

// hunkRange is "start,count" with git's conventions: 1-based start, the
// line before the hunk when it is empty, ",count" left out when 1.
func hunkRange(before, count int) string {
	switch count {
	case 0:
		return strconv.Itoa(before) + ",0"
	case 1:
		return strconv.Itoa(before + 1)
	}
	return strconv.Itoa(before+1) + "," + strconv.Itoa(count)
}

// quoteGitPath quotes a name as git does (quote_c_style with
// core.quotePath on): names with control characters, '"', '\' or bytes
// ≥ 0x80 are double-quoted with C escapes and octal for the rest.
func quoteGitPath(name string) string {
	need := false
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			need = true
			break
		}
	}
	if !need {
		return name
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\v':
			b.WriteString(`\v`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if c < 0x20 || c >= 0x7f {
				fmt.Fprintf(&b, `\%03o`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
