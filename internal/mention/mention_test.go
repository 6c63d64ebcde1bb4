package mention

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	p, err := New("Quavon-Fixer")
	if err != nil {
		t.Fatal(err)
	}
	fix := []Command{{Command: "fix"}}
	for _, tc := range []struct {
		name, in string
		want     []Command
	}{
		{"plain", "@quavon-fixer fix", fix},
		{"case", "@QUAVON-FIXER FIX", fix},
		{"args", "please @quavon-fixer fix the parser, thanks\nnext line", []Command{{"fix", "the parser, thanks"}}},
		{"punctuation", "@quavon-fixer fix.", []Command{{"fix", "."}}},
		{"parenthesis", "(@quavon-fixer fix)", []Command{{"fix", ")"}}},
		{"tab", "@quavon-fixer\tfix", fix},
		{"emphasis", "**@quavon-fixer fix**", fix},
		{"emphasised command", "@quavon-fixer *fix*", []Command{{"fix", ""}}},
		{"heading", "## @quavon-fixer fix", fix},
		{"list", "- @quavon-fixer fix", fix},
		{"table", "| a |\n|---|\n| @quavon-fixer fix |", fix},
		{"escaped at", `\@quavon-fixer fix`, fix},
		{"entity at", "&#64;quavon-fixer fix", fix},
		{"two", "@quavon-fixer fix\n\n@quavon-fixer review", []Command{{"fix", ""}, {"review", ""}}},
		{"other word first", "@quavon-fixer please fix", []Command{{"please", "fix"}}},
		{"longer word", "@quavon-fixer fixed", []Command{{"fixed", ""}}},

		{"no command", "@quavon-fixer", nil},
		{"newline between", "@quavon-fixer\nfix", nil},
		{"no space", "@quavon-fixerfix", nil},
		{"underscore word", "@quavon-fixer fix_it", nil},
		{"non-ASCII word end", "@quavon-fixer fixé", nil},
		{"other app", "@quavon-reviewer fix", nil},
		{"longer slug", "@quavon-fixer-2 fix", nil},
		{"prefix slug", "@quavon-fix fix", nil},
		{"team", "@quavon-fixer/team fix", nil},
		{"email", "bob@quavon-fixer fix", nil},
		{"double at", "@@quavon-fixer fix", nil},
		{"fullwidth at", "＠quavon-fixer fix", nil},
		{"code span", "`@quavon-fixer fix`", nil},
		{"code span command", "@quavon-fixer `fix`", nil},
		{"fenced", "```\n@quavon-fixer fix\n```", nil},
		{"tilde fenced", "~~~\n@quavon-fixer fix\n~~~", nil},
		{"indented", "text\n\n    @quavon-fixer fix", nil},
		{"quote", "> @quavon-fixer fix", nil},
		{"nested quote", "- > @quavon-fixer fix", nil},
		{"html block", "<div>\n@quavon-fixer fix\n</div>", nil},
		{"html comment", "<!-- @quavon-fixer fix -->", nil},
		{"inline html", "a <span>@quavon-fixer fix</span>", []Command{{"fix", ""}}},
		{"link", "[@quavon-fixer fix](https://example.com)", nil},
		{"autolink", "https://example.com/@quavon-fixer fix", nil},
		{"image", "![@quavon-fixer fix](x.png)", nil},
		{"across code", "@quavon-fixer`x` fix", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p.Parse(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Parse(%q) = %#v, want %#v", tc.in, got, tc.want)
			}
		})
	}
}

func TestHas(t *testing.T) {
	t.Parallel()
	p, err := New("quavon")
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]bool{
		"@quavon review":          true,
		"@Quavon Review please":   true,
		"@quavon fix":             false,
		"> @quavon review":        false,
		"hello\n\n@quavon review": true,
	} {
		got, err := p.Has(in, "review")
		if err != nil || got != want {
			t.Errorf("Has(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	p, err := New("bot")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Parse(strings.Repeat("a", MaxInputBytes+1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("large: %v", err)
	}
	if _, err := p.Parse("@bot fix\n" + strings.Repeat("a", MaxLineBytes+1)); !errors.Is(err, ErrLineTooLong) {
		t.Errorf("long line: %v", err)
	}
	if _, err := p.Parse("@bot fix\n" + strings.Repeat("a", MaxLineBytes)); err != nil {
		t.Errorf("at the line limit: %v", err)
	}
	if _, err := p.Parse(strings.Repeat("> ", MaxNesting+1) + "@bot fix"); !errors.Is(err, ErrTooDeep) {
		t.Errorf("deep: %v", err)
	}
	if _, err := p.Parse(strings.Repeat("- ", MaxNesting) + "@bot fix"); err != nil {
		t.Errorf("at the nesting limit: %v", err)
	}
	got, err := p.Parse(strings.Repeat("@bot fix ", 100))
	if err != nil || len(got) != MaxCommands {
		t.Errorf("many: %d commands, %v", len(got), err)
	}
	got, err = p.Parse("@bot fix " + strings.Repeat("x", 1000))
	if err != nil || len(got) != 1 || len(got[0].Args) != MaxArgsBytes {
		t.Errorf("long args: %v, %v", got, err)
	}
	for _, bad := range []string{"", "-bot", "bot name", "bot/team", strings.Repeat("a", MaxSlugBytes+1), "böt"} {
		if _, err := New(bad); !errors.Is(err, ErrBadSlug) {
			t.Errorf("New(%q): %v", bad, err)
		}
	}
}

// TestPathological: the shapes goldmark parses slowly, at the size cap,
// are parsed or refused, never hang (the test's own timeout is the bound).
func TestPathological(t *testing.T) {
	t.Parallel()
	p, err := New("bot")
	if err != nil {
		t.Fatal(err)
	}
	for _, unit := range []string{"> ", "1. ", "- > ", "[a](", "[", "*a ", "**x**", "<a ", "a<!--", "`a", "|a|\n", "a\n", "\\", "@bot fix "} {
		line := strings.Repeat(unit, MaxLineBytes/len(unit))
		line = strings.ReplaceAll(line, "\n", "")
		in := "@bot fix\n" + strings.Repeat(line+"\n", (MaxInputBytes-16)/(len(line)+1))
		if _, err := p.Parse(in); err != nil && !errors.Is(err, ErrTooDeep) {
			t.Errorf("%q: %v", unit, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"@bot fix", "> @bot fix", "`@bot fix`", "@bot fix\n@bot review x", "\\@bot fix", "[@bot fix](u)", "@bot\tfix."} {
		f.Add(s)
	}
	p, err := New("bot")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in string) {
		cmds, err := p.Parse(in)
		if err != nil {
			if !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrTooDeep) && !errors.Is(err, ErrLineTooLong) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if len(cmds) > MaxCommands {
			t.Fatalf("%d commands", len(cmds))
		}
		for _, c := range cmds {
			if c.Command == "" || c.Command != strings.ToLower(c.Command) || strings.Trim(c.Command, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
				t.Fatalf("bad command %q", c.Command)
			}
			if len(c.Args) > MaxArgsBytes || strings.ContainsAny(c.Args, "\n\x00") {
				t.Fatalf("bad args %q", c.Args)
			}
		}
		if len(cmds) > 0 && !strings.Contains(strings.ToLower(in), "bot") {
			t.Fatalf("a command without the slug in %q", in)
		}
	})
}
