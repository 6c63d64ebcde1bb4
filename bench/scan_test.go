package bench

import (
	scanapp "github.com/quavon/quavon/internal/app/scan"

	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/config"
	sandboxpkg "github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/sandbox/runner"
	"github.com/quavon/quavon/internal/sandbox/runner/docker"
	"github.com/quavon/quavon/internal/sandbox/valkeyq"
	"github.com/quavon/quavon/internal/sast"
	"github.com/quavon/quavon/internal/scan"
	"github.com/quavon/quavon/internal/testenv"
)

// BenchmarkScan50Files: a review run's scan (snapshot, signed job over
// Valkey, gVisor container started ahead of the job, normalisation) on a
// 50-file change, against the same
// driver and scanners run directly on the host, chrooted into the
// scanners image's exported file system, over the same tree, interleaved
// in one loop. The ratio is the sandbox's and the transport's overhead
// (issue 26's goal: ≤ 2.0 under runsc systrap, ≤ 1.1 under runc; where
// it stands: deploy/images/README.md). The same scan on the development
// runc backend (runc-scan/direct) separates the two: what remains there is
// the transport (snapshot, Valkey, container start), the rest is gVisor.
func BenchmarkScan50Files(b *testing.B) {
	if os.Geteuid() != 0 {
		if testenv.Required() {
			b.Fatal("the direct baseline needs root (chroot); scripts/test runs as root")
		}
		b.Skip("the direct baseline needs root (chroot)")
	}
	lock := testenv.ImagesLock(b)
	testenv.Docker(b)
	platform := testenv.RunscPlatform(b)
	repo := changeOf50Files(b)
	ctx := context.Background()
	plan, err := scan.NewPlan(ctx, repo, "main", scan.DefaultLimits)
	if err != nil {
		b.Fatal(err)
	}
	if len(plan.Files) != 50 {
		b.Fatalf("%d changed files, want 50", len(plan.Files))
	}
	rootfs := exportScanners(b, lock)
	cfg, err := config.LoadScan([]string{"QUAVON_ENV=test", "QUAVON_SANDBOX_IMAGES_LOCK=" + lock,
		"QUAVON_SANDBOX_RUNSC_PLATFORM=" + platform})
	if err != nil {
		b.Fatal(err)
	}
	local, err := scanapp.StartLocal(ctx, cfg, &testenv.LogBuffer{})
	if err != nil {
		b.Fatal(err)
	}
	defer local.Close()
	cfg.Runner.Backend, cfg.Runner.AllowInsecure = config.BackendRuncInsecure, true
	localRunc, err := scanapp.StartLocal(ctx, cfg, &testenv.LogBuffer{})
	if err != nil {
		b.Fatal(err)
	}
	defer localRunc.Close()
	noop := noopTree(b)
	// job runs command in a job of the scan's shape (image, limits,
	// environment), so it can take the container started for the scan.
	job := func(l *scanapp.Local, command string) (*sandboxpkg.SandboxResult, time.Duration) {
		t0 := time.Now()
		res, err := l.Client.Run(ctx, valkeyq.JobSpec{TenantID: "local", Purpose: sandboxpkg.PurposeSAST,
			ImageClass: scan.ImageClass, RunCommand: command, Egress: sandboxpkg.Egress{Mode: sandboxpkg.EgressNone},
			Env:    map[sandboxpkg.SandboxEnvKey]string{sandboxpkg.EnvCI: "true", sandboxpkg.EnvNoColor: "1"},
			Limits: scan.DefaultJobLimits, TTL: 2 * time.Minute}, noop, "")
		if err != nil || res.Status != sandboxpkg.StatusCompleted || res.ExitCode != 0 || len(res.Steps) == 0 {
			b.Fatalf("job %q: %v %+v", command, err, res)
		}
		return res, time.Since(t0)
	}
	// round is one runtime's turn: jobs that run nothing in a fresh
	// container and in one started ahead (QUAVON_SANDBOX_PRESTART), one
	// that times process starts, then the scan, in the container started
	// for it after the job before, as a runner in service with
	// QUAVON_SANDBOX_PRESTART=1 has it ready. Then the container started
	// after the scan is removed: no sandbox waits outside its own round,
	// as a waiting gVisor sandbox slowed the direct run beside it by 15-20%
	// (two of them; deploy/images/README.md).
	round := func(l *scanapp.Local, bd *breakdown) time.Duration {
		l.Prestart(1)
		_, d := job(l, "true")
		bd.add("  no-op job (fresh container)", d)
		l.WaitPrestarts()
		_, d = job(l, "true")
		bd.add("  no-op job (prestarted container)", d)
		l.WaitPrestarts()
		// What a process start and a system call cost in there: gVisor's
		// tax on every program a tool runs and on much of what it does.
		for _, p := range probes {
			res, _ := job(l, p.command)
			bd.add(p.row, time.Duration(res.Steps[len(res.Steps)-1].DurationMillis)*time.Millisecond)
			l.WaitPrestarts()
		}

		t0 := time.Now()
		out, err := scan.Run(ctx, l.Client, plan, scan.Options{})
		d = time.Since(t0)
		l.Prestart(0)
		l.WaitPrestarts()
		if err != nil {
			b.Fatal(err)
		}
		if out.Incomplete() {
			b.Fatalf("incomplete scan: %+v", out.Report.Tools)
		}
		sandbox := time.Duration(out.SandboxMillis) * time.Millisecond
		run := time.Duration(out.RunMillis) * time.Millisecond
		bd.add("total", d)
		bd.add("host (snapshot, Valkey, normalise)", d-sandbox)
		// The normalisation in it, once more, the same way.
		t1 := time.Now()
		out.Normalise(sast.Options{})
		bd.add("  normalise", time.Since(t1))
		bd.add("runner (container, snapshot in, output out)", sandbox-run)
		bd.add("driver", run)
		bd.tools(out.Report.Tools)
		return d
	}
	direct, sandboxed, runc := &breakdown{}, &breakdown{}, &breakdown{}
	// Not measured: the first jobs of a runner.
	round(local, &breakdown{})
	round(localRunc, &breakdown{})
	b.Logf("load average before: %s", loadavg())
	b.ResetTimer()
	for b.Loop() {
		runDirect(b, rootfs, plan, direct)
		round(local, sandboxed)
		round(localRunc, runc)
	}
	b.StopTimer()
	b.Logf("load average after: %s", loadavg())
	switchUS := switchRoundTrip(b)
	// Printed, not logged: the test framework cuts a benchmark's log to
	// a few lines without -v.
	// The host's huge pages for gVisor are about 13% of the runsc column
	// (docker.ShmemTHPFile); scripts/test sets them to advise.
	thp, err := docker.ShmemTHP(docker.ShmemTHPFile)
	if err != nil {
		thp = err.Error()
	}
	fmt.Printf("BenchmarkScan50Files: mean per scan (ms), %d iteration(s), load average %s, shmem huge pages %s, host thread switch and back %.1f µs:\n%s\n",
		b.N, loadavg(), thp, switchUS, formatBreakdown(b.N, []string{"runsc", "runc", "direct"}, []*breakdown{sandboxed, runc, direct}))
	n := float64(b.N)
	b.ReportMetric(float64(direct.sum["total"].Milliseconds())/n, "direct-ms/op")
	b.ReportMetric(float64(sandboxed.sum["total"].Milliseconds())/n, "scan-ms/op")
	b.ReportMetric(float64(runc.sum["total"].Milliseconds())/n, "runc-ms/op")
	b.ReportMetric(float64(sandboxed.sum["total"])/float64(direct.sum["total"]), "scan/direct")
	b.ReportMetric(float64(runc.sum["total"])/float64(direct.sum["total"]), "runc-scan/direct")
	b.ReportMetric(switchUS, "switch-us")
}

// probes run in each mode as a job's run step (directly: chrooted into the
// image): 20 starts of /bin/true, and 100,000 system calls (dd copying one
// byte at a time, a read and a write each), so that row in milliseconds is
// ten times the microseconds one system call takes.
var probes = []struct{ command, row string }{
	{"i=0; while [ $i -lt 20 ]; do /bin/true; i=$((i+1)); done", "20 process starts (/bin/true, in the run step)"},
	{"dd if=/dev/zero of=/dev/null bs=1 count=50000 2>/dev/null", "100,000 system calls (dd bs=1, in the run step)"},
}

// breakdown sums one mode's phases and tools over the iterations, keeping
// the order in which each row first appeared.
type breakdown struct {
	rows []string
	sum  map[string]time.Duration
}

func (bd *breakdown) add(row string, d time.Duration) {
	if bd.sum == nil {
		bd.sum = map[string]time.Duration{}
	}
	if _, ok := bd.sum[row]; !ok {
		bd.rows = append(bd.rows, row)
	}
	bd.sum[row] += d
}

// tools adds each tool's time as the driver measured it (the tools run
// two at a time, so they add up to more than the driver's time).
func (bd *breakdown) tools(runs []sast.ToolRun) {
	for _, t := range runs {
		bd.add("  "+string(t.Tool), time.Duration(t.DurationMillis)*time.Millisecond)
	}
}

// formatBreakdown prints the modes side by side, with each mode's total
// over the last one's (direct).
func formatBreakdown(n int, names []string, bds []*breakdown) string {
	var rows []string
	for _, bd := range bds {
		for _, r := range bd.rows {
			if !slices.Contains(rows, r) {
				rows = append(rows, r)
			}
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%-46s", "")
	for _, name := range names {
		fmt.Fprintf(&sb, "%10s", name)
	}
	sb.WriteString("\n")
	for _, r := range rows {
		fmt.Fprintf(&sb, "%-46s", r)
		for _, bd := range bds {
			if d, ok := bd.sum[r]; ok {
				fmt.Fprintf(&sb, "%10d", d.Milliseconds()/int64(n))
			} else {
				fmt.Fprintf(&sb, "%10s", "-")
			}
		}
		sb.WriteString("\n")
	}
	base := bds[len(bds)-1].sum["total"]
	fmt.Fprintf(&sb, "%-46s", "total / "+names[len(names)-1])
	for _, bd := range bds {
		fmt.Fprintf(&sb, "%10.2f", float64(bd.sum["total"])/float64(base))
	}
	return sb.String()
}

func loadavg() string {
	data, _ := os.ReadFile("/proc/loadavg")
	return strings.TrimSpace(string(data))
}

// noopTree is the snapshot of the no-op job: one small file.
func noopTree(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), []byte("x\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

// changeOf50Files is a repository whose branch adds 50 files: copies of the
// demo corpus (17 Python, 17 JavaScript, 15 Go packages and their go.mod).
func changeOf50Files(b *testing.B) string {
	b.Helper()
	demo := "../internal/scan/testdata/demo"
	read := func(p string) string {
		data, err := os.ReadFile(filepath.Join(demo, p))
		if err != nil {
			b.Fatal(err)
		}
		return string(data)
	}
	py, js, goSrc, goMod := read("app/handlers.py"), read("web/server.js"), read("svc/svc.go"), read("svc/go.mod")
	files := map[string]string{"go.mod": goMod}
	for i := range 17 {
		files[fmt.Sprintf("app/h%02d.py", i)] = py
		files[fmt.Sprintf("web/s%02d.js", i)] = js
	}
	for i := range 15 {
		files[fmt.Sprintf("svc/p%02d/svc.go", i)] = goSrc
	}
	return testenv.GitRepo(b, nil, files)
}

// exportScanners unpacks the scanners image's file system into a
// temporary directory.
func exportScanners(b *testing.B, lock string) string {
	b.Helper()
	lf, err := runner.LoadLockfile(lock)
	if err != nil {
		b.Fatal(err)
	}
	ref, err := lf.Resolve(scan.ImageClass)
	if err != nil {
		b.Fatal(err)
	}
	rootfs := b.TempDir()
	id, err := exec.Command("docker", "create", ref).Output()
	if err != nil {
		b.Fatalf("docker create: %v", err)
	}
	cid := strings.TrimSpace(string(id))
	defer exec.Command("docker", "rm", "-f", cid).Run()
	if out, err := exec.Command("sh", "-c", "docker export "+cid+" | tar -x -C "+rootfs).CombinedOutput(); err != nil {
		b.Fatalf("docker export: %v: %s", err, out)
	}
	return rootfs
}

// runDirect runs the driver chrooted into rootfs, as uid 65532, with the
// plan's tree in /work, and checks every tool finished.
func runDirect(b *testing.B, rootfs string, plan *scan.Plan, bd *breakdown) {
	b.Helper()
	t0 := time.Now()
	work := filepath.Join(rootfs, "work")
	out := filepath.Join(rootfs, "out")
	for _, d := range []string{work, out} {
		os.RemoveAll(d)
		os.MkdirAll(d, 0o755)
	}
	if err := plan.Tree(context.Background(), work, sast.Request{}); err != nil {
		b.Fatal(err)
	}
	os.MkdirAll(filepath.Join(work, ".home"), 0o755)
	for _, d := range []string{work, out} {
		filepath.Walk(d, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 65532, 65532) })
	}
	for _, m := range []struct{ src, dst, fstype string }{{"proc", "proc", "proc"}, {"/dev", "dev", ""}} {
		target := filepath.Join(rootfs, m.dst)
		os.MkdirAll(target, 0o755)
		flags := uintptr(0)
		if m.fstype == "" {
			flags = syscall.MS_BIND | syscall.MS_REC
		}
		if err := syscall.Mount(m.src, target, m.fstype, flags, ""); err != nil {
			b.Fatalf("mount %s: %v", target, err)
		}
		defer syscall.Unmount(target, syscall.MNT_DETACH)
	}
	tree := time.Since(t0)
	cmd := exec.Command("/opt/quavon/bin/quavon-scan")
	cmd.Dir = "/work"
	cmd.Env = []string{"PATH=/opt/quavon/tools/bin:/usr/local/go/bin:/usr/bin:/bin", "HOME=/work/.home"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: rootfs, Credential: &syscall.Credential{Uid: 65532, Gid: 65532}}
	t1 := time.Now()
	if outText, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("driver: %v: %s", err, outText)
	}
	driver := time.Since(t1)
	data, err := os.ReadFile(filepath.Join(out, sast.ManifestArtefact))
	if err != nil {
		b.Fatal(err)
	}
	var m sast.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		b.Fatal(err)
	}
	for _, t := range m.Tools {
		if t.Status != sast.StatusOK {
			b.Fatalf("direct run: %s %s: %s %s", t.Tool, t.Status, t.Error, t.Stderr)
		}
	}
	bd.add("total", time.Since(t0))
	bd.add("host (snapshot, Valkey, normalise)", tree)
	bd.add("driver", driver)
	bd.tools(m.Tools)
	for _, p := range probes {
		cmd := exec.Command("/bin/sh", "-c", p.command)
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: rootfs, Credential: &syscall.Credential{Uid: 65532, Gid: 65532}}
		t := time.Now()
		if outText, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s: %v: %s", p.row, err, outText)
		}
		bd.add(p.row, time.Since(t))
	}
}

// switchRoundTrip is what the host takes to switch from one thread to
// another and back (two threads passing a byte to and fro over two
// pipes, as perf bench sched pipe -T does), in microseconds. gVisor's
// systrap serves each system call and each page fault the sentry handles
// by switching from the sandboxed thread to the sentry and back, so this
// is the floor of what the sandbox adds to every one of them: about
// 25 µs on this repository's machines, which are PVM guests (the
// kernel's pvm_* paravirtual operations), where a switch goes through
// the hypervisor (deploy/images/README.md).
func switchRoundTrip(b *testing.B) float64 {
	b.Helper()
	const rounds = 20_000
	var ping, pong [2]int
	for _, p := range []*[2]int{&ping, &pong} {
		if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
			b.Fatal(err)
		}
		defer syscall.Close(p[0])
		defer syscall.Close(p[1])
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		buf := []byte{0}
		for range rounds {
			if _, err := syscall.Read(ping[0], buf); err != nil {
				done <- err
				return
			}
			if _, err := syscall.Write(pong[1], buf); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	buf := []byte{0}
	t0 := time.Now()
	for range rounds {
		if _, err := syscall.Write(ping[1], buf); err != nil {
			b.Fatal(err)
		}
		if _, err := syscall.Read(pong[0], buf); err != nil {
			b.Fatal(err)
		}
	}
	d := time.Since(t0)
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	return float64(d.Microseconds()) / rounds
}
