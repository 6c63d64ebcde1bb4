// SPDX-License-Identifier: Apache-2.0

package rules

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const eslintDialects = "testdata/eslint"

type eslintResult struct {
	FilePath string `json:"filePath"`
	Messages []struct {
		RuleID  *string `json:"ruleId"`
		Fatal   bool    `json:"fatal"`
		Message string  `json:"message"`
		Line    int     `json:"line"`
	} `json:"messages"`
}

// runESLint lints files (relative to eslintDialects) with this directory's
// ESLint config, the way the driver does. It uses the node_modules of
// $QUAVON_TEST_ESLINT_MODULES when set (a host install of the scanners
// image's package.json), otherwise the scanners image with this config
// mounted over the image's own.
func runESLint(tb testing.TB, files []string) []eslintResult {
	tb.Helper()
	wd, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), astGrepTimeout)
	defer cancel()
	flags := []string{"--no-config-lookup", "--no-inline-config", "--no-warn-ignored", "-f", "json"}
	var cmd *exec.Cmd
	if modules := os.Getenv("QUAVON_TEST_ESLINT_MODULES"); modules != "" {
		// The config resolves its packages from ../node_modules.
		opt := tb.TempDir()
		if err := os.CopyFS(filepath.Join(opt, "eslint"), os.DirFS("eslint")); err != nil {
			tb.Fatal(err)
		}
		if err := os.Symlink(modules, filepath.Join(opt, "node_modules")); err != nil {
			tb.Fatal(err)
		}
		args := append([]string{filepath.Join(modules, "eslint", "bin", "eslint.js")}, flags...)
		args = append(args, "-c", filepath.Join(opt, "eslint", "security.config.js"), "--")
		cmd = exec.CommandContext(ctx, "node", append(args, files...)...)
		cmd.Dir = filepath.Join(wd, eslintDialects)
	} else {
		image := scannersImage(tb)
		args := []string{"run", "--rm", "--network", "none", "--read-only", "--tmpfs", "/tmp",
			"-v", filepath.Join(wd, "eslint") + ":/opt/quavon/eslint:ro",
			"-v", filepath.Join(wd, eslintDialects) + ":/src:ro", "-w", "/src",
			"--entrypoint", "/opt/quavon/tools/bin/eslint", image}
		args = append(args, flags...)
		args = append(args, "-c", "/opt/quavon/eslint/security.config.js", "--")
		cmd = exec.CommandContext(ctx, "docker", append(args, files...)...)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ctx.Err() != nil {
		tb.Fatalf("%s: %v", cmd, ctx.Err())
	}
	// ESLint exits 1 when a rule reported an error; 2 is a crash.
	var exitErr *exec.ExitError
	if err != nil && !(errors.As(err, &exitErr) && exitErr.ExitCode() == 1) {
		tb.Fatalf("eslint: %v\n%s", err, stderr.String())
	}
	var results []eslintResult
	if err := json.Unmarshal(out, &results); err != nil {
		tb.Fatalf("eslint output: %v\n%s", err, out)
	}
	return results
}

// Code in the wild mixes ES modules, sloppy-mode CommonJS, JSX in .js files,
// decorators and TypeScript; a file ESLint cannot parse gets no findings, so
// the setup must parse all of them, and still report the one file that is
// not JavaScript at all.
func TestESLintParsesCommonDialects(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir(eslintDialects)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		if ext := filepath.Ext(e.Name()); ext != ".md" {
			files = append(files, e.Name())
		}
	}
	if len(files) < 20 {
		t.Fatalf("%d dialect samples, want the whole set", len(files))
	}
	results := runESLint(t, files)
	if len(results) != len(files) {
		t.Fatalf("eslint reported %d files, want %d", len(results), len(files))
	}
	for _, r := range results {
		name := filepath.Base(r.FilePath)
		var fatal []string
		var rules []string
		for _, m := range r.Messages {
			if m.Fatal || m.RuleID == nil {
				fatal = append(fatal, m.Message)
			} else {
				rules = append(rules, *m.RuleID)
			}
		}
		switch {
		case name == "broken.js":
			if len(fatal) != 1 || !strings.Contains(fatal[0], "as an ES module, as a CommonJS script, with the TypeScript parser") {
				t.Errorf("%s: parse errors %q, want one that names the three attempts", name, fatal)
			}
		case len(fatal) > 0:
			t.Errorf("%s: not parsed: %q", name, fatal)
		case strings.HasSuffix(name, "-findings.js"):
			if !slices.Contains(rules, "no-eval") || !slices.Contains(rules, "security/detect-eval-with-expression") {
				t.Errorf("%s: findings %q, want no-eval and security/detect-eval-with-expression", name, rules)
			}
		}
	}
}

// The driver runs lint.mjs (ESLint's Node.js API with security.config.js
// imported) as the scanners image's lint.bundle.mjs, not ESLint's command
// line: on every dialect sample, README.md included (a file no config entry
// matches), broken.js (a parse error) and the TypeScript files (the parser
// loaded on first use from outside the bundle), the bundle, with and without
// V8's JIT, and this directory's lint.mjs unbundled must write the command
// line's report byte for byte and exit as it does.
func TestESLintProgramMatchesCommandLine(t *testing.T) {
	t.Parallel()
	image := scannersImage(t)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(eslintDialects)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	// Each run prints its exit status, then its report, on one line each.
	script := `set -u
run() { rc=0; "$@" >/dev/null 2>/tmp/err || rc=$?; echo "$rc"; cat /tmp/o || true; echo; rm -f /tmp/o; }
eslint --no-config-lookup --no-inline-config -c /opt/quavon/eslint/security.config.js -f json -o /tmp/o -- "$@"
rc=$?; echo "$rc"; cat /tmp/o; echo; rm -f /tmp/o
run node --jitless /opt/quavon/eslint/lint.bundle.mjs -o /tmp/o -- "$@"
run node /opt/quavon/eslint/lint.bundle.mjs -o /tmp/o -- "$@"
run node /opt/quavon/src-eslint/lint.mjs -o /tmp/o -- "$@"
`
	ctx, cancel := context.WithTimeout(context.Background(), astGrepTimeout)
	defer cancel()
	args := []string{"run", "--rm", "--network", "none", "--read-only", "--tmpfs", "/tmp",
		"-v", filepath.Join(wd, "eslint") + ":/opt/quavon/src-eslint:ro",
		"-v", filepath.Join(wd, eslintDialects) + ":/src:ro", "-w", "/src",
		"--entrypoint", "/bin/sh", image, "-c", script, "sh"}
	cmd := exec.CommandContext(ctx, "docker", append(args, files...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	names := []string{"eslint (command line)", "lint.bundle.mjs --jitless", "lint.bundle.mjs", "lint.mjs"}
	if len(lines) != 2*len(names) {
		t.Fatalf("%d lines of output, want %d:\n%s", len(lines), 2*len(names), out)
	}
	wantRC, want := lines[0], lines[1]
	if wantRC != "1" {
		t.Fatalf("eslint exited %s, want 1 (findings and a parse error)", wantRC)
	}
	var results []eslintResult
	if err := json.Unmarshal([]byte(want), &results); err != nil || len(results) != len(files) {
		t.Fatalf("eslint's report (%v): %d files, want %d", err, len(results), len(files))
	}
	for i, name := range names[1:] {
		rc, got := lines[2*(i+1)], lines[2*(i+1)+1]
		if rc != wantRC {
			t.Errorf("%s exited %s, want %s", name, rc, wantRC)
		}
		if got != want {
			at := 0
			for at < len(got) && at < len(want) && got[at] == want[at] {
				at++
			}
			from := max(0, at-300)
			t.Errorf("%s wrote a different report; from byte %d:\n%.800s\nwant:\n%.800s", name, from, got[from:], want[from:])
		}
	}
}
