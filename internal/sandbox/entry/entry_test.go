package entry

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/quavon/quavon/internal/sandbox/frame"
	"github.com/quavon/quavon/internal/snapshot"
)

// The tests run the entry program's logic on the host, not as PID 1: steps
// are killed by process group, never with kill(-1).

type env struct {
	cfg  Config
	work string
	out  string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	top := t.TempDir()
	e := &env{work: filepath.Join(top, "work"), out: filepath.Join(top, "out")}
	for _, d := range []string{e.work, e.out, filepath.Join(top, "tmp")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.cfg = Config{
		WorkDir: e.work, OutDir: e.out, TmpDir: filepath.Join(top, "tmp"), Shell: "/bin/sh",
		Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + filepath.Join(e.work, HomeName),
			"HTTPS_PROXY=http://job:token@proxy:3128", "npm_config_https_proxy=http://job:token@proxy:3128", "LANG=C.UTF-8"},
	}
	return e
}

func buildSnapshot(t *testing.T, files map[string]string) []byte {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gz, _, err := snapshot.Build(root, snapshot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return gz
}

func request(run string) *frame.Request {
	return &frame.Request{RunCommand: run, OutputBytes: 1 << 20, MaxEntries: 100, MaxUnpackedBytes: 1 << 20}
}

// testKey is the per-job key of these tests.
var testKey = bytes.Repeat([]byte{0x5a}, frame.KeySize)

type result struct {
	steps   []string                     // started, in order
	results map[string]*frame.StepResult // by step
	// logs holds each stream's bytes by step, as forwarded (not yet capped
	// or sanitised: that is the runner's job); skipped what was dropped.
	logs    [2]map[string][]byte
	skipped [2]int64
	names   []string // artefacts, in order
	files   map[string]string
	exit    frame.Exit
	frames  []frame.Type
	err     error
}

func (r result) setup() *frame.StepResult { return r.results[frame.StepSetup] }

func (r result) run() frame.StepResult {
	if res := r.results[frame.StepRun]; res != nil {
		return *res
	}
	return frame.StepResult{Step: frame.StepRun}
}

// log renders stream i (0 stdout, 1 stderr) as the runner does for output
// that fits: each started step's header and bytes.
func (r result) log(i int) string {
	var b strings.Builder
	for _, st := range r.steps {
		b.WriteString(frame.Header(st))
		d := r.logs[i][st]
		b.Write(d)
		if len(d) > 0 && d[len(d)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func input(t *testing.T, req *frame.Request, base, overlay []byte) []byte {
	t.Helper()
	var in bytes.Buffer
	if err := frame.WriteInput(&in, testKey, req, base, overlay); err != nil {
		t.Fatal(err)
	}
	return in.Bytes()
}

func (e *env) run(t *testing.T, in []byte) result {
	t.Helper()
	var out bytes.Buffer
	err := Run(context.Background(), e.cfg, bytes.NewReader(in), &out)
	r := parseOutput(t, &out, nil)
	r.err = err
	return r
}

// parseOutput reads the output frames strictly: every frame verifies under
// the test key, in the protocol's order, exit last; onResult, if not nil,
// sees each result as it arrives.
func parseOutput(t *testing.T, rd io.Reader, onResult func(frame.StepResult)) result {
	t.Helper()
	res := result{results: map[string]*frame.StepResult{}, logs: [2]map[string][]byte{{}, {}}, files: map[string]string{}}
	fr := frame.NewReader(rd, testKey, frame.Out)
	var tarData bytes.Buffer
	cur := ""
	for {
		typ, p, err := fr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("output frame %d: %v", fr.Frames(), err)
		}
		if len(res.frames) > 0 && res.frames[len(res.frames)-1] == frame.TypeExit {
			t.Fatalf("a %q frame after the exit frame", typ)
		}
		res.frames = append(res.frames, typ)
		switch typ {
		case frame.TypeStart:
			cur = string(p)
			res.steps = append(res.steps, cur)
		case frame.TypeStdout, frame.TypeStderr:
			i := 0
			if typ == frame.TypeStderr {
				i = 1
			}
			skipped, data, err := frame.Stream(p)
			if err != nil || cur == "" || res.results[cur] != nil {
				t.Fatalf("stream frame outside a step: %v", err)
			}
			res.skipped[i] += skipped
			res.logs[i][cur] = append(res.logs[i][cur], data...)
		case frame.TypeResult:
			sr := new(frame.StepResult)
			decodeStrict(t, p, sr)
			if sr.Step != cur || res.results[cur] != nil {
				t.Fatalf("result %+v for step %q", sr, cur)
			}
			res.results[cur] = sr
			if onResult != nil {
				onResult(*sr)
			}
		case frame.TypeArtefacts:
			tarData.Write(p)
		case frame.TypeExit:
			decodeStrict(t, p, &res.exit)
		}
	}
	if len(res.frames) == 0 || res.frames[len(res.frames)-1] != frame.TypeExit {
		t.Fatalf("the exit frame is not the last: %q", res.frames)
	}
	tr := tar.NewReader(&tarData)
	for tarData.Len() > 0 {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("artefacts tar: %v", err)
		}
		if h.Typeflag != tar.TypeReg {
			t.Fatalf("artefact %q of type %q", h.Name, h.Typeflag)
		}
		b, _ := io.ReadAll(tr)
		if !utf8.Valid(b) {
			t.Fatalf("artefact %q is not UTF-8", h.Name)
		}
		res.names = append(res.names, h.Name)
		res.files[h.Name] = string(b)
	}
	return res
}

func decodeStrict(t *testing.T, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

func TestRunSteps(t *testing.T) {
	t.Parallel()
	base := buildSnapshot(t, map[string]string{"a.txt": "base\n", "src/keep.txt": "keep\n"})
	overlay := buildSnapshot(t, map[string]string{"a.txt": "overlay\n", "src/new.txt": "new\n"})
	cases := []struct {
		name           string
		setup, run     string
		setupSeconds   int64
		overlay        []byte
		wantSetup      *frame.StepResult // Step, Ran, ExitCode, Signal, TimedOut compared
		wantRun        frame.StepResult
		stdout, stderr string
	}{
		{
			name: "run only", run: "echo out; echo err >&2; exit 3",
			wantRun: frame.StepResult{Step: "run", Ran: true, ExitCode: 3},
			stdout:  "== run ==\nout\n", stderr: "== run ==\nerr\n",
		},
		{
			name: "setup sees base, run sees overlay", setup: "cat a.txt", run: "cat a.txt src/keep.txt src/new.txt", overlay: overlay,
			wantSetup: &frame.StepResult{Step: "setup", Ran: true}, wantRun: frame.StepResult{Step: "run", Ran: true},
			stdout: "== setup ==\nbase\n== run ==\noverlay\nkeep\nnew\n", stderr: "== setup ==\n== run ==\n",
		},
		{
			name: "setup failure skips run", setup: "echo installing; exit 1", run: "echo must not run", overlay: overlay,
			wantSetup: &frame.StepResult{Step: "setup", Ran: true, ExitCode: 1}, wantRun: frame.StepResult{Step: "run"},
			stdout: "== setup ==\ninstalling\n", stderr: "== setup ==\n",
		},
		{
			name: "setup timeout", setup: "echo start; sleep 30", setupSeconds: 1, run: "echo must not run",
			wantSetup: &frame.StepResult{Step: "setup", Ran: true, ExitCode: 128 + 9, Signal: "SIGKILL", TimedOut: true},
			wantRun:   frame.StepResult{Step: "run"}, stdout: "== setup ==\nstart\n", stderr: "== setup ==\n",
		},
		{
			name: "signal", run: "kill -TERM $$",
			wantRun: frame.StepResult{Step: "run", Ran: true, ExitCode: 128 + 15, Signal: "SIGTERM"},
			stdout:  "== run ==\n", stderr: "== run ==\n",
		},
		{
			// stdin is /dev/null, not the entry program's stdin (which
			// still holds the overlay while setup runs).
			name: "stdin is empty", setup: "wc -c", run: "wc -c", overlay: overlay,
			wantSetup: &frame.StepResult{Step: "setup", Ran: true}, wantRun: frame.StepResult{Step: "run", Ran: true},
			stdout: "== setup ==\n0\n== run ==\n0\n", stderr: "== setup ==\n== run ==\n",
		},
		{
			name: "HOME exists, proxy only for setup", setup: "test -d \"$HOME\" && env | grep -ci _proxy=", run: "env | grep -ci _proxy=",
			wantSetup: &frame.StepResult{Step: "setup", Ran: true}, wantRun: frame.StepResult{Step: "run", Ran: true, ExitCode: 1},
			stdout: "== setup ==\n2\n== run ==\n0\n", stderr: "== setup ==\n== run ==\n",
		},
		{
			name: "invalid UTF-8 forwarded as is", run: `printf 'a\377\376b\n'; printf '\303' >&2`,
			wantRun: frame.StepResult{Step: "run", Ran: true},
			stdout:  "== run ==\na\377\376b\n", stderr: "== run ==\n\303\n", // the runner sanitises
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			req := request(c.run)
			req.SetupCommand, req.SetupSeconds = c.setup, c.setupSeconds
			r := e.run(t, input(t, req, base, c.overlay))
			if r.err != nil {
				t.Fatalf("Run: %v (exit.json error %q)", r.err, r.exit.Error)
			}
			same := func(got *frame.StepResult, want frame.StepResult) bool {
				return got.Step == want.Step && got.Ran == want.Ran && got.ExitCode == want.ExitCode &&
					got.Signal == want.Signal && got.TimedOut == want.TimedOut
			}
			if run := r.run(); !same(&run, c.wantRun) {
				t.Errorf("run %+v, want %+v", run, c.wantRun)
			}
			switch {
			case c.wantSetup == nil && r.setup() != nil:
				t.Errorf("setup reported without a setup step: %+v", r.setup())
			case c.wantSetup != nil && (r.setup() == nil || !same(r.setup(), *c.wantSetup)):
				t.Errorf("setup %+v, want %+v", r.setup(), c.wantSetup)
			}
			if r.log(0) != c.stdout || r.log(1) != c.stderr {
				t.Errorf("stdout %q stderr %q, want %q %q", r.log(0), r.log(1), c.stdout, c.stderr)
			}
			if r.exit.Error != "" || r.exit.ArtefactsTruncated || r.skipped != [2]int64{} {
				t.Errorf("exit %+v, skipped %v", r.exit, r.skipped)
			}
		})
	}
}

// TestRunKillsBackgroundProcesses: a process a step leaves behind is killed
// and reaped before the step's result is reported, so it can neither
// outlive the step nor hold its output open.
func TestRunKillsBackgroundProcesses(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	req := request(`sleep 100 & echo $! > bg.pid; (sleep 100; echo late) & exit 0`)
	req.SetupCommand = `sleep 100 & echo $! > setup-bg.pid`
	r := e.run(t, input(t, req, buildSnapshot(t, map[string]string{"x": ""}), nil))
	if r.err != nil || !r.run().Ran || r.run().ExitCode != 0 {
		t.Fatalf("Run: %v %+v %+v", r.err, r.run(), r.exit)
	}
	for _, f := range []string{"setup-bg.pid", "bg.pid"} {
		b, err := os.ReadFile(filepath.Join(e.work, f))
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		// Killed and reaped already: no polling needed.
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s: background process %d still exists (kill 0: %v)", f, pid, err)
		}
	}
	if strings.Contains(r.log(0), "late") {
		t.Error("a background process wrote after the step")
	}
}

// TestRunLargeOutput streams 10 MB per stream through 4 KiB logs: the logs
// keep head and tail within their cap, the totals count everything, and
// the program's memory does not grow with the output.
func TestRunLargeOutput(t *testing.T) {
	// Not parallel: it measures allocations.
	e := newEnv(t)
	req := request(`yes 0123456789 | head -c 10000000; yes abcdefghi | head -c 10000000 >&2; echo END`)
	req.OutputBytes = 4 * 4096
	in := input(t, req, buildSnapshot(t, map[string]string{"x": ""}), nil)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	r := e.run(t, in)
	runtime.ReadMemStats(&after)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Errorf("allocated %d bytes for 20 MB of output", alloc)
	}
	// Everything is accounted for: forwarded or counted as skipped.
	budget := frame.StepBudget(req.OutputBytes, frame.StepRun)
	for i, want := range []struct {
		total      int64
		head, tail string
	}{{10_000_004, "0123456789\n", "END\n"}, {10_000_000, "abcdefghi\n", "abcdefghi\n"}} {
		got := r.logs[i][frame.StepRun]
		if int64(len(got))+r.skipped[i] != want.total {
			t.Errorf("stream %d: %d forwarded + %d skipped, want %d", i, len(got), r.skipped[i], want.total)
		}
		// The head in full, then at most one tail per flush.
		flushes := int(time.Since(start)/frame.FlushInterval) + 2
		if len(got) > budget/2+flushes*(budget-budget/2) || !strings.HasPrefix(string(got), want.head) || !strings.HasSuffix(string(got), want.tail) {
			t.Errorf("stream %d: %d bytes forwarded (budget %d, %d flushes): %q … %q", i, len(got), budget, flushes, got[:min(len(got), 40)], got[max(0, len(got)-40):])
		}
	}
}

func TestRunArtefacts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	o := e.out
	req := request(strings.Join([]string{
		`printf 'hello' > ` + o + `/ok.txt`,
		`ln -s /etc/passwd ` + o + `/link`,
		`printf '\377\000\001' > ` + o + `/binary`,
		`head -c 5000 /dev/zero | tr '\0' x > ` + o + `/big.txt`,
		`mkfifo ` + o + `/fifo`,
		`mkdir ` + o + `/dir`,
		`: > ` + o + `/empty`,
	}, "; "))
	req.OutputBytes = 4096
	req.Artefacts = []string{"ok.txt", "link", "binary", "missing", "fifo", "dir", "empty", "big.txt", "after-big"}
	r := e.run(t, input(t, req, buildSnapshot(t, map[string]string{"x": ""}), nil))
	if r.err != nil || r.run().ExitCode != 0 {
		t.Fatalf("Run: %v %+v %q", r.err, r.exit, r.log(1))
	}
	want := []string{"ok.txt", "empty", "big.txt"}
	if strings.Join(r.names, " ") != strings.Join(want, " ") {
		t.Fatalf("entries %v, want %v", r.names, want)
	}
	if r.files["ok.txt"] != "hello" || r.files["empty"] != "" {
		t.Errorf("ok.txt %q empty %q", r.files["ok.txt"], r.files["empty"])
	}
	total := 0
	for _, n := range r.names {
		total += len(r.files[n])
	}
	// The artefacts get what the logs can at most hold of the steps' output
	// (here two empty run sections: header and newline each).
	room := 4096 - 2*(len(frame.Header(frame.StepRun))+1)
	if total != room || !strings.HasPrefix(r.files["big.txt"], "xxx") || !r.exit.ArtefactsTruncated {
		t.Errorf("content %d bytes (want %d), big.txt %d bytes, truncated %v", total, room, len(r.files["big.txt"]), r.exit.ArtefactsTruncated)
	}
}

// TestRunArtefactFlags checks each reason for ArtefactsTruncated on its own.
func TestRunArtefactFlags(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, make string
		truncated  bool
	}{
		{"regular", `printf ok > $OUT/a`, false},
		{"missing", `:`, false},
		{"symlink to /etc/passwd", `ln -s /etc/passwd $OUT/a`, true},
		{"binary", `printf '\377' > $OUT/a`, true},
		{"oversize", `head -c 3000 /dev/zero | tr '\0' y > $OUT/a`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			req := request(strings.ReplaceAll(c.make, "$OUT", e.out))
			req.OutputBytes, req.Artefacts = 2048, []string{"a"}
			r := e.run(t, input(t, req, buildSnapshot(t, map[string]string{"x": ""}), nil))
			if r.err != nil || r.exit.ArtefactsTruncated != c.truncated {
				t.Fatalf("Run: %v, truncated %v, want %v", r.err, r.exit.ArtefactsTruncated, c.truncated)
			}
			if strings.Contains(r.files["a"], "root:") {
				t.Fatal("read through the symlink")
			}
		})
	}
}

// TestSetupResultIsFlushedBeforeTheRunStep reads the output while the job
// runs: the run step waits (up to 20 s) for a file the test creates only
// after it has read the setup step's result from the pipe, so the run step
// succeeds only if that result reached the runner before the run step
// ended.
func TestSetupResultIsFlushedBeforeTheRunStep(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	flag := filepath.Join(t.TempDir(), "setup-seen")
	req := request(`i=0; while [ ! -e ` + flag + ` ]; do i=$((i+1)); [ $i -gt 2000 ] && exit 7; sleep 0.01; done; echo ran`)
	req.SetupCommand = "echo setup"
	in := input(t, req, buildSnapshot(t, map[string]string{"x": ""}), buildSnapshot(t, map[string]string{"y": ""}))
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := Run(context.Background(), e.cfg, bytes.NewReader(in), pw)
		pw.CloseWithError(err)
		done <- err
	}()
	r := parseOutput(t, pr, func(s frame.StepResult) {
		if s.Step != frame.StepSetup {
			return
		}
		if !s.Ran || s.ExitCode != 0 {
			t.Errorf("setup result %+v", s)
		}
		if err := os.WriteFile(flag, nil, 0o644); err != nil {
			t.Error(err)
		}
	})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if r.run().ExitCode != 0 || r.log(0) != "== setup ==\nsetup\n== run ==\nran\n" {
		t.Fatalf("run step did not see the setup result in time: %+v %q", r.run(), r.log(0))
	}
}

// TestRunReportsItsOwnFailures: bad input, tampered input and refused
// snapshots still end the output with an exit frame carrying the error.
func TestRunReportsItsOwnFailures(t *testing.T) {
	t.Parallel()
	good := buildSnapshot(t, map[string]string{"a": "x"})
	var hostile bytes.Buffer
	zw := gzip.NewWriter(&hostile)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "l", Linkname: "/etc/passwd"})
	tw.Close()
	zw.Close()
	withSetup := request("echo must not run")
	withSetup.SetupCommand = "echo setup ran"
	// head is the input up to the base, as the runner sends it before the
	// setup step ends.
	head := func(req *frame.Request) (*bytes.Buffer, *frame.Writer) {
		var b bytes.Buffer
		frame.WriteHello(&b, testKey)
		w := frame.NewWriter(&b, testKey, frame.In)
		if err := frame.WriteHead(w, req, good, int64(len(good))); err != nil {
			t.Fatal(err)
		}
		return &b, w
	}
	injected := func(what func(b *bytes.Buffer, w *frame.Writer)) []byte {
		r := *withSetup
		b, w := head(&r)
		what(b, w)
		return b.Bytes()
	}
	cases := []struct {
		name     string
		in       []byte
		want     string
		setupRan bool
		tampered bool
	}{
		{"truncated base", func() []byte { in := input(t, request("true"), good, nil); return in[:len(in)-10] }(), "base snapshot", false, false},
		{"hostile base", input(t, request("true"), hostile.Bytes(), nil), "forbidden", false, false},
		{"hostile overlay", input(t, withSetup, good, hostile.Bytes()), "overlay snapshot", true, false},
		{"overlay over a file's parent", input(t, withSetup, good, buildSnapshot(t, map[string]string{"a/b": "x"})), "overlay snapshot", true, false},
		// What a setup step writing into PID 1's stdin leaves before the
		// runner's go-ahead.
		{"bytes injected before the go-ahead", injected(func(b *bytes.Buffer, w *frame.Writer) {
			b.WriteString("G")
			frame.WriteGoAhead(w)
			frame.WriteOverlay(w, good)
		}), "tampered", true, true},
		{"go-ahead under another key", injected(func(b *bytes.Buffer, _ *frame.Writer) {
			frame.WriteGoAhead(frame.NewWriter(b, bytes.Repeat([]byte{1}, frame.KeySize), frame.In))
		}), "tampered", true, true},
		{"overlay without the go-ahead", injected(func(_ *bytes.Buffer, w *frame.Writer) { frame.WriteOverlay(w, good) }), "want the go-ahead", true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			r := e.run(t, c.in)
			if r.err == nil || !strings.Contains(r.err.Error(), c.want) || !strings.Contains(r.exit.Error, c.want) || r.exit.InputTampered != c.tampered {
				t.Fatalf("Run = %v, exit %+v, want %q (tampered %v)", r.err, r.exit, c.want, c.tampered)
			}
			if r.run().Ran {
				t.Errorf("run %+v", r.run())
			}
			if (r.setup() != nil && r.setup().Ran) != c.setupRan {
				t.Errorf("setup %+v", r.setup())
			}
			if strings.Contains(r.log(0), "must not run") {
				t.Error("the run step ran")
			}
		})
	}
	// Without a hello nothing can be authenticated: nothing is written.
	var out bytes.Buffer
	if err := Run(context.Background(), newEnv(t).cfg, strings.NewReader("GET / HTTP/1.1\r\n"), &out); err == nil || out.Len() != 0 {
		t.Fatalf("garbage input: %v, %d bytes out", err, out.Len())
	}
}

func TestRunRefusesBadConfig(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cases := map[string]func(c *Config){
		"relative work dir":   func(c *Config) { c.WorkDir = "work" },
		"missing out dir":     func(c *Config) { c.OutDir = filepath.Join(e.out, "nope") },
		"home outside work":   func(c *Config) { c.HomeDir = "/tmp/home" },
		"work dir not empty":  func(c *Config) { c.WorkDir = filepath.Dir(e.work) },
		"PID1 when it is not": func(c *Config) { c.PID1 = true },
	}
	for name, f := range cases {
		cfg := e.cfg
		f(&cfg)
		var out bytes.Buffer
		err := Run(context.Background(), cfg, bytes.NewReader(input(t, request("true"), buildSnapshot(t, map[string]string{"x": ""}), nil)), &out)
		r := parseOutput(t, &out, nil)
		if err == nil || !strings.Contains(r.exit.Error, "entry config") || len(r.steps) != 0 {
			t.Errorf("%s: Run = %v, exit %+v, steps %v", name, err, r.exit, r.steps)
		}
	}
}

func TestRunCancelled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in := input(t, request("sleep 100 & touch started; exec sleep 100"), buildSnapshot(t, map[string]string{"x": ""}), nil)
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- Run(ctx, e.cfg, bytes.NewReader(in), &out) }()
	for deadline := time.Now().Add(20 * time.Second); ; {
		if _, err := os.Stat(filepath.Join(e.work, "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the step did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		r := parseOutput(t, &out, nil)
		if !errors.Is(err, context.Canceled) || !strings.Contains(r.exit.Error, "canceled") || r.run().Signal != "SIGKILL" {
			t.Fatalf("Run = %v, exit %+v", err, r.exit)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not end after cancel")
	}
}

func TestRunStepThatCannotStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.cfg.Shell = "/nonexistent/sh"
	req := request("true")
	req.SetupCommand = "true"
	r := e.run(t, input(t, req, buildSnapshot(t, map[string]string{"x": ""}), nil))
	if r.err == nil || !strings.Contains(r.exit.Error, "setup step: start") {
		t.Fatalf("Run = %v, exit %+v", r.err, r.exit)
	}
	// The setup result still goes out, so the runner revokes egress at once.
	if r.setup() == nil || r.setup().Ran || r.run().Ran {
		t.Fatalf("setup %+v, run %+v", r.setup(), r.run())
	}
}

// TestRunStepWaitsForTheGoAhead: after the setup step nothing runs until
// the runner's go-ahead arrives; input that ends without one ends the job
// with the run step not run.
func TestRunStepWaitsForTheGoAhead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	req := request("echo ran > /dev/stderr; touch ran")
	req.SetupCommand = "true"
	req.SetupSeconds = 30
	var in bytes.Buffer
	frame.WriteHello(&in, testKey)
	if err := frame.WriteHead(frame.NewWriter(&in, testKey, frame.In), req, buildSnapshot(t, map[string]string{"x": "x"}), 0); err != nil {
		t.Fatal(err)
	}
	r := e.run(t, in.Bytes())
	if r.err == nil || r.run().Ran || r.setup() == nil || r.setup().ExitCode != 0 || !strings.Contains(r.exit.Error, "no go-ahead") {
		t.Fatalf("run without go-ahead: err %v, exit %+v, setup %+v", r.err, r.exit, r.setup())
	}
	if _, err := os.Stat(filepath.Join(e.cfg.WorkDir, "ran")); err == nil {
		t.Fatal("the run step ran without the go-ahead")
	}
}
