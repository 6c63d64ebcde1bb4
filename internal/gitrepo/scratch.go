package gitrepo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// NewScratch makes a new local repository in the empty directory dir with
// one commit per tree, each tree the whole repository at that commit (by
// slash path), and opens it. It returns the commit ids in order. It is for
// repositories Quavon builds itself (the review tasks of `quavon eval`);
// the paths must be valid repository paths (ValidName).
func NewScratch(ctx context.Context, dir string, lim Limits, trees ...map[string]string) (*Repo, []string, error) {
	home, err := emptyHome()
	if err != nil {
		return nil, nil, err
	}
	init := runner{dir: dir, home: home}
	if _, err := init.out(ctx, 4096, nil, "init", "-q", "-b", "main"); err != nil {
		return nil, nil, fmt.Errorf("gitrepo.NewScratch: %w", err)
	}
	r := &Repo{r: runner{gitDir: filepath.Join(dir, ".git"), workTree: dir, home: home}, lim: lim}
	ident := []string{"GIT_AUTHOR_NAME=quavon", "GIT_AUTHOR_EMAIL=quavon@localhost", "GIT_COMMITTER_NAME=quavon",
		"GIT_COMMITTER_EMAIL=quavon@localhost", "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z"}
	var commits []string
	for i, tree := range trees {
		if _, err := r.r.out(ctx, 1<<20, nil, "rm", "-r", "-q", "--cached", "--ignore-unmatch", "."); err != nil {
			return nil, nil, fmt.Errorf("gitrepo.NewScratch: %w", err)
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, nil, err
		}
		for _, e := range ents {
			if e.Name() != ".git" {
				if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
					return nil, nil, err
				}
			}
		}
		for p, c := range tree {
			if !ValidName(p) || !filepath.IsLocal(filepath.FromSlash(p)) || strings.HasPrefix(p, ".git/") || p == ".git" {
				return nil, nil, fmt.Errorf("gitrepo.NewScratch: %q is not a valid repository path", p)
			}
			name := filepath.Join(dir, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
				return nil, nil, err
			}
			if err := os.WriteFile(name, []byte(c), 0o644); err != nil {
				return nil, nil, err
			}
		}
		if _, err := r.r.out(ctx, 1<<20, nil, "add", "-A"); err != nil {
			return nil, nil, fmt.Errorf("gitrepo.NewScratch: %w", err)
		}
		if _, err := r.r.out(ctx, 1<<20, ident, "commit", "-q", "--allow-empty", "--no-verify", "-m", fmt.Sprintf("tree %d", i+1)); err != nil {
			return nil, nil, fmt.Errorf("gitrepo.NewScratch: %w", err)
		}
		id, err := r.ResolveCommit(ctx, "HEAD")
		if err != nil {
			return nil, nil, err
		}
		commits = append(commits, id)
	}
	return r, commits, nil
}
