package entry

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/quavon/quavon/internal/sandbox/frame"
)

// FuzzForwarder: however a stream is written and flushed, what goes out is
// its head in full and then only its newest bytes, and everything else is
// counted as skipped: the runner, keeping head and tail, ends up with the
// stream's real head and real tail. The forwarder never holds more than its
// budget.
func FuzzForwarder(f *testing.F) {
	f.Add([]byte("hello world, this is a stream"), uint8(3), uint8(5), uint16(10))
	f.Add(bytes.Repeat([]byte("x"), 5000), uint8(200), uint8(1), uint16(64))
	f.Fuzz(func(t *testing.T, data []byte, chunk, flushEvery uint8, budget uint16) {
		var wire bytes.Buffer
		o := &output{w: frame.NewWriter(&wire, testKey, frame.Out)}
		fw := newForwarder(frame.TypeStdout, int(budget))
		c := max(int(chunk), 1)
		for i, p := 0, data; len(p) > 0; i++ {
			k := min(c, len(p))
			fw.Write(p[:k])
			p = p[k:]
			if held := len(fw.head) + len(fw.tail); held > int(budget) {
				t.Fatalf("holds %d bytes, budget %d", held, budget)
			}
			if flushEvery > 0 && i%int(flushEvery) == 0 {
				fw.flush(o)
			}
		}
		fw.flush(o)
		var got []byte
		var skipped int64
		r := frame.NewReader(&wire, testKey, frame.Out)
		for {
			_, p, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			s, d, err := frame.Stream(p)
			if err != nil {
				t.Fatal(err)
			}
			got, skipped = append(got, d...), skipped+s
		}
		if int64(len(got))+skipped != int64(len(data)) || fw.total != int64(len(data)) {
			t.Fatalf("%d forwarded + %d skipped != %d", len(got), skipped, len(data))
		}
		headMax, tailMax := int(budget)/2, int(budget)-int(budget)/2
		h := min(headMax, len(data))
		if !bytes.Equal(got[:h], data[:h]) {
			t.Fatal("the head is not the stream's head")
		}
		tl := min(tailMax, len(data)-h)
		if !bytes.Equal(got[len(got)-tl:], data[len(data)-tl:]) {
			t.Fatal("the tail is not the stream's tail")
		}
		if skipped == 0 && !bytes.Equal(got, data) {
			t.Fatal("nothing skipped, yet the stream differs")
		}
	})
}
