package patch

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// glob is a compiled path pattern; see "Glob syntax" in the package doc.
type glob struct {
	src  string
	segs []string // folded; "**" is the any-segments wildcard
}

func compileGlob(src string) (*glob, error) {
	p := strings.ReplaceAll(src, `\`, "/")
	var segs []string
	for seg := range strings.SplitSeq(p, "/") {
		switch {
		case seg == "" || seg == ".":
			continue
		case seg == "..":
			return nil, fmt.Errorf("glob %q: '..' is not allowed", src)
		case seg != "**" && strings.Contains(seg, "**"):
			return nil, fmt.Errorf("glob %q: '**' must be a whole path segment", src)
		}
		for _, r := range seg {
			if r == utf8.RuneError || forbiddenPathRune(r) || r == 0 {
				return nil, fmt.Errorf("glob %q: control, invisible or invalid character", src)
			}
		}
		segs = append(segs, foldPath(seg))
	}
	if len(segs) == 0 {
		return nil, fmt.Errorf("glob %q matches nothing", src)
	}
	return &glob{src: src, segs: segs}, nil
}

// matchOrAncestor reports whether the glob matches the folded path segments
// or any leading run of them (a directory of the path).
func (g *glob) matchOrAncestor(path []string) bool {
	return g.run(path, true)
}

// match reports whether the glob matches the whole path.
func (g *glob) match(path []string) bool {
	return g.run(path, false)
}

// run simulates the pattern as an automaton over path segments: state i
// means "pattern segments [0,i) consumed". O(len(pattern)·len(path)).
func (g *glob) run(path []string, anyPrefix bool) bool {
	n := len(g.segs)
	var buf [2][16]bool
	cur, next := buf[0][:0], buf[1][:0]
	if n+1 > len(buf[0]) {
		cur, next = make([]bool, 0, n+1), make([]bool, 0, n+1)
	}
	cur, next = cur[:n+1], next[:n+1]
	clear(cur)
	cur[0] = true
	g.closure(cur)
	for j, s := range path {
		clear(next)
		any := false
		for i := range n {
			if !cur[i] {
				continue
			}
			if g.segs[i] == "**" {
				next[i] = true
				any = true
			} else if segMatch(g.segs[i], s) {
				next[i+1] = true
				any = true
			}
		}
		if !any {
			return false
		}
		g.closure(next)
		cur, next = next, cur
		if cur[n] && (anyPrefix || j == len(path)-1) {
			return true
		}
	}
	return false
}

// closure lets "**" match zero segments.
func (g *glob) closure(st []bool) {
	for i, s := range g.segs {
		if st[i] && s == "**" {
			st[i+1] = true
		}
	}
}

// segMatch matches one segment: '*' is any run of characters, '?' exactly
// one character, everything else literal.
func segMatch(pat, s string) bool {
	px, sx := 0, 0
	starP, starS := -1, -1
	for sx < len(s) {
		if px < len(pat) {
			switch pat[px] {
			case '*':
				starP, starS = px, sx
				px++
				continue
			case '?':
				_, w := utf8.DecodeRuneInString(s[sx:])
				px++
				sx += w
				continue
			default:
				if pat[px] == s[sx] {
					px++
					sx++
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		// backtrack: let the last '*' swallow one more character
		_, w := utf8.DecodeRuneInString(s[starS:])
		starS += w
		px, sx = starP+1, starS
	}
	for px < len(pat) && pat[px] == '*' {
		px++
	}
	return px == len(pat)
}

// Glob is a compiled path pattern of the package's glob syntax (the one
// policy paths use: "**" for any segments, matched case-insensitively on
// normalised paths), for callers that filter paths the same way.
type Glob struct{ g *glob }

// CompileGlob compiles src.
func CompileGlob(src string) (*Glob, error) {
	g, err := compileGlob(src)
	if err != nil {
		return nil, err
	}
	return &Glob{g: g}, nil
}

// Match reports whether the glob matches path (a repository path) or a
// directory of it.
func (g *Glob) Match(path string) bool {
	return g.g.matchOrAncestor(strings.Split(foldPath(path), "/"))
}
