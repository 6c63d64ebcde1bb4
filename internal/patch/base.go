package patch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/quavon/quavon/internal/gitrepo"
)

// The git object model is gitrepo's: one definition of modes, entries and
// blob ids for the readers and the patch code.
type (
	// Mode is a git tree entry mode.
	Mode = gitrepo.Mode
	// An Entry describes one path of a base tree.
	Entry = gitrepo.Entry
)

// The git modes. Only ModeFile may be created, changed or deleted by a fix.
const (
	ModeFile       = gitrepo.ModeFile
	ModeExecutable = gitrepo.ModeExecutable
	ModeSymlink    = gitrepo.ModeSymlink
	ModeGitlink    = gitrepo.ModeGitlink
	ModeTree       = gitrepo.ModeTree
)

// BlobSHA is git's object id of a blob with this content.
func BlobSHA(content []byte) string { return gitrepo.BlobSHA(content) }

// EmptyBlobSHA is BlobSHA of empty content.
const EmptyBlobSHA = gitrepo.EmptyBlobSHA

// Base is a read-only tree the overlay edits on top of: a checkout on disk
// (DirBase) or a listing (Listing). Paths are repository paths in
// canonical form (NormalizePath).
type Base interface {
	// Stat describes path; ok is false when the base has no entry there.
	Stat(path string) (e Entry, ok bool)
	// Read returns the content of the blob at path (fs.ErrNotExist when
	// there is none).
	Read(path string) ([]byte, error)
}

// ErrNoContent is returned by a Listing without a content source.
var ErrNoContent = errors.New("patch: listing has no content source")

// ErrNotRegular is returned when reading something that is not a regular
// file (a symlink, a gitlink, a directory).
var ErrNotRegular = errors.New("patch: not a regular file")

// BlobReader fetches the content of one listed blob (for a GitHub base:
// getFile at baseSha; for a local checkout: git cat-file). Listing.Read
// checks what it returns against the listed blob SHA.
type BlobReader func(path string, e Entry) ([]byte, error)

// Listing is the full listing of a base commit: every blob, symlink and
// gitlink with its mode and id, plus an optional source for the contents.
// ValidatePatch takes a fresh one. It is safe for concurrent reads.
type Listing struct {
	entries map[string]Entry
	read    BlobReader
}

var _ Base = (*Listing)(nil)

// NewListing builds a listing from path → entry. Paths are taken as they
// are in the tree (not normalised: a base may hold names the path rules
// would refuse). read may be nil.
func NewListing(entries map[string]Entry, read BlobReader) *Listing {
	m := make(map[string]Entry, len(entries))
	for p, e := range entries {
		m[p] = e
	}
	return &Listing{entries: m, read: read}
}

// FromTree is the listing of a gitrepo tree whose contents come from
// blobs (checked against the listed ids, as every Listing read is). A fresh
// one of the base commit is what ValidatePatch takes.
func FromTree(tree *gitrepo.Tree, blobs *gitrepo.Blobs) *Listing {
	return NewListing(tree.Entries, func(_ string, e Entry) ([]byte, error) { return blobs.Read(e.BlobSHA, 0) })
}

// Len is the number of entries.
func (l *Listing) Len() int { return len(l.entries) }

// Stat implements Base.
func (l *Listing) Stat(path string) (Entry, bool) {
	e, ok := l.entries[path]
	return e, ok
}

// All yields every entry in path order.
func (l *Listing) All() iter.Seq2[string, Entry] {
	return func(yield func(string, Entry) bool) {
		keys := make([]string, 0, len(l.entries))
		for p := range l.entries {
			keys = append(keys, p)
		}
		slices.Sort(keys)
		for _, p := range keys {
			if !yield(p, l.entries[p]) {
				return
			}
		}
	}
}

// Read implements Base: the blob's content from the BlobReader, refused
// unless it hashes to the listed blob SHA.
func (l *Listing) Read(path string) ([]byte, error) {
	e, ok := l.entries[path]
	if !ok {
		return nil, fmt.Errorf("patch.Listing.Read %s: %w", path, fs.ErrNotExist)
	}
	if e.Mode != ModeFile && e.Mode != ModeExecutable {
		return nil, fmt.Errorf("patch.Listing.Read %s (mode %s): %w", path, e.Mode, ErrNotRegular)
	}
	if l.read == nil {
		return nil, fmt.Errorf("patch.Listing.Read %s: %w", path, ErrNoContent)
	}
	b, err := l.read(path, e)
	if err != nil {
		return nil, fmt.Errorf("patch.Listing.Read %s: %w", path, err)
	}
	if got := BlobSHA(b); got != e.BlobSHA {
		return nil, fmt.Errorf("patch.Listing.Read %s: content hashes to %s, listing says %s", path, got, e.BlobSHA)
	}
	return b, nil
}

// MapFile is one entry of MapBase. Mode 0 means ModeFile. For ModeSymlink
// Content is the link target; for ModeGitlink, Content is ignored.
type MapFile struct {
	Mode    Mode
	Content string
}

// MapBase builds a Listing with contents from a map, for tests and for
// callers that already hold the files in memory.
func MapBase(files map[string]MapFile) *Listing {
	entries := make(map[string]Entry, len(files))
	contents := make(map[string][]byte, len(files))
	for p, f := range files {
		mode := f.Mode
		if mode == 0 {
			mode = ModeFile
		}
		e := Entry{Mode: mode, Size: int64(len(f.Content))}
		switch mode {
		case ModeGitlink:
			e.BlobSHA = BlobSHA([]byte("gitlink:" + p)) // any commit-id-shaped value
			e.Size = -1
		default:
			e.BlobSHA = BlobSHA([]byte(f.Content))
			contents[p] = []byte(f.Content)
		}
		entries[p] = e
	}
	return &Listing{entries: entries, read: func(path string, _ Entry) ([]byte, error) {
		b, ok := contents[path]
		if !ok {
			return nil, fs.ErrNotExist
		}
		return bytes.Clone(b), nil
	}}
}

// DirBase is a checkout on disk, read through an os.Root so that nothing
// outside the directory is reachable (symlinks are never followed). It
// never writes. The .git directory is not part of the base.
type DirBase struct {
	root *os.Root
}

var _ Base = (*DirBase)(nil)

// OpenDir opens dir as a Base. Close it when done.
func OpenDir(dir string) (*DirBase, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("patch.OpenDir: %w", err)
	}
	return &DirBase{root: r}, nil
}

// Close releases the directory.
func (d *DirBase) Close() error { return d.root.Close() }

func isGitPath(path string) bool {
	for seg := range strings.SplitSeq(path, "/") {
		if strings.EqualFold(seg, ".git") {
			return true
		}
	}
	return false
}

// Stat implements Base. Regular files are ModeFile or ModeExecutable with
// their blob SHA (computed by reading the file), symlinks ModeSymlink with
// the blob SHA of the target, directories ModeTree.
func (d *DirBase) Stat(path string) (Entry, bool) {
	if path == "" || isGitPath(path) {
		return Entry{}, false
	}
	fi, err := d.root.Lstat(path)
	if err != nil {
		return Entry{}, false
	}
	switch {
	case fi.Mode().IsRegular():
		b, err := d.readRegular(path)
		if err != nil {
			return Entry{}, false
		}
		mode := ModeFile
		if fi.Mode().Perm()&0o111 != 0 {
			mode = ModeExecutable
		}
		return Entry{Mode: mode, BlobSHA: BlobSHA(b), Size: int64(len(b))}, true
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := d.root.Readlink(path)
		if err != nil {
			return Entry{}, false
		}
		return Entry{Mode: ModeSymlink, BlobSHA: BlobSHA([]byte(target)), Size: int64(len(target))}, true
	case fi.IsDir():
		return Entry{Mode: ModeTree, Size: -1}, true
	}
	return Entry{}, false
}

// Read implements Base for regular files only.
func (d *DirBase) Read(path string) ([]byte, error) {
	if path == "" || isGitPath(path) {
		return nil, fmt.Errorf("patch.DirBase.Read %s: %w", path, fs.ErrNotExist)
	}
	fi, err := d.root.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("patch.DirBase.Read %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("patch.DirBase.Read %s: %w", path, ErrNotRegular)
	}
	return d.readRegular(path)
}

func (d *DirBase) readRegular(path string) ([]byte, error) {
	f, err := d.root.OpenFile(path, os.O_RDONLY|syscallNoFollow, 0)
	if err != nil {
		return nil, fmt.Errorf("patch.DirBase.Read %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("patch.DirBase.Read %s: %w", path, err)
	}
	return b, nil
}

// Cached returns a listing of the same entries whose contents are read
// once per blob id and kept, up to maxBytes in total (later reads beyond
// that go to l's reader): the fix agent's search reads every file of the
// base on each call. Contents are still checked against the listed blob
// SHA on every Read. Safe for concurrent reads.
func (l *Listing) Cached(maxBytes int64) *Listing {
	var mu sync.Mutex
	cache := map[string][]byte{}
	var held int64
	read := l.read
	if read == nil {
		return l
	}
	return &Listing{entries: l.entries, read: func(p string, e Entry) ([]byte, error) {
		mu.Lock()
		b, ok := cache[e.BlobSHA]
		mu.Unlock()
		if ok {
			return bytes.Clone(b), nil
		}
		b, err := read(p, e)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		if held+int64(len(b)) <= maxBytes {
			cache[e.BlobSHA] = bytes.Clone(b)
			held += int64(len(b))
		}
		mu.Unlock()
		return b, nil
	}}
}
