package github

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// BrokerToken is the token broker's answer to a TokenRequest.
type BrokerToken struct {
	Token          string      `json:"token"`
	ExpiresAt      time.Time   `json:"expiresAt"`
	InstallationID int64       `json:"installationId"`
	Repo           string      `json:"repository"`
	Set            TokenSet    `json:"set"`
	Permissions    Permissions `json:"permissions"`
}

// AppInstallation is one installation of an app as GitHub reports it to
// the app (GET /app/installations): where it is, what it may do and which
// events it is subscribed to.
type AppInstallation struct {
	ID          int64       `json:"id"`
	Account     string      `json:"account"`
	Permissions Permissions `json:"permissions"`
	Events      []string    `json:"events"`
	Suspended   bool        `json:"suspended"`
}

// BrokerApp is the token broker's GET /v1/apps answer for one app it holds
// a key of: its installations, or why GitHub did not list them. It holds
// no token.
type BrokerApp struct {
	Kind          AppKind           `json:"kind"`
	Installations []AppInstallation `json:"installations"`
	Error         string            `json:"error,omitempty"`
}

// MaxAppInstallations bounds the installations listed per app.
const MaxAppInstallations = 1000

// BrokerError is the broker's error body.
type BrokerError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error codes of the broker. The first four are the broker's own refusals;
// the rest carry GitHub's outcome of the mint request.
const (
	BrokerUnauthorized     = "unauthorized"       // unknown credential
	BrokerSetNotAllowed    = "set_not_allowed"    // the caller may not have that set
	BrokerBadRequest       = "bad_request"        // malformed or invalid request
	BrokerAppNotConfigured = "app_not_configured" // the broker holds no key of that app
	BrokerNotFound         = "not_found"          // GitHub: no such installation or repository
	BrokerForbidden        = "forbidden"          // GitHub: the installation may not
	BrokerConflict         = "conflict"           // GitHub: 409/422, e.g. repository not covered
	BrokerTokenMismatch    = "token_mismatch"     // GitHub's answer differed from the request
	BrokerRateLimited      = "rate_limited"
	BrokerUpstream         = "upstream" // anything else from GitHub or the network
)

// ErrBrokerRefused is the broker refusing the caller itself (unknown
// credential, a set its role may not have, a malformed request, an app it
// holds no key of). It is a deployment error, never retried.
var ErrBrokerRefused = errors.New("github: the token broker refused the request")

var brokerCodes = []struct {
	code   string
	status int
	err    error
}{
	{BrokerNotFound, http.StatusNotFound, ErrNotFound},
	{BrokerForbidden, http.StatusForbidden, ErrForbidden},
	{BrokerConflict, http.StatusConflict, ErrConflict},
	{BrokerTokenMismatch, http.StatusBadGateway, ErrTokenMismatch},
	{BrokerRateLimited, http.StatusServiceUnavailable, ErrRateLimited},
}

// BrokerCodeOf maps a mint error to the broker's code and HTTP status.
func BrokerCodeOf(err error) (code string, status int) {
	for _, c := range brokerCodes {
		if errors.Is(err, c.err) {
			return c.code, c.status
		}
	}
	return BrokerUpstream, http.StatusBadGateway
}

func brokerErr(e BrokerError, status int) error {
	for _, c := range brokerCodes {
		if e.Code == c.code {
			return fmt.Errorf("%w: %s", c.err, e.Message)
		}
	}
	switch e.Code {
	case BrokerUnauthorized, BrokerSetNotAllowed, BrokerBadRequest, BrokerAppNotConfigured:
		return fmt.Errorf("%w (%s): %s", ErrBrokerRefused, e.Code, e.Message)
	}
	return fmt.Errorf("token broker: status %d: %s", status, e.Message)
}

// maxBrokerResponse bounds what the client reads from the broker.
const maxBrokerResponse = 64 << 10

// BrokerClient is the TokenSource of every process but the broker: it asks
// the token broker for each token over HTTP, on a Unix socket
// ("unix:/path") or a TCP address ("host:port").
type BrokerClient struct {
	http       *http.Client
	url        string
	appsURL    string
	credential string
}

var _ TokenSource = (*BrokerClient)(nil)

// NewBrokerClient returns a client of the broker at addr authenticating with
// credential (the content of the caller's credential file).
func NewBrokerClient(addr string, credential []byte) (*BrokerClient, error) {
	cred := strings.TrimSpace(string(credential))
	if len(cred) < 32 || strings.ContainsAny(cred, " \t\r\n") {
		return nil, errors.New("github.NewBrokerClient: the credential must be one line of at least 32 characters")
	}
	tr := &http.Transport{MaxIdleConns: 16, IdleConnTimeout: time.Minute, ResponseHeaderTimeout: 2 * time.Minute}
	url := "http://" + addr
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		if path == "" {
			return nil, errors.New("github.NewBrokerClient: empty socket path")
		}
		var d net.Dialer
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialContext(ctx, "unix", path) }
		url = "http://broker"
	} else if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("github.NewBrokerClient: address %q: want unix:/path or host:port", addr)
	}
	return &BrokerClient{http: &http.Client{Transport: tr}, url: url + "/v1/tokens", appsURL: url + "/v1/apps", credential: cred}, nil
}

// Apps asks the broker for the apps it holds keys of and their
// installations as GitHub reports them (quavon doctor compares them with
// AppPermissions and AppEvents).
func (b *BrokerClient) Apps(ctx context.Context) ([]BrokerApp, error) {
	const op = "github.Apps"
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, b.appsURL, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	hr.Header.Set("Authorization", "Bearer "+b.credential)
	resp, err := b.http.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("%s: token broker: %w", op, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBrokerAppsResponse))
	if err != nil {
		return nil, fmt.Errorf("%s: token broker: %w", op, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e BrokerError
		_ = json.Unmarshal(raw, &e)
		return nil, fmt.Errorf("%s: %w", op, brokerErr(e, resp.StatusCode))
	}
	var apps []BrokerApp
	if err := json.Unmarshal(raw, &apps); err != nil {
		return nil, fmt.Errorf("%s: token broker: decode: %w", op, err)
	}
	return apps, nil
}

// maxBrokerAppsResponse bounds the apps answer (MaxAppInstallations per
// app, each a few hundred bytes).
const maxBrokerAppsResponse = 4 << 20

// Token asks the broker for a token and checks the answer is for exactly
// what was asked.
func (b *BrokerClient) Token(ctx context.Context, req TokenRequest) (*InstallationToken, error) {
	op := fmt.Sprintf("github.Token %s installation %d %s", req.Set, req.InstallationID, req.Repo)
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, b.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	hr.Header.Set("Authorization", "Bearer "+b.credential)
	hr.Header.Set("Content-Type", "application/json")
	resp, err := b.http.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("%s: token broker: %w", op, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBrokerResponse))
	if err != nil {
		return nil, fmt.Errorf("%s: token broker: %w", op, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e BrokerError
		_ = json.Unmarshal(raw, &e)
		return nil, fmt.Errorf("%s: %w", op, brokerErr(e, resp.StatusCode))
	}
	var t BrokerToken
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("%s: token broker: decode: %w", op, err)
	}
	if t.Token == "" || t.InstallationID != req.InstallationID || !strings.EqualFold(t.Repo, req.Repo) ||
		t.Set != req.Set || !t.Permissions.Equal(req.Set.Permissions()) {
		return nil, fmt.Errorf("%s: %w: the broker answered for another request", op, ErrTokenMismatch)
	}
	return NewInstallationToken(t.Token, t.InstallationID, t.Repo, t.Permissions, t.ExpiresAt), nil
}
