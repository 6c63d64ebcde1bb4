package runner

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/quavon/quavon/internal/sandbox/frame"
)

func TestCaptureKeepsHeadAndTail(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		budget int
		writes []string
		want   string
		cut    bool
	}{
		{"fits", 100, []string{"hello ", "world"}, "hello world", false},
		{"exactly", 11, []string{"hello world"}, "hello world", false},
		{"empty", 10, nil, "", false},
		{"zero budget", 0, []string{"x"}, "", true},
		// budget 40, a marker for 50 bytes is 28 bytes: 6 head, 6 tail.
		{"cut", 40, []string{strings.Repeat("a", 20), strings.Repeat("b", 20), strings.Repeat("c", 10)},
			"aaaaaa\n[… 38 bytes omitted …]\ncccccc", true},
		{"one byte at a time", 30, strings.Split("abcdefghijklmnopqrstuvwxyz0123456789", ""),
			"a\n[… 34 bytes omitted …]\n9", true},
		{"invalid UTF-8 replaced", 100, []string{"ok\xff\xfeok"}, "ok\uFFFDok", false},
		{"cut inside a rune", 36, []string{strings.Repeat("é", 20)}, "éé\n[… 32 bytes omitted …]\néé", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cp := newCapture(c.budget)
			var total int
			for _, w := range c.writes {
				cp.Write([]byte(w))
				total += len(w)
			}
			got, cut := cp.render(c.budget)
			if string(got) != c.want || cut != c.cut || cp.total != int64(total) {
				t.Fatalf("render = %q, %v (total %d), want %q, %v", got, cut, cp.total, c.want, c.cut)
			}
			if len(got) > c.budget {
				t.Fatalf("render is %d bytes, budget %d", len(got), c.budget)
			}
		})
	}
}

func TestValidPrefixSuffix(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		in        string
		budget    int
		cut       bool
		pre, suf  string
		preN, suN int
	}{
		{"plain", "abc", 10, false, "abc", "abc", 3, 3},
		{"budget", "abcdef", 4, false, "abcd", "cdef", 4, 4},
		{"rune not split", "aé€", 4, false, "aé", "€", 3, 3},
		{"invalid run is one replacement", "a\xff\xfe\xfdb", 10, false, "a\uFFFDb", "a\uFFFDb", 5, 5},
		{"replacement needs 3 bytes", "\xffab", 2, false, "", "ab", 0, 2},
		{"cut: partial runes at the edges left out", "\x82\xacx\xe2\x82", 10, true, "\uFFFDx", "x\uFFFD", 3, 3},
	}
	for _, c := range cases {
		pre, preN := validPrefix([]byte(c.in), c.budget, c.cut)
		suf, suN := validSuffix([]byte(c.in), c.budget, c.cut)
		if string(pre) != c.pre || preN != c.preN || string(suf) != c.suf || suN != c.suN {
			t.Errorf("%s: prefix %q/%d suffix %q/%d, want %q/%d %q/%d", c.name, pre, preN, suf, suN, c.pre, c.preN, c.suf, c.suN)
		}
	}
}

// TestCaptureMemoryIsConstant writes 10 MB through a 4 KiB capture: what it
// holds never exceeds the budget, and the tail is the stream's real end.
func TestCaptureMemoryIsConstant(t *testing.T) {
	t.Parallel()
	const budget = 4096
	cp := newCapture(budget)
	var last []byte
	for i := 0; i < 10_000_000/10_000; i++ {
		chunk := bytes.Repeat([]byte(fmt.Sprintf("%09d\n", i)), 1000)
		cp.Write(chunk)
		last = chunk
		if cap(cp.head)+cap(cp.tail) > budget {
			t.Fatalf("holds %d bytes, budget %d", cap(cp.head)+cap(cp.tail), budget)
		}
	}
	out, cut := cp.render(budget)
	if !cut || len(out) > budget || cp.total != 10_000_000 {
		t.Fatalf("cut %v, %d bytes, total %d", cut, len(out), cp.total)
	}
	if !bytes.HasPrefix(out, []byte("000000000\n")) || !bytes.HasSuffix(out, last[len(last)-1000:]) {
		t.Fatalf("head or tail wrong: %q … %q", out[:20], out[len(out)-20:])
	}
	if !bytes.Contains(out, []byte(" bytes omitted …]\n")) {
		t.Fatal("no marker")
	}
}

func TestStreamLogShares(t *testing.T) {
	t.Parallel()
	const outputBytes = 800 // logs of 200 bytes
	l := streamLog{max: frame.LogMax(outputBytes)}
	l.begin(frame.StepSetup, outputBytes)
	l.cur().Write([]byte(strings.Repeat("s", 500)))
	l.begin(frame.StepRun, outputBytes)
	l.cur().Write([]byte("short run output"))
	buf, cut := l.render()
	if len(buf) > l.max || !cut {
		t.Fatalf("log %d bytes, cut %v", len(buf), cut)
	}
	s := string(buf)
	if !strings.HasPrefix(s, "== setup ==\nsss") || !strings.HasSuffix(s, "\n== run ==\nshort run output\n") || len(s) > l.max/2+len("== run ==\nshort run output\n") {
		t.Fatalf("log %q", s)
	}
	// A log too small for even a header stays empty, and cut.
	tiny := streamLog{max: 5}
	tiny.begin(frame.StepRun, 20)
	tiny.cur().Write([]byte("x"))
	if buf, cut := tiny.render(); len(buf) != 0 || !cut {
		t.Fatalf("tiny log %q cut %v", buf, cut)
	}
	// Skipped bytes count as cut even when what arrived fits.
	sk := streamLog{max: frame.LogMax(1 << 20)}
	sk.begin(frame.StepRun, 1<<20)
	sk.cur().Write([]byte("head "))
	sk.cur().skip(1000)
	sk.cur().Write([]byte("tail"))
	if buf, cut := sk.render(); !cut || !strings.Contains(string(buf), "[… 1000 bytes omitted …]") {
		t.Fatalf("skipped: %q cut %v", buf, cut)
	}
}

// FuzzCaptureRender checks, for any stream and budget, that the rendering
// is valid UTF-8 within the budget, and the whole stream (sanitised) when
// it is not cut.
func FuzzCaptureRender(f *testing.F) {
	f.Add([]byte("hello\xff world é"), 3, uint16(20))
	f.Add([]byte(strings.Repeat("€", 100)), 7, uint16(50))
	f.Add([]byte{0xe2, 0x82, 0xff, 0x80, 0x80}, 1, uint16(40))
	f.Fuzz(func(t *testing.T, data []byte, chunk int, budget uint16) {
		cp := newCapture(int(budget))
		if chunk <= 0 {
			chunk = 1
		}
		for p := data; len(p) > 0; {
			k := min(chunk, len(p))
			cp.Write(p[:k])
			p = p[k:]
		}
		out, cut := cp.render(int(budget))
		if !utf8.Valid(out) || len(out) > int(budget) || cp.total != int64(len(data)) {
			t.Fatalf("render %q (cut %v) for budget %d", out, cut, budget)
		}
		if !cut && string(out) != strings.ToValidUTF8(string(data), "\uFFFD") {
			t.Fatalf("uncut render %q of %q", out, data)
		}
		if cut && len(out) > 0 && !bytes.Contains(out, []byte("omitted …]")) {
			t.Fatalf("cut render without marker: %q", out)
		}
	})
}
