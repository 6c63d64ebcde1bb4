package fixjob

import (
	"testing"

	"github.com/quavon/quavon/internal/gitrepo"
)

func TestImageClassOf(t *testing.T) {
	file := gitrepo.Entry{Mode: gitrepo.ModeFile, BlobSHA: "0123456789012345678901234567890123456789", Size: 1}
	for _, c := range []struct {
		files []string
		want  string
	}{
		{[]string{"go.mod", "package.json"}, "go"},
		{[]string{"package.json", "requirements.txt"}, "node"},
		{[]string{"pyproject.toml"}, "python"},
		{[]string{"setup.py"}, "python"},
		{[]string{"requirements.txt"}, "python"},
		{[]string{"sub/go.mod", "README.md"}, ""},
		{nil, ""},
	} {
		tree := &gitrepo.Tree{Entries: map[string]gitrepo.Entry{}}
		for _, f := range c.files {
			tree.Entries[f] = file
		}
		if got := ImageClassOf(tree); got != c.want {
			t.Errorf("%v: %q, want %q", c.files, got, c.want)
		}
	}
	// A submodule named go.mod is no build file.
	tree := &gitrepo.Tree{Entries: map[string]gitrepo.Entry{"go.mod": {Mode: gitrepo.ModeGitlink, BlobSHA: file.BlobSHA}}}
	if got := ImageClassOf(tree); got != "" {
		t.Errorf("gitlink: %q", got)
	}
}
