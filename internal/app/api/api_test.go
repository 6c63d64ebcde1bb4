package api_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	apiapp "github.com/quavon/quavon/internal/app/api"
	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/testenv"
)

// /metrics of the assembled API on its own listener: every webhook
// delivery counted by app, event and outcome, and nothing a sender wrote
// (event header, repository, delivery id) in a label.
func TestAPIMetrics(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	dir := t.TempDir()
	u, _ := url.Parse(cp.AppURL)
	pw, _ := u.User.Password()
	u.User = url.User(u.User.Username())
	secret := "review-webhook-secret-0123456789"
	for name, content := range map[string]string{"pw": pw, "review": secret} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.LoadAPI([]string{"QUAVON_DATABASE_URL=" + u.String(), "QUAVON_DATABASE_PASSWORD_FILE=" + filepath.Join(dir, "pw"),
		"QUAVON_API_LISTEN=127.0.0.1:0", "QUAVON_API_METRICS_LISTEN=127.0.0.1:0",
		"QUAVON_GITHUB_REVIEW_WEBHOOK_SECRET_FILE=" + filepath.Join(dir, "review")})
	if err != nil {
		t.Fatal(err)
	}
	s, err := apiapp.New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	if s.MetricsAddr() == "" || s.MetricsAddr() == s.Addr() {
		t.Fatalf("metrics on %q, API on %q: want a listener of its own", s.MetricsAddr(), s.Addr())
	}

	post := func(app, event, body string, sign bool) int {
		req, _ := http.NewRequest("POST", "http://"+s.Addr()+"/webhooks/github/"+app, strings.NewReader(body))
		req.Header.Set("X-GitHub-Event", event)
		req.Header.Set("X-GitHub-Delivery", "d-secret-delivery-1")
		if sign {
			mac := hmac.New(sha256.New, []byte(secret))
			mac.Write([]byte(body))
			req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	pr := `{"action":"labeled","repository":{"full_name":"acme-corp/secret-repo"}}`
	for _, tc := range []struct {
		app, event, body string
		sign             bool
		status           int
	}{
		{"review", "pull_request", pr, false, 401},
		{"review", "acme-corp/secret-repo", pr, true, 202}, // an event Quavon does not parse
		{"review", "pull_request", pr, true, 202},          // an action it does not act on
		{"fixer", "issues", pr, true, 404},                 // no secret for the Fixer app
	} {
		if got := post(tc.app, tc.event, tc.body, tc.sign); got != tc.status {
			t.Fatalf("%s %s: %d, want %d", tc.app, tc.event, got, tc.status)
		}
	}

	res, err := http.Get("http://" + s.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	body := string(b)
	for _, want := range []string{
		`quavon_webhook_deliveries_total{app="review",event="other",outcome="bad_signature"} 1`,
		`quavon_webhook_deliveries_total{app="review",event="other",outcome="ignored"} 1`,
		`quavon_webhook_deliveries_total{app="review",event="pull_request",outcome="ignored"} 1`,
		`quavon_webhook_deliveries_total{app="fixer",event="other",outcome="not_found"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("missing %s", want)
		}
	}
	if !regexp.MustCompile(`(?m)^quavon_webhook_duration_seconds_count\{app="review",outcome="ignored"\} 2$`).MatchString(body) {
		t.Error("no webhook durations")
	}
	for _, leak := range []string{"acme", "secret-repo", "d-secret-delivery"} {
		if strings.Contains(body, leak) {
			t.Errorf("%q reached /metrics", leak)
		}
	}
	// The API's own listener does not serve /metrics.
	res, err = http.Get("http://" + s.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode == 200 || bytes.Contains(b, []byte("quavon_api_listen")) {
		t.Fatalf("GET /metrics on the API listener: %d", res.StatusCode)
	}
}
