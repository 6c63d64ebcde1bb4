package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// An image lockfile maps image classes to images pinned by digest. It is
// read-only for the runner (baked into its image); the instance admin
// maintains the byo section.
//
//	{
//	  "version": 1,
//	  "classes": {"node": {"name": "quavon/sandbox-node", "ref": "sha256:<64 hex>"}},
//	  "byo":     {"smoke": {"name": "quavon/sandbox-smoke", "ref": "repo@sha256:<64 hex>"}}
//	}
//
// ref is a local image ID (sha256:<hex>) or a registry digest
// (<repository>@sha256:<hex>). Tags are refused: a tag can move.

// LockedImage is one entry.
type LockedImage struct {
	Name string `json:"name"`
	Ref  string `json:"ref"`
}

// Lockfile is the parsed images.lock.json.
type Lockfile struct {
	Version int                    `json:"version"`
	Classes map[string]LockedImage `json:"classes"`
	BYO     map[string]LockedImage `json:"byo,omitempty"`
}

var (
	builtinClasses = []string{"scanners", "node", "python", "go"}
	byoNameRE      = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	imageIDRE      = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	digestRefRE    = regexp.MustCompile(`^[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+)?(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*@sha256:[0-9a-f]{64}$`)
)

// ErrUnknownImageClass means the lockfile has no image for a job's class.
var ErrUnknownImageClass = errors.New("image class not in the lockfile")

// LoadLockfile reads and validates a lockfile.
func LoadLockfile(path string) (*Lockfile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("image lockfile: %w", err)
	}
	return ParseLockfile(data)
}

// ParseLockfile validates every entry: known classes only, digests only.
func ParseLockfile(data []byte) (*Lockfile, error) {
	var lf Lockfile
	if err := strictJSON(data, &lf); err != nil {
		return nil, fmt.Errorf("image lockfile: %w", err)
	}
	if lf.Version != 1 {
		return nil, fmt.Errorf("image lockfile: version %d, want 1", lf.Version)
	}
	var errs []error
	for class, img := range lf.Classes {
		if !containsString(builtinClasses, class) {
			errs = append(errs, fmt.Errorf("class %q is not a built-in class (bring-your-own images go under byo)", class))
		}
		if err := validRef(img.Ref); err != nil {
			errs = append(errs, fmt.Errorf("class %s: %w", class, err))
		}
	}
	for name, img := range lf.BYO {
		if !byoNameRE.MatchString(name) {
			errs = append(errs, fmt.Errorf("byo name %q: want [a-z0-9._-], at most 63", name))
		}
		if err := validRef(img.Ref); err != nil {
			errs = append(errs, fmt.Errorf("byo %s: %w", name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("image lockfile: %w", err)
	}
	return &lf, nil
}

func validRef(ref string) error {
	if imageIDRE.MatchString(ref) || digestRefRE.MatchString(ref) {
		return nil
	}
	return fmt.Errorf("ref %q: want sha256:<64 hex> or <repository>@sha256:<64 hex>, never a tag", ref)
}

// Resolve maps a job's image class to its pinned reference.
func (lf *Lockfile) Resolve(class string) (string, error) {
	var img LockedImage
	var ok bool
	if name, isBYO := strings.CutPrefix(class, "byo:"); isBYO {
		img, ok = lf.BYO[name]
	} else {
		img, ok = lf.Classes[class]
	}
	if !ok {
		return "", fmt.Errorf("%w: %q", ErrUnknownImageClass, class)
	}
	return img.Ref, nil
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func strictJSON(data []byte, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return nil
}
