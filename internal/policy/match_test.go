package policy

import (
	"strings"
	"testing"
)

func TestMatchPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pat, name string
		want      bool
	}{
		{"README.md", "README.md", true},
		{"README.md", "readme.MD", true}, // case-insensitive, as §6
		{"README.md", "docs/README.md", false},
		{"*.md", "README.md", true},
		{"*.md", "docs/README.md", false}, // anchored at the root
		{"**/*.md", "README.md", true},
		{"**/*.md", "docs/a/README.md", true},
		{"docs/**", "docs/a/b.txt", true},
		{"docs/**", "docs", true},
		{"docs/**", "docsx/a", false},
		{"src/**/test_*.py", "src/test_a.py", true},
		{"src/**/test_*.py", "src/x/y/test_a.py", true},
		{"src/**/test_*.py", "lib/src/test_a.py", false},
		{"a?c", "abc", true},
		{"a?c", "a/c", false},
		{"a?c", "abbc", false},
		{"*", "a/b", false},
		{"**", "a/b", true},
		{"**/**/x", "x", true},
		{"migrations/*", "migrations/001.sql", true},
		{"migrations/*", "migrations/old/001.sql", false},
		// Invalid patterns match nothing.
		{"/etc/**", "etc/passwd", false},
		{"[a].go", "a.go", false},
		{"src/**.go", "src/a.go", false},
		{"../x", "x", false},
		{"", "", false},
	}
	for _, tt := range tests {
		if got := MatchPath(tt.pat, tt.name); got != tt.want {
			t.Errorf("MatchPath(%q, %q) = %v, want %v", tt.pat, tt.name, got, tt.want)
		}
	}
}

func TestMatchPathIsNotExponential(t *testing.T) {
	t.Parallel()
	// 100 alternating ** segments against a deep path that almost matches:
	// naive backtracking would not finish.
	pat := strings.Repeat("**/a/", 100) + "b"
	if len(pat) > MaxPatternBytes {
		t.Fatal("pattern too long for the test's purpose")
	}
	name := strings.Repeat("a/", 500) + "c"
	if MatchPath(pat, name) {
		t.Error("matched")
	}
	if !MatchPath(pat, strings.Repeat("a/", 500)+"b") {
		t.Error("did not match")
	}
}
