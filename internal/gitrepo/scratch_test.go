package gitrepo

import (
	"context"
	"testing"
)

func TestNewScratch(t *testing.T) {
	ctx := context.Background()
	r, commits, err := NewScratch(ctx, t.TempDir(), DefaultLimits,
		map[string]string{"a.txt": "one\n", "d/b.txt": "gone\n"},
		map[string]string{"a.txt": "two\n", "d/c.txt": "new\n"})
	if err != nil {
		t.Fatal(err)
	}
	if len(commits) != 2 || commits[0] == commits[1] {
		t.Fatalf("commits %v", commits)
	}
	changes, err := r.ChangedFiles(ctx, commits[0], commits[1])
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 3 {
		t.Errorf("changes %+v: want a.txt modified, d/b.txt deleted, d/c.txt added", changes)
	}
	tree, err := r.Tree(ctx, commits[1])
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tree.Entries["d/b.txt"]; ok || len(tree.Entries) != 2 {
		t.Errorf("head tree %v", tree.Entries)
	}
	for _, bad := range []string{"../x", "/etc/x", ".git/config", ".git"} {
		if _, _, err := NewScratch(ctx, t.TempDir(), DefaultLimits, map[string]string{bad: "x"}); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}
