package patch

import (
	"strings"
)

// diffContext is the number of unchanged lines around each hunk, as git.
const diffContext = 3

// renderMaxEdits bounds the Myers search when rendering. A file pair
// further apart than this is rendered as "remove the differing middle, add
// the new middle": still a correct diff, just not a minimal one.
const renderMaxEdits = 4096

type opKind byte

const (
	opEqual  opKind = ' '
	opDelete opKind = '-'
	opInsert opKind = '+'
)

type lineOp struct {
	kind opKind
	line string // with its "\n", if it has one
}

// splitLines cuts s after every "\n"; the last line lacks one when s does
// not end in a newline. "" has no lines.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	out := make([]string, 0, strings.Count(s, "\n")+1)
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// diffLines is Myers' O(ND) diff over lines, after trimming the common
// prefix and suffix. When more than maxEdits insertions plus deletions are
// needed it replaces the whole differing middle instead.
func diffLines(a, b []string, maxEdits int) []lineOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	out := make([]lineOp, 0, len(a)+len(b)-pre-suf)
	for _, l := range a[:pre] {
		out = append(out, lineOp{opEqual, l})
	}
	out = myers(out, a[pre:len(a)-suf], b[pre:len(b)-suf], maxEdits)
	for _, l := range a[len(a)-suf:] {
		out = append(out, lineOp{opEqual, l})
	}
	return out
}

func myers(out []lineOp, a, b []string, maxEdits int) []lineOp {
	n, m := len(a), len(b)
	replace := func() []lineOp {
		for _, l := range a {
			out = append(out, lineOp{opDelete, l})
		}
		for _, l := range b {
			out = append(out, lineOp{opInsert, l})
		}
		return out
	}
	if n == 0 || m == 0 {
		return replace()
	}
	// Compare line ids instead of strings.
	ids := make(map[string]int32, n+m)
	ai, bi := make([]int32, n), make([]int32, m)
	for i, l := range a {
		id, ok := ids[l]
		if !ok {
			id = int32(len(ids))
			ids[l] = id
		}
		ai[i] = id
	}
	for i, l := range b {
		id, ok := ids[l]
		if !ok {
			id = int32(len(ids))
			ids[l] = id
		}
		bi[i] = id
	}
	maxD := min(n+m, maxEdits)
	off := maxD + 1
	v := make([]int32, 2*maxD+3)
	// trace[d] holds v[k] for k in [-d, d] before round d.
	var trace [][]int32
	for d := 0; d <= maxD; d++ {
		trace = append(trace, append([]int32(nil), v[off-d:off+d+1]...))
		for k := -d; k <= d; k += 2 {
			var x int32
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - int32(k)
			for int(x) < n && int(y) < m && ai[x] == bi[y] {
				x++
				y++
			}
			v[off+k] = x
			if int(x) >= n && int(y) >= m {
				return backtrack(out, a, b, trace, d, k)
			}
		}
	}
	return replace()
}

// backtrack walks the trace from (len(a), len(b)), reached on diagonal k
// in round d, back to (0, 0).
func backtrack(out []lineOp, a, b []string, trace [][]int32, d, k int) []lineOp {
	x, y := len(a), len(b)
	rev := make([]lineOp, 0, len(a)+len(b))
	for ; d > 0; d-- {
		prev := trace[d] // v after round d-1; diagonal kk at index kk+d
		var pk, xStart int
		if k == -d || (k != d && prev[k-1+d] < prev[k+1+d]) {
			pk = k + 1 // moved down: an insertion
			xStart = int(prev[pk+d])
		} else {
			pk = k - 1 // moved right: a deletion
			xStart = int(prev[pk+d]) + 1
		}
		for x > xStart {
			x--
			y--
			rev = append(rev, lineOp{opEqual, a[x]})
		}
		if pk == k+1 {
			y--
			rev = append(rev, lineOp{opInsert, b[y]})
		} else {
			x--
			rev = append(rev, lineOp{opDelete, a[x]})
		}
		k = pk
	}
	for x > 0 {
		x--
		y--
		rev = append(rev, lineOp{opEqual, a[x]})
	}
	for i := len(rev) - 1; i >= 0; i-- {
		out = append(out, rev[i])
	}
	return out
}
