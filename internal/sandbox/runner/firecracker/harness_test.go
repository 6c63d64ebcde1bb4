package firecracker_test

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/sandbox/frame"
	"github.com/quavon/quavon/internal/sandbox/runner"
	"github.com/quavon/quavon/internal/sandbox/runner/firecracker"
	"github.com/quavon/quavon/internal/sandbox/runner/firecracker/fctest"
	"github.com/quavon/quavon/internal/sandbox/valkeyq"
	"github.com/quavon/quavon/internal/snapshot"
	"github.com/quavon/quavon/internal/testenv"
)

// TestMain: this test binary, copied to files named jailer and
// firecracker, is the fake of both (fctest).
func TestMain(m *testing.M) {
	fctest.Main()
	os.Exit(m.Run())
}

const fakeVersion = "1.13.1"

// env is a backend on the fake jailer and Firecracker, with one image
// class per guest behaviour (byo:<behaviour>).
type env struct {
	dir, base, cgroup, logDir string
	script                    string // the GuestScript guest's script
	backend                   *firecracker.Backend
	images                    *runner.Lockfile
	logs                      *testenv.LogBuffer
	cmds                      *recorder
}

var uidBase atomic.Int64

func init() { uidBase.Store(900000) }

func writeRO(t testing.TB, path string, data []byte, mode os.FileMode) string {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	// No fork may inherit the descriptor while the file is written, or
	// executing it fails with ETXTBSY.
	syscall.ForkLock.Lock()
	err := os.WriteFile(path, data, mode)
	syscall.ForkLock.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, mode)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func refOf(name string) string {
	sum := sha256.Sum256([]byte("image " + name))
	return "sha256:" + hex.EncodeToString(sum[:])
}

var behaviours = []string{fctest.GuestEntry, fctest.GuestGarbage, fctest.GuestHuge, fctest.GuestMute, fctest.GuestNoConnect,
	fctest.GuestCrash, fctest.GuestTwoConn, fctest.GuestOutside, fctest.GuestScript}

// fakeFiles writes the fake binaries (jailer, firecracker and the outside
// guest), kernel, rootfs files and both lockfiles into dir.
func fakeFiles(t testing.TB, dir string, fake fctest.Config) (*firecracker.Lock, *runner.Lockfile) {
	t.Helper()
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	lock := &firecracker.Lock{Version: 1}
	lock.Jailer = firecracker.Binary{Version: cmp.Or(fake.JailerVersion, fakeVersion), Artefact: firecracker.Artefact{Path: filepath.Join(bin, "jailer")}}
	lock.Jailer.SHA256 = writeRO(t, lock.Jailer.Path, self, 0o555)
	lock.Firecracker = firecracker.Binary{Version: fakeVersion, Artefact: firecracker.Artefact{Path: filepath.Join(bin, "firecracker")}}
	lock.Firecracker.SHA256 = writeRO(t, lock.Firecracker.Path, self, 0o555)
	writeRO(t, filepath.Join(bin, fctest.OutsideGuest), self, 0o555)
	fj, _ := json.Marshal(fake)
	os.WriteFile(filepath.Join(bin, "fake.json"), fj, 0o644)
	lock.Kernel = firecracker.Kernel{Artefact: firecracker.Artefact{Path: filepath.Join(dir, "store", "vmlinux")}, ConfigSHA256: strings.Repeat("0", 64)}
	lock.Kernel.SHA256 = writeRO(t, lock.Kernel.Path, []byte("a kernel"), 0o444)
	lock.Rootfs = map[string]firecracker.Rootfs{}
	images := &runner.Lockfile{Version: 1, Classes: map[string]runner.LockedImage{}, BYO: map[string]runner.LockedImage{}}
	for _, b := range behaviours {
		r := firecracker.Rootfs{Image: refOf(b), Artefact: firecracker.Artefact{Path: filepath.Join(dir, "store", b+".ext4")}}
		r.SHA256 = writeRO(t, r.Path, []byte(b+"\n"), 0o444)
		lock.Rootfs["byo:"+b] = r
		images.BYO[b] = runner.LockedImage{Name: "quavon/" + b, Ref: refOf(b)}
	}
	return lock, images
}

func newEnv(t testing.TB, fake fctest.Config, mutate func(*firecracker.Config)) *env {
	t.Helper()
	testenv.Root(t, "the fake jailer switches to the VM's uid as the real one does")
	dir, err := os.MkdirTemp("", "fc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	e := &env{dir: dir, base: filepath.Join(dir, "jail"), cgroup: filepath.Join(dir, "cgroup"), logDir: filepath.Join(dir, "log"),
		logs: &testenv.LogBuffer{}, cmds: &recorder{}}
	os.MkdirAll(e.cgroup, 0o755)
	os.MkdirAll(e.logDir, 0o777)
	os.Chmod(e.logDir, 0o777)
	e.script = filepath.Join(dir, "script.json")
	fake.Version, fake.CgroupRoot, fake.LogDir, fake.Script = fakeVersion, e.cgroup, e.logDir, e.script
	lock, images := fakeFiles(t, dir, fake)
	e.images = images
	first := int(uidBase.Add(16)) - 16
	cfg := firecracker.Config{Lock: lock, Images: images, KVMDevice: "/dev/kvm", ProbeKVM: func(string) error { return nil },
		ChrootBase: e.base, UIDFirst: first, UIDLast: first + 3, CgroupParent: "quavon-sandbox", CgroupRoot: e.cgroup,
		BootTimeout: 5 * time.Second, Commander: e.cmds.run, Log: slog.New(slog.NewJSONHandler(e.logs, nil))}
	if mutate != nil {
		mutate(&cfg)
	}
	e.backend, err = firecracker.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func limits() sandbox.Limits {
	return sandbox.Limits{CPUMillis: 1500, MemoryBytes: 256 << 20, Pids: 128, WallClockSeconds: 20, SetupSeconds: 10,
		WorkBytes: 32 << 20, TmpBytes: 16 << 20, OutputBytes: 1 << 20, NoFile: 256, FileSizeBytes: 16 << 20}
}

// job is one run through the backend with the executor's framing: input
// written, output parsed by the runner's own parser.
type job struct {
	behaviour  string
	setup, run string
	files      map[string]string
	limits     sandbox.Limits
	network    string
	id         string
}

type outcome struct {
	out  *runner.Output
	perr error
	res  runner.ExecResult
	err  error
}

func (e *env) run(t testing.TB, j job) outcome {
	t.Helper()
	if j.limits == (sandbox.Limits{}) {
		j.limits = limits()
	}
	if j.files == nil {
		j.files = map[string]string{"README": "hello\n"}
	}
	src := t.TempDir()
	for name, body := range j.files {
		os.WriteFile(filepath.Join(src, name), []byte(body), 0o644)
	}
	base, _, err := snapshot.Build(src, snapshot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	key, _ := frame.NewKey()
	req := &frame.Request{SetupCommand: j.setup, RunCommand: j.run, OutputBytes: j.limits.OutputBytes, SetupSeconds: j.limits.SetupSeconds,
		MaxEntries: 1000, MaxUnpackedBytes: 8 << 20}
	var in bytes.Buffer
	if err := frame.WriteInput(&in, key, req, base, nil); err != nil {
		t.Fatal(err)
	}
	outR, outW := io.Pipe()
	parsed := make(chan outcome, 1)
	done := make(chan struct{})
	go func() {
		out, perr := runner.ReadOutput(outR, key, req, runner.OutputLimits{Total: j.limits.OutputBytes, Raw: 4 << 20}, nil)
		outR.CloseWithError(fmt.Errorf("output closed: %w", perr))
		close(done)
		parsed <- outcome{out: out, perr: perr}
	}()
	if j.id == "" {
		j.id = "job-" + j.behaviour + "-" + hex.EncodeToString([]byte(t.Name()))[:8]
	}
	spec := runner.ContainerSpec{JobID: j.id, ImageRef: refOf(j.behaviour),
		Env: []string{"PATH=/usr/bin:/bin", "HOME=/work/.home", "CI=true"}, Limits: j.limits, Network: j.network}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := e.backend.Exec(ctx, spec, &in, sink{outW, done})
	outW.Close()
	o := <-parsed
	o.res, o.err = res, err
	return o
}

// logEntries returns the fake's log lines of every VM, by VM id.
func (e *env) logEntries(t testing.TB) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	files, _ := filepath.Glob(filepath.Join(e.logDir, "*.jsonl"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		id := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				out[id] = append(out[id], m)
			}
		}
	}
	return out
}

func entriesOf(lines []map[string]any, kind string) []any {
	var out []any
	for _, l := range lines {
		if l["kind"] == kind {
			out = append(out, l["v"])
		}
	}
	return out
}

// leftovers lists what is left below the chroot base and the cgroup
// parent.
func (e *env) leftovers(t testing.TB) []string {
	t.Helper()
	var left []string
	for _, pattern := range []string{filepath.Join(e.base, "firecracker", "*"), filepath.Join(e.cgroup, "quavon-sandbox", "quavon-*")} {
		m, _ := filepath.Glob(pattern)
		left = append(left, m...)
	}
	return left
}

// recorder records the ip and nft commands instead of running them.
type recorder struct {
	mu   sync.Mutex
	cmds []string
}

func (r *recorder) run(_ context.Context, c firecracker.Cmd) error {
	r.mu.Lock()
	r.cmds = append(r.cmds, c.String()+stdinMark(c.Stdin()))
	r.mu.Unlock()
	return nil
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.cmds...)
}

func stdinMark(s string) string {
	if s == "" {
		return ""
	}
	return " <<" + s
}

// sink is the executor's output writer: Refused when the parser stopped.
type sink struct {
	*io.PipeWriter
	done chan struct{}
}

func (s sink) Refused() <-chan struct{} { return s.done }

// outside plays the guest of the next GuestOutside VM from outside it: it
// waits for the VM's vsock listener and pid file, then runs the fake's
// OutsideGuest program as the VM's uid (the host accepts no other) with
// script. The returned function waits for the program and returns its
// log entry.
func (e *env) outside(t testing.TB, script fctest.Script) func() map[string]any {
	t.Helper()
	path := filepath.Join(e.dir, "outside.json")
	if err := fctest.WriteScript(path, script); err != nil {
		t.Fatal(err)
	}
	done := make(chan map[string]any, 1)
	go func() {
		var sock, pidFile string
		for i := 0; i < 1000 && pidFile == ""; i++ {
			socks, _ := filepath.Glob(filepath.Join(e.base, "firecracker", "quavon-*", "root", "v.sock_1024"))
			for _, s := range socks {
				if p := filepath.Join(filepath.Dir(s), "firecracker.pid"); fileExists(p) {
					sock, pidFile = s, p
				}
			}
			sleep()
		}
		if pidFile == "" {
			done <- map[string]any{"error": "no VM appeared"}
			return
		}
		fi, err := os.Stat(sock)
		pid, _ := os.ReadFile(pidFile)
		if err != nil {
			done <- map[string]any{"error": err.Error()}
			return
		}
		uid := fi.Sys().(*syscall.Stat_t).Uid
		vmID := filepath.Base(filepath.Dir(filepath.Dir(sock)))
		logFile := filepath.Join(e.logDir, vmID+".jsonl")
		c := exec.Command(filepath.Join(e.dir, "bin", fctest.OutsideGuest), sock, strings.TrimSpace(string(pid)), path, logFile)
		c.Env = []string{}
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid, Groups: []uint32{}}}
		out, err := c.CombinedOutput()
		if err != nil {
			done <- map[string]any{"error": fmt.Sprintf("%v: %s", err, out)}
			return
		}
		lines := e.logEntries(t)[vmID]
		got := entriesOf(lines, "outside")
		if len(got) != 1 {
			done <- map[string]any{"error": fmt.Sprintf("%d log entries", len(got))}
			return
		}
		done <- got[0].(map[string]any)
	}()
	return func() map[string]any {
		select {
		case got := <-done:
			return got
		case <-time.After(time.Minute):
			return map[string]any{"error": "the outside guest did not finish"}
		}
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// execute runs a job of behaviour's image class through the runner's
// executor (snapshots through Valkey, the output parsed and assembled into
// the result) on the backend.
func (e *env) execute(t testing.TB, behaviour, run string) *sandbox.SandboxResult {
	t.Helper()
	admin := testenv.Valkey(t, testenv.UserControlPlane)
	pool := testenv.Pool(t, admin)
	names, err := valkeyq.NamesFor(pool)
	if err != nil {
		t.Fatal(err)
	}
	k, err := sandbox.NewKey(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := sandbox.NewKeyRing(k)
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := valkeyq.NewBlobStore(admin, valkeyq.BlobConfig{Names: names, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := runner.NewExecutor(runner.ExecutorConfig{Backend: e.backend, Images: e.images, Blobs: blobs, Ceiling: limits(),
		Log: slog.New(slog.NewJSONHandler(e.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "README"), []byte("hello\n"), 0o644)
	snap, _, err := snapshot.Build(src, snapshot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := blobs.Store(context.Background(), "tenant-a", snap)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	job := &sandbox.SandboxJob{ID: "job-exec-" + behaviour, Pool: pool, TenantID: "tenant-a", Purpose: sandbox.PurposeFixTest,
		ImageClass: "byo:" + behaviour, Base: ref, RunCommand: run, Egress: sandbox.Egress{Mode: sandbox.EgressNone},
		Limits: limits(), IssuedAt: now, NotAfter: now.Add(time.Minute)}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := ex.Run(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
