package gocache

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// seedTree is an image cache of three entries and a manifest naming two.
func seedTree(t *testing.T) (seed, manifest string) {
	t.Helper()
	seed = t.TempDir()
	for _, rel := range []string{"0a/0a11-d", "0a/0a22-a", "ff/ff33-d", "README", "trim.txt"} {
		p := filepath.Join(seed, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(rel), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	manifest = filepath.Join(t.TempDir(), ListManifest)
	if err := os.WriteFile(manifest, []byte("0a/0a11-d\nff/ff33-d\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return seed, manifest
}

// links lists cache's entries that are symlinks into seed, and checks
// trim.txt is fresh (not the seed's).
func links(t *testing.T, seed, cache string) []string {
	t.Helper()
	var got []string
	err := filepath.WalkDir(cache, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(cache, p)
		if e.Type()&os.ModeSymlink == 0 {
			if rel != "trim.txt" {
				t.Errorf("%s is not a link", rel)
			}
			return nil
		}
		target, err := os.Readlink(p)
		if err != nil || target != filepath.Join(seed, rel) {
			t.Errorf("%s → %s, %v", rel, target, err)
		}
		got = append(got, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(cache, "trim.txt")); err != nil || string(data) == "trim.txt" {
		t.Errorf("trim.txt: %q %v", data, err)
	}
	slices.Sort(got)
	return got
}

// The driver's seed links only the listed entries; the rest follows when
// quavon-gosec is about to compile, beside what is there already.
func TestSeedListedThenAll(t *testing.T) {
	seed, manifest := seedTree(t)
	cache := filepath.Join(t.TempDir(), "go-build")
	listed, err := SeedListed(seed, cache, manifest)
	if err != nil || !listed {
		t.Fatal(listed, err)
	}
	if got := links(t, seed, cache); !slices.Equal(got, []string{"0a/0a11-d", "ff/ff33-d"}) {
		t.Errorf("listed seed: %v", got)
	}
	// An entry the go command wrote meanwhile stays.
	own := filepath.Join(cache, "0a", "0a99-d")
	if err := os.WriteFile(own, []byte("own"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Seed(seed, cache); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(own); err != nil {
		t.Fatal(err)
	}
	if got := links(t, seed, cache); !slices.Equal(got, []string{"0a/0a11-d", "0a/0a22-a", "README", "ff/ff33-d"}) {
		t.Errorf("full seed: %v", got)
	}
}

// No manifest (an image built before it): nothing is seeded and the caller
// is told to seed everything.
func TestSeedListedWithoutManifest(t *testing.T) {
	seed, _ := seedTree(t)
	cache := filepath.Join(t.TempDir(), "go-build")
	listed, err := SeedListed(seed, cache, filepath.Join(t.TempDir(), "none"))
	if err != nil || listed {
		t.Fatal(listed, err)
	}
	if _, err := os.Stat(cache); !os.IsNotExist(err) {
		t.Errorf("cache made: %v", err)
	}
}

// A manifest line that leaves the cache is refused, not followed.
func TestSeedListedRefusesPathsOutside(t *testing.T) {
	seed, manifest := seedTree(t)
	for _, bad := range []string{"../x", "/etc/passwd", "0a/../../x", "trim.txt"} {
		if err := os.WriteFile(manifest, []byte("0a/0a11-d\n"+bad+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cache := filepath.Join(t.TempDir(), "go-build")
		if _, err := SeedListed(seed, cache, manifest); err == nil || !strings.Contains(err.Error(), "not an entry") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
