// Package valkey opens clients to Valkey (or Redis ≥ 7) the way every
// Quavon process needs them: authenticated as one ACL user, no client-side
// caching (it needs CLIENT TRACKING, which least-privilege users lack) and
// no CLIENT SETINFO on connect.
package valkey

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/quavon/quavon/internal/secretfile"
	"github.com/valkey-io/valkey-go"
)

// Config names one server and one ACL user.
type Config struct {
	Addr         string // host:port
	Username     string
	PasswordFile string // secrets only through files
}

// Open connects and pings; it fails if the server is unreachable or the
// credentials are refused.
func Open(ctx context.Context, cfg Config) (valkey.Client, error) {
	if cfg.Addr == "" || cfg.Username == "" {
		return nil, errors.New("valkey.Open: address and user are required")
	}
	var password string
	if cfg.PasswordFile != "" {
		b, err := secretfile.Read("QUAVON_VALKEY_PASSWORD_FILE", cfg.PasswordFile, 1)
		if err != nil {
			return nil, fmt.Errorf("valkey.Open: %w", err)
		}
		password = string(b)
	}
	c, err := valkey.NewClient(valkey.ClientOption{
		InitAddress:       []string{cfg.Addr},
		Username:          cfg.Username,
		Password:          password,
		DisableCache:      true,
		ClientSetInfo:     valkey.DisableClientSetInfo,
		ForceSingleClient: true,
		Dialer:            net.Dialer{Timeout: 5 * time.Second, KeepAlive: time.Second},
	})
	if err != nil {
		return nil, fmt.Errorf("valkey.Open %s as %s: %w", cfg.Addr, cfg.Username, err)
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Do(pctx, c.B().Ping().Build()).Error(); err != nil {
		c.Close()
		return nil, fmt.Errorf("valkey.Open %s as %s: %w", cfg.Addr, cfg.Username, err)
	}
	return c, nil
}
