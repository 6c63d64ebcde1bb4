package sandbox

import (
	"github.com/quavon/quavon/internal/hostname"

	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"
)

// MaxEgressHosts is the most hosts one grant may name (as sandbox jobs).
const MaxEgressHosts = 16

// maxEgressGrantBytes bounds what the proxy parses from Valkey.
const maxEgressGrantBytes = 16 << 10

// EgressTokenRE matches a per-job proxy token: 32 random bytes in lowercase hex.
var EgressTokenRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ValidEgressToken reports whether s has the form of a token.
func ValidEgressToken(s string) bool { return EgressTokenRE.MatchString(s) }

var egressJobIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{8,64}$`)

// EgressGrant is what the runner stores, as JSON, under Names.Egress(token) for
// the setup step of one job: the hosts the job may CONNECT to until
// NotAfter. The runner deletes it when the setup step ends.
type EgressGrant struct {
	JobID    string    `json:"jobId"`
	Hosts    []string  `json:"hosts"`
	NotAfter time.Time `json:"notAfter"`
}

// Validate checks g the way the proxy does before honouring it; the runner
// calls it before storing one.
func (g EgressGrant) Validate() error {
	var errs []error
	if !egressJobIDRE.MatchString(g.JobID) {
		errs = append(errs, errors.New("jobId: want 8-64 of [A-Za-z0-9_-]"))
	}
	if len(g.Hosts) == 0 || len(g.Hosts) > MaxEgressHosts {
		errs = append(errs, fmt.Errorf("hosts: want 1-%d", MaxEgressHosts))
	}
	for i, h := range g.Hosts {
		if err := hostname.Validate(h); err != nil {
			errs = append(errs, fmt.Errorf("hosts[%d]: %w", i, err))
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
func (g EgressGrant) Allows(host string) bool { return slices.Contains(g.Hosts, host) }

// Outcomes of a grant lookup callers branch on.
var (
	ErrUnknownEgressToken = errors.New("unknown token")
	ErrInvalidEgressGrant = errors.New("invalid grant")
)

// DecodeEgressGrant parses and validates a stored grant. Unknown fields are
// refused: they mean the runner and the proxy disagree on the contract.
func DecodeEgressGrant(b []byte) (EgressGrant, error) {
	if len(b) > maxEgressGrantBytes {
		return EgressGrant{}, fmt.Errorf("%w: longer than %d bytes", ErrInvalidEgressGrant, maxEgressGrantBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var g EgressGrant
	if err := dec.Decode(&g); err != nil {
		return EgressGrant{}, fmt.Errorf("%w: %v", ErrInvalidEgressGrant, err)
	}
	if dec.More() {
		return EgressGrant{}, fmt.Errorf("%w: trailing data", ErrInvalidEgressGrant)
	}
	if err := g.Validate(); err != nil {
		return EgressGrant{}, fmt.Errorf("%w: %v", ErrInvalidEgressGrant, err)
	}
	return g, nil
}
