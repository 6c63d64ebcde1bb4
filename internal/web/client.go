package web

import (
	"context"
	"net/http"

	"golang.org/x/oauth2"
)

// ctxWithClient makes x/oauth2 use c for the token exchange and the
// client it builds.
func ctxWithClient(ctx context.Context, c *http.Client) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, c)
}
