package mention

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Limits.
const (
	// MaxInputBytes is the longest comment parsed (GitHub caps a comment
	// body at 65,536 characters).
	MaxInputBytes = 256 << 10
	// MaxNesting is how many containers (quotes, list items) one line may
	// open.
	MaxNesting = 32
	// MaxLineBytes is the longest line parsed: goldmark scans the rest of
	// a line for every "(" after "]", quadratic in the line's length.
	MaxLineBytes = 2 << 10
	// MaxCommands is how many commands Parse returns at most.
	MaxCommands = 16
	// MaxArgsBytes caps a command's Args.
	MaxArgsBytes = 256
	// MaxSlugBytes is the longest app slug accepted.
	MaxSlugBytes = 100
)

var (
	// ErrTooLarge: the comment is longer than MaxInputBytes.
	ErrTooLarge = errors.New("comment too large")
	// ErrLineTooLong: a line is longer than MaxLineBytes.
	ErrLineTooLong = errors.New("comment line too long")
	// ErrTooDeep: a line opens more than MaxNesting containers.
	ErrTooDeep = errors.New("comment nests too deeply")
	// ErrBadSlug: the slug is not a GitHub App slug.
	ErrBadSlug = errors.New("invalid app slug")
)

// Command is one bot command found in a comment.
type Command struct {
	// Command is the word after the mention, lower-cased.
	Command string
	// Args is the rest of the line after the command, trimmed, at most
	// MaxArgsBytes.
	Args string
}

var slugRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

// Parser finds one app's commands. The zero value is not usable; use New.
type Parser struct {
	slug string // lower-cased
	md   goldmark.Markdown
}

// New returns a Parser for the app whose slug is given (any case).
func New(slug string) (*Parser, error) {
	if len(slug) > MaxSlugBytes || !slugRe.MatchString(slug) {
		return nil, fmt.Errorf("mention.New %q: %w", slug, ErrBadSlug)
	}
	return &Parser{
		slug: strings.ToLower(slug),
		md:   goldmark.New(goldmark.WithExtensions(extension.GFM)),
	}, nil
}

// Slug is the app slug the parser looks for, lower-cased.
func (p *Parser) Slug() string { return p.slug }

// Has reports whether the comment holds the command addressed to the app.
func (p *Parser) Has(comment, command string) (bool, error) {
	cmds, err := p.Parse(comment)
	if err != nil {
		return false, err
	}
	for _, c := range cmds {
		if strings.EqualFold(c.Command, command) {
			return true, nil
		}
	}
	return false, nil
}

// Parse returns the commands addressed to the app, in order, at most
// MaxCommands.
func (p *Parser) Parse(comment string) ([]Command, error) {
	if len(comment) > MaxInputBytes {
		return nil, fmt.Errorf("mention.Parse: %d bytes: %w", len(comment), ErrTooLarge)
	}
	if !strings.Contains(strings.ToLower(comment), p.slug) {
		return nil, nil
	}
	if n := longestLine(comment); n > MaxLineBytes {
		return nil, fmt.Errorf("mention.Parse: a line of %d bytes: %w", n, ErrLineTooLong)
	}
	if n := maxNesting(comment); n > MaxNesting {
		return nil, fmt.Errorf("mention.Parse: %d containers on one line: %w", n, ErrTooDeep)
	}
	src := []byte(comment)
	doc := p.md.Parser().Parse(text.NewReader(src))
	var out []Command
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n.Kind() {
		case ast.KindBlockquote, ast.KindFencedCodeBlock, ast.KindCodeBlock, ast.KindHTMLBlock:
			return ast.WalkSkipChildren, nil
		case ast.KindParagraph, ast.KindTextBlock, ast.KindHeading, east.KindTableCell:
			out = p.scan(inlineText(n, src), out)
			if len(out) >= MaxCommands {
				return ast.WalkStop, nil
			}
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	return out, nil
}

// inlineText is a block's inline content as rendered text: what is not read
// becomes a NUL, a boundary no mention or command crosses.
func inlineText(n ast.Node, src []byte) []byte {
	var b []byte
	var walk func(ast.Node)
	walk = func(p ast.Node) {
		for c := p.FirstChild(); c != nil; c = c.NextSibling() {
			switch c := c.(type) {
			case *ast.Text:
				b = append(b, resolve(c.Value(src), c.IsRaw())...)
				if c.SoftLineBreak() || c.HardLineBreak() {
					b = append(b, '\n')
				}
			case *ast.String:
				b = append(b, resolve(c.Value, c.IsRaw() || c.IsCode())...)
			case *ast.CodeSpan, *ast.RawHTML, *ast.AutoLink, *ast.Link, *ast.Image:
				b = append(b, 0)
			default:
				walk(c)
			}
		}
	}
	walk(n)
	return b
}

func resolve(v []byte, raw bool) []byte {
	if raw || (bytes.IndexByte(v, '\\') < 0 && bytes.IndexByte(v, '&') < 0) {
		return v
	}
	v = util.UnescapePunctuations(v)
	v = util.ResolveNumericReferences(v)
	return util.ResolveEntityNames(v)
}

// scan appends the commands addressed to p's app in t.
func (p *Parser) scan(t []byte, out []Command) []Command {
	for i := 0; i < len(t) && len(out) < MaxCommands; i++ {
		if t[i] != '@' || (i > 0 && !boundary(t[i-1])) {
			continue
		}
		j := i + 1
		for j < len(t) && slugByte(t[j]) {
			j++
		}
		if !strings.EqualFold(string(t[i+1:j]), p.slug) || (j < len(t) && t[j] == '/') {
			continue
		}
		k := j
		for k < len(t) && (t[k] == ' ' || t[k] == '\t') {
			k++
		}
		if k == j {
			continue
		}
		w := k
		for w < len(t) && wordByte(t[w]) {
			w++
		}
		if w == k || (w < len(t) && !wordEnd(t[w])) {
			continue
		}
		end := w
		for end < len(t) && t[end] != '\n' && t[end] != 0 {
			end++
		}
		args := strings.TrimSpace(strings.ToValidUTF8(string(t[w:end]), ""))
		if len(args) > MaxArgsBytes {
			args = strings.ToValidUTF8(args[:MaxArgsBytes], "")
		}
		out = append(out, Command{Command: strings.ToLower(string(t[k:w])), Args: args})
		i = w - 1
	}
	return out
}

// boundary: the byte before "@" leaves it a mention (not an e-mail address,
// a path, a longer name or code).
func boundary(c byte) bool {
	return !(slugByte(c) || c == '.' || c == '@' || c == '/' || c == '`' || c >= 0x80)
}

func slugByte(c byte) bool {
	return c == '-' || c == '_' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func wordByte(c byte) bool {
	return c == '-' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

// wordEnd: the byte after a command word ends it ("fix." and "fix," are
// "fix"; "fix_it" and "fixé" are not).
func wordEnd(c byte) bool {
	return c < 0x80 && c != '_' && !wordByte(c)
}

// maxNesting is the largest number of container markers ("> ", "- ",
// "1. ") one line opens, counted without parsing.
func maxNesting(s string) int {
	best := 0
	for line := range strings.SplitSeq(s, "\n") {
		n := 0
		for i := 0; i < len(line); {
			switch c := line[i]; {
			case c == ' ' || c == '\t':
				i++
			case c == '>':
				n++
				i++
			case (c == '-' || c == '*' || c == '+') && i+1 < len(line) && (line[i+1] == ' ' || line[i+1] == '\t'):
				n++
				i += 2
			case '0' <= c && c <= '9':
				j := i
				for j < len(line) && '0' <= line[j] && line[j] <= '9' {
					j++
				}
				if j < len(line) && (line[j] == '.' || line[j] == ')') && (j+1 == len(line) || line[j+1] == ' ') {
					n++
					i = j + 1
					continue
				}
				i = len(line)
			default:
				i = len(line)
			}
		}
		best = max(best, n)
	}
	return best
}

func longestLine(s string) int {
	best := 0
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			i = len(s)
		}
		best = max(best, i)
		s = s[min(i+1, len(s)):]
	}
	return best
}
