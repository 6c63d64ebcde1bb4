// SPDX-License-Identifier: Apache-2.0

package rules

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// precisionDir holds ordinary application code written the safe way, in
// every framework the pack knows (testdata/precision/README.md).
const precisionDir = "testdata/precision"

// astGrepScan runs `ast-grep scan` with the pack on dir (relative to this
// directory) and returns the rule id and place of every finding. It uses the
// same ast-grep as astGrep: $QUAVON_TEST_AST_GREP or the scanners image.
func astGrepScan(tb testing.TB, dir string) []string {
	tb.Helper()
	wd, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	args := []string{"scan", "-c", "ast-grep/sgconfig.yml", "--json=stream", "--color", "never", dir}
	ctx, cancel := context.WithTimeout(context.Background(), astGrepTimeout)
	defer cancel()
	var cmd *exec.Cmd
	if bin := os.Getenv("QUAVON_TEST_AST_GREP"); bin != "" {
		cmd = exec.CommandContext(ctx, bin, args...)
		cmd.Dir = wd
	} else {
		image := scannersImage(tb)
		dargs := []string{"run", "--rm", "--network", "none", "--read-only",
			"-v", wd + ":/rules:ro", "--tmpfs", "/tmp", "-w", "/rules",
			"--entrypoint", imageAstGrep, image}
		cmd = exec.CommandContext(ctx, "docker", append(dargs, args...)...)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ctx.Err() != nil {
		tb.Fatalf("%s: %v", cmd, ctx.Err())
	}
	// Exit 1 means an error-severity rule matched: a successful scan.
	var exitErr *exec.ExitError
	if err != nil && !(errors.As(err, &exitErr) && exitErr.ExitCode() == 1) {
		tb.Fatalf("ast-grep scan: %v\n%s", err, stderr.String())
	}
	var found []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var m struct {
			RuleID string `json:"ruleId"`
			File   string `json:"file"`
			Lines  string `json:"lines"`
			Range  struct {
				Start struct{ Line int } `json:"start"`
			} `json:"range"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			tb.Fatalf("ast-grep scan output: %v: %q", err, sc.Text())
		}
		found = append(found, m.RuleID+" at "+m.File+":"+strconv.Itoa(m.Range.Start.Line+1)+": "+strings.TrimSpace(m.Lines))
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return found
}

// The pack must stay quiet on safe code: every finding there is a false
// alarm that a maintainer would have to dismiss.
func TestPackIsQuietOnSafeCode(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(precisionDir, "*", "*"))
	if err != nil || len(files) < 8 {
		t.Fatalf("%s: %d files (%v), want the safe corpus", precisionDir, len(files), err)
	}
	for _, f := range astGrepScan(t, precisionDir) {
		t.Errorf("false alarm: %s", f)
	}
}

// The shared blocks of the request-data rules (rules/README.md, "Following
// request data") are repeated in every rule that uses them; a block edited
// in one rule only would make rules of the same language disagree about
// what request data is.
func TestSharedBlocksAgree(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("ast-grep", "rules", "*", "*.yml"))
	if err != nil {
		t.Fatal(err)
	}
	type block struct{ text, file string }
	first := map[string]block{} // by language directory and first line
	uses := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		for i := 0; i < len(lines); i++ {
			if !strings.HasPrefix(lines[i], "  # ---- ") || strings.HasPrefix(lines[i], "  # ---- end of the ") {
				continue
			}
			if i > 0 && strings.HasPrefix(lines[i-1], "  # ---- ") {
				continue // the second line of a block's header
			}
			j := i
			for j < len(lines) && !strings.HasPrefix(lines[j], "  # ---- end of the ") {
				j++
			}
			if j == len(lines) {
				t.Errorf("%s:%d: block %q has no end marker", f, i+1, lines[i])
				break
			}
			key := filepath.Base(filepath.Dir(f)) + "\x00" + lines[i]
			text := strings.Join(lines[i:j+1], "\n")
			uses++
			if b, ok := first[key]; !ok {
				first[key] = block{text, f}
			} else if b.text != text {
				t.Errorf("%s: block %q differs from the one in %s; copy it again", f, lines[i], b.file)
			}
			i = j
		}
	}
	if uses < 40 {
		t.Errorf("%d uses of shared blocks, want the request-data rules' blocks", uses)
	}
}

// TypeScript rules that differ from their JavaScript twins on purpose
// (TypeScript casts, JSX left to the Tsx rules).
var tsOwnRules = map[string]bool{"open-redirect.yml": true, "dom-html-injection.yml": true}

// The TypeScript rules are the JavaScript ones, with the TypeScript blocks
// in the request-data rules (README, "Following request data"); keep them
// equal beyond id, language and blocks. (The Tsx copies are checked by
// TestTsxRulesMirrorTypeScript.)
func TestTypeScriptRulesMirrorJavaScript(t *testing.T) {
	t.Parallel()
	ts, err := filepath.Glob(filepath.Join("ast-grep", "rules", "typescript", "*.yml"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range ts {
		tsText, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if tsOwnRules[filepath.Base(f)] {
			continue
		}
		jsText, err := os.ReadFile(filepath.Join("ast-grep", "rules", "javascript", filepath.Base(f)))
		if err != nil {
			t.Errorf("%s has no JavaScript twin: %v", f, err)
			continue
		}
		n++
		if got, want := withoutBlocks(string(tsText), "typescript", "TypeScript"), withoutBlocks(string(jsText), "javascript", "JavaScript"); got != want {
			t.Errorf("%s differs from its JavaScript twin beyond id, language and shared blocks; copy it again", f)
		}
	}
	if n < 30 {
		t.Errorf("%d TypeScript rules with a JavaScript twin, want the framework rules", n)
	}
}

// withoutBlocks drops the shared blocks and normalises id and language.
func withoutBlocks(text, dir, lang string) string {
	text = strings.Replace(text, "\nid: quavon-"+dir+"-", "\nid: quavon-X-", 1)
	text = strings.Replace(text, "\nlanguage: "+lang+"\n", "\nlanguage: X\n", 1)
	var out []string
	in := false
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "  # ---- end of the "):
			in = false
			out = append(out, "  # (block)")
		case in:
		case strings.HasPrefix(line, "  # ---- "):
			in = true
		default:
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
