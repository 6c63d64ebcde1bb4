package tokenbroker

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/quavon/quavon/internal/github"
)

// Role is what a caller is. It bounds the token sets any of its credentials
// may be granted, whatever the callers file says (ARCHITECTURE.md, the
// process table): the API and the worker read, only the publisher writes.
type Role string

// The roles.
const (
	RoleAPI       Role = "api"
	RoleWorker    Role = "worker"
	RolePublisher Role = "publisher"
)

var roleSets = map[Role][]github.TokenSet{
	RoleAPI:       {github.SetReviewRead},
	RoleWorker:    {github.SetReviewRead},
	RolePublisher: {github.SetReviewRead, github.SetReviewWrite, github.SetCodeScanning, github.SetFixer},
}

// RoleSets is the widest list of sets role may be granted.
func RoleSets(role Role) []github.TokenSet { return slices.Clone(roleSets[role]) }

// Caller is one line of the callers file: a credential (known to the broker
// only by its SHA-256) and the sets it may ask for.
type Caller struct {
	Role Role
	Sets []github.TokenSet
	// Digest is the SHA-256 of the credential.
	Digest [sha256.Size]byte
}

// Allows reports whether c may be granted set.
func (c Caller) Allows(set github.TokenSet) bool { return slices.Contains(c.Sets, set) }

// MaxCallers bounds the callers file.
const MaxCallers = 256

// ParseCallers reads a callers file: one caller per line,
//
//	<role> <set>[,<set>...] <sha256 of the credential, hex>
//
// with blank lines and lines starting with # ignored. Every problem is
// reported with its line number: an unknown role or set, a set the role may
// not have, a malformed or repeated digest.
func ParseCallers(r io.Reader) ([]Caller, error) {
	var (
		out  []Caller
		errs []error
		seen = map[[sha256.Size]byte]int{}
	)
	sc := bufio.NewScanner(io.LimitReader(r, 1<<20))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			errs = append(errs, fmt.Errorf("line %d: want <role> <sets> <credential sha256>", n))
			continue
		}
		c := Caller{Role: Role(f[0])}
		allowed, ok := roleSets[c.Role]
		if !ok {
			errs = append(errs, fmt.Errorf("line %d: unknown role %q (want api, worker or publisher)", n, f[0]))
			continue
		}
		for _, s := range strings.Split(f[1], ",") {
			set := github.TokenSet(s)
			switch {
			case !set.Valid():
				errs = append(errs, fmt.Errorf("line %d: unknown token set %q (want one of %v)", n, s, github.TokenSets()))
			case !slices.Contains(allowed, set):
				errs = append(errs, fmt.Errorf("line %d: role %s may not have the set %s (it may have %v)", n, c.Role, s, allowed))
			case slices.Contains(c.Sets, set):
				errs = append(errs, fmt.Errorf("line %d: set %s listed twice", n, s))
			default:
				c.Sets = append(c.Sets, set)
			}
		}
		d, err := hex.DecodeString(f[2])
		if err != nil || len(d) != sha256.Size || strings.ToLower(f[2]) != f[2] {
			errs = append(errs, fmt.Errorf("line %d: the credential digest must be 64 lowercase hex digits", n))
			continue
		}
		copy(c.Digest[:], d)
		if prev, dup := seen[c.Digest]; dup {
			errs = append(errs, fmt.Errorf("line %d: the same credential as line %d", n, prev))
			continue
		}
		seen[c.Digest] = n
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, err)
	}
	if len(out) == 0 && len(errs) == 0 {
		errs = append(errs, errors.New("no callers"))
	}
	if len(out) > MaxCallers {
		errs = append(errs, fmt.Errorf("%d callers, at most %d", len(out), MaxCallers))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("callers file: %w", err)
	}
	return out, nil
}

// CredentialBytes is the length of a generated credential before encoding.
const CredentialBytes = 32

// NewCredential returns a fresh random credential (for the caller's own
// file) and the callers-file line that grants it sets under role.
func NewCredential(role Role, sets []github.TokenSet) (credential, line string, err error) {
	allowed, ok := roleSets[role]
	if !ok {
		return "", "", fmt.Errorf("unknown role %q", role)
	}
	if len(sets) == 0 {
		sets = allowed
	}
	names := make([]string, len(sets))
	for i, s := range sets {
		if !slices.Contains(allowed, s) {
			return "", "", fmt.Errorf("role %s may not have the set %s", role, s)
		}
		names[i] = string(s)
	}
	b := make([]byte, CredentialBytes)
	rand.Read(b)
	credential = "qvb_" + base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(credential))
	return credential, fmt.Sprintf("%s %s %s", role, strings.Join(names, ","), hex.EncodeToString(sum[:])), nil
}
