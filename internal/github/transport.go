package github

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Transport defaults, chosen from GitHub's guidance on rate limits.
const (
	// DefaultMaxWait bounds a single wait for a rate limit. A primary limit
	// resetting later than this is returned as a *RateLimitError so that the
	// job can be rescheduled instead of holding a worker.
	DefaultMaxWait = 2 * time.Minute
	// DefaultMaxRetries bounds the retries of one request (rate limits and
	// 502/503/504 on GET/HEAD alike).
	DefaultMaxRetries = 3
	// SecondaryRateLimitWait is the wait GitHub asks for after a secondary
	// rate limit without retry-after: "at least one minute", growing
	// exponentially while it persists.
	SecondaryRateLimitWait = time.Minute
	// BackoffBase and BackoffMax shape the exponential backoff for
	// 502/503/504 on idempotent requests.
	BackoffBase = time.Second
	BackoffMax  = 30 * time.Second
	// maxErrorBody bounds how much of a 403/429 body is read to recognise a
	// secondary rate limit message.
	maxErrorBody = 64 << 10
)

// TransportConfig configures NewTransport. The zero value is usable: real
// clock, real sleep, defaults above, no conditional requests.
type TransportConfig struct {
	// Base performs the requests; nil means http.DefaultTransport.
	Base http.RoundTripper
	// Now and Sleep are injectable so tests never sleep. Sleep must return
	// ctx.Err() when the context ends first.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter returns a value in [0, 1); nil means math/rand/v2.
	Jitter func() float64
	// MaxWait and MaxRetries: zero means the defaults.
	MaxWait    time.Duration
	MaxRetries int
	// ETags enables conditional GET requests; nil disables them.
	ETags *ETagCache
	// Logger receives one line per wait; nil discards.
	Logger *slog.Logger
}

// Transport is the http.RoundTripper under both the REST and the GraphQL
// client. It
//   - waits for primary rate limits (403/429 with x-ratelimit-remaining: 0)
//     until x-ratelimit-reset, and for secondary rate limits (403/429 with
//     retry-after, or whose body mentions a secondary rate limit) for
//     retry-after or at least SecondaryRateLimitWait, doubling while it
//     persists; a wait longer than MaxWait, or a limit that outlasts
//     MaxRetries, ends in a *RateLimitError. A rate-limited request was not
//     processed by GitHub, so it is replayed whatever its method;
//   - retries 502/503/504 with exponential backoff and jitter for GET and
//     HEAD only. A POST/PATCH/PUT/DELETE is never retried on a server
//     error: the write may have happened and the caller must reconcile;
//   - sends If-None-Match for GETs it has an ETag for and serves the cached
//     body on 304 (GitHub does not count 304s against the primary limit).
type Transport struct {
	base       http.RoundTripper
	now        func() time.Time
	sleep      func(context.Context, time.Duration) error
	jitter     func() float64
	maxWait    time.Duration
	maxRetries int
	etags      *ETagCache
	log        *slog.Logger
}

// NewTransport returns a Transport with cfg's zero fields defaulted.
func NewTransport(cfg TransportConfig) *Transport {
	t := &Transport{
		base: cfg.Base, now: cfg.Now, sleep: cfg.Sleep, jitter: cfg.Jitter,
		maxWait: cfg.MaxWait, maxRetries: cfg.MaxRetries, etags: cfg.ETags, log: cfg.Logger,
	}
	if t.base == nil {
		t.base = http.DefaultTransport
	}
	if t.now == nil {
		t.now = time.Now
	}
	if t.sleep == nil {
		t.sleep = sleepContext
	}
	if t.jitter == nil {
		t.jitter = rand.Float64
	}
	if t.maxWait <= 0 {
		t.maxWait = DefaultMaxWait
	}
	if t.maxRetries <= 0 {
		t.maxRetries = DefaultMaxRetries
	}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	return t
}

func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	idempotent := req.Method == http.MethodGet || req.Method == http.MethodHead
	var (
		key    string
		cached *etagEntry
	)
	if t.etags != nil && req.Method == http.MethodGet && req.Header.Get("If-None-Match") == "" && req.Header.Get("Range") == "" {
		key = etagKey(req)
		cached = t.etags.get(key)
	}
	secondaryStreak := 0
	for attempt := 0; ; attempt++ {
		r, err := prepare(req, attempt, cached)
		if err != nil {
			return nil, err
		}
		resp, err := t.base.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		switch status := resp.StatusCode; {
		case status == http.StatusNotModified && cached != nil:
			drain(resp)
			return cached.response(r, resp.Header), nil

		case status == http.StatusForbidden || status == http.StatusTooManyRequests:
			limit, ok := t.rateLimit(resp, secondaryStreak)
			if !ok {
				return resp, nil
			}
			drain(resp)
			if limit.Secondary {
				secondaryStreak++
			}
			wait := limit.RetryAt.Sub(t.now())
			if wait < 0 {
				wait = 0
			}
			if attempt >= t.maxRetries || wait > t.maxWait || !replayable(req) {
				return nil, limit
			}
			t.log.LogAttrs(ctx, slog.LevelWarn, "github rate limit, waiting",
				slog.String("method", req.Method), slog.String("path", req.URL.Path),
				slog.Bool("secondary", limit.Secondary), slog.Duration("wait", wait))
			if err := t.sleep(ctx, wait); err != nil {
				return nil, err
			}

		case idempotent && (status == http.StatusBadGateway || status == http.StatusServiceUnavailable || status == http.StatusGatewayTimeout):
			if attempt >= t.maxRetries {
				return resp, nil
			}
			drain(resp)
			wait := t.backoff(attempt)
			t.log.LogAttrs(ctx, slog.LevelInfo, "github server error, retrying",
				slog.String("method", req.Method), slog.String("path", req.URL.Path),
				slog.Int("status", status), slog.Duration("wait", wait))
			if err := t.sleep(ctx, wait); err != nil {
				return nil, err
			}

		case status == http.StatusOK && key != "" && resp.Header.Get("ETag") != "":
			return t.etags.store(key, resp)

		default:
			return resp, nil
		}
	}
}

// prepare clones req for one attempt: a fresh body for replays and
// If-None-Match when a cached ETag exists.
func prepare(req *http.Request, attempt int, cached *etagEntry) (*http.Request, error) {
	if attempt == 0 && cached == nil {
		return req, nil
	}
	r := req.Clone(req.Context())
	if attempt > 0 && req.Body != nil && req.Body != http.NoBody {
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		r.Body = body
	}
	if cached != nil {
		r.Header.Set("If-None-Match", cached.etag)
	}
	return r, nil
}

func replayable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// rateLimit classifies a 403/429 response following GitHub's documented
// order: retry-after, then x-ratelimit-remaining: 0 with x-ratelimit-reset,
// then a secondary limit message (or any 429) with at least one minute,
// doubled per consecutive secondary limit. ok is false for a plain 403.
// The response body is restored for the caller when ok is false.
func (t *Transport) rateLimit(resp *http.Response, streak int) (*RateLimitError, bool) {
	head, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	if err != nil {
		return nil, false
	}
	now := t.now()
	secondary := strings.Contains(strings.ToLower(string(head)), "secondary rate limit")
	e := &RateLimitError{Secondary: secondary, StatusCode: resp.StatusCode}
	if at, ok := retryAfter(resp.Header.Get("Retry-After"), now); ok {
		e.Secondary = true
		e.RetryAt = at
		return e, true
	}
	if resp.Header.Get("X-RateLimit-Remaining") == "0" {
		if reset, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			// One second of slack: the reset is whole seconds and clocks differ.
			e.RetryAt = time.Unix(reset, 0).Add(time.Second)
		} else {
			e.RetryAt = now.Add(SecondaryRateLimitWait)
		}
		return e, true
	}
	if secondary || resp.StatusCode == http.StatusTooManyRequests {
		e.Secondary = true
		e.RetryAt = now.Add(SecondaryRateLimitWait << min(streak, 10))
		return e, true
	}
	return nil, false
}

func retryAfter(v string, now time.Time) (time.Time, bool) {
	if v == "" {
		return time.Time{}, false
	}
	if s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && s >= 0 {
		return now.Add(time.Duration(min(s, 1<<31)) * time.Second), true
	}
	if at, err := http.ParseTime(v); err == nil {
		return at, true
	}
	return time.Time{}, false
}

// backoff is exponential with equal jitter: half the step fixed, half random.
func (t *Transport) backoff(attempt int) time.Duration {
	d := min(BackoffBase<<min(attempt, 16), BackoffMax)
	return d/2 + time.Duration(t.jitter()*float64(d/2))
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	_ = resp.Body.Close()
}
