package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"html/template"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/alecthomas/chroma/v2"
	chromahtml "github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/alecthomas/chroma/v2/lexers"
	"github.com/alecthomas/chroma/v2/styles"

	"github.com/quavon/quavon/internal/patch"
)

// Caps on what the approval page renders of a diff; a patch is capped far
// lower by the fix policy (maxChangedLines), these guard the page.
const (
	maxDiffLines    = 20_000
	maxLineBytes    = 2_000
	highlightStyle  = "github"
	chromaClassSpan = "c-"
)

type diffLine struct {
	Kind     string // add, del, ctx, hunk, note
	Old, New int
	HTML     template.HTML
	// Raw is the diff line as stored (with its +, - or space).
	Raw string
}

type diffFile struct {
	Path     string
	Op       string // create, modify, delete
	Executed string // the reason a build or test system executes it
	Lines    []diffLine
	Adds     int
	Dels     int
	// Rows are the table rows of the highlighted view, built once (the
	// diff is rendered once per patch and kept; see diffCache).
	Rows template.HTML
	// Split are the rows of the side-by-side view (diffsplit.go).
	Split template.HTML
	// code are the indexes of the lines to highlight, lexer the lexer.
	code  []int
	lexer chroma.Lexer
}

// diffCache keeps rendered diffs by the SHA-256 of the diff text, the
// executed-path reasons and the view: a stored patch never changes, and
// highlighting is the page's dominant cost (chroma's regexp lexers), so a
// patch is highlighted once however often its approval page is opened.
type diffCache struct {
	mu    sync.Mutex
	max   int
	order []string
	m     map[string]renderedDiff
}

type renderedDiff struct {
	files  []diffFile
	lines  int
	capped bool
}

// maxCachedDiffs bounds the cache (entries; each at most maxDiffLines).
const maxCachedDiffs = 64

func newDiffCache(max int) *diffCache { return &diffCache{max: max, m: map[string]renderedDiff{}} }

func (c *diffCache) render(diff string, executed []patch.ExecutedPath, plain bool) ([]diffFile, int, bool) {
	if c == nil || c.max == 0 {
		return renderDiff(diff, executed, plain)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%t\n%d\n", plain, len(executed))
	for _, e := range executed {
		fmt.Fprintf(h, "%d:%s%d:%s", len(e.Path), e.Path, len(e.Reason), e.Reason)
	}
	h.Write([]byte(diff))
	key := hex.EncodeToString(h.Sum(nil))
	c.mu.Lock()
	r, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return r.files, r.lines, r.capped
	}
	files, lines, capped := renderDiff(diff, executed, plain)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; !ok {
		if len(c.order) >= c.max {
			delete(c.m, c.order[0])
			c.order = c.order[1:]
		}
		c.order = append(c.order, key)
		c.m[key] = renderedDiff{files, lines, capped}
	}
	return files, lines, capped
}

// renderDiff parses a stored unified diff (patch.RenderDiff's format) into
// files and lines, highlighted with chroma by file name (or plain), with
// the executed-path reasons attached. Everything is escaped: the content
// is repository and model text.
func renderDiff(diff string, executed []patch.ExecutedPath, plain bool) ([]diffFile, int, bool) {
	reasons := map[string]string{}
	for _, e := range executed {
		reasons[e.Path] = e.Reason
	}
	var files []diffFile
	var cur *diffFile
	var lexer chroma.Lexer
	oldN, newN, total := 0, 0, 0
	capped := false
	lines := strings.Split(strings.TrimSuffix(diff, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if total >= maxDiffLines {
			capped = true
			break
		}
		switch {
		case strings.HasPrefix(l, "diff --git "):
			files = append(files, diffFile{Op: "modify"})
			cur = &files[len(files)-1]
			continue
		case cur == nil:
			continue
		case strings.HasPrefix(l, "new file mode"):
			cur.Op = "create"
			continue
		case strings.HasPrefix(l, "deleted file mode"):
			cur.Op = "delete"
			continue
		case strings.HasPrefix(l, "index "), strings.HasPrefix(l, "similarity"), strings.HasPrefix(l, "old mode"), strings.HasPrefix(l, "new mode"):
			continue
		case strings.HasPrefix(l, "--- "):
			if p := gitPath(l[4:], "a/"); p != "" {
				cur.Path = p
			}
			continue
		case strings.HasPrefix(l, "+++ "):
			if p := gitPath(l[4:], "b/"); p != "" {
				cur.Path = p
			}
			cur.Executed = reasons[cur.Path]
			lexer = nil
			if !plain {
				lexer = lexerFor(cur.Path)
			}
			cur.lexer = lexer
			continue
		case strings.HasPrefix(l, "@@"):
			oldN, newN = hunkStarts(l)
			cur.Lines = append(cur.Lines, diffLine{Kind: "hunk", HTML: template.HTML(template.HTMLEscapeString(l)), Raw: l})
			total++
			continue
		case strings.HasPrefix(l, `\`):
			cur.Lines = append(cur.Lines, diffLine{Kind: "note", HTML: template.HTML(template.HTMLEscapeString(l)), Raw: l})
			continue
		}
		if l == "" {
			l = " "
		}
		kind := "ctx"
		dl := diffLine{}
		switch l[0] {
		case '+':
			kind, dl.New = "add", newN
			newN++
			cur.Adds++
		case '-':
			kind, dl.Old = "del", oldN
			oldN++
			cur.Dels++
		default:
			dl.Old, dl.New = oldN, newN
			oldN++
			newN++
		}
		dl.Kind, dl.Raw = kind, clipLine(l)
		if plain || lexer == nil {
			dl.HTML = template.HTML(template.HTMLEscapeString(clipLine(l[1:])))
		} else {
			cur.code = append(cur.code, len(cur.Lines))
		}
		cur.Lines = append(cur.Lines, dl)
		total++
	}
	for i := range files {
		highlightFile(&files[i])
		if !plain {
			files[i].Rows = rows(files[i].Lines)
			files[i].Split = splitRows(files[i].Lines)
		}
	}
	return files, total, capped
}

// rows writes the table rows of a file's lines; every HTML field is
// escaped already, kinds are our own constants.
func rows(lines []diffLine) template.HTML {
	var b strings.Builder
	num := func(n int) string {
		if n == 0 {
			return ""
		}
		return strconv.Itoa(n)
	}
	for _, l := range lines {
		switch l.Kind {
		case "hunk", "note":
			b.WriteString(`<tr class="` + l.Kind + `"><td colspan="4">`)
			b.WriteString(string(l.HTML))
			b.WriteString("</td></tr>\n")
		default:
			mark := ""
			switch l.Kind {
			case "add":
				mark = "+"
			case "del":
				mark = "−"
			}
			b.WriteString(`<tr class="` + l.Kind + `"><td class="ln">` + num(l.Old) + `</td><td class="ln">` + num(l.New) +
				`</td><td class="mk">` + mark + `</td><td class="code">`)
			b.WriteString(string(l.HTML))
			b.WriteString("</td></tr>\n")
		}
	}
	return template.HTML(b.String())
}

// highlightFile tokenises a file's code lines in one pass (the lines of
// both sides, in diff order, one per line) and hands each line its tokens.
func highlightFile(f *diffFile) {
	if f.lexer == nil || len(f.code) == 0 {
		return
	}
	var src strings.Builder
	for _, i := range f.code {
		src.WriteString(clipLine(f.Lines[i].Raw[1:]))
		src.WriteByte('\n')
	}
	it, err := f.lexer.Tokenise(nil, src.String())
	if err != nil {
		for _, i := range f.code {
			f.Lines[i].HTML = template.HTML(template.HTMLEscapeString(clipLine(f.Lines[i].Raw[1:])))
		}
		return
	}
	var b strings.Builder
	n := 0
	flush := func() {
		if n < len(f.code) {
			f.Lines[f.code[n]].HTML = template.HTML(b.String())
		}
		b.Reset()
		n++
	}
	for t := it(); t != chroma.EOF; t = it() {
		parts := strings.Split(t.Value, "\n")
		cls := chroma.StandardTypes[t.Type]
		for j, part := range parts {
			if j > 0 {
				flush()
			}
			if part == "" {
				continue
			}
			if cls == "" {
				b.WriteString(template.HTMLEscapeString(part))
				continue
			}
			b.WriteString(`<span class="` + chromaClassSpan + cls + `">`)
			b.WriteString(template.HTMLEscapeString(part))
			b.WriteString(`</span>`)
		}
	}
	if b.Len() > 0 {
		flush()
	}
}

func clipLine(s string) string {
	if len(s) <= maxLineBytes {
		return s
	}
	return strings.ToValidUTF8(s[:maxLineBytes], "") + " …"
}

// gitPath undoes git's path quoting and its a/ or b/ prefix ("" for
// /dev/null).
func gitPath(s, prefix string) string {
	s = strings.TrimSuffix(s, "\t")
	if s == "/dev/null" {
		return ""
	}
	if strings.HasPrefix(s, `"`) {
		if u, err := strconv.Unquote(s); err == nil {
			s = u
		}
	}
	return strings.TrimPrefix(s, prefix)
}

// hunkStarts reads "@@ -a,b +c,d @@".
func hunkStarts(l string) (int, int) {
	f := strings.Fields(l)
	if len(f) < 3 {
		return 0, 0
	}
	num := func(s string) int {
		s = strings.TrimLeft(s, "-+")
		if i := strings.IndexByte(s, ','); i >= 0 {
			s = s[:i]
		}
		n, _ := strconv.Atoi(s)
		return n
	}
	return num(f[1]), num(f[2])
}

// lexers.Match tries every lexer's globs, so its answer is kept per base
// name (at most maxLexerCache names; past that it is asked again).
const maxLexerCache = 4096

var lexerCache = struct {
	sync.Mutex
	m map[string]chroma.Lexer
}{m: map[string]chroma.Lexer{}}

func lexerFor(p string) chroma.Lexer {
	name := path.Base(p)
	lexerCache.Lock()
	lx, ok := lexerCache.m[name]
	lexerCache.Unlock()
	if ok {
		return lx
	}
	if l := lexers.Match(name); l != nil {
		lx = chroma.Coalesce(l)
	}
	lexerCache.Lock()
	if len(lexerCache.m) < maxLexerCache {
		lexerCache.m[name] = lx
	}
	lexerCache.Unlock()
	return lx
}

var (
	chromaCSSOnce sync.Once
	chromaCSS     []byte
)

// highlightCSS is chroma's stylesheet for highlightStyle, with its class
// names prefixed as highlightLine writes them.
func highlightCSS() []byte {
	chromaCSSOnce.Do(func() {
		var buf bytes.Buffer
		f := chromahtml.New(chromahtml.WithClasses(true), chromahtml.ClassPrefix(chromaClassSpan))
		_ = f.WriteCSS(&buf, styles.Get(highlightStyle))
		chromaCSS = buf.Bytes()
	})
	return chromaCSS
}
