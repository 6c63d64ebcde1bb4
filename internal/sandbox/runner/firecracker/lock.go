package firecracker

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
)

// The VM lockfile pins everything a VM is made of, by path and SHA-256:
//
//	{
//	  "version": 1,
//	  "firecracker": {"version": "1.13.1", "path": "/opt/quavon/vm/firecracker", "sha256": "<64 hex>"},
//	  "jailer":      {"version": "1.13.1", "path": "/opt/quavon/vm/jailer", "sha256": "<64 hex>"},
//	  "kernel":      {"path": "/opt/quavon/vm/vmlinux", "sha256": "<64 hex>", "config_sha256": "<64 hex>"},
//	  "rootfs": {
//	    "node": {"image": "sha256:<64 hex>", "path": "/opt/quavon/vm/node.ext4", "sha256": "<64 hex>"}
//	  }
//	}
//
// deploy/images/build --rootfs writes it next to images.lock.json: each
// rootfs names the image (its ref in images.lock.json) it was built from,
// so a job's image and its VM disk are the same build.

// Artefact is one pinned file.
type Artefact struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// Binary is a pinned executable with its version.
type Binary struct {
	Version string `json:"version"`
	Artefact
}

// Kernel is the guest kernel; ConfigSHA256 pins the configuration it was
// built from (deploy/images/kernel).
type Kernel struct {
	Artefact
	ConfigSHA256 string `json:"config_sha256"`
}

// Rootfs is one image class's ext4 root filesystem.
type Rootfs struct {
	Image string `json:"image"`
	Artefact
}

// Lock is the parsed VM lockfile.
type Lock struct {
	Version     int               `json:"version"`
	Firecracker Binary            `json:"firecracker"`
	Jailer      Binary            `json:"jailer"`
	Kernel      Kernel            `json:"kernel"`
	Rootfs      map[string]Rootfs `json:"rootfs"`
}

var (
	hexRE     = regexp.MustCompile(`^[0-9a-f]{64}$`)
	versionRE = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+$`)
	classRE   = regexp.MustCompile(`^(scanners|node|python|go|byo:[a-z0-9][a-z0-9._-]{0,62})$`)
)

// LoadLock reads and validates a VM lockfile (shapes only; Verify checks
// the files).
func LoadLock(path string) (*Lock, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("vm lockfile: %w", err)
	}
	return ParseLock(data)
}

// ParseLock validates a VM lockfile's shape.
func ParseLock(data []byte) (*Lock, error) {
	var l Lock
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return nil, fmt.Errorf("vm lockfile: %w", err)
	}
	if dec.More() {
		return nil, errors.New("vm lockfile: trailing data")
	}
	var errs []error
	if l.Version != 1 {
		errs = append(errs, fmt.Errorf("version %d, want 1", l.Version))
	}
	check := func(what string, a Artefact) {
		if !filepath.IsAbs(a.Path) || filepath.Clean(a.Path) != a.Path {
			errs = append(errs, fmt.Errorf("%s: path %q: want a clean absolute path", what, a.Path))
		}
		if !hexRE.MatchString(a.SHA256) {
			errs = append(errs, fmt.Errorf("%s: sha256 %q: want 64 lower-case hex", what, a.SHA256))
		}
	}
	for what, b := range map[string]Binary{"firecracker": l.Firecracker, "jailer": l.Jailer} {
		check(what, b.Artefact)
		if !versionRE.MatchString(b.Version) {
			errs = append(errs, fmt.Errorf("%s: version %q: want MAJOR.MINOR.PATCH", what, b.Version))
		}
	}
	if strings.TrimPrefix(l.Firecracker.Version, "v") != strings.TrimPrefix(l.Jailer.Version, "v") {
		errs = append(errs, errors.New("firecracker and jailer must be the same version"))
	}
	// The jailer refuses an exec file whose name lacks "firecracker".
	if !strings.Contains(filepath.Base(l.Firecracker.Path), "firecracker") {
		errs = append(errs, errors.New(`firecracker: the file name must contain "firecracker" (the jailer's rule)`))
	}
	check("kernel", l.Kernel.Artefact)
	if !hexRE.MatchString(l.Kernel.ConfigSHA256) {
		errs = append(errs, errors.New("kernel: config_sha256: want 64 lower-case hex"))
	}
	if len(l.Rootfs) == 0 {
		errs = append(errs, errors.New("rootfs: no image class"))
	}
	for class, r := range l.Rootfs {
		if !classRE.MatchString(class) {
			errs = append(errs, fmt.Errorf("rootfs: class %q unknown", class))
		}
		check("rootfs "+class, r.Artefact)
		if r.Image == "" {
			errs = append(errs, fmt.Errorf("rootfs %s: no image", class))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("vm lockfile: %w", err)
	}
	return &l, nil
}

// ErrDigest means a pinned file is missing or does not match its digest.
var ErrDigest = errors.New("pinned file does not match its digest")

// verifier checks pinned files by SHA-256 and remembers what it checked,
// by device, inode, size and modification time, so a file is hashed again
// when it was replaced or rewritten. (Not by change time: every hard link
// into a chroot changes it.) Pinned files must also be read-only and owned
// by the runner's user, so nobody else can rewrite them in place.
type verifier struct {
	mu   sync.Mutex
	seen map[string]fileID
}

type fileID struct {
	dev, ino uint64
	size     int64
	mtime    syscall.Timespec
}

func idOf(fi os.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: st.Dev, ino: st.Ino, size: st.Size, mtime: st.Mtim}, true
}

// check verifies a and returns the identity of the file it verified.
func (v *verifier) check(a Artefact) (fileID, error) {
	fi, err := os.Stat(a.Path)
	if err != nil {
		return fileID{}, fmt.Errorf("%w: %s: %v", ErrDigest, a.Path, err)
	}
	if !fi.Mode().IsRegular() {
		return fileID{}, fmt.Errorf("%w: %s is not a regular file", ErrDigest, a.Path)
	}
	id, ok := idOf(fi)
	if !ok {
		return fileID{}, fmt.Errorf("%w: %s: no file identity", ErrDigest, a.Path)
	}
	if fi.Mode().Perm()&0o222 != 0 || fi.Sys().(*syscall.Stat_t).Uid != uint32(os.Geteuid()) {
		return fileID{}, fmt.Errorf("%w: %s must be read-only (0444 or 0555) and owned by the runner's user", ErrDigest, a.Path)
	}
	v.mu.Lock()
	prev, known := v.seen[a.Path+"\x00"+a.SHA256]
	v.mu.Unlock()
	if known && prev == id {
		return id, nil
	}
	f, err := os.Open(a.Path)
	if err != nil {
		return fileID{}, fmt.Errorf("%w: %v", ErrDigest, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fileID{}, fmt.Errorf("%w: %s: %v", ErrDigest, a.Path, err)
	}
	fi2, err := f.Stat()
	if err != nil {
		return fileID{}, err
	}
	if id2, _ := idOf(fi2); id2 != id {
		return fileID{}, fmt.Errorf("%w: %s changed while it was checked", ErrDigest, a.Path)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != a.SHA256 {
		return fileID{}, fmt.Errorf("%w: %s has sha256 %s, pinned %s", ErrDigest, a.Path, got, a.SHA256)
	}
	v.mu.Lock()
	if v.seen == nil {
		v.seen = map[string]fileID{}
	}
	v.seen[a.Path+"\x00"+a.SHA256] = id
	v.mu.Unlock()
	return id, nil
}

// linkVerified hard-links the verified file a to dst, read-only, and
// checks that the link is the very inode that was verified.
func (v *verifier) linkVerified(a Artefact, dst string) error {
	id, err := v.check(a)
	if err != nil {
		return err
	}
	if err := os.Link(a.Path, dst); err != nil {
		return fmt.Errorf("firecracker: link %s into the chroot (it must be on the chroot base's file system): %w", a.Path, err)
	}
	fi, err := os.Lstat(dst)
	if err != nil {
		return err
	}
	if got, _ := idOf(fi); got != id || fi.Mode().Perm()&0o222 != 0 {
		return fmt.Errorf("%w: %s was replaced after it was checked", ErrDigest, a.Path)
	}
	return nil
}
