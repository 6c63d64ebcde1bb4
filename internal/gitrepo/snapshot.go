package gitrepo

import (
	"strings"

	"github.com/quavon/quavon/internal/snapshot"
)

// TreeFiles are the regular files of tree as snapshot files, read from
// blobs while the snapshot is written (no checkout on disk). What a
// snapshot must not hold is left out and counted by reason: symlinks
// (never followed), gitlinks (submodules) and anything under a .git
// segment; names the snapshot refuses are counted by snapshot.Build
// itself.
func TreeFiles(tree *Tree, blobs *Blobs) (snapshot.Files, map[string]int) {
	skipped := map[string]int{}
	var out snapshot.Files
	for name, e := range tree.Entries {
		switch {
		case e.Mode == ModeSymlink:
			skipped["symlink"]++
		case e.Mode == ModeGitlink:
			skipped["submodule"]++
		case !e.Mode.Regular():
			skipped["not a file"]++
		case hasGitSegment(name):
			skipped[".git segment"]++
		default:
			oid := e.BlobSHA
			out = append(out, snapshot.File{Name: name, Executable: e.Mode == ModeExecutable,
				Read: func() ([]byte, error) { return blobs.Read(oid, 0) }})
		}
	}
	return out, skipped
}

func hasGitSegment(p string) bool {
	for seg := range strings.SplitSeq(p, "/") {
		if strings.EqualFold(seg, ".git") {
			return true
		}
	}
	return false
}
