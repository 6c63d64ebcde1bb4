// Package auth is API authentication: per-user API tokens.
//
// A token is qvn_<tenant>_<secret>: the tenant's uuid as 32 hex digits and
// 32 random bytes as 43 base64url characters. Only its SHA-256 is stored
// (the secret has 256 bits, so a fast hash is enough); the plaintext is
// shown once, by Create. The tenant part is not a secret: it only says in
// which tenant to look the hash up, as every query runs under row-level
// security in one tenant.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/audit"
	"github.com/quavon/quavon/internal/postgres"
)

// ErrInvalidToken: malformed, unknown, revoked or expired. Which one is
// never said.
var ErrInvalidToken = errors.New("invalid API token")

var tokenRE = regexp.MustCompile(`^qvn_([0-9a-f]{32})_([A-Za-z0-9_-]{43})$`)

// Principal is who a valid token authenticates.
type Principal struct {
	Tenant  postgres.TenantID
	UserID  string
	TokenID string
}

func hash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// Create makes a token for user in tx's tenant, records it in the audit
// log, and returns the plaintext: the only time it exists outside the
// caller.
func Create(ctx context.Context, tx pgx.Tx, tenant postgres.TenantID, userID, name string, expires *time.Time) (token, id string, err error) {
	var secret [32]byte
	rand.Read(secret[:])
	tenantHex := strings.ReplaceAll(string(tenant), "-", "")
	if _, err := hex.DecodeString(tenantHex); err != nil || len(tenantHex) != 32 {
		return "", "", fmt.Errorf("auth.Create: tenant %q is not a uuid", tenant)
	}
	token = "qvn_" + strings.ToLower(tenantHex) + "_" + base64.RawURLEncoding.EncodeToString(secret[:])
	err = tx.QueryRow(ctx, `INSERT INTO api_tokens (tenant_id, user_id, name, token_hash, expires_at)
		VALUES (quavon_current_tenant(), $1, $2, $3, $4) RETURNING id::text`, userID, name, hash(token), expires).Scan(&id)
	if err != nil {
		return "", "", fmt.Errorf("auth.Create: %w", err)
	}
	if _, err := audit.Record(ctx, tx, audit.Event{ActorUserID: userID, Actor: "user:" + userID, Action: "api_token.create",
		SubjectType: "api_token", SubjectID: id, Metadata: map[string]any{"name": name}}); err != nil {
		return "", "", err
	}
	return token, id, nil
}

// Verify resolves a presented token.
func Verify(ctx context.Context, db *postgres.DB, token string, now time.Time) (*Principal, error) {
	m := tokenRE.FindStringSubmatch(token)
	if m == nil {
		return nil, ErrInvalidToken
	}
	t := m[1]
	tenant := postgres.TenantID(t[0:8] + "-" + t[8:12] + "-" + t[12:16] + "-" + t[16:20] + "-" + t[20:32])
	p := &Principal{Tenant: tenant}
	err := db.InTenant(ctx, tenant, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `UPDATE api_tokens SET last_used_at = $2
			WHERE token_hash = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $2)
			RETURNING id::text, user_id::text`, hash(token), now).Scan(&p.TokenID, &p.UserID)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrInvalidToken
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}
