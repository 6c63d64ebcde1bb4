package runner

import (
	"fmt"
	"unicode/utf8"

	"github.com/quavon/quavon/internal/sandbox/frame"
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

// skip counts n bytes of the stream that never arrived: the entry program
// dropped them from its tail before a flush.
func (c *capture) skip(n int64) { c.total += n }

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

// render returns the captured stream as valid UTF-8 of at most budget
// bytes (at most c.budget): all of it when it fits, else the head, the line
// "[… N bytes omitted …]" and the tail; cut reports the latter.
func (c *capture) render(budget int) (out []byte, cut bool) {
	budget = min(budget, c.budget)
	tail := c.tailBytes()
	kept := int64(len(c.head) + len(tail))
	if kept == c.total { // nothing dropped: head and tail are contiguous
		all := append(append(make([]byte, 0, kept), c.head...), tail...)
		if s, used := validPrefix(all, budget, false); used == len(all) {
			return s, false
		}
	}
	// Budget the marker for the largest count it can show.
	room := budget - len(marker(c.total))
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
		b = frame.TrimPartialRune(b)
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

// streamLog assembles stdout.log or stderr.log from the forwarded output:
// per step a "== step ==" header line and the rendered capture, within max
// bytes in all.
type streamLog struct {
	max      int
	sections []section
}

type section struct {
	step string
	c    *capture
}

// begin starts the capture of the next step, sized as the entry program
// forwards it.
func (l *streamLog) begin(step string, outputBytes int64) {
	l.sections = append(l.sections, section{step, newCapture(frame.StepBudget(outputBytes, step))})
}

// cur is the capture of the step that runs (nil before the first).
func (l *streamLog) cur() *capture {
	if len(l.sections) == 0 {
		return nil
	}
	return l.sections[len(l.sections)-1].c
}

// render returns the log and whether anything was cut. A step's section
// gets its budget, or less when earlier sections left less room.
func (l *streamLog) render() (buf []byte, cut bool) {
	for _, s := range l.sections {
		h := frame.Header(s.step)
		room := min(s.c.budget, l.max-len(buf)-len(h)-1) // 1: a closing newline
		if room < 0 {
			cut = cut || s.c.total > 0
			continue
		}
		body, c := s.c.render(room)
		cut = cut || c
		buf = append(append(buf, h...), body...)
		if len(body) > 0 && body[len(body)-1] != '\n' {
			buf = append(buf, '\n')
		}
	}
	return buf, cut
}
