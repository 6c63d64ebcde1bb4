package web

import (
	"bytes"
	"html/template"
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
}

type diffFile struct {
	Path     string
	Op       string // create, modify, delete
	Executed string // the reason a build or test system executes it
	Lines    []diffLine
	Adds     int
	Dels     int
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
			continue
		case strings.HasPrefix(l, "@@"):
			oldN, newN = hunkStarts(l)
			cur.Lines = append(cur.Lines, diffLine{Kind: "hunk", HTML: template.HTML(template.HTMLEscapeString(l))})
			total++
			continue
		case strings.HasPrefix(l, `\`):
			cur.Lines = append(cur.Lines, diffLine{Kind: "note", HTML: template.HTML(template.HTMLEscapeString(l))})
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
		dl.Kind = kind
		dl.HTML = highlightLine(lexer, clipLine(l[1:]))
		cur.Lines = append(cur.Lines, dl)
		total++
	}
	return files, total, capped
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

func lexerFor(path string) chroma.Lexer {
	l := lexers.Match(path)
	if l == nil {
		return nil
	}
	return chroma.Coalesce(l)
}

// highlightLine escapes one line and wraps its tokens in chroma's classes
// (no inline style: the stylesheet is served from /static/).
func highlightLine(lexer chroma.Lexer, text string) template.HTML {
	if lexer == nil {
		return template.HTML(template.HTMLEscapeString(text))
	}
	it, err := lexer.Tokenise(nil, text)
	if err != nil {
		return template.HTML(template.HTMLEscapeString(text))
	}
	var b strings.Builder
	for t := it(); t != chroma.EOF; t = it() {
		v := strings.TrimSuffix(t.Value, "\n")
		if v == "" {
			continue
		}
		cls := chroma.StandardTypes[t.Type]
		if cls == "" {
			b.WriteString(template.HTMLEscapeString(v))
			continue
		}
		b.WriteString(`<span class="` + chromaClassSpan + cls + `">`)
		b.WriteString(template.HTMLEscapeString(v))
		b.WriteString(`</span>`)
	}
	return template.HTML(b.String())
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
