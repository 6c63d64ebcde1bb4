package sast

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// ESLint runs as `node [--jitless] <Quavon's ESLint program>`: the
// interpreter alone for a small change, V8's JIT for a large one.
func TestESLintRunsJitlessOnSmallChanges(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	bin := filepath.Join(top, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "node"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	w := &Workspace{Path: bin, Opt: filepath.Join(top, "opt"), Out: filepath.Join(top, "out"), Changed: filepath.Join(top, "changed")}
	targets := func(n int) []Target {
		var out []Target
		for i := range n {
			out = append(out, Target{Index: i, Neutral: fmt.Sprintf("%d/f.js", i)})
		}
		return out
	}
	for _, c := range []struct {
		files   int
		jitless bool
	}{{1, true}, {eslintJitlessMaxFiles, true}, {eslintJitlessMaxFiles + 1, false}} {
		inv, err := invokeESLint(w, targets(c.files))
		if err != nil {
			t.Fatal(err)
		}
		argv := inv.Cmds[0].Argv
		if argv[0] != filepath.Join(bin, "node") {
			t.Errorf("%d files: runs %s, want node", c.files, argv[0])
		}
		at := 1
		if c.jitless {
			if argv[1] != "--jitless" {
				t.Errorf("%d files: %v, want --jitless", c.files, argv[:3])
			}
			at = 2
		} else if slices.Contains(argv, "--jitless") {
			t.Errorf("%d files: --jitless", c.files)
		}
		if want := filepath.Join(w.Opt, "eslint", "lint.bundle.mjs"); argv[at] != want {
			t.Errorf("%d files: program %s, want %s", c.files, argv[at], want)
		}
		if want := []string{"-o", w.OutPath(ToolESLint), "--"}; !slices.Equal(argv[at+1:at+4], want) {
			t.Errorf("%d files: %v, want %v after the program", c.files, argv[at+1:at+4], want)
		}
		if got := len(argv) - slices.Index(argv, "--") - 1; got != c.files {
			t.Errorf("%d files given, want %d", got, c.files)
		}
	}
}
