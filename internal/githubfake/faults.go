package githubfake

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// FaultKind selects what an injected fault does.
type FaultKind int

const (
	// FaultLoseResponse performs the request, then closes the connection
	// without a response: the write happened, the client cannot know.
	FaultLoseResponse FaultKind = iota + 1
	// Fault5xx answers 502 (or Status) before doing anything.
	Fault5xx
	// FaultSecondaryRateLimit answers 403 with GitHub's secondary rate limit
	// body and Retry-After before doing anything.
	FaultSecondaryRateLimit
	// FaultRateLimit answers 403 (or Status 429) with x-ratelimit-remaining: 0
	// and x-ratelimit-reset before doing anything.
	FaultRateLimit
)

// Fault makes matching requests fail. Path is matched against the request
// path with {name} for one segment and {name...} for the rest, e.g.
// "/repos/{o}/{r}/git/refs" or "/graphql"; empty Method or Path match all.
type Fault struct {
	Method     string
	Path       string
	Kind       FaultKind
	Times      int           // number of matching requests affected; 0 means 1
	Status     int           // Fault5xx: default 502; FaultRateLimit: 403 or 429
	RetryAfter time.Duration // secondary rate limit Retry-After / rate limit reset; default 1 s

	left int
}

// InjectFault arms a fault. Faults are consumed in the order injected.
func (s *Server) InjectFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f.left = max(f.Times, 1)
	s.faults = append(s.faults, &f)
}

// PendingFaults reports how many injected faults have not fired yet.
func (s *Server) PendingFaults() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, f := range s.faults {
		n += f.left
	}
	return n
}

func (s *Server) takeFault(method, path string) *Fault {
	segs := patternSegs(path)
	for i, f := range s.faults {
		if f.Method != "" && !strings.EqualFold(f.Method, method) {
			continue
		}
		if f.Path != "" {
			if _, ok := (route{segs: patternSegs(f.Path)}).match(segs); !ok {
				continue
			}
		}
		f.left--
		if f.left <= 0 {
			s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
		}
		return f
	}
	return nil
}

func (c *call) writeFault(f *Fault) {
	wait := f.RetryAfter
	if wait <= 0 {
		wait = time.Second
	}
	secs := strconv.Itoa(int((wait + time.Second - 1) / time.Second))
	switch f.Kind {
	case Fault5xx:
		status := f.Status
		if status == 0 {
			status = http.StatusBadGateway
		}
		c.status = status
		c.header.Set("Content-Type", "text/html")
		c.out = []byte("<html><body><h1>" + strconv.Itoa(status) + " Server Error</h1></body></html>")
	case FaultSecondaryRateLimit:
		c.json(http.StatusForbidden, map[string]any{
			"message":           "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID FAKE.",
			"documentation_url": docsSecondaryRateLimit,
			"status":            "403",
		})
		c.header.Set("Retry-After", secs)
	case FaultRateLimit:
		status := f.Status
		if status == 0 {
			status = http.StatusForbidden
		}
		c.s.rateHeaders(c)
		c.header.Set("X-Ratelimit-Remaining", "0")
		c.header.Set("X-Ratelimit-Reset", strconv.FormatInt(c.s.now().Add(wait).Unix(), 10))
		msg := "API rate limit exceeded."
		if c.tok != nil {
			msg = fmt.Sprintf("API rate limit exceeded for installation ID %d.", c.tok.inst.ID)
		}
		c.json(status, map[string]any{"message": msg, "documentation_url": docsPrimaryRateLimit, "status": strconv.Itoa(status)})
	}
}
