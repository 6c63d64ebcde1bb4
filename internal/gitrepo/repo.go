package gitrepo

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Limits cap what the readers take from a repository.
type Limits struct {
	// MaxTreeEntries caps one tree listing.
	MaxTreeEntries int
	// MaxBlobBytes caps one blob read.
	MaxBlobBytes int64
	// MaxChangedFiles caps the changed files between two commits.
	MaxChangedFiles int
}

// DefaultLimits suit large repositories: a 200,000-file tree, 64 MiB blobs
// (larger ones are reported, not read), 20,000 changed files.
var DefaultLimits = Limits{MaxTreeEntries: 200_000, MaxBlobBytes: 64 << 20, MaxChangedFiles: 20_000}

// Repo is one git repository: a bare cache of the worker, or a local
// checkout (OpenLocal). Readers may run in parallel.
type Repo struct {
	r   runner
	lim Limits
}

// OpenLocal opens the git repository of the work tree containing dir, for
// `quavon scan`: the same hardened readers, on the repository's objects
// (never its work-tree files). Its own configuration is overridden where it
// matters (hooks, fsmonitor, attributes, filters).
func OpenLocal(ctx context.Context, dir string, lim Limits) (*Repo, error) {
	home, err := emptyHome()
	if err != nil {
		return nil, err
	}
	probe := runner{dir: dir, home: home}
	out, err := probe.out(ctx, 8192, nil, "rev-parse", "--absolute-git-dir", "--show-toplevel")
	if errors.Is(err, ErrNoGit) {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err != nil || len(lines) != 2 {
		return nil, fmt.Errorf("%s is not in a git work tree: %w", dir, ErrNotARepo)
	}
	return &Repo{r: runner{gitDir: lines[0], workTree: lines[1], home: home}, lim: lim}, nil
}

// emptyHome is an empty, read-only directory used as HOME for every git
// command, so no ~/.gitconfig or ~/.config/git is read.
var emptyHome = sync.OnceValues(func() (string, error) {
	d, err := os.MkdirTemp("", "quavon-git-home")
	if err != nil {
		return "", err
	}
	return d, os.Chmod(d, 0o500)
})

// Root is the work tree of a local repository ("" for a bare cache).
func (r *Repo) Root() string { return r.r.workTree }

var revRE = regexp.MustCompile(`^[A-Za-z0-9._/@{}^~:-]{1,250}$`)

// ResolveCommit returns the commit id rev names. rev is a revision, never
// an option (it may not start with "-").
func (r *Repo) ResolveCommit(ctx context.Context, rev string) (string, error) {
	if strings.HasPrefix(rev, "-") || !revRE.MatchString(rev) {
		return "", fmt.Errorf("revision %q: %w", rev, ErrNotFound)
	}
	out, err := r.r.out(ctx, 4096, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("revision %q: %w", rev, ErrNotFound)
	}
	return strings.TrimSpace(string(out)), nil
}

// MergeBase returns the best common ancestor of a and b (commit ids).
func (r *Repo) MergeBase(ctx context.Context, a, b string) (string, error) {
	if !ValidOID(a) || !ValidOID(b) {
		return "", errors.New("gitrepo.MergeBase: want commit ids")
	}
	out, err := r.r.out(ctx, 4096, nil, "merge-base", a, b)
	if err != nil {
		return "", fmt.Errorf("%.12s and %.12s have no merge base: %w", a, b, ErrNotFound)
	}
	return strings.TrimSpace(string(out)), nil
}

// Tree is the recursive listing of one commit.
type Tree struct {
	Commit  string
	Entries map[string]Entry
}

// Tree lists commit recursively with sizes. Symlinks (ModeSymlink) and
// gitlinks (ModeGitlink) are listed with their mode; callers report them
// and never follow them. Names that are not valid UTF-8 are kept as git
// stores them (ValidName tells).
func (r *Repo) Tree(ctx context.Context, commit string) (*Tree, error) {
	if !ValidOID(commit) {
		return nil, errors.New("gitrepo.Tree: want a commit id")
	}
	// ~120 bytes per record is plenty for the cap's purpose.
	out, err := r.r.out(ctx, int64(r.lim.MaxTreeEntries)*(4096+64), nil, "ls-tree", "-r", "-z", "--long", "--full-tree", commit)
	if err != nil {
		return nil, fmt.Errorf("tree of %.12s: %w", commit, err)
	}
	if n := bytes.Count(out, []byte{0}); n > r.lim.MaxTreeEntries {
		return nil, fmt.Errorf("tree of %.12s: %d entries, at most %d: %w", commit, n, r.lim.MaxTreeEntries, ErrTooLarge)
	}
	entries, err := ParseLsTree(out)
	if err != nil {
		return nil, err
	}
	return &Tree{Commit: commit, Entries: entries}, nil
}

// Change is one path that differs between two commits.
type Change struct {
	Path string
	// Status is A (added), M (modified), D (deleted) or T (type changed).
	Status  byte
	OldMode Mode
	NewMode Mode
	OldBlob string // "" when added
	NewBlob string // "" when deleted
}

// ChangedFiles lists what differs between base and head (commit ids), from
// the trees alone: no content diff, so no diff driver, text conversion,
// attribute or binary detection of the repository plays a part. Renames are
// not detected (a rename is a deletion and an addition).
func (r *Repo) ChangedFiles(ctx context.Context, base, head string) ([]Change, error) {
	if !ValidOID(base) || !ValidOID(head) {
		return nil, errors.New("gitrepo.ChangedFiles: want commit ids")
	}
	out, err := r.r.out(ctx, int64(r.lim.MaxChangedFiles)*(4096+128), nil,
		"diff-tree", "-r", "-z", "--raw", "--no-renames", "--no-ext-diff", "--no-textconv", "--full-index", base, head)
	if err != nil {
		return nil, fmt.Errorf("changes %.12s..%.12s: %w", base, head, err)
	}
	var changes []Change
	for len(out) > 0 {
		// ":<old mode> <new mode> <old oid> <new oid> <status>\0<path>\0"
		end := bytes.IndexByte(out, 0)
		if end < 0 {
			return nil, errors.New("gitrepo.ChangedFiles: malformed output")
		}
		meta := strings.Fields(strings.TrimPrefix(string(out[:end]), ":"))
		out = out[end+1:]
		end = bytes.IndexByte(out, 0)
		if end < 0 || len(meta) != 5 {
			return nil, errors.New("gitrepo.ChangedFiles: malformed output")
		}
		path := string(out[:end])
		out = out[end+1:]
		om, err1 := strconv.ParseUint(meta[0], 8, 32)
		nm, err2 := strconv.ParseUint(meta[1], 8, 32)
		if err1 != nil || err2 != nil || len(meta[4]) == 0 {
			return nil, errors.New("gitrepo.ChangedFiles: malformed output")
		}
		c := Change{Path: path, Status: meta[4][0], OldMode: Mode(om), NewMode: Mode(nm), OldBlob: meta[2], NewBlob: meta[3]}
		if strings.Trim(c.OldBlob, "0") == "" {
			c.OldBlob = ""
		}
		if strings.Trim(c.NewBlob, "0") == "" {
			c.NewBlob = ""
		}
		changes = append(changes, c)
		if len(changes) > r.lim.MaxChangedFiles {
			return nil, fmt.Errorf("more than %d changed files: %w", r.lim.MaxChangedFiles, ErrTooLarge)
		}
	}
	return changes, nil
}

func basicAuth(user, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
}

// checkRemote refuses a remote URL that is not http(s), carries
// credentials, or is plain http where not allowed.
func checkRemote(remote string, allowHTTP bool) error {
	u, err := url.Parse(remote)
	if err != nil || u.Host == "" {
		return fmt.Errorf("gitrepo: remote %q: want an https URL", remote)
	}
	if u.User != nil {
		return errors.New("gitrepo: remote URL holds credentials: tokens go through the environment only")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && allowHTTP:
	default:
		return fmt.Errorf("gitrepo: remote %q: only https is allowed", remote)
	}
	return nil
}

// dirSize is the total size of the files under dir.
func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
