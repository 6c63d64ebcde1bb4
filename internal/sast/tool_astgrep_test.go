package sast

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// astGrepLanguages is ast-grep's own table (crates/language, SupportLang's
// extensions in 0.51) for the languages the pack covers: which language it
// parses a file with a given extension as.
var astGrepLanguages = map[string][]string{
	"Go": {"go"}, "Python": {"py", "py3", "pyi", "bzl"}, "JavaScript": {"cjs", "js", "mjs", "jsx"},
	"TypeScript": {"ts", "cts", "mts"}, "Tsx": {"tsx"}, "Java": {"java"}, "Ruby": {"rb", "rbw", "gemspec"},
}

// Every extension ast-grep is given maps to the rule directory whose rules
// are all of the language ast-grep parses that extension as; a wrong entry
// would drop the rules that apply to a file.
func TestASTGrepRuleDirsHoldOneLanguage(t *testing.T) {
	t.Parallel()
	langOf := map[string]string{}
	for lang, exts := range astGrepLanguages {
		for _, e := range exts {
			langOf["."+e] = lang
		}
	}
	for _, ext := range astGrep.Extensions {
		dir, ok := astGrepRuleDirs[ext]
		if !ok {
			t.Errorf("%s: ast-grep scans it but it maps to no rule directory", ext)
			continue
		}
		files, _ := filepath.Glob(filepath.Join("..", "..", "rules", "ast-grep", "rules", dir, "*.yml"))
		if len(files) == 0 {
			t.Errorf("%s: rules/ast-grep/rules/%s holds no rule", ext, dir)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			m := regexp.MustCompile(`(?m)^language: *(\S+)\s*$`).FindSubmatch(data)
			if m == nil || string(m[1]) != langOf[ext] {
				t.Errorf("%s: %s is parsed as %s but %s declares %q", ext, dir, langOf[ext], f, m)
			}
		}
	}
	for ext := range astGrepRuleDirs {
		if !slices.Contains(astGrep.Extensions, ext) {
			t.Errorf("%s maps to a rule directory but ast-grep is never given such a file", ext)
		}
	}
}

// The configuration names the rule directories of the changed files'
// languages only, and nothing when the pack has none of them.
func TestASTGrepConfigLoadsTheChangesLanguages(t *testing.T) {
	t.Parallel()
	opt := t.TempDir()
	for _, d := range []string{"python", "javascript", "go"} {
		if err := os.MkdirAll(filepath.Join(opt, "ast-grep", "rules", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w := &Workspace{Opt: opt, Home: t.TempDir()}
	for _, c := range []struct {
		exts []string
		want []string
	}{
		{[]string{".py", ".pyi"}, []string{"python"}},
		{[]string{".jsx", ".go", ".py"}, []string{"go", "javascript", "python"}},
		{[]string{".rb"}, nil},  // no ruby directory in this pack
		{[]string{".txt"}, nil}, // not a language of the pack
	} {
		dirs := map[string]bool{}
		for _, e := range c.exts {
			dirs[astGrepRuleDirs[e]] = true
		}
		config, err := astGrepConfig(w, dirs)
		if err != nil {
			t.Fatal(err)
		}
		if c.want == nil {
			if config != "" {
				t.Errorf("%v: config %s, want none", c.exts, config)
			}
			continue
		}
		data, err := os.ReadFile(config)
		if err != nil {
			t.Fatal(err)
		}
		want := "ruleDirs:\n"
		for _, d := range c.want {
			want += `  - "` + filepath.Join(opt, "ast-grep", "rules", d) + "\"\n"
		}
		if string(data) != want {
			t.Errorf("%v: config\n%s\nwant\n%s", c.exts, data, want)
		}
		if strings.Contains(string(data), "testConfigs") {
			t.Errorf("%v: the scan's config names the tests", c.exts)
		}
	}
}

// TestCompactASTGrepKeepsTheFindings: the driver's compaction of ast-grep's
// report (CompactReport, compactASTGrep) leaves the parser the same findings and tool
// errors, on the fixtures (with and without metadata) and matches the
// parser drops (an unknown severity, a bad range), and leaves a line that
// is not a match as it was.
func TestCompactASTGrepKeepsTheFindings(t *testing.T) {
	t.Parallel()
	odd := `{"ruleId":"r","severity":"fatal","message":"m","file":"a.py","range":{"start":{"line":1,"column":0},"end":{"line":1,"column":3}}}` + "\n" +
		`{"ruleId":"r","severity":"error","message":"m","file":"a.py","range":{"start":{"line":-1,"column":0},"end":{"line":1,"column":3}}}` + "\n"
	for name, raw := range map[string][]byte{
		"ast-grep.jsonl":          fixture(t, "ast-grep.jsonl"),
		"ast-grep-metadata.jsonl": fixture(t, "ast-grep-metadata.jsonl"),
		"odd lines":               append(fixture(t, "ast-grep-metadata.jsonl"), odd...),
	} {
		path := filepath.Join(t.TempDir(), "ast-grep.json")
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		CompactReport(ToolASTGrep, path)
		compact, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(compact) >= len(raw)/2 {
			t.Errorf("%s: %d bytes compacted to %d", name, len(raw), len(compact))
		}
		want, werr := Parse(ToolASTGrep, raw, "/work")
		got, gerr := Parse(ToolASTGrep, compact, "/work")
		if werr != nil || gerr != nil || len(want.Findings) == 0 {
			t.Fatalf("%s: %d findings, parse errors %v / %v", name, len(want.Findings), werr, gerr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: compacted report parses to\n%+v\nwant\n%+v", name, got, want)
		}
	}
	// Lines that are not matches stay byte for byte.
	path := filepath.Join(t.TempDir(), "ast-grep.json")
	os.WriteFile(path, append(fixture(t, "ast-grep.jsonl"), "not json at all\n"...), 0o644)
	CompactReport(ToolASTGrep, path)
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "\nnot json at all\n") {
		t.Errorf("a line that is not a match was changed: %q", b)
	}
}
