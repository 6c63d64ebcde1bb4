package snapshot

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
)

// Extract unpacks a snapshot into dest, a directory that holds none of its
// names yet (the base snapshot into an empty /work). It applies every rule
// of Check while it reads; an entry is written only once it has passed them,
// and a refused snapshot leaves what was written before the refusal in place
// (the caller discards dest). Nothing is ever created outside dest: see
// extract for how.
func Extract(r io.Reader, dest string, lim Limits) (Stats, error) {
	st, err := extract(r, dest, lim, false)
	if err != nil {
		return st, fmt.Errorf("snapshot.Extract %s: %w", dest, err)
	}
	return st, nil
}

// ExtractOverlay unpacks a snapshot over a tree that already exists in dest
// (the fix agent's edits over the base): a file replaces whatever non-directory
// is at its name (the old one is removed, not written through), a directory
// may already exist as a directory. An entry whose name or parent is of the
// other kind in dest (a file where the snapshot has a directory, or the
// reverse) is refused with ErrForbidden.
//
// A whiteout (an empty regular file dir/.wh.name) deletes dir/name: a file
// or a symlink (the link itself, never its target); nothing there is fine.
// A whiteout of a directory, a non-empty one, and OCI's opaque marker
// .wh..wh..opq are refused with ErrForbidden. Names are clean and relative
// (Check's rules) and every operation goes through an os.Root, so no
// whiteout reaches outside dest.
func ExtractOverlay(r io.Reader, dest string, lim Limits) (Stats, error) {
	st, err := extract(r, dest, lim, true)
	if err != nil {
		return st, fmt.Errorf("snapshot.ExtractOverlay %s: %w", dest, err)
	}
	return st, nil
}

// extract writes through an os.Root, which confines every operation to
// dest even if the tree changes underneath. It also never follows a
// symlink that is inside dest: every directory an entry passes through was
// listed before it in the snapshot (a rule of Check) and was then made or
// found to be a real directory with Lstat, so by induction no parent of a
// name resolves through a link; the last element is created with
// O_CREATE|O_EXCL, which never follows one, after a link in the way was
// removed (overlay) or refused (base).
func extract(r io.Reader, dest string, lim Limits, overlay bool) (Stats, error) {
	root, err := os.OpenRoot(dest)
	if err != nil {
		return Stats{}, err
	}
	defer root.Close()
	return read(r, lim, func(h *tar.Header, name string, body io.Reader) error {
		if h.Typeflag == tar.TypeDir {
			return extractDir(root, name, overlay)
		}
		if base := path.Base(name); overlay && strings.HasPrefix(base, WhiteoutPrefix) {
			return whiteout(root, name, h.Size)
		}
		return extractFile(root, name, fs.FileMode(h.Mode), h.Size, body, overlay)
	})
}

func whiteout(root *os.Root, name string, size int64) error {
	base := path.Base(name)
	switch {
	case base == opaqueWhiteout:
		return fmt.Errorf("%w: %q: opaque whiteouts are not honoured", ErrForbidden, clip(name))
	case size != 0:
		return fmt.Errorf("%w: %q: a whiteout with content", ErrForbidden, clip(name))
	case base == WhiteoutPrefix:
		return fmt.Errorf("%w: %q: a whiteout without a name", ErrForbidden, clip(name))
	}
	target := path.Join(path.Dir(name), strings.TrimPrefix(base, WhiteoutPrefix))
	fi, err := root.Lstat(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("%q: %w", clip(target), err)
	case fi.IsDir():
		return fmt.Errorf("%w: %q: a whiteout of a directory", ErrForbidden, clip(target))
	}
	if err := root.Remove(target); err != nil {
		return fmt.Errorf("%q: %w", clip(target), err)
	}
	return nil
}

func extractDir(root *os.Root, name string, overlay bool) error {
	err := root.Mkdir(name, 0o755)
	if err == nil {
		// Mkdir honours the umask; the snapshot says 0755.
		return root.Chmod(name, 0o755)
	}
	if !errors.Is(err, fs.ErrExist) || !overlay {
		return fmt.Errorf("%q: %w", clip(name), err)
	}
	fi, err := root.Lstat(name)
	if err != nil {
		return fmt.Errorf("%q: %w", clip(name), err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %q: a directory in the snapshot, %s in the tree", ErrForbidden, clip(name), kind(fi.Mode()))
	}
	return nil
}

func extractFile(root *os.Root, name string, mode fs.FileMode, size int64, body io.Reader, overlay bool) error {
	if overlay {
		fi, err := root.Lstat(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return fmt.Errorf("%q: %w", clip(name), err)
		case fi.IsDir():
			return fmt.Errorf("%w: %q: a file in the snapshot, a directory in the tree", ErrForbidden, clip(name))
		default:
			// Remove unlinks a symlink itself, never its target.
			if err := root.Remove(name); err != nil {
				return fmt.Errorf("%q: %w", clip(name), err)
			}
		}
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, mode)
	if err != nil {
		return fmt.Errorf("%q: %w", clip(name), err)
	}
	_, err = io.CopyN(f, body, size)
	if err == nil {
		err = f.Chmod(mode) // the umask may have cleared bits of mode
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%q: %w", clip(name), err)
	}
	return nil
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a file"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	default:
		return "a special file"
	}
}
