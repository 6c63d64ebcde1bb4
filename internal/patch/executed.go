package patch

import (
	"strings"
)

// ExecutedPath is a change to a file that a build, test or CI system
// executes or reads as instructions, with the reason, for the approval
// preview to highlight (spec FX6, FX15): bot branches run CI with the
// repository's secrets.
type ExecutedPath struct {
	Path      string    `json:"path"`
	Operation Operation `json:"operation"`
	Reason    string    `json:"reason"`
}

type executedRule struct {
	globs  []*glob
	reason string
}

// executedRules are matched in order against the folded path (whole path,
// or a directory of it); the first match gives the reason. The list is
// deliberately broad: a false highlight costs a glance, a missed one can
// cost CI secrets.
var executedRules = []executedRule{
	{mustGlobs("**/package.json"), "package.json: npm/yarn/pnpm run its scripts (install, test, build lifecycle hooks)"},
	{mustGlobs("**/Makefile", "**/makefile", "**/GNUmakefile", "**/*.mk", "**/justfile", "**/Taskfile.yml", "**/Taskfile.yaml", "**/Rakefile", "**/*.rake"),
		"build recipe: make/just/task/rake run its commands"},
	{mustGlobs("**/Dockerfile", "**/Dockerfile.*", "**/*.Dockerfile", "**/*.dockerfile", "**/Containerfile", "**/Containerfile.*", "**/.dockerignore"),
		"container build: its RUN steps execute during image builds"},
	{mustGlobs("**/docker-compose*.yml", "**/docker-compose*.yaml", "**/compose.yml", "**/compose.yaml", "**/compose.*.yml", "**/compose.*.yaml"),
		"compose file: chooses the images and commands CI starts"},
	{mustGlobs("scripts/**", "script/**", "bin/**", "tools/**", "ci/**", "hack/**", "**/*.sh", "**/*.bash", "**/*.zsh", "**/*.ps1", "**/*.bat", "**/*.cmd", "**/.envrc"),
		"script: CI and developers run scripts from here"},
	{mustGlobs("**/setup.py", "**/setup.cfg", "**/pyproject.toml", "**/conftest.py", "**/tox.ini", "**/noxfile.py", "**/pytest.ini", "**/manage.py",
		"**/requirements*.txt", "**/Pipfile"), "Python build/test configuration: executed or read by pip, pytest, tox or nox"},
	{mustGlobs("**/go.mod", "**/go.work"), "go.mod/go.work: selects the Go toolchain (downloaded and run) and dependencies"},
	{mustGlobs("**/build.rs", "**/Cargo.toml", "**/.cargo/**"), "Cargo build script or manifest: build.rs runs on every build"},
	{mustGlobs("**/build.gradle", "**/build.gradle.kts", "**/settings.gradle", "**/settings.gradle.kts", "**/gradle.properties",
		"**/gradlew", "**/gradlew.bat", "**/gradle/**", "**/pom.xml", "**/mvnw", "**/mvnw.cmd", "**/.mvn/**", "**/build.xml", "**/build.sbt"),
		"JVM build: Gradle/Maven/Ant/sbt files execute during the build"},
	{mustGlobs("**/Gemfile", "**/*.gemspec", "**/Guardfile", "**/composer.json"), "Ruby/PHP manifest: Bundler evaluates it as code, Composer runs its scripts"},
	{mustGlobs("**/CMakeLists.txt", "**/*.cmake", "**/meson.build", "**/BUILD", "**/BUILD.bazel", "**/WORKSPACE", "**/WORKSPACE.bazel",
		"**/MODULE.bazel", "**/*.bzl", "**/SConstruct", "**/SConscript", "**/configure", "**/configure.ac", "**/Makefile.am", "**/Makefile.in"),
		"native build configuration: executed by the build system"},
	{mustGlobs("**/jest.config.*", "**/vitest.config.*", "**/vitest.workspace.*", "**/vite.config.*", "**/webpack.config.*", "**/rollup.config.*",
		"**/babel.config.*", "**/.babelrc.js", "**/karma.conf.*", "**/playwright.config.*", "**/cypress.config.*", "**/eslint.config.*",
		"**/.eslintrc.js", "**/.eslintrc.cjs", "**/prettier.config.*", "**/.prettierrc.js", "**/next.config.*", "**/nuxt.config.*",
		"**/svelte.config.*", "**/astro.config.*", "**/tsup.config.*", "**/esbuild.config.*", "**/gulpfile.*", "**/Gruntfile.*", "**/.mocharc.*"),
		"JavaScript tool configuration: loaded as code by the test runner, bundler or linter"},
	{mustGlobs("**/*_test.go", "**/testdata/**"), "Go test: go test compiles and runs it"},
	{mustGlobs("**/*.test.*", "**/*.spec.*", "**/test_*.py", "**/*_test.py", "**/*_spec.rb", "**/*Test.java", "**/*Tests.java", "**/*Test.kt"),
		"test file: the test command runs it"},
	{mustGlobs("**/test/**", "**/tests/**", "**/__tests__/**", "**/spec/**", "**/e2e/**", "**/__mocks__/**", "**/fixtures/**"),
		"test directory: the test command loads what is here"},
}

// goGenerateDirective makes any Go file executed by `go generate`.
const goGenerateDirective = "//go:generate"

// ExecutedPaths returns the changes that touch files build or test systems
// execute, each with the first reason that applies, in patch order. A Go
// file whose new content has a //go:generate directive is included too.
func ExecutedPaths(changes []FixFileChange) []ExecutedPath {
	var out []ExecutedPath
	for _, c := range changes {
		n, err := NormalizePath(c.Path)
		if err != nil {
			out = append(out, ExecutedPath{Path: c.Path, Operation: c.Operation, Reason: "invalid path: " + err.Error()})
			continue
		}
		if r := executedReason(n, c.NewContent); r != "" {
			out = append(out, ExecutedPath{Path: c.Path, Operation: c.Operation, Reason: r})
		}
	}
	return out
}

func executedReason(n, content string) string {
	segs := strings.Split(foldPath(n), "/")
	for _, r := range executedRules {
		for _, g := range r.globs {
			if g.matchOrAncestor(segs) {
				return r.reason
			}
		}
	}
	if strings.HasSuffix(segs[len(segs)-1], ".go") && strings.Contains(content, goGenerateDirective) {
		return "Go file with a //go:generate directive: go generate runs it"
	}
	return ""
}
