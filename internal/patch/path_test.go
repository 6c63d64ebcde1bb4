package patch

import (
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// builtinCases is a row per entry of spec §6, each with the plain spelling
// and the tricky ones the issue lists.
var builtinCases = []struct {
	rule  Rule
	paths []string
}{
	// .git/** and any path with a .git segment; .gitmodules, .gitattributes
	{RuleDeniedGit, []string{".git/config", ".git", ".GIT/hooks/pre-commit", "a/.git/b", `a\.git\b`, "x/../.git/HEAD",
		"sub/.Git", ".gitmodules", ".GitModules", "./.gitmodules", ".gitattributes", "src/.gitattributes",
		"git~1/config", "GIT~1/HEAD"}},
	// .githooks/**, .husky/**, lefthook.yml, .pre-commit-config.yaml
	{RuleDeniedGitHooks, []string{".githooks/pre-commit", ".husky/pre-push", ".Husky/_/h", "lefthook.yml", "LEFTHOOK.YML",
		".pre-commit-config.yaml", "/.pre-commit-config.yaml"}},
	// .github/**
	{RuleDeniedGitHub, []string{".github/workflows/ci.yml", ".GitHub/Workflows/x.yml", `.github\workflows\x.yml`,
		".github/CODEOWNERS", ".github/dependabot.yml", ".github/ISSUE_TEMPLATE/bug.md", ".github/copilot-instructions.md",
		".github/actions/a/action.yml", "./.github/x", "a/../.github/x", ".github"}},
	// CODEOWNERS, docs/CODEOWNERS
	{RuleDeniedCodeowners, []string{"CODEOWNERS", "codeowners", "docs/CODEOWNERS", "Docs/CodeOwners"}},
	// CI configuration
	{RuleDeniedCI, []string{".gitlab-ci.yml", ".circleci/config.yml", ".travis.yml", "azure-pipelines.yml",
		".azure-pipelines/x.yml", "Jenkinsfile", "JENKINSFILE", ".buildkite/pipeline.yml", ".drone.yml",
		"bitbucket-pipelines.yml", ".woodpecker/a.yml", ".woodpecker.yml", "cloudbuild.yaml",
		".devcontainer/devcontainer.json", ".vscode/settings.json", ".VSCode/tasks.json"}},
	// Quavon and agent rule/instruction files
	{RuleDeniedAgent, []string{".quavon/policy.yml", "AGENTS.md", "sub/AGENTS.md", "a/b/agents.MD", "CLAUDE.md",
		"pkg/CLAUDE.md", ".cursorrules", ".cursor/rules/x.mdc", ".Cursor/x"}},
	// package-manager hooks and registry configuration
	{RuleDeniedPackageMgr, []string{".npmrc", "x/../.npmrc", "packages/a/.npmrc", ".yarnrc", "a/.yarnrc", ".yarnrc.yml",
		"a/.yarnrc.yml", ".yarn/releases/yarn.cjs", ".pnpmfile.cjs", "a/.pnpmfile.cjs", ".pypirc", "a/.pypirc",
		"pip.conf", "venv/pip.conf", ".mise.toml", ".tool-versions"}},
	// secret-like files
	{RuleDeniedSecretFile, []string{".env", "./.env", "app/.env", ".ENV", ".env.production", "a/.env.local",
		"cert.pem", "a/b/server.PEM", "tls.key", "x.p12", "x.pfx", "id_rsa", "home/.ssh/id_rsa.pub", "id_ed25519",
		"k/id_ed25519_sk", ".netrc", "a/.netrc", ".git-credentials", "a/.git-credentials"}},
	// lockfiles unless fix.allowLockfiles, any directory
	{RuleLockfile, []string{"package-lock.json", "npm-shrinkwrap.json", "pnpm-lock.yaml", "yarn.lock", "bun.lock",
		"bun.lockb", "poetry.lock", "Pipfile.lock", "uv.lock", "Cargo.lock", "crates/x/Cargo.lock", "go.sum",
		"tools/go.sum", "composer.lock", "Gemfile.lock", "web/PACKAGE-LOCK.JSON"}},
}

func TestPathViolationBuiltinSet(t *testing.T) {
	t.Parallel()
	for _, c := range builtinCases {
		for _, p := range c.paths {
			v := PathViolation(p, PathPolicy{})
			if v == nil || v.Rule != c.rule {
				t.Errorf("PathViolation(%q) = %+v, want rule %s", p, v, c.rule)
				continue
			}
			if v.Path != p || v.Message == "" || v.Pattern == "" {
				t.Errorf("PathViolation(%q) = %+v: want the given path, a message and the pattern", p, v)
			}
		}
	}
}

// Every built-in glob must be exercised by builtinCases, so an entry
// cannot be dropped or mistyped without a test failing.
func TestBuiltinCasesCoverEveryPattern(t *testing.T) {
	t.Parallel()
	hit := map[string]bool{}
	for _, c := range builtinCases {
		for _, p := range c.paths {
			if v := PathViolation(p, PathPolicy{}); v != nil {
				hit[v.Pattern] = true
			}
		}
	}
	for _, r := range builtinRules {
		for _, g := range r.globs {
			if !hit[g.src] {
				t.Errorf("no test path matches built-in pattern %q (%s)", g.src, r.rule)
			}
		}
	}
}

// The spec's §6 list, spelled out, so a built-in pattern cannot vanish
// silently.
func TestBuiltinSetIsSpec6(t *testing.T) {
	t.Parallel()
	spec := []string{".git/**", ".gitmodules", ".gitattributes", ".githooks/**", ".husky/**", "lefthook.yml",
		".pre-commit-config.yaml", ".github/**", "CODEOWNERS", "docs/CODEOWNERS", ".gitlab-ci.yml", ".circleci/**",
		".travis.yml", "azure-pipelines.yml", ".azure-pipelines/**", "Jenkinsfile", ".buildkite/**", ".drone.yml",
		"bitbucket-pipelines.yml", ".woodpecker/**", ".woodpecker.yml", "cloudbuild.yaml", ".devcontainer/**",
		".vscode/**", ".quavon/**", "**/AGENTS.md", "**/CLAUDE.md", ".cursorrules", ".cursor/**", "**/.npmrc",
		"**/.yarnrc", "**/.yarnrc.yml", ".yarn/**", "**/.pnpmfile.cjs", "**/.pypirc", "**/pip.conf", ".mise.toml",
		".tool-versions", "**/.env", "**/.env.*", "**/*.pem", "**/*.key", "**/*.p12", "**/*.pfx", "**/id_rsa*",
		"**/id_ed25519*", "**/.netrc", "**/.git-credentials", "package-lock.json", "npm-shrinkwrap.json",
		"pnpm-lock.yaml", "yarn.lock", "bun.lock", "bun.lockb", "poetry.lock", "Pipfile.lock", "uv.lock", "Cargo.lock",
		"go.sum", "composer.lock", "Gemfile.lock"}
	for _, s := range spec {
		// a concrete path for the pattern
		p := strings.ReplaceAll(strings.ReplaceAll(s, "**/", "deep/er/"), "/**", "/x/y")
		p = strings.ReplaceAll(p, "*", "z")
		if PathViolation(p, PathPolicy{}) == nil {
			t.Errorf("spec §6 entry %q: %q is allowed", s, p)
		}
		if !strings.HasPrefix(s, "**/") && !strings.Contains(s, "lock") && s != "go.sum" {
			continue
		}
		// "(any directory)" for lockfiles, and every **/ entry
		if PathViolation("deep/"+strings.TrimPrefix(p, "deep/er/"), PathPolicy{}) == nil {
			t.Errorf("spec §6 entry %q: not denied in a subdirectory", s)
		}
	}
}

func TestPathViolationAllowsOrdinaryPaths(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"README.md", "src/main.go", "docs/guide.md", "github/x.yml", "a.github/x",
		".gitignore", "gitmodules", "environment.ts", "src/.envoy.yaml", "env/.environment", "my.key.txt",
		"keys/id.pub", "lockfile.md", "package.json", "src/git/repo.go", "AGENTS.md.bak/x", "café.txt",
		"docs/codeowners.md", ".github-pages/x", "x.github"} {
		if v := PathViolation(p, PathPolicy{}); v != nil {
			t.Errorf("PathViolation(%q) = %+v, want allowed", p, v)
		}
	}
}

func TestPathViolationInvalid(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"", "/", ".", "./", "..", "../x", "a/../../x", "a\x00b", "a\nb", "a\tb", "a\x7fb",
		"a\u0085b", "\xff.txt", ".env ", ".env.", "a/.env./x", "x /y", "README.md.", ".g\u200cit/config",
		".github\u200b/x", "a\u202eb", "a\u2028b", "x\ufeff", ".env::$DATA", "a:b", strings.Repeat("a/", 2100) + "x"} {
		v := PathViolation(p, PathPolicy{})
		if v == nil || v.Rule != RuleInvalidPath {
			t.Errorf("PathViolation(%q) = %+v, want %s", p, v, RuleInvalidPath)
		}
	}
}

func TestNormalizePath(t *testing.T) {
	t.Parallel()
	nfd := norm.NFD.String("café/é.txt")
	cases := map[string]string{
		"a/b":               "a/b",
		"/a//b/":            "a/b",
		"./a/./b":           "a/b",
		`a\b\c`:             "a/b/c",
		"a/x/../b":          "a/b",
		"x/../.npmrc":       ".npmrc",
		nfd:                 "café/é.txt",
		"a/b/..":            "a",
		" leading/space.go": " leading/space.go",
	}
	for in, want := range cases {
		got, err := NormalizePath(in)
		if err != nil || got != want {
			t.Errorf("NormalizePath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if nfd == "café/é.txt" {
		t.Fatal("test bug: NFD spelling equals NFC")
	}
}

// NFD and NFC spellings, and case folding beyond ASCII, reach the same
// rule.
func TestPathViolationUnicode(t *testing.T) {
	t.Parallel()
	// "ſ" (long s) and "K" (Kelvin sign) fold to "s" and "k".
	for _, p := range []string{"cert.\u212Aey", "CLAUDE.md", "claude.md", ".ſtuff/../.env"} {
		if PathViolation(p, PathPolicy{}) == nil {
			t.Errorf("PathViolation(%q) = nil, want denied", p)
		}
	}
	pol := PathPolicy{DeniedPaths: []string{"données/**"}}
	for _, p := range []string{norm.NFC.String("données/a"), norm.NFD.String("données/a"), "DONNÉES/a", norm.NFD.String("DONNÉES/a")} {
		v := PathViolation(p, pol)
		if v == nil || v.Rule != RulePolicyDenied {
			t.Errorf("PathViolation(%q) = %+v, want %s", p, v, RulePolicyDenied)
		}
	}
}

func TestPathPolicy(t *testing.T) {
	t.Parallel()
	pol := PathPolicy{DeniedPaths: []string{"secrets", "**/*.gen.go", "db/migrations/**"}, AllowedPaths: []string{"src/**", "docs", "*.md"}}
	if err := pol.Validate(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path string
		rule Rule // "" = allowed
	}{
		{"src/a.go", ""},
		{"SRC/b/c.go", ""},
		{"docs/x/y.md", ""},
		{"README.md", ""},
		{"sub/README.md", RulePolicyNotAllowed}, // *.md is root-only
		{"main.go", RulePolicyNotAllowed},
		{"secrets/x", RulePolicyDenied},
		{"src/z.gen.go", RulePolicyDenied},
		{"db/migrations/1.sql", RulePolicyDenied},
		{"src/.env", RuleDeniedSecretFile},            // built-in wins over allowed
		{"src/go.sum", RuleLockfile},                  // lockfile without allowLockfiles
		{".github/workflows/x.yml", RuleDeniedGitHub}, // never overridable
	}
	for _, c := range cases {
		v := PathViolation(c.path, pol)
		switch {
		case c.rule == "" && v != nil:
			t.Errorf("PathViolation(%q) = %+v, want allowed", c.path, v)
		case c.rule != "" && (v == nil || v.Rule != c.rule):
			t.Errorf("PathViolation(%q) = %+v, want %s", c.path, v, c.rule)
		}
	}
	// allowLockfiles lifts only the lockfile rule
	lock := PathPolicy{AllowLockfiles: true}
	for _, p := range []string{"go.sum", "web/package-lock.json", "Cargo.lock"} {
		if v := PathViolation(p, lock); v != nil {
			t.Errorf("allowLockfiles: PathViolation(%q) = %+v", p, v)
		}
	}
	if v := PathViolation(".npmrc", lock); v == nil {
		t.Error("allowLockfiles lifted a package-manager rule")
	}
	// policy cannot allow a built-in denied path
	if v := PathViolation(".github/x", PathPolicy{AllowedPaths: []string{".github/**"}}); v == nil || v.Rule != RuleDeniedGitHub {
		t.Errorf("allowedPaths overrode the built-in set: %+v", v)
	}
}

func TestPathPolicyMalformedGlobsFailClosed(t *testing.T) {
	t.Parallel()
	for _, g := range []string{"", "/", "a/../b", "a**", "x\x00"} {
		if err := (PathPolicy{DeniedPaths: []string{g}}).Validate(); err == nil {
			t.Errorf("Validate accepted denied glob %q", g)
		}
		if v := PathViolation("src/a.go", PathPolicy{DeniedPaths: []string{g}}); v == nil || v.Rule != RulePolicyDenied {
			t.Errorf("malformed denied glob %q: %+v, want everything denied", g, v)
		}
		if v := PathViolation("src/a.go", PathPolicy{AllowedPaths: []string{g}}); v == nil || v.Rule != RulePolicyNotAllowed {
			t.Errorf("malformed allowed glob %q: %+v, want nothing allowed", g, v)
		}
	}
}

func TestGlob(t *testing.T) {
	t.Parallel()
	cases := []struct {
		glob, path string
		whole      bool
	}{
		{"**/a", "a", true},
		{"**/a", "x/y/a", true},
		{"a/**", "a", true},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/b", "a/x/y/c", false},
		{"*.go", "main.go", true},
		{"*.go", "x/main.go", false},
		{"?.go", "é.go", true},
		{"?.go", "ab.go", false},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"*", "x", true},
		{"**", "x/y/z", true},
		{"id_rsa*", "id_rsa", true},
		{".env.*", ".env.", true},
		{"[ab]", "[ab]", true},
		{"[ab]", "a", false},
	}
	for _, c := range cases {
		g, err := compileGlob(c.glob)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.match(strings.Split(c.path, "/")); got != c.whole {
			t.Errorf("glob %q match %q = %v, want %v", c.glob, c.path, got, c.whole)
		}
	}
	g, _ := compileGlob("docs")
	if !g.matchOrAncestor([]string{"docs", "a.md"}) || g.match([]string{"docs", "a.md"}) {
		t.Error("a pattern matching a directory must cover what is beneath it")
	}
	// many ** segments stay polynomial
	g, _ = compileGlob(strings.Repeat("**/", 50) + "z")
	long := strings.Split(strings.Repeat("a/", 500)+"b", "/")
	if g.match(long) {
		t.Error("unexpected match")
	}
}

func FuzzPathViolation(f *testing.F) {
	for _, c := range builtinCases {
		for _, p := range c.paths {
			f.Add(p)
		}
	}
	for _, s := range []string{"", "a/../..", "é", norm.NFD.String("é/.env"), ".env ", "\\\\", "a/./b//c", "\u212A"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		v := PathViolation(p, PathPolicy{})
		n, err := NormalizePath(p)
		if err != nil {
			if v == nil || v.Rule != RuleInvalidPath {
				t.Fatalf("NormalizePath(%q) failed but PathViolation = %+v", p, v)
			}
			return
		}
		// idempotent
		n2, err := NormalizePath(n)
		if err != nil || n2 != n {
			t.Fatalf("NormalizePath not idempotent: %q -> %q -> %q, %v", p, n, n2, err)
		}
		if !utf8.ValidString(n) || strings.Contains(n, "\\") || strings.HasPrefix(n, "/") || !norm.NFC.IsNormalString(n) {
			t.Fatalf("NormalizePath(%q) = %q is not canonical", p, n)
		}
		for _, seg := range strings.Split(n, "/") {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("NormalizePath(%q) = %q has segment %q", p, n, seg)
			}
		}
		// the verdict depends only on the normalised path
		vn := PathViolation(n, PathPolicy{})
		if (v == nil) != (vn == nil) || (v != nil && v.Rule != vn.Rule) {
			t.Fatalf("PathViolation(%q) = %+v but PathViolation(%q) = %+v", p, v, n, vn)
		}
		// other spellings of a denied path stay denied
		if vn != nil {
			for _, alt := range []string{"/" + n, "./" + n, strings.ReplaceAll(n, "/", `\`), "x/../" + n,
				norm.NFD.String(n), strings.ToUpper(n), strings.ToLower(n), "a//" + "../" + n} {
				if PathViolation(alt, PathPolicy{}) == nil {
					t.Fatalf("denied %q (%s) is allowed when spelt %q", n, vn.Rule, alt)
				}
			}
		}
	})
}
