// Package gocache seeds a writable Go build cache (GOCACHE) from the
// scanners image's prebuilt, read-only one (/opt/quavon/gocache: the
// export data of the whole standard library and the go command's index of
// its packages). Every entry seeded is a symlink into the image, so nothing
// is copied, and the go command adds its own entries beside them.
//
// Two seeds, because the scan driver needs far less than the whole cache
// on nearly every scan. quavon-gosec's go list (no -export) reads only the
// standard library's package index, ListManifest's entries (708 of 2,718);
// the export data matters only when something has to be compiled (a
// dependency outside the standard library, or a load go/packages runs
// itself). Seeding all 2,718 cost 0.3–0.6 s under gVisor on every scan
// (a mkdir or symlink is a round trip through the sentry); the driver seeds
// the listed entries and quavon-gosec seeds the rest (Seed) when it is
// about to compile.
package gocache

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// ListManifest is the file, beside the image's cache, that names the
// entries a go list without -export reads (one path relative to the cache
// per line): what `go list -e -deps -test std` writes into an empty cache,
// recorded at image build.
const ListManifest = "gocache-list.txt"

// maxManifestBytes bounds the manifest (708 lines of ~70 bytes today).
const maxManifestBytes = 1 << 20

// Seed links every entry of seed into cache. An entry cache already has
// is left alone, so seeding after SeedListed, or twice, is fine. No seed
// (an image without one) is not an error.
func Seed(seed, cache string) error {
	if _, err := os.Stat(seed); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	err := filepath.WalkDir(seed, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(seed, p)
		dst := filepath.Join(cache, rel)
		switch {
		case e.IsDir():
			return os.MkdirAll(dst, 0o700)
		case e.Type().IsRegular() && rel != "trim.txt":
			return link(p, dst)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return writeTrim(cache)
}

// SeedListed links the entries of seed that manifest names into cache. It
// reports false, having done nothing, when there is no manifest (an image
// built before it): the caller then seeds everything.
func SeedListed(seed, cache, manifest string) (bool, error) {
	f, err := os.Open(manifest)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	made := map[string]bool{}
	sc := bufio.NewScanner(io.LimitReader(f, maxManifestBytes))
	for sc.Scan() {
		rel := filepath.FromSlash(sc.Text())
		if rel == "" {
			continue
		}
		if !filepath.IsLocal(rel) || rel == "trim.txt" {
			return false, fmt.Errorf("%s: not an entry of the cache: %q", manifest, sc.Text())
		}
		dst := filepath.Join(cache, rel)
		if dir := filepath.Dir(dst); !made[dir] {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return false, err
			}
			made[dir] = true
		}
		if err := link(filepath.Join(seed, rel), dst); err != nil {
			return false, err
		}
	}
	if err := sc.Err(); err != nil {
		return false, fmt.Errorf("%s: %w", manifest, err)
	}
	return true, writeTrim(cache)
}

func link(target, dst string) error {
	if err := os.Symlink(target, dst); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// writeTrim writes a fresh trim.txt: from an old one (or none) the go
// command would trim the seeded entries, whose targets are older than its
// five days, as unused.
func writeTrim(cache string) error {
	return os.WriteFile(filepath.Join(cache, "trim.txt"), []byte(fmt.Sprintf("%d\n", time.Now().Unix())), 0o600)
}
