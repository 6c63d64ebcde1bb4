package valkeyq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/valkey-io/valkey-go"

	"github.com/quavon/quavon/internal/sandbox"
)

// EgressGrants keeps per-job proxy credentials under Names.Egress(token):
// the runner puts and revokes them, the egress proxy (Valkey user egress,
// read-only) looks them up with GET only.
type EgressGrants struct {
	client valkey.Client
	names  Names
}

// NewEgressGrants returns the grant store of one pool.
func NewEgressGrants(client valkey.Client, names Names) *EgressGrants {
	return &EgressGrants{client: client, names: names}
}

// Put stores grant under token until grant.NotAfter.
func (g *EgressGrants) Put(ctx context.Context, token string, grant sandbox.EgressGrant) error {
	if !sandbox.ValidEgressToken(token) {
		return errors.New("egress grant: invalid token")
	}
	if err := grant.Validate(); err != nil {
		return fmt.Errorf("egress grant: %w", err)
	}
	data, err := json.Marshal(grant)
	if err != nil {
		return err
	}
	return g.client.Do(ctx, g.client.B().Set().Key(g.names.Egress(token)).Value(string(data)).Pxat(grant.NotAfter).Build()).Error()
}

// Revoke deletes the grant of token; deleting a missing grant is fine.
func (g *EgressGrants) Revoke(ctx context.Context, token string) error {
	return g.client.Do(ctx, g.client.B().Del().Key(g.names.Egress(token)).Build()).Error()
}

// Lookup returns the grant of token: sandbox.ErrUnknownEgressToken when
// there is none, sandbox.ErrInvalidEgressGrant when it does not parse or
// validate, another error when Valkey cannot be asked. It does not check
// NotAfter.
func (g *EgressGrants) Lookup(ctx context.Context, token string) (sandbox.EgressGrant, error) {
	if !sandbox.ValidEgressToken(token) {
		return sandbox.EgressGrant{}, sandbox.ErrUnknownEgressToken
	}
	b, err := g.client.Do(ctx, g.client.B().Get().Key(g.names.Egress(token)).Build()).AsBytes()
	if valkey.IsValkeyNil(err) {
		return sandbox.EgressGrant{}, sandbox.ErrUnknownEgressToken
	}
	if err != nil {
		// Never name the key: it holds the token.
		return sandbox.EgressGrant{}, fmt.Errorf("egress grant lookup: %w", err)
	}
	return sandbox.DecodeEgressGrant(b)
}
