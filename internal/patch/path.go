package patch

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// MaxPathBytes bounds a normalised path (git itself has no limit; common
// file systems stop at 4096).
const MaxPathBytes = 4096

// Rule is a stable code naming the rule behind a Violation. Callers branch
// on it and show it to users; it never changes meaning.
type Rule string

// Path rules, in the order PathViolation checks them.
const (
	RuleInvalidPath      Rule = "invalid.path"              // not normalisable, or not in canonical form where one is required
	RuleDeniedGit        Rule = "denied.git"                // .git segment (and git~1), .gitmodules, .gitattributes
	RuleDeniedGitHooks   Rule = "denied.git_hooks"          // .githooks/, .husky/, lefthook.yml, .pre-commit-config.yaml
	RuleDeniedGitHub     Rule = "denied.github"             // .github/
	RuleDeniedCodeowners Rule = "denied.codeowners"         // CODEOWNERS, docs/CODEOWNERS
	RuleDeniedCI         Rule = "denied.ci"                 // CI configuration, .devcontainer/, .vscode/
	RuleDeniedAgent      Rule = "denied.agent_instructions" // .quavon/, AGENTS.md, CLAUDE.md, .cursorrules, .cursor/
	RuleDeniedPackageMgr Rule = "denied.package_manager"    // package-manager hooks and registry configuration
	RuleDeniedSecretFile Rule = "denied.secret_file"        // .env, keys, certificates, credentials
	RuleLockfile         Rule = "lockfile"                  // lockfiles unless PathPolicy.AllowLockfiles
	RulePolicyDenied     Rule = "policy.denied"             // matches fix.deniedPaths
	RulePolicyNotAllowed Rule = "policy.not_allowed"        // fix.allowedPaths is set and nothing in it matches
)

// A Violation is one reason a path, file or patch is refused. Path is the
// path as the caller gave it (for patch-level rules: empty). Pattern is the
// glob that matched, for pattern rules. Message is for humans and never
// contains file content.
type Violation struct {
	Path    string `json:"path"`
	Rule    Rule   `json:"rule"`
	Pattern string `json:"pattern,omitempty"`
	Message string `json:"message"`
}

func (v *Violation) Error() string {
	if v.Path == "" {
		return fmt.Sprintf("%s: %s", v.Rule, v.Message)
	}
	return fmt.Sprintf("%s: %s: %s", v.Path, v.Rule, v.Message)
}

// PathPolicy is the repository's part of the path rules (features.fix).
// The zero value adds nothing to the built-in set: no extra denied paths,
// every path not denied is allowed, lockfiles are refused.
type PathPolicy struct {
	// DeniedPaths are globs (see Glob syntax in the package doc) refused in
	// addition to the built-in set.
	DeniedPaths []string
	// AllowedPaths, when not empty, restricts changes to paths matching at
	// least one glob. It can never allow a built-in denied path.
	AllowedPaths []string
	// AllowLockfiles lets the patch change lockfiles (package-lock.json,
	// go.sum, …). It has no effect on any other built-in rule.
	AllowLockfiles bool
}

// Validate reports a malformed glob. Callers validate the policy once when
// they load it; PathViolation treats a malformed glob as matching nothing
// in AllowedPaths and everything in DeniedPaths (fail closed).
func (p PathPolicy) Validate() error {
	for _, g := range p.DeniedPaths {
		if _, err := compileGlob(g); err != nil {
			return fmt.Errorf("patch.PathPolicy: deniedPaths: %w", err)
		}
	}
	for _, g := range p.AllowedPaths {
		if _, err := compileGlob(g); err != nil {
			return fmt.Errorf("patch.PathPolicy: allowedPaths: %w", err)
		}
	}
	return nil
}

// NormalizePath returns the canonical form of a repository path, or an
// error saying why it has none:
//
//   - it must be valid UTF-8 without NUL, control characters (Cc), format
//     characters (Cf: bidi controls, zero-width characters, BOM, soft
//     hyphen) or line/paragraph separators: file systems and git treat some
//     of these as ignorable, which would let `.g\u200cit` act as `.git`;
//   - `\` becomes `/`; leading `/`, empty and `.` segments are dropped;
//   - `..` removes the previous segment; a `..` that would leave the root
//     is an error;
//   - the result is Unicode NFC;
//   - a segment ending in a space or a dot is an error (Windows drops
//     them, so `.env.` or `.env ` would be written as `.env`), as is a
//     segment containing `:` (NTFS alternate data streams: `.env::$DATA`);
//   - the empty path and paths over MaxPathBytes are errors.
//
// NormalizePath is idempotent: NormalizePath(NormalizePath(p)) ==
// NormalizePath(p) for every p it accepts.
func NormalizePath(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("empty path")
	}
	if !utf8.ValidString(p) {
		return "", fmt.Errorf("path is not valid UTF-8")
	}
	for _, r := range p {
		if r == 0 {
			return "", fmt.Errorf("path contains NUL")
		}
		if forbiddenPathRune(r) {
			return "", fmt.Errorf("path contains the control or invisible character %U", r)
		}
	}
	p = strings.ReplaceAll(p, `\`, "/")
	p = norm.NFC.String(p)
	segs := make([]string, 0, strings.Count(p, "/")+1)
	for seg := range strings.SplitSeq(p, "/") {
		switch seg {
		case "", ".":
			continue
		case "..":
			if len(segs) == 0 {
				return "", fmt.Errorf("path escapes the repository root")
			}
			segs = segs[:len(segs)-1]
			continue
		}
		if last := seg[len(seg)-1]; last == ' ' || last == '.' {
			return "", fmt.Errorf("path segment %q ends in a space or dot (dropped by Windows file systems)", seg)
		}
		if strings.IndexByte(seg, ':') >= 0 {
			return "", fmt.Errorf("path segment %q contains ':' (NTFS alternate data stream)", seg)
		}
		segs = append(segs, seg)
	}
	if len(segs) == 0 {
		return "", fmt.Errorf("path names the repository root")
	}
	out := strings.Join(segs, "/")
	if len(out) > MaxPathBytes {
		return "", fmt.Errorf("path is longer than %d bytes", MaxPathBytes)
	}
	return out, nil
}

func forbiddenPathRune(r rune) bool {
	if r < 0x20 || r == 0x7f {
		return true
	}
	if r < 0x80 {
		return false
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp) || r == utf8.RuneError
}

// foldPath is the key paths are compared by: Unicode full case folding of
// the NFC form, then NFC again (folding can denormalise). ASCII takes a
// fast path with the same result.
func foldPath(p string) string {
	ascii := true
	for i := 0; i < len(p); i++ {
		if p[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(p)
	}
	return norm.NFC.String(cases.Fold().String(norm.NFC.String(p)))
}

// PathViolation applies the path rules to p: normalisation, then the
// built-in denied set (spec §6, never overridable), then
// policy.DeniedPaths, then policy.AllowedPaths, then lockfiles unless
// policy.AllowLockfiles. It returns nil when p may be changed, or the first
// rule that refuses it. It is the one path check of the fix agent's edit
// tools and of ValidatePatch.
func PathViolation(p string, policy PathPolicy) *Violation {
	n, err := NormalizePath(p)
	if err != nil {
		return &Violation{Path: p, Rule: RuleInvalidPath, Message: err.Error()}
	}
	return normalizedPathViolation(p, n, policy)
}

// normalizedPathViolation is PathViolation for an already normalised n
// (orig is what the caller passed, for the message).
func normalizedPathViolation(orig, n string, policy PathPolicy) *Violation {
	segs := strings.Split(foldPath(n), "/")
	for _, r := range builtinRules {
		if r.rule == RuleLockfile && policy.AllowLockfiles {
			continue
		}
		for _, g := range r.globs {
			if g.matchOrAncestor(segs) {
				return &Violation{Path: orig, Rule: r.rule, Pattern: g.src, Message: r.message}
			}
		}
	}
	for _, src := range policy.DeniedPaths {
		g, err := compileGlob(src)
		if err != nil || g.matchOrAncestor(segs) {
			return &Violation{Path: orig, Rule: RulePolicyDenied, Pattern: src,
				Message: "the repository policy denies this path (fix.deniedPaths)"}
		}
	}
	if len(policy.AllowedPaths) > 0 {
		allowed := false
		for _, src := range policy.AllowedPaths {
			if g, err := compileGlob(src); err == nil && g.matchOrAncestor(segs) {
				allowed = true
				break
			}
		}
		if !allowed {
			return &Violation{Path: orig, Rule: RulePolicyNotAllowed,
				Message: "the repository policy restricts changes to fix.allowedPaths and none matches"}
		}
	}
	return nil
}

type builtinRule struct {
	rule    Rule
	message string
	globs   []*glob
}

// builtinRules is spec §6, grouped by rule code, checked in this order.
// Two entries are deliberately wider than the spec's list: .gitattributes
// in any directory (git honours nested ones, and they select filter and
// diff drivers) and the NTFS short name git~1 of .git.
var builtinRules = []builtinRule{
	{RuleDeniedGit, "git metadata, submodules and attributes are off-limits", mustGlobs(
		"**/.git/**", "**/git~1/**", ".gitmodules", "**/.gitattributes")},
	{RuleDeniedGitHooks, "git hook configuration is off-limits", mustGlobs(
		".githooks/**", ".husky/**", "lefthook.yml", ".pre-commit-config.yaml")},
	{RuleDeniedGitHub, "GitHub configuration (workflows, actions, CODEOWNERS, templates, instructions) is off-limits", mustGlobs(
		".github/**")},
	{RuleDeniedCodeowners, "code ownership files are off-limits", mustGlobs(
		"CODEOWNERS", "docs/CODEOWNERS")},
	{RuleDeniedCI, "CI and development environment configuration is off-limits", mustGlobs(
		".gitlab-ci.yml", ".circleci/**", ".travis.yml", "azure-pipelines.yml", ".azure-pipelines/**",
		"Jenkinsfile", ".buildkite/**", ".drone.yml", "bitbucket-pipelines.yml", ".woodpecker/**",
		".woodpecker.yml", "cloudbuild.yaml", ".devcontainer/**", ".vscode/**")},
	{RuleDeniedAgent, "Quavon and coding-agent instruction files are off-limits", mustGlobs(
		".quavon/**", "**/AGENTS.md", "**/CLAUDE.md", ".cursorrules", ".cursor/**")},
	{RuleDeniedPackageMgr, "package-manager hooks and registry configuration are off-limits", mustGlobs(
		"**/.npmrc", "**/.yarnrc", "**/.yarnrc.yml", ".yarn/**", "**/.pnpmfile.cjs", "**/.pypirc",
		"**/pip.conf", ".mise.toml", ".tool-versions")},
	{RuleDeniedSecretFile, "secret-like files are off-limits", mustGlobs(
		"**/.env", "**/.env.*", "**/*.pem", "**/*.key", "**/*.p12", "**/*.pfx", "**/id_rsa*",
		"**/id_ed25519*", "**/.netrc", "**/.git-credentials")},
	{RuleLockfile, "lockfiles may change only when the repository policy sets fix.allowLockfiles", mustGlobs(
		"**/package-lock.json", "**/npm-shrinkwrap.json", "**/pnpm-lock.yaml", "**/yarn.lock", "**/bun.lock",
		"**/bun.lockb", "**/poetry.lock", "**/Pipfile.lock", "**/uv.lock", "**/Cargo.lock", "**/go.sum",
		"**/composer.lock", "**/Gemfile.lock")},
}

func mustGlobs(srcs ...string) []*glob {
	out := make([]*glob, len(srcs))
	for i, s := range srcs {
		g, err := compileGlob(s)
		if err != nil {
			panic(err)
		}
		out[i] = g
	}
	return out
}
