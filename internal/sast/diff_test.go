package sast

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestParseUnifiedDiffGit reads real `git diff -U0 --no-color --no-ext-diff
// --no-renames` output (git 2.39; testdata/README.md): quoted paths with
// \t and octal escapes, a path with a space (git appends a tab), a binary
// file, a deletion, a new file, "\ No newline at end of file" and a
// removed line that starts with "--".
func TestParseUnifiedDiffGit(t *testing.T) {
	t.Parallel()
	f, err := os.Open(filepath.Join("testdata", "diff", "git.diff"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ParseUnifiedDiff(f, DiffLimits{})
	if err != nil {
		t.Fatal(err)
	}
	want := ChangedLines{
		"a\tb.go":   {{2, 2}},
		"new.go":    {{1, 1}},
		"nonl.go":   {{2, 3}},
		"sp ace.go": {{2, 2}, {4, 4}},
		"ä.go":      {{2, 2}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
}

func TestParseUnifiedDiff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		diff string
		want ChangedLines
	}{
		{"omitted counts", "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -3 +3 @@\n-a\n+b\n", ChangedLines{"x": {{3, 3}}}},
		{"pure deletion", "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -3,2 +2,0 @@\n-a\n-b\n", ChangedLines{}},
		{"adjacent hunks merge", "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,0 +2,2 @@\n+a\n+b\n@@ -5 +4 @@\n-c\n+d\n@@ -9 +9,0 @@\n-e\n",
			ChangedLines{"x": {{2, 4}}}},
		{"context lines are counted, not recorded", "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,3 +1,4 @@\n a\n-b\n+B\n+C\n c\n",
			ChangedLines{"x": {{2, 3}}}},
		{"+++ and --- inside a hunk", "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n--- a\n+++ b\n",
			ChangedLines{"x": {{1, 1}}}},
		{"quoted with escapes", "diff --git \"a/q\\\"\\\\\\303\\244\" \"b/q\\\"\\\\\\303\\244\"\n--- \"a/q\\\"\\\\\\303\\244\"\n+++ \"b/q\\\"\\\\\\303\\244\"\n@@ -0,0 +1 @@\n+x\n",
			ChangedLines{"q\"\\ä": {{1, 1}}}},
		{"mode change only", "diff --git a/x b/x\nold mode 100644\nnew mode 100755\n", ChangedLines{}},
		{"empty", "", ChangedLines{}},
		{"CRLF content", "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -0,0 +1,2 @@\n+a\r\n+b\r\n", ChangedLines{"x": {{1, 2}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseUnifiedDiff(strings.NewReader(tt.diff), DiffLimits{})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestParseUnifiedDiffErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, diff string }{
		{"truncated hunk", "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n+b\n"},
		{"body longer than header", "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n+c\n"},
		{"hunk before +++", "diff --git a/x b/x\n@@ -1 +1 @@\n-a\n+b\n"},
		{"dot-dot path", "diff --git a/x b/x\n--- a/x\n+++ b/../x\n@@ -0,0 +1 @@\n+a\n"},
		{"absolute path", "diff --git a/x b/x\n--- a/x\n+++ /etc/x\n@@ -0,0 +1 @@\n+a\n"},
		{"unclean path", "diff --git a/x b/x\n--- a/x\n+++ b/a//x\n@@ -0,0 +1 @@\n+a\n"},
		{"bad escape", "diff --git a/x b/x\n--- a/x\n+++ \"b/\\q\"\n@@ -0,0 +1 @@\n+a\n"},
		{"bad header", "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -a +1 @@\n+a\n"},
		{"added to /dev/null", "diff --git a/x b/x\n--- a/x\n+++ /dev/null\n@@ -0,0 +1 @@\n+a\n"},
		{"combined", "diff --cc x\n@@@ -1 -1 +1 @@@\n"},
		{"garbage in body", "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n?a\n"},
	}
	for _, tt := range tests {
		if got, err := ParseUnifiedDiff(strings.NewReader(tt.diff), DiffLimits{}); err == nil {
			t.Errorf("%s: no error, got %v", tt.name, got)
		}
	}
}

func TestParseUnifiedDiffLimits(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for _, name := range []string{"a", "b", "c"} {
		b.WriteString("diff --git a/" + name + " b/" + name + "\n--- a/" + name + "\n+++ b/" + name + "\n@@ -0,0 +1 @@\n+x\n@@ -1,0 +3 @@\n+y\n")
	}
	diff := b.String()
	for _, lim := range []DiffLimits{{MaxBytes: int64(len(diff) - 1)}, {MaxFiles: 2}, {MaxHunks: 5}} {
		if _, err := ParseUnifiedDiff(strings.NewReader(diff), lim); !errors.Is(err, ErrDiffTooLarge) {
			t.Errorf("%+v: err %v, want ErrDiffTooLarge", lim, err)
		}
	}
	got, err := ParseUnifiedDiff(strings.NewReader(diff), DiffLimits{MaxBytes: int64(len(diff)), MaxFiles: 3, MaxHunks: 6})
	if err != nil || len(got) != 3 {
		t.Fatalf("at the limits: %v %v", got, err)
	}
	// A very long line does not need a buffer of its size.
	long := "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -0,0 +1 @@\n+" + strings.Repeat("y", 1<<20) + "\n"
	if got, err := ParseUnifiedDiff(strings.NewReader(long), DiffLimits{}); err != nil || !reflect.DeepEqual(got, ChangedLines{"x": {{1, 1}}}) {
		t.Fatalf("long line: %v %v", got, err)
	}
}

func TestChangedLinesContains(t *testing.T) {
	t.Parallel()
	c := ChangedLines{"x": {{10, 12}, {30, 30}}}
	tests := []struct {
		path            string
		start, end, ctx int
		want            bool
	}{
		{"x", 10, 10, 0, true},
		{"x", 12, 12, 0, true},
		{"x", 13, 13, 0, false},
		{"x", 13, 13, 1, true},
		{"x", 7, 7, 3, true},
		{"x", 6, 6, 3, false},
		{"x", 1, 40, 0, true}, // a multi-line finding spanning a change
		{"x", 31, 33, 0, false},
		{"x", 33, 35, 3, true},
		{"y", 10, 10, 100, false},
	}
	for _, tt := range tests {
		if got := c.Contains(tt.path, tt.start, tt.end, tt.ctx); got != tt.want {
			t.Errorf("Contains(%s, %d, %d, %d) = %v", tt.path, tt.start, tt.end, tt.ctx, got)
		}
	}
}
