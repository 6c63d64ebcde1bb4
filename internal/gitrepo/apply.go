package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
)

// Apply applies a unified diff to the work tree of a local repository with
// git apply, after git apply --check: all of it or nothing. It refuses a
// bare repository. quavon fix --apply is its one caller, after the patch
// passed patch.ValidatePatch.
func (r *Repo) Apply(ctx context.Context, diff string) error {
	if r.r.workTree == "" {
		return errors.New("gitrepo.Apply: no work tree")
	}
	for _, args := range [][]string{{"apply", "--check", "-"}, {"apply", "-"}} {
		c := r.r.command(ctx, nil, args...)
		c.Dir = r.r.workTree
		c.Stdin = strings.NewReader(diff)
		var stderr bytes.Buffer
		c.Stderr = &capWriter{w: &stderr, n: 4096}
		if err := c.Run(); err != nil {
			return fmt.Errorf("gitrepo.Apply: git %s: %w: %s", strings.Join(args[:len(args)-1], " "), err, strings.TrimSpace(stderr.String()))
		}
	}
	return nil
}
