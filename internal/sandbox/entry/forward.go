package entry

import (
	"sync"
	"time"

	"github.com/quavon/quavon/internal/sandbox/frame"
)

// forwarder holds what one stream of a running step printed since the
// last flush: the head of the stream (its first half of the budget) in
// full, after that only the newest bytes, in a ring of the other half.
// Memory stays within the budget however much is written; the runner keeps
// head and tail from what is flushed (spec SB7: the output is capped
// inside the sandbox already, and a job killed early still has its output
// so far outside it).
type forwarder struct {
	t        frame.Type
	mu       sync.Mutex
	headLeft int    // bytes of the head still to forward in full
	head     []byte // head bytes not yet flushed
	tailMax  int
	tail     []byte // the ring once len == tailMax
	pos      int    // oldest byte of the ring when full
	skipped  int64  // bytes dropped from the ring before being flushed
	total    int64
}

func newForwarder(t frame.Type, budget int) *forwarder {
	budget = max(budget, 0)
	return &forwarder{t: t, headLeft: budget / 2, tailMax: budget - budget/2}
}

// Write never fails: what does not fit is counted and dropped.
func (f *forwarder) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(p)
	f.total += int64(n)
	if k := min(f.headLeft, len(p)); k > 0 {
		f.head = append(f.head, p[:k]...)
		f.headLeft -= k
		p = p[k:]
	}
	if len(p) == 0 {
		return n, nil
	}
	if len(p) >= f.tailMax {
		f.skipped += int64(len(f.tail) + len(p) - f.tailMax)
		f.tail = append(grow(f.tail[:0], f.tailMax, f.tailMax), p[len(p)-f.tailMax:]...)
		f.pos = 0
		return n, nil
	}
	if room := f.tailMax - len(f.tail); room > 0 {
		k := min(room, len(p))
		f.tail = append(grow(f.tail, k, f.tailMax), p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 { // the ring is full: overwrite the oldest
		k := copy(f.tail[f.pos:], p)
		f.skipped += int64(k)
		f.pos = (f.pos + k) % f.tailMax
		p = p[k:]
	}
	return n, nil
}

// grow makes room for n more bytes in b without ever reserving more than
// limit in total, unlike append's doubling.
func grow(b []byte, n, limit int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	c := min(max(2*cap(b), len(b)+n, 4096), limit)
	nb := make([]byte, len(b), c)
	copy(nb, b)
	return nb
}

// flush sends what is held (the head part first) and empties it.
func (f *forwarder) flush(o *output) {
	f.mu.Lock()
	head := f.head
	f.head = nil
	var tail []byte
	if len(f.tail) > 0 {
		tail = make([]byte, 0, len(f.tail))
		tail = append(append(tail, f.tail[f.pos:]...), f.tail[:f.pos]...)
	}
	skipped := f.skipped
	f.tail, f.pos, f.skipped = f.tail[:0], 0, 0
	f.mu.Unlock()
	if len(head) > 0 {
		o.stream(f.t, 0, head)
	}
	if len(tail) > 0 || skipped > 0 {
		o.stream(f.t, skipped, tail)
	}
}

// flushEvery flushes fs every frame.FlushInterval until stop is closed.
func flushEvery(o *output, stop <-chan struct{}, fs ...*forwarder) {
	t := time.NewTicker(frame.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			for _, f := range fs {
				f.flush(o)
			}
		case <-stop:
			return
		}
	}
}
