package egress

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/quavon/quavon/internal/sandbox"
)

// MaxHosts is the most hosts one grant may name (as sandbox jobs).
const MaxHosts = 16

// maxGrantBytes bounds what the proxy parses from Valkey.
const maxGrantBytes = 16 << 10

// TokenRE matches a per-job proxy token: 32 random bytes in lowercase hex.
var TokenRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ValidToken reports whether s has the form of a token.
func ValidToken(s string) bool { return TokenRE.MatchString(s) }

var jobIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{8,64}$`)

// Grant is what the runner stores, as JSON, under Names.Egress(token) for
// the setup step of one job: the hosts the job may CONNECT to until
// NotAfter. The runner deletes it when the setup step ends.
type Grant struct {
	JobID    string    `json:"jobId"`
	Hosts    []string  `json:"hosts"`
	NotAfter time.Time `json:"notAfter"`
}

// Validate checks g the way the proxy does before honouring it; the runner
// calls it before storing one.
func (g Grant) Validate() error {
	var errs []error
	if !jobIDRE.MatchString(g.JobID) {
		errs = append(errs, errors.New("jobId: want 8-64 of [A-Za-z0-9_-]"))
	}
	if len(g.Hosts) == 0 || len(g.Hosts) > MaxHosts {
		errs = append(errs, fmt.Errorf("hosts: want 1-%d", MaxHosts))
	}
	for i, h := range g.Hosts {
		if err := sandbox.ValidateHost(h); err != nil {
			errs = append(errs, fmt.Errorf("hosts[%d]: %w", i, err))
		} else if endsInNumber(h) {
			errs = append(errs, fmt.Errorf("hosts[%d]: %q is an IP address to some resolvers", i, h))
		} else if slices.Contains(g.Hosts[:i], h) {
			errs = append(errs, fmt.Errorf("hosts[%d]: duplicate %q", i, h))
		}
	}
	if g.NotAfter.IsZero() {
		errs = append(errs, errors.New("notAfter: not set"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("egress grant: %w", err)
	}
	return nil
}

// Allows reports whether host (as ParseTarget returns it) is one of g's
// hosts, exactly.
func (g Grant) Allows(host string) bool { return slices.Contains(g.Hosts, host) }

// Outcomes of a grant lookup callers branch on.
var (
	ErrUnknownToken = errors.New("unknown token")
	ErrInvalidGrant = errors.New("invalid grant")
)

// DecodeGrant parses and validates a stored grant. Unknown fields are
// refused: they mean the runner and the proxy disagree on the contract.
func DecodeGrant(b []byte) (Grant, error) {
	if len(b) > maxGrantBytes {
		return Grant{}, fmt.Errorf("%w: longer than %d bytes", ErrInvalidGrant, maxGrantBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var g Grant
	if err := dec.Decode(&g); err != nil {
		return Grant{}, fmt.Errorf("%w: %v", ErrInvalidGrant, err)
	}
	if dec.More() {
		return Grant{}, fmt.Errorf("%w: trailing data", ErrInvalidGrant)
	}
	if err := g.Validate(); err != nil {
		return Grant{}, fmt.Errorf("%w: %v", ErrInvalidGrant, err)
	}
	return g, nil
}

// ValkeyGrants reads grants with GET only, so the read-only ACL user egress
// suffices.
type ValkeyGrants struct {
	c     valkey.Client
	names sandbox.Names
}

// NewValkeyGrants reads the grants of one pool through c.
func NewValkeyGrants(c valkey.Client, names sandbox.Names) *ValkeyGrants {
	return &ValkeyGrants{c: c, names: names}
}

var _ GrantStore = (*ValkeyGrants)(nil)

// Lookup returns the grant of token: ErrUnknownToken when there is none,
// ErrInvalidGrant when it does not parse or validate, another error when
// Valkey cannot be asked. It does not check NotAfter.
func (s *ValkeyGrants) Lookup(ctx context.Context, token string) (Grant, error) {
	if !ValidToken(token) {
		return Grant{}, ErrUnknownToken
	}
	b, err := s.c.Do(ctx, s.c.B().Get().Key(s.names.Egress(token)).Build()).AsBytes()
	if valkey.IsValkeyNil(err) {
		return Grant{}, ErrUnknownToken
	}
	if err != nil {
		// Never name the key: it holds the token.
		return Grant{}, fmt.Errorf("egress grant lookup: %w", err)
	}
	return DecodeGrant(b)
}
