package deptest

import (
	"strings"
	"testing"
)

// TestRulesCatchAForbiddenImport: a program that links the writer (and
// through it the GitHub client) is caught by the rules of every binary
// that may not write, with the rule's reason; the publisher's rules let it
// through.
func TestRulesCatchAForbiddenImport(t *testing.T) {
	t.Parallel()
	deps := List(t, "./testdata/linkswriter")
	got := Violations(deps, All(AppKeys, Writes, Models))
	if len(got) != 1 || !strings.Contains(got[0], "internal/github/writer: GitHub write methods: only quavon-publisher") {
		t.Errorf("violations %q", got)
	}
	if got := Violations(deps, CodeHost); len(got) == 0 {
		t.Error("the sandbox zone's rules let a GitHub client through")
	}
	if got := Violations(deps, All(AppKeys, Models, Containers, Runner, Entry)); len(got) != 0 {
		t.Errorf("the publisher's rules refuse the writer: %q", got)
	}
}

func TestRuleMatches(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pattern, pkg string
		want         bool
	}{
		{"a/b/...", "a/b", true},
		{"a/b/...", "a/b/c", true},
		{"a/b/...", "a/bc", false},
		{"a/b", "a/b", true},
		{"a/b", "a/b/c", false},
		{"k8s.io/...", "k8s.io/client-go/kubernetes", true},
	} {
		if got := (Rule{Pattern: c.pattern}).matches(c.pkg); got != c.want {
			t.Errorf("%s matches %s = %v", c.pattern, c.pkg, got)
		}
	}
}
