package entry

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
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

func TestInputRoundTrip(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	req := validRequest()
	if err := WriteInput(&buf, req, []byte("base"), []byte("overlay!")); err != nil {
		t.Fatal(err)
	}
	buf.WriteString("after")
	got, base, rest, err := ReadInput(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got.BaseBytes != 4 || got.OverlayBytes != 8 || got.RunCommand != "npm test" || got.Artefacts[0] != "junit.xml" {
		t.Fatalf("request %+v", got)
	}
	b, _ := io.ReadAll(base)
	if err := rest.AwaitGoAhead(); err != nil {
		t.Fatal(err)
	}
	o, _ := io.ReadAll(rest.Overlay())
	if string(b) != "base" || string(o) != "overlay!" {
		t.Fatalf("base %q overlay %q", b, o)
	}
}

// TestGoAheadIsRequiredAfterSetup: with a setup step, nothing after the
// base is taken without the runner's go-ahead byte.
func TestGoAheadIsRequiredAfterSetup(t *testing.T) {
	t.Parallel()
	for _, after := range []string{"", "X", "overlay"} {
		var buf bytes.Buffer
		req := validRequest()
		if err := WriteHead(&buf, req, []byte("base"), 0); err != nil {
			t.Fatal(err)
		}
		buf.WriteString(after)
		_, base, rest, err := ReadInput(&buf)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(base)
		if err := rest.AwaitGoAhead(); err == nil {
			t.Errorf("go-ahead accepted from %q", after)
		}
	}
	// Without a setup step there is nothing to wait for.
	req := validRequest()
	req.SetupCommand = ""
	var buf bytes.Buffer
	if err := WriteInput(&buf, req, []byte("b"), nil); err != nil {
		t.Fatal(err)
	}
	_, base, rest, _ := ReadInput(&buf)
	io.ReadAll(base)
	if err := rest.AwaitGoAhead(); err != nil {
		t.Fatal(err)
	}
}

// frame builds an input with an arbitrary header.
func frame(magic string, n uint32, hdr string, rest string) []byte {
	var b bytes.Buffer
	b.WriteString(magic)
	binary.Write(&b, binary.BigEndian, n)
	b.WriteString(hdr)
	b.WriteString(rest)
	return b.Bytes()
}

func TestReadInputRefusesHostileFraming(t *testing.T) {
	t.Parallel()
	good, _ := json.Marshal(func() *Request { r := validRequest(); r.BaseBytes = 4; return r }())
	with := func(f func(r *Request)) string {
		r := validRequest()
		r.BaseBytes = 4
		f(r)
		b, _ := json.Marshal(r)
		return string(b)
	}
	cases := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "bad magic"},
		{"bad magic", frame("QUAVON-ENTRY/2\n", uint32(len(good)), string(good), "base"), "bad magic"},
		{"zero length", frame(Magic, 0, "", ""), "bad request length"},
		{"huge length", frame(Magic, 1<<31, string(good), ""), "bad request length"},
		{"short header", frame(Magic, uint32(len(good))+10, string(good), ""), "request"},
		{"not JSON", frame(Magic, 5, "hello", ""), "request"},
		{"unknown field", frame(Magic, 0, "", ""), ""}, // replaced below
		{"trailing JSON", frame(Magic, uint32(len(good))+2, string(good)+"{}", ""), "data after"},
		{"null", frame(Magic, 4, "null", ""), "no run command"},
		{"no run command", []byte(with(func(r *Request) { r.RunCommand = "" })), "no run command"},
		{"NUL in command", []byte(with(func(r *Request) { r.SetupCommand = "a\x00b" })), "NUL"},
		{"output zero", []byte(with(func(r *Request) { r.OutputBytes = 0 })), "outputBytes"},
		{"output huge", []byte(with(func(r *Request) { r.OutputBytes = MaxOutputBytes + 1 })), "outputBytes"},
		{"setup negative", []byte(with(func(r *Request) { r.SetupSeconds = -1 })), "setupSeconds"},
		{"setup overflowing", []byte(with(func(r *Request) { r.SetupSeconds = 1 << 40 })), "setupSeconds"},
		{"base zero", []byte(with(func(r *Request) { r.BaseBytes = 0 })), "snapshot sizes"},
		{"base beyond cap", []byte(with(func(r *Request) { r.BaseBytes = MaxInputBytes + 1 })), "snapshot sizes"},
		{"sizes overflow", []byte(with(func(r *Request) { r.BaseBytes, r.OverlayBytes = 1, 1<<63-1 })), "snapshot sizes"},
		{"overlay negative", []byte(with(func(r *Request) { r.OverlayBytes = -1 })), "snapshot sizes"},
		{"entries zero", []byte(with(func(r *Request) { r.MaxEntries = 0 })), "snapshot caps"},
		{"artefact path", []byte(with(func(r *Request) { r.Artefacts = []string{"../etc/passwd"} })), "artefact"},
		{"artefact subdir", []byte(with(func(r *Request) { r.Artefacts = []string{"a/b"} })), "artefact"},
		{"artefact hidden", []byte(with(func(r *Request) { r.Artefacts = []string{".env"} })), "artefact"},
		{"artefact reserved", []byte(with(func(r *Request) { r.Artefacts = []string{SetupName} })), "reserved"},
		{"artefact twice", []byte(with(func(r *Request) { r.Artefacts = []string{"a", "a"} })), "twice"},
		{"too many artefacts", []byte(with(func(r *Request) { r.Artefacts = strings.Split("a b c d e f g h i j k l m n o p q", " ") })), "artefacts"},
	}
	for i, c := range cases {
		switch {
		case c.name == "unknown field":
			hdr := strings.Replace(string(good), "{", `{"env":{"X":"1"},`, 1)
			cases[i].in, cases[i].want = frame(Magic, uint32(len(hdr)), hdr, "base"), "unknown field"
		case !bytes.HasPrefix(c.in, []byte(Magic)) && strings.HasPrefix(string(c.in), "{"):
			cases[i].in = frame(Magic, uint32(len(c.in)), string(c.in), "base")
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, _, _, err := ReadInput(bytes.NewReader(c.in))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("ReadInput = %v, want an error about %q", err, c.want)
			}
		})
	}
}

func TestWriteInputValidates(t *testing.T) {
	t.Parallel()
	req := validRequest()
	req.RunCommand = ""
	if err := WriteInput(io.Discard, req, []byte("b"), nil); err == nil {
		t.Fatal("wrote an invalid request")
	}
	if err := WriteInput(io.Discard, validRequest(), nil, nil); err == nil {
		t.Fatal("wrote a request without a base snapshot")
	}
}

func FuzzReadInput(f *testing.F) {
	var buf bytes.Buffer
	WriteInput(&buf, validRequest(), []byte("base"), []byte("ov"))
	f.Add(buf.Bytes())
	f.Add(frame(Magic, 4, "null", ""))
	f.Add(frame(Magic, 2, "{}", ""))
	f.Add([]byte(Magic))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, base, rest, err := ReadInput(bytes.NewReader(data))
		if err != nil {
			return
		}
		if err := req.Validate(); err != nil {
			t.Fatalf("accepted an invalid request: %v", err)
		}
		b, _ := io.ReadAll(base)
		var o []byte
		if int64(len(b)) == req.BaseBytes && rest.AwaitGoAhead() == nil {
			o, _ = io.ReadAll(rest.Overlay())
		}
		if int64(len(b)) > req.BaseBytes || int64(len(o)) > req.OverlayBytes {
			t.Fatalf("snapshots beyond their sizes: %d/%d %d/%d", len(b), req.BaseBytes, len(o), req.OverlayBytes)
		}
		// What was accepted round-trips when the snapshots are complete.
		if int64(len(b)) == req.BaseBytes && int64(len(o)) == req.OverlayBytes && req.OverlayBytes > 0 {
			var again bytes.Buffer
			if err := WriteInput(&again, req, b, o); err != nil {
				t.Fatalf("WriteInput of an accepted request: %v", err)
			}
			if _, _, _, err := ReadInput(&again); err != nil {
				t.Fatalf("round trip: %v", err)
			}
		}
	})
}
