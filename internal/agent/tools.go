package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/quavon/quavon/internal/llm"
	"github.com/quavon/quavon/internal/patch"
)

// Bounds of the read-only tools: what one call may return and read.
const (
	MaxListEntries    = 500
	MaxReadLines      = 400
	MaxReadBytes      = 64 << 10
	MaxFileBytes      = 256 << 10 // spec §4: larger files are not read
	MaxPatternBytes   = 256
	MaxMatches        = 100
	MaxMatchLineBytes = 240
	MaxSearchBytes    = 64 << 20 // scanned per search call
)

type listArgs struct {
	Dir string `json:"dir" jsonschema:"description=Directory to list, relative to the repository root; empty or . for the root,maxLength=1024"`
}

type readArgs struct {
	Path      string `json:"path" jsonschema:"description=File to read, relative to the repository root,maxLength=1024"`
	StartLine int    `json:"startLine,omitempty" jsonschema:"description=First line to return (1-based; default 1),minimum=0"`
	EndLine   int    `json:"endLine,omitempty" jsonschema:"description=Last line to return (default: 400 lines from startLine),minimum=0"`
}

type searchArgs struct {
	Pattern  string `json:"pattern" jsonschema:"description=RE2 regular expression matched against each line,maxLength=256"`
	PathGlob string `json:"pathGlob,omitempty" jsonschema:"description=Only files whose path matches this glob (** for any directories),maxLength=256"`
}

var (
	listTool   = llm.MustTool[listArgs]("list_files", "List the files and directories directly under a directory of the repository, with file sizes. Symlinks and submodules are listed as such.", llm.ToolLimits{ArgumentBytes: 2048})
	readTool   = llm.MustTool[readArgs]("read_file", "Read lines of a text file of the repository, with line numbers.", llm.ToolLimits{ArgumentBytes: 2048})
	searchTool = llm.MustTool[searchArgs]("search", "Search the repository's text files for lines matching an RE2 regular expression; returns path:line: text for each match.", llm.ToolLimits{ArgumentBytes: 2048})
)

// ReadTools are list_files, read_file and search over w. Their output
// reaches the model inside llm.Untrusted (kind file).
func ReadTools(w *Workspace) []Tool {
	return []Tool{
		{Def: listTool, Run: func(_ context.Context, raw []byte) Result { return w.list(raw) }},
		{Def: readTool, Run: func(_ context.Context, raw []byte) Result { return w.read(raw) }},
		{Def: searchTool, Run: func(ctx context.Context, raw []byte) Result { return w.search(ctx, raw) }},
	}
}

func refuse(outcome, format string, args ...any) Result {
	return Result{Content: fmt.Sprintf(format, args...), IsError: true, Outcome: outcome}
}

func badArgs(err error) Result { return refuse("bad arguments", "invalid arguments: %v", err) }

func (w *Workspace) list(raw []byte) Result {
	a, err := llm.DecodeArgs[listArgs](listTool, raw)
	if err != nil {
		return badArgs(err)
	}
	dir := ""
	if d := strings.Trim(a.Dir, "/"); d != "" && d != "." {
		n, err := patch.NormalizePath(d)
		if err != nil {
			return refuse("refused: path", "%q is not a path inside the repository", clip(a.Dir))
		}
		dir = n + "/"
	}
	seen := map[string]bool{}
	var children []string
	items := w.items()
	for _, p := range slices.Sorted(maps.Keys(items)) {
		rest, ok := strings.CutPrefix(p, dir)
		if !ok || rest == "" {
			continue
		}
		name, _, isDir := strings.Cut(rest, "/")
		line := name
		switch {
		case isDir:
			line = name + "/"
		case items[p].kind == KindFile:
			line = fmt.Sprintf("%s (%d bytes)", name, items[p].size)
		default:
			line = fmt.Sprintf("%s (%s)", name, items[p].kind)
		}
		if !seen[line] {
			seen[line] = true
			children = append(children, line)
		}
	}
	if len(children) == 0 {
		return refuse("not found", "no such directory: %q", clip(a.Dir))
	}
	more := ""
	if len(children) > MaxListEntries {
		more = fmt.Sprintf("\n… and %d more entries", len(children)-MaxListEntries)
		children = children[:MaxListEntries]
	}
	shown := dir
	if shown == "" {
		shown = "."
	}
	return Result{Content: llm.Untrusted(llm.UntrustedFile, "listing of "+shown+"\n"+strings.Join(children, "\n")+more),
		Outcome: fmt.Sprintf("%d entries", len(children))}
}

func (w *Workspace) read(raw []byte) Result {
	a, err := llm.DecodeArgs[readArgs](readTool, raw)
	if err != nil {
		return badArgs(err)
	}
	if a.StartLine < 0 || a.EndLine < 0 || (a.EndLine > 0 && a.EndLine < a.StartLine) {
		return refuse("bad arguments", "invalid line range")
	}
	text, err := w.Read(a.Path)
	if err != nil {
		return readError(a.Path, err)
	}
	if len(text) > MaxFileBytes {
		return refuse("refused: size", "%s is %d bytes, larger than %d: search it instead", clip(a.Path), len(text), MaxFileBytes)
	}
	lines := strings.SplitAfter(text, "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	start := max(a.StartLine, 1)
	end := a.EndLine
	if end == 0 || end > start+MaxReadLines-1 {
		end = start + MaxReadLines - 1
	}
	end = min(end, len(lines))
	var b strings.Builder
	fmt.Fprintf(&b, "%s, lines %d-%d of %d\n", a.Path, start, end, len(lines))
	shown := 0
	for i := start; i <= end; i++ {
		line := fmt.Sprintf("%6d\t%s", i, lines[i-1])
		if b.Len()+len(line) > MaxReadBytes {
			fmt.Fprintf(&b, "… cut at %d bytes: read from line %d on to see more\n", MaxReadBytes, i)
			break
		}
		b.WriteString(line)
		if !strings.HasSuffix(line, "\n") {
			b.WriteByte('\n')
		}
		shown++
	}
	if start > len(lines) && len(lines) > 0 {
		return refuse("bad arguments", "%s has %d lines", clip(a.Path), len(lines))
	}
	return Result{Content: llm.Untrusted(llm.UntrustedFile, b.String()), Outcome: fmt.Sprintf("%d lines", shown)}
}

func readError(p string, err error) Result {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return refuse("not found", "no such file: %q", clip(p))
	case errors.Is(err, ErrOffLimits):
		return refuse("refused: path", "%q is not a path inside the repository", clip(p))
	case errors.Is(err, ErrNotAFile), errors.Is(err, patch.ErrNotRegular):
		return refuse("refused: kind", "%q is not a regular file (symlinks and submodules are not followed)", clip(p))
	case errors.Is(err, ErrNotText):
		return refuse("refused: binary", "%q is not UTF-8 text", clip(p))
	}
	var v *patch.Violation
	if errors.As(err, &v) {
		return refuse("refused: path", "%q: %s", clip(p), v.Message)
	}
	return refuse("error", "%q cannot be read", clip(p))
}

func (w *Workspace) search(ctx context.Context, raw []byte) Result {
	a, err := llm.DecodeArgs[searchArgs](searchTool, raw)
	if err != nil {
		return badArgs(err)
	}
	if a.Pattern == "" || len(a.Pattern) > MaxPatternBytes {
		return refuse("bad arguments", "the pattern must be 1-%d bytes", MaxPatternBytes)
	}
	re, err := regexp.Compile(a.Pattern)
	if err != nil {
		return refuse("bad arguments", "not an RE2 regular expression: %v", err)
	}
	var glob *patch.Glob
	if a.PathGlob != "" {
		if glob, err = patch.CompileGlob(a.PathGlob); err != nil {
			return refuse("bad arguments", "pathGlob: %v", err)
		}
	}
	var b strings.Builder
	matches, scanned, skipped := 0, int64(0), 0
	cut := ""
	items := w.items()
	for _, p := range slices.Sorted(maps.Keys(items)) {
		if items[p].kind != KindFile || (glob != nil && !glob.Match(p)) {
			continue
		}
		if ctx.Err() != nil || scanned > MaxSearchBytes {
			cut = fmt.Sprintf("\n… stopped after %d bytes: narrow the pathGlob", scanned)
			break
		}
		if items[p].size > MaxFileBytes {
			skipped++
			continue
		}
		text, err := w.readItem(p, items[p])
		if err != nil {
			continue // binary or unreadable: not searched
		}
		scanned += int64(len(text))
		for i, line := range strings.Split(text, "\n") {
			if !re.MatchString(line) {
				continue
			}
			if matches == MaxMatches {
				cut = fmt.Sprintf("\n… more than %d matches: narrow the pattern or the pathGlob", MaxMatches)
				break
			}
			matches++
			if len(line) > MaxMatchLineBytes {
				line = trimUTF8(line, MaxMatchLineBytes) + "…"
			}
			fmt.Fprintf(&b, "%s:%d: %s\n", p, i+1, line)
		}
		if cut != "" {
			break
		}
	}
	if skipped > 0 {
		fmt.Fprintf(&b, "(%d files over %d bytes not searched)\n", skipped, MaxFileBytes)
	}
	if matches == 0 {
		return Result{Content: llm.Untrusted(llm.UntrustedFile, "no matches\n"+b.String()), Outcome: "0 matches"}
	}
	return Result{Content: llm.Untrusted(llm.UntrustedFile, b.String()+cut), Outcome: fmt.Sprintf("%d matches", matches)}
}

func trimUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// clip keeps a model-given value short and printable in messages.
func clip(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
	if len(s) > 120 {
		s = trimUTF8(s, 120) + "…"
	}
	return s
}
