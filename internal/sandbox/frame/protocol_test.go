package frame

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

func validRequest() *Request {
	return &Request{
		SetupCommand: "npm ci", RunCommand: "npm test", Artefacts: []string{"junit.xml"},
		OutputBytes: 1 << 20, SetupSeconds: 60, MaxEntries: 100, MaxUnpackedBytes: 1 << 20,
	}
}

func testKey(fill byte) []byte { return bytes.Repeat([]byte{fill}, KeySize) }

// readInput is what the entry program does with its input up to the base.
func readInput(in io.Reader) (*Request, io.Reader, *Reader, error) {
	key, err := ReadHello(in)
	if err != nil {
		return nil, nil, nil, err
	}
	r := NewReader(in, key, In)
	req, err := ReadRequest(r)
	if err != nil {
		return nil, nil, nil, err
	}
	return req, SnapshotReader(r, TypeBase, req.BaseBytes), r, nil
}

func TestInputRoundTrip(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	req := validRequest()
	big := bytes.Repeat([]byte("b"), 3*MaxPayload+7) // several frames
	if err := WriteInput(&buf, testKey(1), req, big, []byte("overlay!")); err != nil {
		t.Fatal(err)
	}
	got, base, r, err := readInput(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got.BaseBytes != int64(len(big)) || got.OverlayBytes != 8 || got.RunCommand != "npm test" || got.Artefacts[0] != "junit.xml" {
		t.Fatalf("request %+v", got)
	}
	b, err := io.ReadAll(base)
	if err != nil || !bytes.Equal(b, big) {
		t.Fatalf("base: %d bytes, %v", len(b), err)
	}
	if err := AwaitGoAhead(r); err != nil {
		t.Fatal(err)
	}
	o, err := io.ReadAll(SnapshotReader(r, TypeOverlay, got.OverlayBytes))
	if err != nil || string(o) != "overlay!" {
		t.Fatalf("overlay %q %v", o, err)
	}
	if _, _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the overlay: %v", err)
	}
}

// TestGoAheadIsRequiredAfterSetup: with a setup step, nothing after the
// base is taken without the runner's authenticated go-ahead: not a missing
// one, not the version-1 go-ahead byte, not overlay bytes in its place.
func TestGoAheadIsRequiredAfterSetup(t *testing.T) {
	t.Parallel()
	key := testKey(2)
	for name, after := range map[string]func(w *Writer, raw *bytes.Buffer){
		"nothing":         func(*Writer, *bytes.Buffer) {},
		"old go-ahead":    func(_ *Writer, raw *bytes.Buffer) { raw.WriteString("G") },
		"overlay instead": func(w *Writer, _ *bytes.Buffer) { WriteOverlay(w, []byte("ov")) },
		"forged go-ahead": func(_ *Writer, raw *bytes.Buffer) { NewWriter(raw, testKey(3), In).Write(TypeGoAhead, nil) },
		"out-direction": func(_ *Writer, raw *bytes.Buffer) {
			raw.Write([]byte{byte(TypeGoAhead), 0, 0, 0, 0})
			raw.Write(make([]byte, TagSize))
		},
	} {
		var raw bytes.Buffer
		WriteHello(&raw, key)
		w := NewWriter(&raw, key, In)
		if err := WriteHead(w, validRequest(), []byte("base"), 2); err != nil {
			t.Fatal(err)
		}
		after(w, &raw)
		_, base, r, err := readInput(&raw)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(base)
		if err := AwaitGoAhead(r); err == nil {
			t.Errorf("%s: go-ahead accepted", name)
		}
	}
}

// TestReaderRefusesTampering: every change to an authenticated stream is
// refused at the frame it touches, and nothing after it is read.
func TestReaderRefusesTampering(t *testing.T) {
	t.Parallel()
	key := testKey(4)
	var good bytes.Buffer
	w := NewWriter(&good, key, Out)
	w.Write(TypeStart, []byte(StepRun))
	w.WriteStream(TypeStdout, 0, []byte("tests failed\n"))
	w.Write(TypeResult, []byte(`{"step":"run","ran":true,"exitCode":1,"durationMillis":1}`))
	w.Write(TypeExit, []byte(`{}`))
	frames := splitFrames(t, good.Bytes())

	forge := func(key []byte, d Direction, seq uint64, typ Type, payload string) []byte {
		var b bytes.Buffer
		fw := NewWriter(&b, key, d)
		fw.seq = seq
		fw.Write(typ, []byte(payload))
		return b.Bytes()
	}
	join := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	flip := func(b []byte, i int) []byte { c := bytes.Clone(b); c[i] ^= 1; return c }
	passed := `{"step":"run","ran":true,"exitCode":0,"durationMillis":1}`
	cases := map[string]struct {
		in       []byte
		verified int // frames that verify before the refusal
	}{
		"forged result, other key":  {join(frames[0], frames[1], forge(testKey(5), Out, 2, TypeResult, passed)), 2},
		"forged result, no tag":     {join(frames[0], frames[1], []byte{byte(TypeResult), 0, 0, 0, 2, '{', '}'}, frames[3]), 2},
		"result dropped":            {join(frames[0], frames[1], frames[3]), 2},
		"frames reordered":          {join(frames[0], frames[2], frames[1], frames[3]), 1},
		"frame replayed":            {join(frames[0], frames[1], frames[1], frames[2], frames[3]), 2},
		"payload bit flipped":       {join(frames[0], flip(frames[1], 10), frames[2], frames[3]), 1},
		"type changed":              {join(frames[0], func() []byte { c := bytes.Clone(frames[1]); c[0] = byte(TypeStderr); return c }(), frames[2]), 1},
		"tag bit flipped":           {join(frames[0], flip(frames[1], len(frames[1])-1)), 1},
		"input-direction frame":     {join(frames[0], forge(key, In, 1, TypeGoAhead, "")), 1},
		"injected bytes":            {join(frames[0], []byte("PASS\n"), frames[1]), 1},
		"interleaved write":         {join(frames[0], frames[1][:7], []byte("x"), frames[1][7:]), 1},
		"huge length":               {join(frames[0], []byte{byte(TypeStdout), 0x7f, 0xff, 0xff, 0xff}), 1},
		"unknown type":              {join(frames[0], []byte{'Z', 0, 0, 0, 0}, make([]byte, TagSize)), 1},
		"same key, forged sequence": {join(frames[0], forge(testKey(6), Out, 1, TypeResult, passed)), 1},
	}
	for name, c := range cases {
		r := NewReader(bytes.NewReader(c.in), key, Out)
		var err error
		for err == nil {
			_, _, err = r.Next()
		}
		if !errors.Is(err, ErrTampered) || r.Frames() != uint64(c.verified) {
			t.Errorf("%s: %v after %d frames, want ErrTampered after %d", name, err, r.Frames(), c.verified)
		}
		if _, _, again := r.Next(); again != err {
			t.Errorf("%s: the error does not stick: %v", name, again)
		}
	}
	// Cut inside a frame: ErrTruncated, not EOF and not tampering.
	r := NewReader(bytes.NewReader(join(frames[0], frames[1][:9])), key, Out)
	r.Next()
	if _, _, err := r.Next(); !errors.Is(err, ErrTruncated) {
		t.Errorf("cut frame: %v", err)
	}
}

// splitFrames cuts a stream of well-formed frames apart.
func splitFrames(t testing.TB, b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		n := headerSize + int(uint32(b[1])<<24|uint32(b[2])<<16|uint32(b[3])<<8|uint32(b[4])) + TagSize
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

func TestReadInputRefusesHostileRequests(t *testing.T) {
	t.Parallel()
	key := testKey(7)
	frameOf := func(hdr string) []byte {
		var b bytes.Buffer
		WriteHello(&b, key)
		NewWriter(&b, key, In).Write(TypeRequest, []byte(hdr))
		b.WriteString("base")
		return b.Bytes()
	}
	good, _ := json.Marshal(func() *Request { r := validRequest(); r.BaseBytes = 4; return r }())
	with := func(f func(r *Request)) []byte {
		r := validRequest()
		r.BaseBytes = 4
		f(r)
		b, _ := json.Marshal(r)
		return frameOf(string(b))
	}
	cases := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "bad magic"},
		{"old magic", append([]byte("QUAVON-ENTRY/1\n"), key...), "bad magic"},
		{"short hello", []byte(Magic + "key"), "bad magic"},
		{"no request", append([]byte(Magic), key...), "request"},
		{"request under another key", func() []byte {
			var b bytes.Buffer
			WriteHello(&b, key)
			NewWriter(&b, testKey(8), In).Write(TypeRequest, good)
			return b.Bytes()
		}(), "tampered"},
		{"base before the request", func() []byte {
			var b bytes.Buffer
			WriteHello(&b, key)
			NewWriter(&b, key, In).Write(TypeBase, []byte("base"))
			return b.Bytes()
		}(), "want the request first"},
		{"not JSON", frameOf("hello"), "request"},
		{"unknown field", frameOf(strings.Replace(string(good), "{", `{"env":{"X":"1"},`, 1)), "unknown field"},
		{"trailing JSON", frameOf(string(good) + "{}"), "data after"},
		{"null", frameOf("null"), "no run command"},
		{"no run command", with(func(r *Request) { r.RunCommand = "" }), "no run command"},
		{"NUL in command", with(func(r *Request) { r.SetupCommand = "a\x00b" }), "NUL"},
		{"output zero", with(func(r *Request) { r.OutputBytes = 0 }), "outputBytes"},
		{"output huge", with(func(r *Request) { r.OutputBytes = MaxOutputBytes + 1 }), "outputBytes"},
		{"setup negative", with(func(r *Request) { r.SetupSeconds = -1 }), "setupSeconds"},
		{"setup overflowing", with(func(r *Request) { r.SetupSeconds = 1 << 40 }), "setupSeconds"},
		{"base zero", with(func(r *Request) { r.BaseBytes = 0 }), "snapshot sizes"},
		{"base beyond cap", with(func(r *Request) { r.BaseBytes = MaxInputBytes + 1 }), "snapshot sizes"},
		{"sizes overflow", with(func(r *Request) { r.BaseBytes, r.OverlayBytes = 1, 1<<63-1 }), "snapshot sizes"},
		{"overlay negative", with(func(r *Request) { r.OverlayBytes = -1 }), "snapshot sizes"},
		{"entries zero", with(func(r *Request) { r.MaxEntries = 0 }), "snapshot caps"},
		{"artefact path", with(func(r *Request) { r.Artefacts = []string{"../etc/passwd"} }), "artefact"},
		{"artefact subdir", with(func(r *Request) { r.Artefacts = []string{"a/b"} }), "artefact"},
		{"artefact hidden", with(func(r *Request) { r.Artefacts = []string{".env"} }), "artefact"},
		{"artefact reserved", with(func(r *Request) { r.Artefacts = []string{StdoutName} }), "reserved"},
		{"artefact twice", with(func(r *Request) { r.Artefacts = []string{"a", "a"} }), "twice"},
		{"too many artefacts", with(func(r *Request) { r.Artefacts = strings.Split("a b c d e f g h i j k l m n o p q", " ") }), "artefacts"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, _, _, err := readInput(bytes.NewReader(c.in))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("readInput = %v, want an error about %q", err, c.want)
			}
		})
	}
}

// TestSnapshotReaderRefusesHostileFraming: a snapshot is exactly its
// declared frames, of its own type.
func TestSnapshotReaderRefusesHostileFraming(t *testing.T) {
	t.Parallel()
	key := testKey(9)
	cases := map[string]struct {
		write func(w *Writer)
		n     int64
		want  error
	}{
		"exact":          {func(w *Writer) { w.WriteData(TypeBase, []byte("abcd")) }, 4, nil},
		"too long":       {func(w *Writer) { w.WriteData(TypeBase, []byte("abcde")) }, 4, ErrTampered},
		"short":          {func(w *Writer) { w.WriteData(TypeBase, []byte("ab")) }, 4, ErrTruncated},
		"wrong type":     {func(w *Writer) { w.WriteData(TypeOverlay, []byte("abcd")) }, 4, ErrTampered},
		"empty frame":    {func(w *Writer) { w.Write(TypeBase, nil); w.WriteData(TypeBase, []byte("abcd")) }, 4, ErrTampered},
		"go-ahead first": {func(w *Writer) { WriteGoAhead(w); w.WriteData(TypeBase, []byte("abcd")) }, 4, ErrTampered},
	}
	for name, c := range cases {
		var b bytes.Buffer
		c.write(NewWriter(&b, key, In))
		got, err := io.ReadAll(SnapshotReader(NewReader(&b, key, In), TypeBase, c.n))
		if c.want == nil && (err != nil || string(got) != "abcd") || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: %q %v, want %v", name, got, err, c.want)
		}
	}
}

func TestWriteInputValidates(t *testing.T) {
	t.Parallel()
	req := validRequest()
	req.RunCommand = ""
	if err := WriteInput(io.Discard, testKey(1), req, []byte("b"), nil); err == nil {
		t.Fatal("wrote an invalid request")
	}
	if err := WriteInput(io.Discard, testKey(1), validRequest(), nil, nil); err == nil {
		t.Fatal("wrote a request without a base snapshot")
	}
	if err := WriteInput(io.Discard, []byte("short"), validRequest(), []byte("b"), nil); err == nil {
		t.Fatal("wrote a hello with a short key")
	}
}

func TestStreamFrames(t *testing.T) {
	t.Parallel()
	key := testKey(10)
	var b bytes.Buffer
	w := NewWriter(&b, key, Out)
	data := bytes.Repeat([]byte("x"), 2*MaxPayload)
	if err := w.WriteStream(TypeStderr, 42, data); err != nil {
		t.Fatal(err)
	}
	w.WriteStream(TypeStdout, 0, nil) // an empty flush still says nothing was skipped
	r := NewReader(&b, key, Out)
	var got []byte
	var skipped int64
	for {
		typ, p, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		s, d, err := Stream(p)
		if err != nil {
			t.Fatal(err)
		}
		if typ == TypeStderr {
			got, skipped = append(got, d...), skipped+s
		}
	}
	if !bytes.Equal(got, data) || skipped != 42 || r.Frames() != 4 {
		t.Fatalf("got %d bytes, skipped %d, %d frames", len(got), skipped, r.Frames())
	}
	if _, _, err := Stream([]byte{1, 2}); !errors.Is(err, ErrTampered) {
		t.Fatal("short stream frame accepted")
	}
}

func TestStepBudgets(t *testing.T) {
	t.Parallel()
	if s, r := StepBudget(1<<20, StepSetup), StepBudget(1<<20, StepRun); s+len(Header(StepSetup))+1 != LogMax(1<<20)/2 || r+len(Header(StepRun))+1 != LogMax(1<<20) {
		t.Fatalf("budgets %d %d", s, r)
	}
	if StepBudget(4, StepSetup) != 0 {
		t.Fatal("a tiny output budget must not go negative")
	}
}

// FuzzReadInput holds the entry program's input side to its contract for
// any bytes: a request is accepted only valid, under the hello's key; the
// snapshots never yield more than their declared sizes; what is accepted
// round-trips.
func FuzzReadInput(f *testing.F) {
	var buf bytes.Buffer
	WriteInput(&buf, testKey(1), validRequest(), []byte("base"), []byte("ov"))
	f.Add(buf.Bytes())
	var noSetup bytes.Buffer
	r := validRequest()
	r.SetupCommand = ""
	WriteInput(&noSetup, testKey(2), r, []byte("b"), nil)
	f.Add(noSetup.Bytes())
	f.Add(append([]byte(Magic), testKey(3)...))
	f.Add([]byte(Magic))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, base, r, err := readInput(bytes.NewReader(data))
		if err != nil {
			return
		}
		if err := req.Validate(); err != nil {
			t.Fatalf("accepted an invalid request: %v", err)
		}
		b, err := io.ReadAll(base)
		var o []byte
		if err == nil && (req.SetupCommand == "" || AwaitGoAhead(r) == nil) {
			o, _ = io.ReadAll(SnapshotReader(r, TypeOverlay, req.OverlayBytes))
		}
		if int64(len(b)) > req.BaseBytes || int64(len(o)) > req.OverlayBytes {
			t.Fatalf("snapshots beyond their sizes: %d/%d %d/%d", len(b), req.BaseBytes, len(o), req.OverlayBytes)
		}
		// What was accepted round-trips when the snapshots are complete.
		if int64(len(b)) == req.BaseBytes && int64(len(o)) == req.OverlayBytes {
			var again bytes.Buffer
			if err := WriteInput(&again, testKey(9), req, b, o); err != nil {
				t.Fatalf("WriteInput of an accepted request: %v", err)
			}
			if _, _, _, err := readInput(&again); err != nil {
				t.Fatalf("round trip: %v", err)
			}
		}
	})
}

// FuzzReader: for any bytes under a known key, the reader either verifies
// frames the writer could have written or stops with an error; a stream of
// real frames with any single byte changed never verifies past that byte.
func FuzzReader(f *testing.F) {
	key := testKey(11)
	var good bytes.Buffer
	w := NewWriter(&good, key, Out)
	w.Write(TypeStart, []byte(StepRun))
	w.WriteStream(TypeStdout, 3, []byte("ok\n"))
	w.Write(TypeExit, []byte(`{}`))
	f.Add(good.Bytes(), uint(0), byte(0))
	f.Add(good.Bytes(), uint(20), byte(1))
	f.Add([]byte("garbage"), uint(1), byte(2))
	f.Fuzz(func(t *testing.T, data []byte, at uint, x byte) {
		// Any bytes: only frames that re-encode identically verify.
		r := NewReader(bytes.NewReader(data), key, Out)
		var again bytes.Buffer
		rw := NewWriter(&again, key, Out)
		for {
			typ, p, err := r.Next()
			if err != nil {
				break
			}
			rw.Write(typ, p)
		}
		if !bytes.HasPrefix(data, again.Bytes()) {
			t.Fatal("a verified frame does not re-encode to its bytes")
		}
		// The good stream with one byte changed.
		if x == 0 || len(good.Bytes()) == 0 {
			return
		}
		bad := bytes.Clone(good.Bytes())
		i := int(at % uint(len(bad)))
		bad[i] ^= x
		r = NewReader(bytes.NewReader(bad), key, Out)
		verified := 0
		for {
			_, _, err := r.Next()
			if err != nil {
				break
			}
			verified += 1
		}
		frames := splitFrames(t, good.Bytes())
		end := 0
		for k := range verified {
			end += len(frames[k])
		}
		if end > i {
			t.Fatalf("byte %d changed, yet frames up to byte %d verified", i, end)
		}
	})
}
