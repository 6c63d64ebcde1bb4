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

func request(run string) *Request {
	return &Request{RunCommand: run, OutputBytes: 1 << 20, MaxEntries: 100, MaxUnpackedBytes: 1 << 20}
}

type result struct {
	names []string
	files map[string]string
	exit  Exit
	setup *StepResult
	err   error
}

func input(t *testing.T, req *Request, base, overlay []byte) []byte {
	t.Helper()
	var in bytes.Buffer
	if err := WriteInput(&in, req, base, overlay); err != nil {
		t.Fatal(err)
	}
	return in.Bytes()
}

func (e *env) run(t *testing.T, in []byte) result {
	t.Helper()
	var out bytes.Buffer
	err := Run(context.Background(), e.cfg, bytes.NewReader(in), &out)
	r := parseOutput(t, &out)
	r.err = err
	return r
}

// parseOutput reads the output tar strictly: regular files, JSON status
// entries without unknown fields, UTF-8 everywhere.
func parseOutput(t *testing.T, r io.Reader) result {
	t.Helper()
	res := result{files: map[string]string{}}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("output tar: %v", err)
		}
		if h.Typeflag != tar.TypeReg {
			t.Fatalf("output entry %q of type %q", h.Name, h.Typeflag)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if !utf8.Valid(b) {
			t.Fatalf("output entry %q is not UTF-8", h.Name)
		}
		res.names = append(res.names, h.Name)
		res.files[h.Name] = string(b)
		switch h.Name {
		case SetupName:
			res.setup = new(StepResult)
			decodeStrict(t, b, res.setup)
		case ExitName:
			decodeStrict(t, b, &res.exit)
		}
	}
	if len(res.names) == 0 || res.names[len(res.names)-1] != ExitName {
		t.Fatalf("exit.json is not the last entry: %v", res.names)
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
		wantSetup      *StepResult // Step, Ran, ExitCode, Signal, TimedOut compared
		wantRun        StepResult
		stdout, stderr string
	}{
		{
			name: "run only", run: "echo out; echo err >&2; exit 3",
			wantRun: StepResult{Step: "run", Ran: true, ExitCode: 3},
			stdout:  "== run ==\nout\n", stderr: "== run ==\nerr\n",
		},
		{
			name: "setup sees base, run sees overlay", setup: "cat a.txt", run: "cat a.txt src/keep.txt src/new.txt", overlay: overlay,
			wantSetup: &StepResult{Step: "setup", Ran: true}, wantRun: StepResult{Step: "run", Ran: true},
			stdout: "== setup ==\nbase\n== run ==\noverlay\nkeep\nnew\n", stderr: "== setup ==\n== run ==\n",
		},
		{
			name: "setup failure skips run", setup: "echo installing; exit 1", run: "echo must not run", overlay: overlay,
			wantSetup: &StepResult{Step: "setup", Ran: true, ExitCode: 1}, wantRun: StepResult{Step: "run"},
			stdout: "== setup ==\ninstalling\n", stderr: "== setup ==\n",
		},
		{
			name: "setup timeout", setup: "echo start; sleep 30", setupSeconds: 1, run: "echo must not run",
			wantSetup: &StepResult{Step: "setup", Ran: true, ExitCode: 128 + 9, Signal: "SIGKILL", TimedOut: true},
			wantRun:   StepResult{Step: "run"}, stdout: "== setup ==\nstart\n", stderr: "== setup ==\n",
		},
		{
			name: "signal", run: "kill -TERM $$",
			wantRun: StepResult{Step: "run", Ran: true, ExitCode: 128 + 15, Signal: "SIGTERM"},
			stdout:  "== run ==\n", stderr: "== run ==\n",
		},
		{
			// stdin is /dev/null, not the entry program's stdin (which
			// still holds the overlay while setup runs).
			name: "stdin is empty", setup: "wc -c", run: "wc -c", overlay: overlay,
			wantSetup: &StepResult{Step: "setup", Ran: true}, wantRun: StepResult{Step: "run", Ran: true},
			stdout: "== setup ==\n0\n== run ==\n0\n", stderr: "== setup ==\n== run ==\n",
		},
		{
			name: "HOME exists, proxy only for setup", setup: "test -d \"$HOME\" && env | grep -ci _proxy=", run: "env | grep -ci _proxy=",
			wantSetup: &StepResult{Step: "setup", Ran: true}, wantRun: StepResult{Step: "run", Ran: true, ExitCode: 1},
			stdout: "== setup ==\n2\n== run ==\n0\n", stderr: "== setup ==\n== run ==\n",
		},
		{
			name: "invalid UTF-8 replaced", run: `printf 'a\377\376b\n'; printf '\303' >&2`,
			wantRun: StepResult{Step: "run", Ran: true},
			stdout:  "== run ==\na\uFFFDb\n", stderr: "== run ==\n\uFFFD\n",
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
			same := func(got *StepResult, want StepResult) bool {
				return got.Step == want.Step && got.Ran == want.Ran && got.ExitCode == want.ExitCode &&
					got.Signal == want.Signal && got.TimedOut == want.TimedOut
			}
			if !same(&r.exit.Run, c.wantRun) {
				t.Errorf("run %+v, want %+v", r.exit.Run, c.wantRun)
			}
			switch {
			case c.wantSetup == nil && (r.exit.Setup != nil || r.setup != nil):
				t.Errorf("setup reported without a setup step: %+v", r.exit.Setup)
			case c.wantSetup != nil && (r.exit.Setup == nil || r.setup == nil || !same(r.exit.Setup, *c.wantSetup) || *r.setup != *r.exit.Setup):
				t.Errorf("setup %+v / setup.json %+v, want %+v", r.exit.Setup, r.setup, c.wantSetup)
			}
			if r.files[StdoutName] != c.stdout || r.files[StderrName] != c.stderr {
				t.Errorf("stdout %q stderr %q, want %q %q", r.files[StdoutName], r.files[StderrName], c.stdout, c.stderr)
			}
			if r.exit.Error != "" || r.exit.OutputTruncated {
				t.Errorf("exit %+v", r.exit)
			}
			if r.exit.StdoutBytes != int64(len(c.stdout)-countHeaders(c.stdout)) && !strings.Contains(c.name, "UTF-8") {
				t.Errorf("stdoutBytes %d for %q", r.exit.StdoutBytes, c.stdout)
			}
		})
	}
}

func countHeaders(log string) int {
	n := 0
	for _, h := range []string{header("setup"), header("run")} {
		if strings.Contains(log, h) {
			n += len(h)
		}
	}
	return n
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
	if r.err != nil || !r.exit.Run.Ran || r.exit.Run.ExitCode != 0 {
		t.Fatalf("Run: %v %+v", r.err, r.exit)
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
	if strings.Contains(r.files[StdoutName], "late") {
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
	r := e.run(t, in)
	runtime.ReadMemStats(&after)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Errorf("allocated %d bytes for 20 MB of output", alloc)
	}
	if r.exit.StdoutBytes != 10_000_004 || r.exit.StderrBytes != 10_000_000 || !r.exit.OutputTruncated {
		t.Fatalf("exit %+v", r.exit)
	}
	for name, content := range map[string]string{StdoutName: "0123456789\n", StderrName: "abcdefghi\n"} {
		log := r.files[name]
		if len(log) > 4096 || !strings.HasPrefix(log, "== run ==\n"+content) || !strings.Contains(log, " bytes omitted …]\n") {
			t.Errorf("%s: %d bytes: %q … %q", name, len(log), log[:min(len(log), 40)], log[max(0, len(log)-40):])
		}
	}
	if !strings.HasSuffix(r.files[StdoutName], "END\n") {
		t.Errorf("stdout tail lost: %q", r.files[StdoutName][len(r.files[StdoutName])-40:])
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
	if r.err != nil || r.exit.Run.ExitCode != 0 {
		t.Fatalf("Run: %v %+v %q", r.err, r.exit, r.files[StderrName])
	}
	want := []string{StdoutName, StderrName, "ok.txt", "empty", "big.txt", ExitName}
	if strings.Join(r.names, " ") != strings.Join(want, " ") {
		t.Fatalf("entries %v, want %v", r.names, want)
	}
	if r.files["ok.txt"] != "hello" || r.files["empty"] != "" {
		t.Errorf("ok.txt %q empty %q", r.files["ok.txt"], r.files["empty"])
	}
	total := 0
	for _, n := range r.names[:len(r.names)-1] {
		total += len(r.files[n])
	}
	if total != 4096 || !strings.HasPrefix(r.files["big.txt"], "xxx") || !r.exit.OutputTruncated {
		t.Errorf("content %d bytes, big.txt %d bytes, truncated %v", total, len(r.files["big.txt"]), r.exit.OutputTruncated)
	}
}

// TestRunArtefactFlags checks each reason for OutputTruncated on its own.
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
			if r.err != nil || r.exit.OutputTruncated != c.truncated {
				t.Fatalf("Run: %v, truncated %v, want %v", r.err, r.exit.OutputTruncated, c.truncated)
			}
			if strings.Contains(r.files["a"], "root:") {
				t.Fatal("read through the symlink")
			}
		})
	}
}

// TestSetupResultIsFlushedBeforeTheRunStep reads the output while the job
// runs: the run step waits (up to 20 s) for a file the test creates only
// after it has read setup.json from the pipe, so the run step succeeds only
// if setup.json reached the runner before the run step ended.
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
	tr := tar.NewReader(pr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Name == SetupName {
			var s StepResult
			b, _ := io.ReadAll(tr)
			decodeStrict(t, b, &s)
			if s.Step != "setup" || !s.Ran || s.ExitCode != 0 {
				t.Errorf("setup.json %+v", s)
			}
			if err := os.WriteFile(flag, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if h.Name == ExitName {
			var x Exit
			b, _ := io.ReadAll(tr)
			decodeStrict(t, b, &x)
			if x.Run.ExitCode != 0 {
				t.Errorf("run step did not see setup.json in time: %+v", x.Run)
			}
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := []string{SetupName, StdoutName, StderrName, ExitName}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("entries %v, want %v", names, want)
	}
}

// TestRunReportsItsOwnFailures: bad input and refused snapshots still give
// a well-formed output whose exit.json carries the error.
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
	cases := []struct {
		name      string
		in        []byte
		want      string
		setupRan  bool
		setupJSON bool
	}{
		{"garbage", []byte("GET / HTTP/1.1\r\n"), "bad magic", false, false},
		{"truncated base", func() []byte { in := input(t, request("true"), good, nil); return in[:len(in)-10] }(), "base snapshot", false, false},
		{"hostile base", input(t, request("true"), hostile.Bytes(), nil), "forbidden", false, false},
		{"hostile overlay", input(t, withSetup, good, hostile.Bytes()), "overlay snapshot", true, true},
		{"overlay over a file's parent", input(t, withSetup, good, buildSnapshot(t, map[string]string{"a/b": "x"})), "overlay snapshot", true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			r := e.run(t, c.in)
			if r.err == nil || !strings.Contains(r.err.Error(), c.want) || !strings.Contains(r.exit.Error, c.want) {
				t.Fatalf("Run = %v, exit.json error %q, want %q", r.err, r.exit.Error, c.want)
			}
			if r.exit.Run.Ran || r.exit.Run.Step != "run" {
				t.Errorf("run %+v", r.exit.Run)
			}
			if (r.exit.Setup != nil && r.exit.Setup.Ran) != c.setupRan || (r.setup != nil) != c.setupJSON {
				t.Errorf("setup %+v setup.json %v", r.exit.Setup, r.setup)
			}
			if _, ok := r.files[StdoutName]; !ok {
				t.Errorf("no stdout.log: %v", r.names)
			}
			if strings.Contains(r.files[StdoutName], "must not run") {
				t.Error("the run step ran")
			}
		})
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
		err := Run(context.Background(), cfg, strings.NewReader(""), &out)
		r := parseOutput(t, &out)
		if err == nil || !strings.Contains(r.exit.Error, "entry config") {
			t.Errorf("%s: Run = %v, exit.json %+v", name, err, r.exit)
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
		r := parseOutput(t, &out)
		if !errors.Is(err, context.Canceled) || !strings.Contains(r.exit.Error, "canceled") || r.exit.Run.Signal != "SIGKILL" {
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
	// setup.json still goes out, so the runner revokes egress at once.
	if r.setup == nil || r.setup.Ran || r.exit.Run.Ran {
		t.Fatalf("setup.json %+v, exit %+v", r.setup, r.exit)
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
	if err := WriteHead(&in, req, buildSnapshot(t, map[string]string{"x": "x"}), 0); err != nil {
		t.Fatal(err)
	}
	r := e.run(t, in.Bytes())
	if r.err == nil || r.exit.Run.Ran || r.setup == nil || r.setup.ExitCode != 0 {
		t.Fatalf("run without go-ahead: err %v, exit %+v, setup %+v", r.err, r.exit, r.setup)
	}
	if _, err := os.Stat(filepath.Join(e.cfg.WorkDir, "ran")); err == nil {
		t.Fatal("the run step ran without the go-ahead")
	}
}
