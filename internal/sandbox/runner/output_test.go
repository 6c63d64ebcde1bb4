package runner

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/sandbox/frame"
)

type tarEntry struct {
	h    tar.Header
	body string
}

func reg(name, body string) tarEntry {
	return tarEntry{h: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644}, body: body}
}

func buildTar(t testing.TB, es ...tarEntry) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range es {
		h := e.h
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	tw.Close()
	return buf.Bytes()
}

var outKey = bytes.Repeat([]byte{7}, frame.KeySize)

func outReq(setup bool, artefacts ...string) *frame.Request {
	r := &frame.Request{RunCommand: "npm test", Artefacts: artefacts, OutputBytes: 1 << 20, BaseBytes: 1, MaxEntries: 1, MaxUnpackedBytes: 1}
	if setup {
		r.SetupCommand = "npm ci"
	}
	return r
}

// emitter writes what the entry program writes, under a key.
type emitter struct {
	t   testing.TB
	buf bytes.Buffer
	w   *frame.Writer
}

func newEmitter(t testing.TB, key []byte) *emitter {
	e := &emitter{t: t}
	e.w = frame.NewWriter(&e.buf, key, frame.Out)
	return e
}

func (e *emitter) start(step string) *emitter { e.w.Write(frame.TypeStart, []byte(step)); return e }

func (e *emitter) out(skipped int64, s string) *emitter {
	e.w.WriteStream(frame.TypeStdout, skipped, []byte(s))
	return e
}

func (e *emitter) errs(s string) *emitter { e.w.WriteStream(frame.TypeStderr, 0, []byte(s)); return e }

func (e *emitter) result(step string, code int) *emitter {
	b, _ := json.Marshal(frame.StepResult{Step: step, Ran: true, ExitCode: code, DurationMillis: 1})
	e.w.Write(frame.TypeResult, b)
	return e
}

func (e *emitter) tar(es ...tarEntry) *emitter {
	e.w.WriteData(frame.TypeArtefacts, buildTar(e.t, es...))
	return e
}

func (e *emitter) exit(x frame.Exit) *emitter {
	b, _ := json.Marshal(x)
	e.w.Write(frame.TypeExit, b)
	return e
}

func (e *emitter) bytes() []byte { return e.buf.Bytes() }

func read(t testing.TB, raw []byte, req *frame.Request, total int64) (*Output, error) {
	return ReadOutput(bytes.NewReader(raw), outKey, req, OutputLimits{Total: total, Raw: 4 << 20}, nil)
}

func TestReadOutputAcceptsTheEntryProgramsOutput(t *testing.T) {
	t.Parallel()
	var setupSeen *frame.StepResult
	raw := newEmitter(t, outKey).
		start(frame.StepSetup).out(0, "installing").result(frame.StepSetup, 0).
		start(frame.StepRun).out(0, "ok\n").errs("warn").result(frame.StepRun, 3).
		tar(reg("junit.xml", "<testsuite/>")).exit(frame.Exit{}).bytes()
	out, err := ReadOutput(bytes.NewReader(raw), outKey, outReq(true, "junit.xml"), OutputLimits{Total: 1 << 20, Raw: 2 << 20},
		func(s frame.StepResult) { setupSeen = &s })
	if err != nil {
		t.Fatal(err)
	}
	if out.Truncated || out.Files["junit.xml"] != "<testsuite/>" {
		t.Fatalf("output %+v", out)
	}
	if out.Files[frame.StdoutName] != "== setup ==\ninstalling\n== run ==\nok\n" || out.Files[frame.StderrName] != "== setup ==\n== run ==\nwarn\n" {
		t.Fatalf("logs %q %q", out.Files[frame.StdoutName], out.Files[frame.StderrName])
	}
	if setupSeen == nil || out.Exit == nil || out.Result(frame.StepRun).ExitCode != 3 || len(out.Results) != 2 {
		t.Fatalf("results not decoded: %+v %+v", setupSeen, out.Results)
	}
}

// TestReadOutputCraftedArchives: every artefact the contract does not
// allow is dropped and flagged; the rest survives.
func TestReadOutputCraftedArchives(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 5000)
	cases := []struct {
		name    string
		entries []tarEntry
		absent  []string
	}{
		{"symlink", []tarEntry{{h: tar.Header{Typeflag: tar.TypeSymlink, Name: "junit.xml", Linkname: "/etc/passwd"}}}, []string{"junit.xml"}},
		{"hard link", []tarEntry{{h: tar.Header{Typeflag: tar.TypeLink, Name: "junit.xml", Linkname: "stdout.log"}}}, []string{"junit.xml"}},
		{"dot dot", []tarEntry{reg("../junit.xml", "x")}, []string{"../junit.xml", "junit.xml"}},
		{"absolute", []tarEntry{reg("/junit.xml", "x")}, []string{"/junit.xml", "junit.xml"}},
		{"directory", []tarEntry{{h: tar.Header{Typeflag: tar.TypeDir, Name: "junit.xml/"}}}, []string{"junit.xml/"}},
		{"device", []tarEntry{{h: tar.Header{Typeflag: tar.TypeChar, Name: "junit.xml"}}}, []string{"junit.xml"}},
		{"not requested", []tarEntry{reg("secrets.txt", "x")}, []string{"secrets.txt"}},
		{"a log's name", []tarEntry{reg(frame.StdoutName, "forged log")}, nil},
		{"binary", []tarEntry{reg("junit.xml", "\xff\xfe\x00binary")}, []string{"junit.xml"}},
		{"duplicate", []tarEntry{reg("junit.xml", "first"), reg("junit.xml", "second")}, nil},
		{"huge file", []tarEntry{reg("junit.xml", big)}, nil},
		{"many files", func() []tarEntry {
			var es []tarEntry
			for range frame.MaxArtefacts {
				es = append(es, reg("other.txt", "x"))
			}
			return es
		}(), []string{"other.txt"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			raw := newEmitter(t, outKey).start(frame.StepRun).out(0, "kept").result(frame.StepRun, 0).tar(c.entries...).exit(frame.Exit{}).bytes()
			out, err := read(t, raw, outReq(false, "junit.xml"), 1000)
			if err != nil {
				t.Fatal(err)
			}
			if !out.Truncated {
				t.Fatal("not flagged")
			}
			for _, name := range c.absent {
				if _, ok := out.Files[name]; ok {
					t.Fatalf("%s kept", name)
				}
			}
			if out.Files[frame.StdoutName] != "== run ==\nkept\n" {
				t.Fatalf("lost the legitimate log: %q", out.Files[frame.StdoutName])
			}
			if c.name == "duplicate" && out.Files["junit.xml"] != "first" {
				t.Fatalf("duplicate replaced the first: %q", out.Files["junit.xml"])
			}
			if c.name == "huge file" && len(out.Files["junit.xml"])+len(out.Files[frame.StdoutName])+len(out.Files[frame.StderrName]) != 1000 {
				t.Fatalf("huge file kept %d bytes, want the cap", len(out.Files["junit.xml"]))
			}
		})
	}
}

// TestReadOutputRefusesForgeries: frames under another key, injected
// bytes, and authenticated frames out of the protocol's order all end
// parsing with frame.ErrTampered; nothing after them counts.
func TestReadOutputRefusesForgeries(t *testing.T) {
	t.Parallel()
	other := bytes.Repeat([]byte{8}, frame.KeySize)
	honest := func() *emitter {
		return newEmitter(t, outKey).start(frame.StepRun).out(0, "FAIL\n").result(frame.StepRun, 1)
	}
	cases := map[string]struct {
		raw   []byte
		setup bool
	}{
		"forged passing run": {newEmitter(t, other).start(frame.StepRun).result(frame.StepRun, 0).exit(frame.Exit{}).bytes(), false},
		"passing result injected": {append(newEmitter(t, outKey).start(frame.StepRun).bytes(),
			newEmitter(t, other).result(frame.StepRun, 0).bytes()...), false},
		"text injected":            {append(honest().bytes(), "PASS exit 0\n"...), false},
		"garbage after exit":       {append(honest().exit(frame.Exit{}).bytes(), 'x'), false},
		"frame after exit":         {honest().exit(frame.Exit{}).start(frame.StepRun).bytes(), false},
		"run before setup":         {honest().bytes(), true},
		"run after a failed setup": {newEmitter(t, outKey).start(frame.StepSetup).result(frame.StepSetup, 1).start(frame.StepRun).result(frame.StepRun, 0).bytes(), true},
		"run twice":                {honest().start(frame.StepRun).result(frame.StepRun, 0).bytes(), false},
		"output outside a step":    {newEmitter(t, outKey).out(0, "x").bytes(), false},
		"result of another step":   {newEmitter(t, outKey).start(frame.StepRun).result(frame.StepSetup, 0).bytes(), false},
		"result without a start":   {newEmitter(t, outKey).result(frame.StepRun, 0).bytes(), false},
		"artefacts before the run": {newEmitter(t, outKey).tar(reg("junit.xml", "x")).bytes(), false},
		"exit while a step runs":   {newEmitter(t, outKey).start(frame.StepRun).exit(frame.Exit{}).bytes(), false},
		"malformed exit":           {append(honest().bytes(), newEmitter(t, outKey).bytes()...), false},
		"exit with an unknown field": {func() []byte {
			e := honest()
			e.w.Write(frame.TypeExit, []byte(`{"run":{"exitCode":0}}`))
			return e.bytes()
		}(), false},
		"huge error": {func() []byte {
			e := honest()
			e.w.Write(frame.TypeExit, []byte(`{"error":"`+strings.Repeat("a", 2000)+`"}`))
			return e.bytes()
		}(), false},
	}
	// "malformed exit": an exit frame whose JSON does not decode.
	cases["malformed exit"] = struct {
		raw   []byte
		setup bool
	}{func() []byte { e := honest(); e.w.Write(frame.TypeExit, []byte(`{`)); return e.bytes() }(), false}
	for name, c := range cases {
		out, err := read(t, c.raw, outReq(c.setup), 1<<20)
		if !errors.Is(err, frame.ErrTampered) || out.Exit != nil {
			t.Errorf("%s: err %v, exit %+v", name, err, out.Exit)
		}
		if r := out.Result(frame.StepRun); r != nil && r.ExitCode == 0 {
			t.Errorf("%s: a passing run step got through: %+v", name, r)
		}
	}
}

// TestReadOutputKeepsWhatArrived: a stream that ends early (container
// killed) still yields the logs so far; skipped bytes show as omitted.
func TestReadOutputKeepsWhatArrived(t *testing.T) {
	t.Parallel()
	req := outReq(true, "junit.xml")
	req.OutputBytes = 4000
	head := strings.Repeat("test 1 ok\n", 100)[:frame.StepBudget(req.OutputBytes, frame.StepRun)/2]
	raw := newEmitter(t, outKey).start(frame.StepSetup).out(0, "deps ok").result(frame.StepSetup, 0).
		start(frame.StepRun).out(0, head).out(5000, "test 2 hangs here\n").bytes()
	for name, cut := range map[string][]byte{"at a frame boundary": raw, "inside a frame": append(bytes.Clone(raw), 'S', 0, 0)} {
		out, err := read(t, cut, req, 4000)
		if err != nil || out.Exit != nil || !out.Truncated {
			t.Fatalf("%s: %v %+v", name, err, out)
		}
		log := out.Files[frame.StdoutName]
		if !strings.Contains(log, "test 1 ok\n") || !strings.HasSuffix(log, "test 2 hangs here\n") || !strings.Contains(log, " bytes omitted …]") {
			t.Fatalf("%s: log %q", name, log)
		}
		if len(out.Started) != 2 || out.Result(frame.StepRun) != nil || out.StreamBytes[0] != int64(len("deps ok")+len(head)+5000+18) {
			t.Fatalf("%s: started %v results %+v bytes %v", name, out.Started, out.Results, out.StreamBytes)
		}
	}
}

func TestReadOutputCaps(t *testing.T) {
	t.Parallel()
	req := outReq(false, "a", "b")
	req.OutputBytes = 4000 // logs of 1000 bytes at most
	raw := newEmitter(t, outKey).start(frame.StepRun).out(0, strings.Repeat("o", 3000)).result(frame.StepRun, 0).
		tar(reg("a", "ééééé"), reg("b", "0123456789")).exit(frame.Exit{}).bytes()
	out, err := ReadOutput(bytes.NewReader(raw), outKey, req, OutputLimits{Total: 1000 + 10 + 4 + 3, PerFile: 5, Raw: 1 << 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The log is cut to its share; a cut inside a rune drops the partial
	// rune; the total cap applies across files.
	if len(out.Files[frame.StdoutName]) > 1000 || out.Files["a"] != "éé" || out.Files["b"] != "012" || !out.Truncated {
		t.Fatalf("files: log %d bytes, a %q, b %q", len(out.Files[frame.StdoutName]), out.Files["a"], out.Files["b"])
	}
	// Past the raw cap parsing stops.
	endless := newEmitter(t, outKey).start(frame.StepRun).out(0, strings.Repeat("y", 100_000)).bytes()
	out, err = ReadOutput(bytes.NewReader(endless), outKey, req, OutputLimits{Total: 10, Raw: 50_000}, nil)
	if !errors.Is(err, ErrOutputOverflow) || !out.Truncated {
		t.Fatalf("raw cap: %v %+v", err, out)
	}
	// Garbage: refused, nothing kept.
	out, err = read(t, []byte("not frames at all, not frames at all"), req, 10)
	if !errors.Is(err, frame.ErrTampered) || len(out.Started) != 0 {
		t.Fatalf("garbage: %v %+v", err, out)
	}
}

func TestRawCapCoversFlushes(t *testing.T) {
	t.Parallel()
	limits := func(wall int64) sandbox.Limits { return sandbox.Limits{OutputBytes: 1 << 20, WallClockSeconds: wall} }
	// Two output budgets plus, per second of wall clock, both tails.
	small, long := rawCap(limits(10)), rawCap(limits(600))
	if small < 2<<20+11*(1<<18) || long-small < 590*(1<<18) {
		t.Fatalf("raw caps %d %d", small, long)
	}
}

// FuzzReadOutput: for any bytes, authenticated or not, what is kept stays
// within the caps: only the logs and requested artefacts, UTF-8, each log
// within its share, all within the total; an exit is reported only after
// the protocol's order held.
func FuzzReadOutput(f *testing.F) {
	f.Add(newEmitter(f, outKey).start(frame.StepRun).out(0, "ok").result(frame.StepRun, 0).tar(reg("junit.xml", "x")).exit(frame.Exit{}).bytes())
	f.Add(newEmitter(f, outKey).start(frame.StepSetup).out(3, "é\xff").result(frame.StepSetup, 1).exit(frame.Exit{}).bytes())
	f.Add(newEmitter(f, outKey).start(frame.StepRun).result(frame.StepRun, 0).tar(tarEntry{h: tar.Header{Typeflag: tar.TypeSymlink, Name: "a", Linkname: "/"}}).bytes())
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, data []byte) {
		req := outReq(len(data)%2 == 0, "junit.xml")
		req.OutputBytes = 4096
		lim := OutputLimits{Total: 4096, PerFile: 2048, Raw: 1 << 20}
		out, err := ReadOutput(bytes.NewReader(data), outKey, req, lim, nil)
		var total int
		for name, body := range out.Files {
			switch name {
			case frame.StdoutName, frame.StderrName:
				if len(body) > frame.LogMax(req.OutputBytes) {
					t.Fatalf("log %s of %d bytes", name, len(body))
				}
			case "junit.xml":
				if int64(len(body)) > lim.PerFile {
					t.Fatalf("oversize %q", name)
				}
			default:
				t.Fatalf("kept %q", name)
			}
			if !utf8.ValidString(body) {
				t.Fatalf("kept invalid %q", name)
			}
			total += len(body)
		}
		if int64(total) > lim.Total {
			t.Fatalf("kept %d bytes, cap %d", total, lim.Total)
		}
		if out.Exit != nil && (err != nil || len(out.Results) != len(out.Started)) {
			t.Fatalf("exit reported with err %v, started %v, results %v", err, out.Started, out.Results)
		}
	})
}

// FuzzReadOutputAuthenticated plays a compromised entry program: every
// frame verifies (the fuzzer's bytes are signed under the key), so only
// the protocol's order and the caps stand between it and the result.
func FuzzReadOutputAuthenticated(f *testing.F) {
	f.Add([]byte("S\x03run1\x04\x00\x00\x00\x00\x00\x00\x00\x00okR\x00E\x02{}"))
	f.Add([]byte("S\x05setupR\x00S\x03runE\x00"))
	f.Fuzz(func(t *testing.T, ops []byte) {
		e := newEmitter(t, outKey)
		for len(ops) >= 2 {
			typ, n := frame.Type(ops[0]), int(ops[1])
			ops = ops[2:]
			n = min(n, len(ops))
			e.w.Write(typ, ops[:n]) // types of the wrong direction are refused by the writer
			ops = ops[n:]
		}
		req := outReq(true, "junit.xml")
		req.OutputBytes = 4096
		out, err := ReadOutput(bytes.NewReader(e.bytes()), outKey, req, OutputLimits{Total: 4096, Raw: 1 << 20}, nil)
		if err != nil && !errors.Is(err, frame.ErrTampered) && !errors.Is(err, ErrOutputOverflow) {
			t.Fatalf("unexpected error %v", err)
		}
		if out.Exit != nil && err != nil {
			t.Fatal("exit kept after an error")
		}
		// The run step counts only after a setup step that passed.
		if out.Result(frame.StepRun) != nil {
			s := out.Result(frame.StepSetup)
			if s == nil || s.ExitCode != 0 || s.TimedOut || out.Started[0] != frame.StepSetup {
				t.Fatalf("run step accepted after setup %+v", s)
			}
		}
		var total int
		for _, body := range out.Files {
			total += len(body)
		}
		if total > 4096 {
			t.Fatalf("kept %d bytes", total)
		}
	})
}
