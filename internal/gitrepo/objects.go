package gitrepo

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Mode is a git tree entry mode.
type Mode uint32

// The git modes.
const (
	ModeFile       Mode = 0o100644
	ModeExecutable Mode = 0o100755
	ModeSymlink    Mode = 0o120000
	ModeGitlink    Mode = 0o160000
	ModeTree       Mode = 0o040000
)

// String is git's spelling: six octal digits.
func (m Mode) String() string { return fmt.Sprintf("%06o", uint32(m)) }

// MarshalText makes modes read as git writes them in JSON ("100644").
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText accepts git's octal spelling.
func (m *Mode) UnmarshalText(b []byte) error {
	v, err := strconv.ParseUint(string(b), 8, 32)
	if err != nil {
		return fmt.Errorf("gitrepo.Mode %q: %w", b, err)
	}
	*m = Mode(v)
	return nil
}

// Regular reports whether m is a regular file (plain or executable).
func (m Mode) Regular() bool { return m == ModeFile || m == ModeExecutable }

// BlobSHA is git's object id of a blob with this content:
// hex(sha1("blob <len>\x00" + content)), what `git hash-object` prints.
func BlobSHA(content []byte) string {
	h := sha1.New()
	h.Write([]byte("blob " + strconv.Itoa(len(content)) + "\x00"))
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}

// EmptyBlobSHA is BlobSHA of empty content.
const EmptyBlobSHA = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"

// An Entry is one path of a tree: a blob (regular file or symlink target),
// or a gitlink (a submodule commit). Trees themselves are not listed.
type Entry struct {
	Mode    Mode
	BlobSHA string // lower-case hex; for ModeGitlink the commit id
	Size    int64  // -1 when unknown (gitlinks)
}

// ValidOID reports whether s is a full lower-case SHA-1 object id.
func ValidOID(s string) bool {
	if len(s) != 40 {
		return false
	}
	return isLowerHex([]byte(s))
}

func isLowerHex(b []byte) bool {
	for _, c := range b {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ParseLsTree reads the output of `git ls-tree -r -z [-l] --full-tree
// <commit>`: records "<mode> SP <type> SP <object> [SP* <size>] TAB <path>"
// each ended by NUL. Trees (with -t) are skipped. Paths are kept as git
// stores them (not normalised, possibly not UTF-8: see ValidName).
func ParseLsTree(out []byte) (map[string]Entry, error) {
	m := make(map[string]Entry, bytes.Count(out, []byte{0}))
	for len(out) > 0 {
		end := bytes.IndexByte(out, 0)
		if end < 0 {
			return nil, fmt.Errorf("gitrepo.ParseLsTree: record without NUL terminator")
		}
		rec := out[:end]
		out = out[end+1:]
		tab := bytes.IndexByte(rec, '\t')
		if tab < 0 {
			return nil, fmt.Errorf("gitrepo.ParseLsTree: record without TAB")
		}
		meta, path := rec[:tab], string(rec[tab+1:])
		sp1 := bytes.IndexByte(meta, ' ')
		if sp1 < 0 || len(meta) < sp1+1 {
			return nil, fmt.Errorf("gitrepo.ParseLsTree: malformed record %q", meta)
		}
		mode, err := strconv.ParseUint(string(meta[:sp1]), 8, 32)
		if err != nil {
			return nil, fmt.Errorf("gitrepo.ParseLsTree: mode %q: %w", meta[:sp1], err)
		}
		rest := meta[sp1+1:]
		sp2 := bytes.IndexByte(rest, ' ')
		if sp2 < 0 {
			return nil, fmt.Errorf("gitrepo.ParseLsTree: malformed record %q", meta)
		}
		typ, rest := rest[:sp2], rest[sp2+1:]
		if string(typ) == "tree" {
			continue
		}
		oid := rest
		size := int64(-1)
		if sp := bytes.IndexByte(rest, ' '); sp >= 0 {
			oid = rest[:sp]
			sz := bytes.TrimLeft(rest[sp:], " ")
			if string(sz) != "-" {
				if size, err = strconv.ParseInt(string(sz), 10, 64); err != nil {
					return nil, fmt.Errorf("gitrepo.ParseLsTree: size %q: %w", sz, err)
				}
			}
		}
		if len(oid) != 40 || !isLowerHex(oid) {
			return nil, fmt.Errorf("gitrepo.ParseLsTree: object id %q", oid)
		}
		if path == "" {
			return nil, fmt.Errorf("gitrepo.ParseLsTree: empty path")
		}
		m[path] = Entry{Mode: Mode(mode), BlobSHA: string(oid), Size: size}
	}
	return m, nil
}

// ValidName reports whether a tree path is valid UTF-8 without control
// characters. Other names are listed as they are and reported, never
// silently dropped or rewritten.
func ValidName(p string) bool {
	if !utf8.ValidString(p) {
		return false
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}
