package publisher

import (
	"sync"
	"time"
)

// Spacer spaces one installation's content-creating writes by a minimum
// interval (GitHub's guidance for POST requests: serially, at least a
// second apart). It never blocks: Reserve either takes the next slot or
// says how long until it is free, so the caller can snooze its job and
// free the worker for other installations' jobs.
type Spacer struct {
	interval time.Duration
	now      func() time.Time

	mu   sync.Mutex
	next map[int64]time.Time
}

// NewSpacer returns a Spacer; now nil means time.Now.
func NewSpacer(interval time.Duration, now func() time.Time) *Spacer {
	if now == nil {
		now = time.Now
	}
	return &Spacer{interval: interval, now: now, next: map[int64]time.Time{}}
}

// Reserve takes installation's next write slot and returns 0, or returns
// how long until the slot is free (nothing reserved).
func (s *Spacer) Reserve(installation int64) time.Duration {
	if s == nil || s.interval <= 0 {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if n, ok := s.next[installation]; ok && now.Before(n) {
		return n.Sub(now)
	}
	s.next[installation] = now.Add(s.interval)
	if len(s.next) > 4096 {
		for k, v := range s.next {
			if v.Before(now) {
				delete(s.next, k)
			}
		}
	}
	return 0
}
