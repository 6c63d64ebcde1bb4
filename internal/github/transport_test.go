package github

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// scripted serves the given responses in order and records each request.
type scripted struct {
	mu     sync.Mutex
	steps  []func(w http.ResponseWriter, r *http.Request)
	calls  int
	bodies []string
	inm    []string
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	i := s.calls
	s.calls++
	b, _ := io.ReadAll(r.Body)
	s.bodies = append(s.bodies, string(b))
	s.inm = append(s.inm, r.Header.Get("If-None-Match"))
	s.mu.Unlock()
	if i >= len(s.steps) {
		i = len(s.steps) - 1
	}
	s.steps[i](w, r)
}

func status(code int, headers map[string]string, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		for k, v := range headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

func newTestTransport(t *testing.T, s *scripted, cfg TransportConfig) (*http.Client, *fakeClock, string) {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	clock := newFakeClock()
	cfg.Base = srv.Client().Transport
	cfg.Now = clock.Now
	cfg.Sleep = clock.Sleep
	cfg.Jitter = func() float64 { return 0.5 }
	return &http.Client{Transport: NewTransport(cfg)}, clock, srv.URL
}

func do(t *testing.T, c *http.Client, method, url, body string) (*http.Response, string, error) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b), nil
}

func TestTransportPrimaryRateLimitWaitsForReset(t *testing.T) {
	t.Parallel()
	s := &scripted{}
	c, clock, url := newTestTransport(t, s, TransportConfig{})
	reset := clock.Now().Add(30 * time.Second).Unix()
	s.steps = []func(http.ResponseWriter, *http.Request){
		status(403, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strconv.FormatInt(reset, 10)}, `{"message":"API rate limit exceeded"}`),
		status(200, nil, `ok`),
	}
	resp, body, err := do(t, c, "GET", url+"/repos/o/r", "")
	if err != nil || resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("resp %v %q %v", resp, body, err)
	}
	sleeps := clock.Sleeps()
	if len(sleeps) != 1 || sleeps[0] != 31*time.Second {
		t.Fatalf("sleeps = %v, want [31s] (reset + 1s slack)", sleeps)
	}
}

func TestTransportPrimaryRateLimitBeyondMaxWaitErrors(t *testing.T) {
	t.Parallel()
	s := &scripted{}
	c, clock, url := newTestTransport(t, s, TransportConfig{MaxWait: time.Minute})
	reset := clock.Now().Add(40 * time.Minute).Unix()
	s.steps = []func(http.ResponseWriter, *http.Request){
		status(429, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strconv.FormatInt(reset, 10)}, `{}`),
	}
	_, _, err := do(t, c, "GET", url+"/x", "")
	var rl *RateLimitError
	if !errors.As(err, &rl) || !errors.Is(err, ErrRateLimited) || rl.Secondary || rl.RetryAt.Unix() != reset+1 {
		t.Fatalf("err = %v", err)
	}
	if len(clock.Sleeps()) != 0 || s.calls != 1 {
		t.Fatalf("slept %v, %d calls", clock.Sleeps(), s.calls)
	}
}

func TestTransportSecondaryRateLimit(t *testing.T) {
	t.Parallel()
	t.Run("retry-after", func(t *testing.T) {
		t.Parallel()
		s := &scripted{steps: []func(http.ResponseWriter, *http.Request){
			status(403, map[string]string{"Retry-After": "17"}, `{"message":"You have exceeded a secondary rate limit."}`),
			status(201, nil, `created`),
		}}
		c, clock, url := newTestTransport(t, s, TransportConfig{})
		// A rate-limited write was not processed, so it is replayed, with
		// the same body.
		resp, _, err := do(t, c, "POST", url+"/repos/o/r/git/blobs", `{"content":"x"}`)
		if err != nil || resp.StatusCode != 201 {
			t.Fatalf("%v %v", resp, err)
		}
		if got := clock.Sleeps(); len(got) != 1 || got[0] != 17*time.Second {
			t.Fatalf("sleeps = %v, want [17s]", got)
		}
		if s.bodies[0] != s.bodies[1] || s.bodies[1] != `{"content":"x"}` {
			t.Fatalf("replayed body %q", s.bodies)
		}
	})
	t.Run("message only waits a minute then doubles", func(t *testing.T) {
		t.Parallel()
		limited := status(403, nil, `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}`)
		s := &scripted{steps: []func(http.ResponseWriter, *http.Request){limited, limited, status(200, nil, "ok")}}
		c, clock, url := newTestTransport(t, s, TransportConfig{MaxWait: 5 * time.Minute})
		resp, _, err := do(t, c, "GET", url+"/x", "")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%v %v", resp, err)
		}
		if got := clock.Sleeps(); len(got) != 2 || got[0] != time.Minute || got[1] != 2*time.Minute {
			t.Fatalf("sleeps = %v, want [1m 2m]", got)
		}
	})
	t.Run("persistent gives up", func(t *testing.T) {
		t.Parallel()
		s := &scripted{steps: []func(http.ResponseWriter, *http.Request){
			status(429, map[string]string{"Retry-After": "1"}, `{}`),
		}}
		c, _, url := newTestTransport(t, s, TransportConfig{MaxRetries: 2})
		_, _, err := do(t, c, "GET", url+"/x", "")
		var rl *RateLimitError
		if !errors.As(err, &rl) || !rl.Secondary {
			t.Fatalf("err = %v", err)
		}
		if s.calls != 3 {
			t.Fatalf("calls = %d, want 1 + 2 retries", s.calls)
		}
	})
}

func TestTransportPlainForbiddenPassesThrough(t *testing.T) {
	t.Parallel()
	s := &scripted{steps: []func(http.ResponseWriter, *http.Request){
		status(403, map[string]string{"X-RateLimit-Remaining": "4999"}, `{"message":"Resource not accessible by integration"}`),
	}}
	c, clock, url := newTestTransport(t, s, TransportConfig{})
	resp, body, err := do(t, c, "POST", url+"/x", `{}`)
	if err != nil || resp.StatusCode != 403 || !strings.Contains(body, "Resource not accessible") {
		t.Fatalf("%v %q %v", resp, body, err)
	}
	if s.calls != 1 || len(clock.Sleeps()) != 0 {
		t.Fatalf("calls %d sleeps %v", s.calls, clock.Sleeps())
	}
}

func TestTransportServerErrors(t *testing.T) {
	t.Parallel()
	for _, code := range []int{502, 503, 504} {
		t.Run("GET retried "+strconv.Itoa(code), func(t *testing.T) {
			t.Parallel()
			s := &scripted{steps: []func(http.ResponseWriter, *http.Request){
				status(code, nil, "bad"), status(code, nil, "bad"), status(200, nil, "ok"),
			}}
			c, clock, url := newTestTransport(t, s, TransportConfig{})
			resp, body, err := do(t, c, "GET", url+"/x", "")
			if err != nil || resp.StatusCode != 200 || body != "ok" {
				t.Fatalf("%v %q %v", resp, body, err)
			}
			// Exponential with jitter fixed at 0.5: 1s → 0.75s, 2s → 1.5s.
			if got := clock.Sleeps(); len(got) != 2 || got[0] != 750*time.Millisecond || got[1] != 1500*time.Millisecond {
				t.Fatalf("sleeps = %v", got)
			}
		})
	}
	t.Run("GET gives up with the last response", func(t *testing.T) {
		t.Parallel()
		s := &scripted{steps: []func(http.ResponseWriter, *http.Request){status(502, nil, "bad")}}
		c, _, url := newTestTransport(t, s, TransportConfig{MaxRetries: 2})
		resp, _, err := do(t, c, "GET", url+"/x", "")
		if err != nil || resp.StatusCode != 502 || s.calls != 3 {
			t.Fatalf("%v %v calls %d", resp, err, s.calls)
		}
	})
	for _, method := range []string{"POST", "PATCH", "PUT", "DELETE"} {
		t.Run(method+" never retried", func(t *testing.T) {
			t.Parallel()
			s := &scripted{steps: []func(http.ResponseWriter, *http.Request){status(502, nil, "bad"), status(201, nil, "dup")}}
			c, clock, url := newTestTransport(t, s, TransportConfig{})
			resp, _, err := do(t, c, method, url+"/repos/o/r/git/refs", `{"ref":"refs/heads/x"}`)
			if err != nil || resp.StatusCode != 502 {
				t.Fatalf("%v %v", resp, err)
			}
			if s.calls != 1 || len(clock.Sleeps()) != 0 {
				t.Fatalf("%s retried: %d calls", method, s.calls)
			}
		})
	}
}

func TestTransportETag(t *testing.T) {
	t.Parallel()
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(5000-hits))
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		_, _ = io.WriteString(w, `{"auth":"`+r.Header.Get("Authorization")+`"}`)
	}))
	t.Cleanup(srv.Close)
	cache := NewETagCache(0, 0, 0)
	c := &http.Client{Transport: NewTransport(TransportConfig{Base: srv.Client().Transport, ETags: cache})}
	get := func(auth string) (*http.Response, string) {
		req, _ := http.NewRequest("GET", srv.URL+"/repos/o/r", nil)
		req.Header.Set("Authorization", auth)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	_, first := get("token A")
	resp, second := get("token A")
	if resp.StatusCode != 200 || second != first || resp.Header.Get("X-From-Cache") != "1" {
		t.Fatalf("304 not served from cache: %d %q", resp.StatusCode, second)
	}
	if resp.Header.Get("X-Ratelimit-Remaining") != "4998" {
		t.Errorf("rate-limit headers not taken from the 304: %q", resp.Header.Get("X-Ratelimit-Remaining"))
	}
	// Another credential never gets A's cached body.
	resp, other := get("token B")
	if other == first || resp.Header.Get("X-From-Cache") != "" {
		t.Fatalf("cache crossed credentials: %q", other)
	}
	if cache.Len() != 2 || hits != 3 {
		t.Fatalf("len %d hits %d", cache.Len(), hits)
	}
}

func TestETagCacheBounds(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"`+r.URL.Path+`"`)
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		_, _ = w.Write(bytes.Repeat([]byte("x"), n))
	}))
	t.Cleanup(srv.Close)
	cache := NewETagCache(2, 100, 150)
	c := &http.Client{Transport: NewTransport(TransportConfig{Base: srv.Client().Transport, ETags: cache})}
	fetch := func(n int) {
		resp, err := c.Get(srv.URL + "/" + strconv.Itoa(n))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if len(b) != n {
			t.Fatalf("body %d bytes, want %d", len(b), n)
		}
	}
	fetch(500) // over the entry cap: streamed, not cached
	if cache.Len() != 0 {
		t.Fatal("oversize entry cached")
	}
	fetch(60)
	fetch(70)
	fetch(80) // total 210 > 150 and 3 > 2 entries: oldest evicted
	if cache.Len() != 2 {
		t.Fatalf("len = %d", cache.Len())
	}
}

func TestTransportHonoursContext(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(status(503, nil, "")))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	c := &http.Client{Transport: NewTransport(TransportConfig{
		Base:  srv.Client().Transport,
		Sleep: func(ctx context.Context, _ time.Duration) error { cancel(); return ctx.Err() },
	})}
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	if _, err := c.Do(req); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}
