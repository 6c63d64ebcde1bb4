package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CacheConfig configures NewCache.
type CacheConfig struct {
	// Dir holds the bare repositories: <Dir>/<tenant>/<host>/<owner>/<name>.git,
	// every directory 0700.
	Dir string
	// MaxBytes caps the cache's disk use; Evict removes the least recently
	// used repositories (none in use) until it holds. 0: no cap.
	MaxBytes int64
	// AllowHTTP lets fetches use plain http (the emulator in tests only).
	AllowHTTP bool
	Limits    Limits
}

// Cache holds the worker's bare repositories.
type Cache struct {
	cfg  CacheConfig
	home string
}

// NewCache creates the cache directory (0700) if needed.
func NewCache(cfg CacheConfig) (*Cache, error) {
	if cfg.Dir == "" || !filepath.IsAbs(cfg.Dir) {
		return nil, errors.New("gitrepo.NewCache: an absolute directory is required")
	}
	if cfg.Limits == (Limits{}) {
		cfg.Limits = DefaultLimits
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chmod(cfg.Dir, 0o700); err != nil {
		return nil, err
	}
	home, err := emptyHome()
	if err != nil {
		return nil, err
	}
	return &Cache{cfg: cfg, home: home}, nil
}

// Dir is the cache's directory.
func (c *Cache) Dir() string { return c.cfg.Dir }

// Key names one repository of one tenant.
type Key struct {
	Tenant string // the tenant id
	Host   string // "github.com" or a GitHub Enterprise host
	Owner  string
	Name   string
}

var (
	tenantRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)
	hostRE   = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?(:[0-9]{1,5})?$`)
	ownerRE  = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$`)
	nameRE   = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)
)

func (k Key) path(dir string) (string, error) {
	host := strings.ToLower(k.Host)
	switch {
	case !tenantRE.MatchString(k.Tenant):
		return "", fmt.Errorf("gitrepo: tenant %q", k.Tenant)
	case !hostRE.MatchString(host) || strings.Contains(host, ".."):
		return "", fmt.Errorf("gitrepo: host %q", k.Host)
	case !ownerRE.MatchString(k.Owner), !nameRE.MatchString(k.Name), k.Name == ".", k.Name == "..":
		return "", fmt.Errorf("gitrepo: repository %q/%q", k.Owner, k.Name)
	}
	// GitHub names are case-insensitive: one directory per repository.
	return filepath.Join(dir, k.Tenant, strings.ReplaceAll(host, ":", "_"), strings.ToLower(k.Owner), strings.ToLower(k.Name)+".git"), nil
}

// Handle is an open repository of the cache. It holds a shared lock, so
// Evict leaves it alone until Close.
type Handle struct {
	*Repo
	cache *Cache
	path  string
	use   *os.File
}

// Open returns the bare repository of k, creating it (git init --bare)
// when missing. Close it when done.
func (c *Cache) Open(ctx context.Context, k Key) (*Handle, error) {
	p, err := k.path(c.cfg.Dir)
	if err != nil {
		return nil, err
	}
	for d := filepath.Dir(p); d != c.cfg.Dir && len(d) > len(c.cfg.Dir); d = filepath.Dir(d) {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	use, err := os.OpenFile(p+".use", os.O_CREATE|os.O_RDWR|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	if err := flockWait(ctx, use, syscall.LOCK_SH); err != nil {
		use.Close()
		return nil, err
	}
	h := &Handle{Repo: &Repo{r: runner{gitDir: p, home: c.home, allowHTTP: c.cfg.AllowHTTP}, lim: c.cfg.Limits}, cache: c, path: p, use: use}
	if _, err := os.Stat(filepath.Join(p, "HEAD")); errors.Is(err, os.ErrNotExist) {
		if err := h.initBare(ctx); err != nil {
			h.Close()
			return nil, err
		}
	}
	now := time.Now()
	os.Chtimes(p+".use", now, now) // last use, for Evict
	return h, nil
}

// initBare creates the repository under the fetch lock (two workers may
// open a new repository at once).
func (h *Handle) initBare(ctx context.Context) error {
	unlock, err := h.fetchLock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(h.path, "HEAD")); err == nil {
		return nil
	}
	home := runner{dir: filepath.Dir(h.path), home: h.cache.home}
	// No template (no sample hooks); everything git creates stays 0600/0700.
	if _, err := home.out(ctx, 4096, nil, "init", "--bare", "--quiet", "--template=", "--shared=0600", h.path); err != nil {
		return err
	}
	return os.Chmod(h.path, 0o700)
}

func (h *Handle) fetchLock(ctx context.Context) (func(), error) {
	f, err := os.OpenFile(h.path+".fetch", os.O_CREATE|os.O_RDWR|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	if err := flockWait(ctx, f, syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// Close releases the repository.
func (h *Handle) Close() error {
	syscall.Flock(int(h.use.Fd()), syscall.LOCK_UN)
	return h.use.Close()
}

// FetchOptions tune Fetch.
type FetchOptions struct {
	// Depth > 0 fetches that many commits of history (shallow).
	Depth int
}

var refspecRE = regexp.MustCompile(`^\+?[A-Za-z0-9._/-]{1,250}(:refs/quavon/[A-Za-z0-9._/-]{1,200})?$`)

// Fetch fetches refspecs (each "<src>[:refs/quavon/<dst>]", src a ref or
// a commit id) from remote with token, one fetch per repository at a time.
// Nothing but objects and refs/quavon/* is written: no tags, no FETCH_HEAD,
// no remote configuration.
func (h *Handle) Fetch(ctx context.Context, remote, token string, refspecs []string, opt FetchOptions) error {
	if err := checkRemote(remote, h.cache.cfg.AllowHTTP); err != nil {
		return err
	}
	if len(refspecs) == 0 {
		return errors.New("gitrepo.Fetch: no refspecs")
	}
	for _, rs := range refspecs {
		if !refspecRE.MatchString(rs) || strings.Contains(rs, "..") {
			return fmt.Errorf("gitrepo.Fetch: refspec %q", rs)
		}
	}
	unlock, err := h.fetchLock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	args := []string{"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules", "--no-auto-gc", "--no-auto-maintenance"}
	if opt.Depth > 0 {
		args = append(args, "--depth="+strconv.Itoa(opt.Depth))
	}
	args = append(args, "--end-of-options", remote)
	args = append(args, refspecs...)
	if _, err := h.r.out(ctx, 1<<20, tokenEnv(token), args...); err != nil {
		h.removeTemporaries()
		return fetchError(err, token)
	}
	return nil
}

// fetchError wraps a failed fetch's error in ErrFetch, and in
// ErrTokenRefused when the server answered 401 (git then asks for a user
// name, which it may not: "terminal prompts disabled").
func fetchError(err error, token string) error {
	msg := redact(err, token)
	if strings.Contains(msg, "terminal prompts disabled") || strings.Contains(msg, "Authentication failed") {
		return fmt.Errorf("%w: %w (401: the token is expired, revoked or not one GitHub knows): %s", ErrFetch, ErrTokenRefused, msg)
	}
	return fmt.Errorf("%w: %s", ErrFetch, msg)
}

// removeTemporaries deletes what a failed fetch leaves in objects/pack (a
// pack git's fsck refused stays there as tmp_pack_*). Called with the
// fetch lock held, so no fetch is writing one.
func (h *Handle) removeTemporaries() {
	m, _ := filepath.Glob(filepath.Join(h.path, "objects", "pack", "tmp_*"))
	for _, p := range m {
		os.Remove(p)
	}
}

// Deepen fetches more history of refspecs until a and b have a merge base
// (depth 50, 200, 800, 3200, then the whole history). It is how a
// shallow fetch of a pull request's head and base finds their merge base.
func (h *Handle) Deepen(ctx context.Context, remote, token string, refspecs []string, a, b string) (string, error) {
	if mb, err := h.MergeBase(ctx, a, b); err == nil {
		return mb, nil
	}
	for depth := 50; depth <= 6400; depth *= 4 {
		if err := h.Fetch(ctx, remote, token, refspecs, FetchOptions{Depth: depth}); err != nil {
			return "", err
		}
		if mb, err := h.MergeBase(ctx, a, b); err == nil {
			return mb, nil
		}
	}
	if _, err := os.Stat(filepath.Join(h.path, "shallow")); err == nil {
		if err := h.Fetch(ctx, remote, token, append([]string{}, refspecs...), FetchOptions{}); err != nil {
			return "", err
		}
		unlock, err := h.fetchLock(ctx)
		if err != nil {
			return "", err
		}
		_, err = h.r.out(ctx, 1<<20, tokenEnv(token), "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--unshallow", "--end-of-options", remote)
		if err != nil {
			h.removeTemporaries()
		}
		unlock()
		if err != nil {
			return "", fetchError(err, token)
		}
	}
	return h.MergeBase(ctx, a, b)
}

// redact drops any occurrence of token from an error's text.
func redact(err error, token string) string {
	s := err.Error()
	if token != "" {
		s = strings.ReplaceAll(s, token, "[token]")
		s = strings.ReplaceAll(s, basicAuth("x-access-token", token), "[token]")
	}
	return s
}

// Evict removes least recently used repositories not in use until the
// cache holds at most MaxBytes. It returns the removed repositories' paths.
func (c *Cache) Evict() ([]string, error) {
	if c.cfg.MaxBytes <= 0 {
		return nil, nil
	}
	type repo struct {
		path string
		used time.Time
		size int64
	}
	var repos []repo
	var total int64
	filepath.WalkDir(c.cfg.Dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() || !strings.HasSuffix(p, ".git") {
			return nil
		}
		r := repo{path: p, size: dirSize(p)}
		if fi, err := os.Stat(p + ".use"); err == nil {
			r.used = fi.ModTime()
		}
		repos = append(repos, r)
		total += r.size
		return filepath.SkipDir
	})
	slices.SortFunc(repos, func(a, b repo) int { return a.used.Compare(b.used) })
	var removed []string
	for _, r := range repos {
		if total <= c.cfg.MaxBytes {
			break
		}
		f, err := os.OpenFile(r.path+".use", os.O_CREATE|os.O_RDWR|syscall.O_CLOEXEC, 0o600)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			f.Close() // in use
			continue
		}
		err = os.RemoveAll(r.path)
		os.Remove(r.path + ".fetch")
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
		if err != nil {
			return removed, err
		}
		total -= r.size
		removed = append(removed, r.path)
	}
	return removed, nil
}

func flockWait(ctx context.Context, f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
