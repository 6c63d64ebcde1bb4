package patch

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strings"
)

// Operation is what a FixFileChange does to its path.
type Operation string

// The operations.
const (
	OpCreate Operation = "create"
	OpModify Operation = "modify"
	OpDelete Operation = "delete"
)

// FixFileChange is one file of a patch. A patch is a []FixFileChange with
// each path at most once, computed by Overlay.Changes in path order.
type FixFileChange struct {
	// Path is the repository path in canonical form (NormalizePath).
	Path      string    `json:"path"`
	Operation Operation `json:"operation"`
	// BaseBlobSHA is git's blob id of the file at the base (BlobSHA); empty
	// for OpCreate.
	BaseBlobSHA string `json:"baseBlobSha,omitempty"`
	// NewContent is the whole new file; empty for OpDelete.
	NewContent string `json:"newContent"`
	// Mode is the file's mode after the change (before it, for OpDelete);
	// always ModeFile in a valid patch.
	Mode Mode `json:"mode"`
}

// patchHashDomain starts the canonical form, so the hash cannot be
// confused with a hash of anything else Quavon hashes.
const patchHashDomain = "quavon-patch:v1\n"

// PatchSHA256 is the hex SHA-256 of the patch's canonical form (stored as
// fix_runs.patch_sha256 and compared by the publisher):
//
//	"quavon-patch:v1\n"
//	uint64 big-endian number of changes
//	for each change, sorted by Path (byte order; ties keep input order):
//	  field(Path) field(Operation) field(BaseBlobSHA) field(Mode as six octal digits) field(NewContent)
//
// where field(s) = uint64 big-endian len(s) followed by the bytes of s.
// Every field is length-prefixed, so the form is unambiguous for any bytes,
// including invalid UTF-8 (which a JSON form would silently replace).
func PatchSHA256(changes []FixFileChange) string {
	sorted := slices.Clone(changes)
	slices.SortStableFunc(sorted, func(a, b FixFileChange) int { return strings.Compare(a.Path, b.Path) })
	h := sha256.New()
	var n [8]byte
	field := func(s string) {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	h.Write([]byte(patchHashDomain))
	binary.BigEndian.PutUint64(n[:], uint64(len(sorted)))
	h.Write(n[:])
	for _, c := range sorted {
		field(c.Path)
		field(string(c.Operation))
		field(c.BaseBlobSHA)
		field(c.Mode.String())
		field(c.NewContent)
	}
	return hex.EncodeToString(h.Sum(nil))
}
