package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/quavon/quavon/internal/patch"
)

// Workspace is the tree the tools see: a commit's listing (its contents
// read from git objects and checked against their ids) and, for the fix
// agent, an overlay of in-memory edits on top (patch.Overlay: every edit
// path-checked, the base never modified). Paths are repository paths;
// nothing outside the tree is reachable (FX12).
type Workspace struct {
	base    *patch.Listing
	overlay *patch.Overlay // nil: read-only (the reviewer)
}

// NewWorkspace returns the workspace of base, with edits going to overlay
// (nil for a read-only workspace). overlay must be over base.
func NewWorkspace(base *patch.Listing, overlay *patch.Overlay) *Workspace {
	return &Workspace{base: base, overlay: overlay}
}

// Overlay is the workspace's overlay (nil when read-only).
func (w *Workspace) Overlay() *patch.Overlay { return w.overlay }

// Kind is what a path is.
type Kind string

// The kinds of paths.
const (
	KindFile      Kind = "file"
	KindSymlink   Kind = "symlink"
	KindSubmodule Kind = "submodule"
)

type item struct {
	kind Kind
	size int64 // -1: unknown
}

// items is the current tree: the base's entries, minus the overlay's
// deletions, plus its created files.
func (w *Workspace) items() map[string]item {
	out := make(map[string]item, w.base.Len())
	for p, e := range w.base.All() {
		switch {
		case e.Mode.Regular():
			out[p] = item{KindFile, e.Size}
		case e.Mode == patch.ModeSymlink:
			out[p] = item{KindSymlink, -1}
		case e.Mode == patch.ModeGitlink:
			out[p] = item{KindSubmodule, -1}
		}
	}
	if w.overlay != nil {
		for _, c := range w.overlay.Changes() {
			switch c.Operation {
			case patch.OpDelete:
				delete(out, c.Path)
			default:
				out[c.Path] = item{KindFile, int64(len(c.NewContent))}
			}
		}
	}
	return out
}

// Paths are every path of the current tree, sorted.
func (w *Workspace) Paths() []string { return slices.Sorted(maps.Keys(w.items())) }

// Errors of Read.
var (
	ErrNotText   = errors.New("not UTF-8 text (a binary file)")
	ErrNotAFile  = errors.New("not a regular file")
	ErrOffLimits = errors.New("outside the repository")
)

// Read returns the text of a regular file of the current tree.
func (w *Workspace) Read(path string) (string, error) {
	n, err := patch.NormalizePath(path)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrOffLimits, err)
	}
	it, ok := w.items()[n]
	if !ok {
		return "", fs.ErrNotExist
	}
	return w.readItem(n, it)
}

// readItem reads the file n of the current tree, whose item the caller
// looked up (search looks every item up once, not once per file).
func (w *Workspace) readItem(n string, it item) (string, error) {
	if it.kind != KindFile {
		return "", fmt.Errorf("%w: a %s", ErrNotAFile, it.kind)
	}
	var text string
	var err error
	if w.overlay != nil {
		text, err = w.overlay.Read(n)
	} else {
		var b []byte
		b, err = w.base.Read(n)
		text = string(b)
	}
	if err != nil {
		return "", err
	}
	if !utf8.ValidString(text) || strings.ContainsRune(text, 0) {
		return "", ErrNotText
	}
	return text, nil
}
