package entry

import (
	"fmt"
	"unicode/utf8"
)

// capture keeps the head and the tail of one step's stream within a fixed
// budget, whatever the stream's length: the head is filled once, the tail
// is a ring buffer. Its memory is at most the budget.
type capture struct {
	budget           int
	headMax, tailMax int
	head, tail       []byte
	pos              int // oldest byte of the tail once the ring is full
	total            int64
}

func newCapture(budget int) *capture {
	budget = max(budget, 0)
	return &capture{budget: budget, headMax: budget / 2, tailMax: budget - budget/2}
}

// Write never fails: what does not fit is counted and dropped.
func (c *capture) Write(p []byte) (int, error) {
	n := len(p)
	c.total += int64(n)
	if room := c.headMax - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = grow(c.head, k, c.headMax)
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 || c.tailMax == 0 {
		return n, nil
	}
	if len(p) >= c.tailMax {
		c.tail = grow(c.tail[:0], c.tailMax, c.tailMax)
		c.tail = append(c.tail, p[len(p)-c.tailMax:]...)
		c.pos = 0
		return n, nil
	}
	if room := c.tailMax - len(c.tail); room > 0 {
		k := min(room, len(p))
		c.tail = grow(c.tail, k, c.tailMax)
		c.tail = append(c.tail, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		k := copy(c.tail[c.pos:], p)
		c.pos = (c.pos + k) % c.tailMax
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

// tailBytes returns the tail in order.
func (c *capture) tailBytes() []byte {
	if len(c.tail) < c.tailMax || c.pos == 0 {
		return c.tail
	}
	out := make([]byte, 0, len(c.tail))
	return append(append(out, c.tail[c.pos:]...), c.tail[:c.pos]...)
}

// render returns the captured stream as valid UTF-8 of at most c.budget
// bytes: all of it when it fits, else the head, the line
// "[… N bytes omitted …]" and the tail; cut reports the latter.
func (c *capture) render() (out []byte, cut bool) {
	tail := c.tailBytes()
	kept := int64(len(c.head) + len(tail))
	if kept == c.total { // nothing dropped: head and tail are contiguous
		all := append(append(make([]byte, 0, kept), c.head...), tail...)
		if s, used := validPrefix(all, c.budget, false); used == len(all) {
			return s, false
		}
	}
	// Budget the marker for the largest count it can show.
	room := c.budget - len(marker(c.total))
	if room <= 0 {
		return nil, c.total > 0
	}
	head, hUsed := validPrefix(c.head, room/2, true)
	tailOut, tUsed := validSuffix(tail, room-len(head), true)
	m := marker(c.total - int64(hUsed) - int64(tUsed))
	out = make([]byte, 0, len(head)+len(m)+len(tailOut))
	return append(append(append(out, head...), m...), tailOut...), true
}

func marker(omitted int64) string { return fmt.Sprintf("\n[… %d bytes omitted …]\n", omitted) }

// replacement stands for each run of invalid bytes, as strings.ToValidUTF8
// does.
const replacement = "\uFFFD"

// validPrefix returns the longest sanitised prefix of b that fits in
// budget bytes and how many bytes of b it stands for. cut says b was cut
// from a longer stream: an incomplete rune at its end is then left out
// rather than replaced.
func validPrefix(b []byte, budget int, cut bool) ([]byte, int) {
	if cut {
		b = TrimPartialRune(b)
	}
	out := make([]byte, 0, min(len(b), max(budget, 0)))
	i := 0
	for i < len(b) {
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size > 1 {
			if len(out)+size > budget {
				break
			}
			out = append(out, b[i:i+size]...)
			i += size
			continue
		}
		if len(out)+len(replacement) > budget {
			break
		}
		out = append(out, replacement...)
		for i < len(b) { // the whole run of invalid bytes
			if r, size := utf8.DecodeRune(b[i:]); r != utf8.RuneError || size > 1 {
				break
			}
			i++
		}
	}
	return out, i
}

// validSuffix is validPrefix from the end: the longest sanitised suffix of
// b within budget and how many bytes of b it stands for. cut says b starts
// inside a longer stream: continuation bytes of a rune whose start was
// dropped are left out.
func validSuffix(b []byte, budget int, cut bool) ([]byte, int) {
	skip := 0
	if cut {
		for skip < len(b) && skip < utf8.UTFMax-1 && !utf8.RuneStart(b[skip]) {
			skip++
		}
	}
	b = b[skip:]
	out := make([]byte, max(budget, 0))
	at := len(out) // out[at:] is the suffix built so far
	j := len(b)
	for j > 0 {
		r, size := utf8.DecodeLastRune(b[:j])
		if r != utf8.RuneError || size > 1 {
			if at < size {
				break
			}
			at -= size
			copy(out[at:], b[j-size:j])
			j -= size
			continue
		}
		if at < len(replacement) {
			break
		}
		at -= len(replacement)
		copy(out[at:], replacement)
		for j > 0 {
			if r, size := utf8.DecodeLastRune(b[:j]); r != utf8.RuneError || size > 1 {
				break
			}
			j--
		}
	}
	return out[at:], len(b) - j
}

// TrimPartialRune drops an incomplete UTF-8 sequence at the end of b, as
// left by cutting valid text at a byte count. The runner cuts the same way.
func TrimPartialRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}

// streamLog is stdout.log or stderr.log: a "== step ==" header line and the
// rendered capture of each step, within max bytes in all.
type streamLog struct {
	max   int
	buf   []byte
	total int64
	cut   bool
}

// begin returns the capture for the next step, sized to share bytes of the
// log at most (less what is already used) minus the step's header.
func (l *streamLog) begin(step string, share int) *capture {
	room := min(share, l.max-len(l.buf)) - len(header(step)) - 1 // 1: a closing newline
	return newCapture(room)
}

// end appends a finished step to the log.
func (l *streamLog) end(step string, c *capture) {
	l.total += c.total
	h := header(step)
	if len(l.buf)+len(h)+c.budget+1 > l.max || c.budget < 0 {
		l.cut = l.cut || c.total > 0
		return
	}
	body, cut := c.render()
	l.cut = l.cut || cut
	l.buf = append(append(l.buf, h...), body...)
	if len(body) > 0 && body[len(body)-1] != '\n' {
		l.buf = append(l.buf, '\n')
	}
}

func header(step string) string { return "== " + step + " ==\n" }
