package snapshot

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"path"
	"slices"
	"strings"
)

// WhiteoutPrefix marks a deletion in an overlay snapshot, as OCI image
// layers do: an empty regular file dir/.wh.name removes dir/name when the
// overlay is extracted. Only ExtractOverlay gives it that meaning.
const WhiteoutPrefix = ".wh."

// opaqueWhiteout is OCI's "remove the directory's other content" marker;
// Quavon never writes or honours it.
const opaqueWhiteout = ".wh..wh..opq"

// File is one file of a snapshot built from memory or from a repository's
// objects (not from a directory): its name, mode and a source of its bytes.
type File struct {
	Name       string
	Executable bool
	// Read returns the content; it is called once, while the snapshot is
	// written, in name order.
	Read func() ([]byte, error)
}

// Source is something a snapshot can be built from.
type Source interface {
	Build(lim Limits) ([]byte, Stats, error)
}

// Dir is a directory as a Source (Build).
type Dir string

// Build implements Source.
func (d Dir) Build(lim Limits) ([]byte, Stats, error) { return Build(string(d), lim) }

// Files is a set of files as a Source: the same rules and caps as Build (a
// name Check would refuse is left out and counted; parents are added as
// directories), in a deterministic order.
type Files []File

// Build implements Source.
func (fs Files) Build(lim Limits) ([]byte, Stats, error) {
	return buildFiles(fs, nil, lim)
}

// Overlay is the fix agent's edits as a Source: written files and
// deletions. Deletions travel as whiteouts (dir/.wh.name); a written file
// whose own name starts with WhiteoutPrefix cannot be expressed and is
// refused, as is a path both written and deleted.
type Overlay struct {
	Files     []File
	Deletions []string
}

// Build implements Source.
func (o Overlay) Build(lim Limits) ([]byte, Stats, error) {
	for _, f := range o.Files {
		if strings.HasPrefix(path.Base(f.Name), WhiteoutPrefix) {
			return nil, Stats{}, fmt.Errorf("%w: %q: an overlay cannot write a name starting with %s", ErrForbidden, clip(f.Name), WhiteoutPrefix)
		}
		if slices.Contains(o.Deletions, f.Name) {
			return nil, Stats{}, fmt.Errorf("%w: %q: both written and deleted", ErrForbidden, clip(f.Name))
		}
	}
	return buildFiles(o.Files, o.Deletions, lim)
}

// buildFiles writes files (and a whiteout for each deletion) as a gzip tar:
// entries sorted by name, every parent directory listed before its
// children, fixed owner, modes and time.
func buildFiles(files []File, deletions []string, lim Limits) ([]byte, Stats, error) {
	lim = lim.withDefaults(128 << 20)
	st := Stats{Skipped: map[string]int{}}
	type entry struct {
		name string
		file *File // nil: a whiteout
	}
	var entries []entry
	seen := map[string]bool{}
	for i := range files {
		f := &files[i]
		if why := checkName(f.Name); why != "" {
			st.Skipped[why]++
			continue
		}
		if seen[f.Name] {
			return nil, Stats{}, fmt.Errorf("snapshot: %w: %q: duplicate", ErrForbidden, clip(f.Name))
		}
		seen[f.Name] = true
		entries = append(entries, entry{name: f.Name, file: f})
	}
	for _, d := range deletions {
		if why := checkName(d); why != "" {
			return nil, Stats{}, fmt.Errorf("snapshot: %w: deletion %q: %s", ErrForbidden, clip(d), why)
		}
		wh := path.Join(path.Dir(d), WhiteoutPrefix+path.Base(d))
		if checkName(wh) != "" || seen[wh] {
			return nil, Stats{}, fmt.Errorf("snapshot: %w: deletion %q", ErrForbidden, clip(d))
		}
		seen[wh] = true
		entries = append(entries, entry{name: wh})
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.name, b.name) })

	var buf bytes.Buffer
	cw := &countingWriter{w: &buf, max: lim.MaxBytes}
	zw, _ := gzip.NewWriterLevel(cw, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	dirs := map[string]bool{}
	var addDirs func(dir string) error
	addDirs = func(dir string) error {
		if dir == "." || dirs[dir] {
			return nil
		}
		if err := addDirs(path.Dir(dir)); err != nil {
			return err
		}
		if seen[dir] {
			return fmt.Errorf("%w: %q is a file and a directory", ErrForbidden, clip(dir))
		}
		dirs[dir] = true
		return addEntry(tw, &st, lim, &tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755})
	}
	write := func() error {
		for _, e := range entries {
			if err := addDirs(path.Dir(e.name)); err != nil {
				return err
			}
			if dirs[e.name] {
				return fmt.Errorf("%w: %q is a file and a directory", ErrForbidden, clip(e.name))
			}
			if e.file == nil {
				if err := addEntry(tw, &st, lim, &tar.Header{Typeflag: tar.TypeReg, Name: e.name, Mode: 0o644}); err != nil {
					return err
				}
				continue
			}
			data, err := e.file.Read()
			if err != nil {
				return fmt.Errorf("%s: %w", clip(e.name), err)
			}
			if st.UnpackedBytes += int64(len(data)); st.UnpackedBytes > lim.MaxUnpackedBytes {
				return fmt.Errorf("%w: more than %d unpacked bytes", ErrTooLarge, lim.MaxUnpackedBytes)
			}
			mode := int64(0o644)
			if e.file.Executable {
				mode = 0o755
			}
			if err := addEntry(tw, &st, lim, &tar.Header{Typeflag: tar.TypeReg, Name: e.name, Mode: mode, Size: int64(len(data))}); err != nil {
				return err
			}
			if _, err := tw.Write(data); err != nil {
				return err
			}
		}
		if err := tw.Close(); err != nil {
			return err
		}
		return zw.Close()
	}
	if err := write(); err != nil {
		return nil, Stats{}, fmt.Errorf("snapshot: %w", err)
	}
	return buf.Bytes(), st, nil
}
