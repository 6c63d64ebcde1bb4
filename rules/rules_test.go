// SPDX-License-Identifier: Apache-2.0

package rules

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/sandbox/runner"
	"github.com/quavon/quavon/internal/testenv"
)

const (
	minRules        = 32
	minRulesPerLang = 4
	spdxHeader      = "# SPDX-License-Identifier: Apache-2.0"
	astGrepTimeout  = 3 * time.Minute
	// Where the scanners image keeps ast-grep.
	imageAstGrep = "/opt/quavon/tools/bin/ast-grep"
)

// Rule directories and the ast-grep language each must declare. The six
// languages with a minimum are the ones the pack promises to cover; tsx holds
// the TypeScript rules again for .tsx files (ast-grep parses those with the
// Tsx grammar, so TypeScript rules never see them).
var languages = map[string]struct {
	name     string
	required bool
}{
	"go":         {"Go", true},
	"python":     {"Python", true},
	"javascript": {"JavaScript", true},
	"typescript": {"TypeScript", true},
	"java":       {"Java", true},
	"ruby":       {"Ruby", true},
	"tsx":        {"Tsx", false},
}

var (
	topKeyRE   = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9_]*):[ \t]*(.*)$`)
	metaRE     = regexp.MustCompile(`^  ([A-Za-z][A-Za-z0-9_]*):[ \t]*(.*)$`)
	idRE       = regexp.MustCompile(`^quavon-([a-z]+)-[a-z0-9]+(-[a-z0-9]+)*$`)
	cweRE      = regexp.MustCompile(`^CWE-[0-9]+$`)
	testItemRE = regexp.MustCompile(`^  - `)
	passedRE   = regexp.MustCompile(`test result: ok\. ([0-9]+) passed; 0 failed;`)
)

// yamlDoc is the little of a YAML file these tests need, read line by line
// (the module has no YAML dependency): top-level keys with their inline
// value and the lines of their block.
type yamlDoc struct {
	lines []string
	keys  map[string]yamlKey
}

type yamlKey struct {
	inline string   // text after "key:", unquoted
	block  []string // following indented or blank lines
}

func readYAML(tb testing.TB, path string) yamlDoc {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	doc := yamlDoc{keys: map[string]yamlKey{}}
	var cur string
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		line := sc.Text()
		doc.lines = append(doc.lines, line)
		switch {
		case strings.HasPrefix(line, "#"):
		case line == "" || line[0] == ' ':
			if cur != "" {
				k := doc.keys[cur]
				k.block = append(k.block, line)
				doc.keys[cur] = k
			}
		default:
			m := topKeyRE.FindStringSubmatch(line)
			if m == nil {
				tb.Errorf("%s: unexpected top-level line %q", path, line)
				cur = ""
				continue
			}
			cur = m[1]
			if _, dup := doc.keys[cur]; dup {
				tb.Errorf("%s: key %q twice", path, cur)
			}
			doc.keys[cur] = yamlKey{inline: unquote(m[2])}
		}
	}
	return doc
}

func unquote(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}

// text is the key's value: the inline scalar, or the block for `|`, `>` or
// a key on its own line.
func (k yamlKey) text() string {
	if k.inline != "" && k.inline != "|" && k.inline != ">" && k.inline != "|-" && k.inline != ">-" {
		return k.inline
	}
	return strings.TrimSpace(strings.Join(k.block, "\n"))
}

// nested returns the `  name: value` entries of a mapping block.
func (k yamlKey) nested() map[string]string {
	out := map[string]string{}
	for _, line := range k.block {
		if m := metaRE.FindStringSubmatch(line); m != nil {
			out[m[1]] = unquote(m[2])
		}
	}
	return out
}

type rule struct {
	id, dir, file string
}

func loadRules(tb testing.TB) []rule {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join("ast-grep", "rules", "*", "*"))
	if err != nil {
		tb.Fatal(err)
	}
	var out []rule
	for _, f := range files {
		dir := filepath.Base(filepath.Dir(f))
		if _, ok := languages[dir]; !ok {
			tb.Errorf("%s: rules/%s is not a known language directory", f, dir)
			continue
		}
		if filepath.Ext(f) != ".yml" {
			tb.Errorf("%s: rule files end in .yml", f)
			continue
		}
		doc := readYAML(tb, f)
		out = append(out, rule{id: doc.keys["id"].inline, dir: dir, file: f})
	}
	return out
}

func TestRulePackShape(t *testing.T) {
	t.Parallel()
	rules := loadRules(t)
	if len(rules) < minRules {
		t.Errorf("%d rules, want at least %d", len(rules), minRules)
	}
	perLang := map[string]int{}
	seen := map[string]string{}
	for _, r := range rules {
		perLang[r.dir]++
		if prev, dup := seen[r.id]; dup {
			t.Errorf("%s: id %q also used by %s", r.file, r.id, prev)
		}
		seen[r.id] = r.file
	}
	for dir, lang := range languages {
		if lang.required && perLang[dir] < minRulesPerLang {
			t.Errorf("%s: %d rules, want at least %d", dir, perLang[dir], minRulesPerLang)
		}
	}

	for _, r := range rules {
		t.Run(r.id, func(t *testing.T) {
			t.Parallel()
			checkRule(t, r)
			checkRuleTests(t, r)
		})
	}
}

func checkRule(t *testing.T, r rule) {
	t.Helper()
	doc := readYAML(t, r.file)
	if len(doc.lines) == 0 || doc.lines[0] != spdxHeader {
		t.Errorf("%s: first line must be %q", r.file, spdxHeader)
	}
	m := idRE.FindStringSubmatch(r.id)
	if m == nil || m[1] != r.dir {
		t.Errorf("%s: id %q, want quavon-%s-<name>", r.file, r.id, r.dir)
	}
	if want := "quavon-" + r.dir + "-" + strings.TrimSuffix(filepath.Base(r.file), ".yml"); r.id != want {
		t.Errorf("%s: id %q does not match the file name (want %q)", r.file, r.id, want)
	}
	if got, want := doc.keys["language"].inline, languages[r.dir].name; got != want {
		t.Errorf("%s: language %q, want %q", r.file, got, want)
	}
	switch sev := doc.keys["severity"].inline; sev {
	case "error", "warning", "info", "hint":
	default:
		t.Errorf("%s: severity %q, want error, warning, info or hint", r.file, sev)
	}
	for _, key := range []string{"message", "note"} {
		if doc.keys[key].text() == "" {
			t.Errorf("%s: no %s", r.file, key)
		}
	}
	if _, ok := doc.keys["rule"]; !ok {
		t.Errorf("%s: no rule", r.file)
	}
	meta := doc.keys["metadata"].nested()
	if !cweRE.MatchString(meta["cwe"]) {
		t.Errorf("%s: metadata.cwe %q, want CWE-<number>", r.file, meta["cwe"])
	}
	if meta["category"] != "security" {
		t.Errorf("%s: metadata.category %q, want security", r.file, meta["category"])
	}
	switch meta["confidence"] {
	case "high", "medium", "low":
	default:
		t.Errorf("%s: metadata.confidence %q, want high, medium or low", r.file, meta["confidence"])
	}
	// A rule must not be able to reach outside the pack.
	for _, key := range []string{"files", "ignores", "fix", "rewriters", "transform"} {
		if _, ok := doc.keys[key]; ok {
			t.Errorf("%s: %s is not used in the Quavon pack", r.file, key)
		}
	}
}

func checkRuleTests(t *testing.T, r rule) {
	t.Helper()
	path := filepath.Join("ast-grep", "rule-tests", r.id+"-test.yml")
	if _, err := os.Stat(path); err != nil {
		t.Errorf("%s: no test file: %v", r.file, err)
		return
	}
	doc := readYAML(t, path)
	if got := doc.keys["id"].inline; got != r.id {
		t.Errorf("%s: id %q, want %q", path, got, r.id)
	}
	for _, section := range []string{"valid", "invalid"} {
		n := 0
		for _, line := range doc.keys[section].block {
			if testItemRE.MatchString(line) {
				n++
			}
		}
		if n == 0 {
			t.Errorf("%s: no %s cases", path, section)
		}
	}
}

// Every test file belongs to a rule: a renamed rule must not leave its
// tests behind, unseen.
func TestNoOrphanRuleTests(t *testing.T) {
	t.Parallel()
	ids := map[string]bool{}
	for _, r := range loadRules(t) {
		ids[r.id] = true
	}
	tests, err := filepath.Glob(filepath.Join("ast-grep", "rule-tests", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range tests {
		id := strings.TrimSuffix(filepath.Base(f), "-test.yml")
		if !ids[id] {
			t.Errorf("%s: no rule %q", f, id)
		}
	}
}

// The tsx rules repeat the TypeScript ones for .tsx files; keep them equal.
func TestTsxRulesMirrorTypeScript(t *testing.T) {
	t.Parallel()
	ts, err := filepath.Glob(filepath.Join("ast-grep", "rules", "typescript", "*.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) == 0 {
		t.Fatal("no TypeScript rules")
	}
	for _, f := range ts {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		twin := filepath.Join("ast-grep", "rules", "tsx", filepath.Base(f))
		got, err := os.ReadFile(twin)
		if err != nil {
			t.Errorf("%s has no tsx twin: %v", f, err)
			continue
		}
		want := strings.Replace(string(src), "\nid: quavon-typescript-", "\nid: quavon-tsx-", 1)
		want = strings.Replace(want, "\nlanguage: TypeScript\n", "\nlanguage: Tsx\n", 1)
		if string(got) != want {
			t.Errorf("%s differs from %s beyond id and language; copy it again", twin, f)
		}
	}
}

func TestSgconfigLoadsYAMLOnly(t *testing.T) {
	t.Parallel()
	doc := readYAML(t, filepath.Join("ast-grep", "sgconfig.yml"))
	for _, key := range []string{"ruleDirs", "testConfigs"} {
		if _, ok := doc.keys[key]; !ok {
			t.Errorf("sgconfig.yml: no %s", key)
		}
	}
	for key := range doc.keys {
		switch key {
		case "ruleDirs", "testConfigs":
		default:
			// customLanguages loads native libraries; utilDirs, languageGlobs
			// and the rest are not part of the pack.
			t.Errorf("sgconfig.yml: unexpected key %q", key)
		}
	}
}

// astGrep runs `ast-grep test` on the rule pack in dir (a copy of this
// directory's files or this directory itself) and returns its output and
// error. It uses $QUAVON_TEST_AST_GREP when set (a host binary, for
// developers), otherwise the ast-grep of the scanners image named by the
// image lockfile.
func astGrep(tb testing.TB, dir string) (string, error) {
	tb.Helper()
	args := []string{"test", "-c", "ast-grep/sgconfig.yml", "--skip-snapshot-tests", "--color", "never"}
	ctx, cancel := context.WithTimeout(context.Background(), astGrepTimeout)
	defer cancel()
	var cmd *exec.Cmd
	if bin := os.Getenv("QUAVON_TEST_AST_GREP"); bin != "" {
		cmd = exec.CommandContext(ctx, bin, args...)
		cmd.Dir = dir
	} else {
		image := scannersImage(tb)
		dargs := []string{"run", "--rm", "--network", "none", "--read-only",
			"-v", dir + ":/rules:ro", "--tmpfs", "/tmp", "-w", "/rules",
			"--entrypoint", imageAstGrep, image}
		dargs = append(dargs, args...)
		// Absolute config path, as the driver would give it.
		dargs[len(dargs)-len(args)+2] = "/rules/ast-grep/sgconfig.yml"
		cmd = exec.CommandContext(ctx, "docker", dargs...)
	}
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		tb.Fatalf("%s: %v", cmd, ctx.Err())
	}
	return string(out), err
}

func scannersImage(tb testing.TB) string {
	tb.Helper()
	lf, err := runner.LoadLockfile(testenv.ImagesLock(tb))
	if err != nil {
		tb.Fatal(err)
	}
	ref, err := lf.Resolve("scanners")
	if err != nil {
		if testenv.Required() {
			tb.Fatalf("scanners image: %v", err)
		}
		tb.Skipf("scanners image: %v", err)
	}
	if _, err := exec.LookPath("docker"); err != nil {
		if testenv.Required() {
			tb.Fatalf("docker CLI: %v", err)
		}
		tb.Skipf("docker CLI: %v", err)
	}
	return ref
}

func TestRuleTestsPass(t *testing.T) {
	t.Parallel()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	out, err := astGrep(t, dir)
	if err != nil {
		t.Fatalf("ast-grep test: %v\n%s", err, out)
	}
	m := passedRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("ast-grep test: no passing summary in its output:\n%s", out)
	}
	// Every rule must have been tested: a rule ast-grep failed to load, or
	// a test file it did not find, shows up as a smaller count.
	if n, _ := strconv.Atoi(m[1]); n != len(loadRules(t)) {
		t.Errorf("ast-grep tested %d rules, the pack has %d:\n%s", n, len(loadRules(t)), out)
	}
}

// The rule tests must catch a broken rule: with one test file's valid and
// invalid cases swapped, `ast-grep test` has to fail for that rule.
func TestRuleTestsCatchBrokenRule(t *testing.T) {
	t.Parallel()
	// Lay the copy out as ast-grep/ under a fresh root.
	root := t.TempDir()
	if err := os.CopyFS(filepath.Join(root, "ast-grep"), os.DirFS("ast-grep")); err != nil {
		t.Fatal(err)
	}
	const victim = "quavon-python-eval-exec-dynamic"
	path := filepath.Join(root, "ast-grep", "rule-tests", victim+"-test.yml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	swapped := strings.NewReplacer("\nvalid:\n", "\ninvalid:\n", "\ninvalid:\n", "\nvalid:\n").Replace(string(data))
	if swapped == string(data) {
		t.Fatalf("%s: could not swap valid and invalid", path)
	}
	if err := os.WriteFile(path, []byte(swapped), 0o644); err != nil {
		t.Fatal(err)
	}
	// The container's user must be able to read the copy.
	if err := chmodTree(root); err != nil {
		t.Fatal(err)
	}
	out, err := astGrep(t, root)
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		t.Fatalf("ast-grep test on a broken pack: err = %v, want a failing exit\n%s", err, out)
	}
	if !strings.Contains(out, "FAIL "+victim) {
		t.Errorf("ast-grep test on a broken pack did not report %s:\n%s", victim, out)
	}
}

func chmodTree(root string) error {
	return filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		if err := os.Chmod(p, mode); err != nil {
			return fmt.Errorf("chmod %s: %w", p, err)
		}
		return nil
	})
}

// A regex of the pack repeats a Unicode class a bounded number of times only
// when the count is small. ast-grep compiles every regex of every rule it
// loads at every scan (Rust's regex crate, where \w, \d, \s and \p{…} are
// Unicode's), and a bounded repeat compiles into one copy of the class's
// automaton per count: `[\w.:-]{1,64}` cost 0.1 s per rule, and ten Go rules
// with it took 0.58 s of ast-grep's start instead of 0.20 s. rules/README.md
// ("Adding a rule") has the cheap equivalent.
func TestRegexesCompileCheaply(t *testing.T) {
	t.Parallel()
	for _, r := range loadRules(t) {
		data, err := os.ReadFile(r.file)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			m := regexLineRE.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			if bad := costlyRepeat(strings.ReplaceAll(m[1], "''", "'")); bad != "" {
				t.Errorf("%s:%d: %s repeats a Unicode class more than %d times; see rules/README.md (Adding a rule)",
					r.file, i+1, bad, maxUnicodeRepeat)
			}
		}
	}
}

const maxUnicodeRepeat = 16

var (
	regexLineRE = regexp.MustCompile(`^\s*(?:- )?regex: '((?:[^']|'')*)'\s*$`)
	// An atom (a bracketed class or an escape) and the bounded repeat after it.
	repeatRE     = regexp.MustCompile(`(\[(?:\\.|[^\]\\])*\]|\\[wWdDsS]|\\[pP](?:\{[^}]*\}|[A-Za-z]))\{([0-9]+)(?:,([0-9]*))?\}`)
	unicodeClass = regexp.MustCompile(`\\[wWdDsSpP]`)
)

// costlyRepeat returns the first repeat in re of a Unicode class (\w, \d, \s,
// \p and their negations, alone or in a bracketed class) more than
// maxUnicodeRepeat times, or "".
func costlyRepeat(re string) string {
	for _, m := range repeatRE.FindAllStringSubmatch(re, -1) {
		if !unicodeClass.MatchString(m[1]) {
			continue
		}
		lo, _ := strconv.Atoi(m[2])
		hi := lo
		if m[3] != "" {
			hi, _ = strconv.Atoi(m[3])
		}
		if max(lo, hi) > maxUnicodeRepeat {
			return m[0]
		}
	}
	return ""
}

func TestCostlyRepeat(t *testing.T) {
	for re, want := range map[string]string{
		`^"[\w.:-]{1,64}"$`:  `[\w.:-]{1,64}`,
		`^"[\w.:-]+"$`:       "",
		`^"[^"]{65}`:         "",
		`\d{20}`:             `\d{20}`,
		`\p{L}{3,40}`:        `\p{L}{3,40}`,
		`[a-z]{1,64}`:        "",
		`\w{1,16}`:           "",
		`[\]\w]{17,}`:        `[\]\w]{17,}`,
		"^[\"'`][^\"'`]{4,}": "",
	} {
		if got := costlyRepeat(re); got != want {
			t.Errorf("costlyRepeat(%q) = %q, want %q", re, got, want)
		}
	}
}
