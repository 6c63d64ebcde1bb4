package bench

import (
	scanapp "github.com/quavon/quavon/internal/app/scan"

	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/sandbox/runner"
	"github.com/quavon/quavon/internal/sast"
	"github.com/quavon/quavon/internal/scan"
	"github.com/quavon/quavon/internal/testenv"
)

// BenchmarkScan50Files: `quavon scan` (snapshot, signed job over Valkey,
// gVisor container, normalisation) on a 50-file change, against the same
// driver and scanners run directly on the host, chrooted into the
// scanners image's exported file system, over the same tree, interleaved
// in one loop. The ratio is the sandbox's and the transport's overhead
// (goal: scan/direct ≤ 1.3). The same scan on the development runc
// backend (runc-scan/direct) separates the two: what remains there is the
// transport (snapshot, Valkey, container start), the rest is gVisor.
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
	scanWith := func(l *scanapp.Local) time.Duration {
		t0 := time.Now()
		out, err := scan.Run(ctx, l.Client, plan, scan.Options{})
		d := time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		if out.Incomplete() {
			b.Fatalf("incomplete scan: %+v", out.Report.Tools)
		}
		return d
	}
	b.ResetTimer()
	var direct, sandboxed, runc time.Duration
	for b.Loop() {
		t0 := time.Now()
		runDirect(b, rootfs, plan)
		direct += time.Since(t0)
		sandboxed += scanWith(local)
		runc += scanWith(localRunc)
	}
	n := float64(b.N)
	b.ReportMetric(float64(direct.Milliseconds())/n, "direct-ms/op")
	b.ReportMetric(float64(sandboxed.Milliseconds())/n, "scan-ms/op")
	b.ReportMetric(float64(sandboxed)/float64(direct), "scan/direct")
	b.ReportMetric(float64(runc)/float64(direct), "runc-scan/direct")
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
func runDirect(b *testing.B, rootfs string, plan *scan.Plan) {
	b.Helper()
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
	cmd := exec.Command("/opt/quavon/bin/quavon-scan")
	cmd.Dir = "/work"
	cmd.Env = []string{"PATH=/opt/quavon/tools/bin:/usr/local/go/bin:/usr/bin:/bin", "HOME=/work/.home"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: rootfs, Credential: &syscall.Credential{Uid: 65532, Gid: 65532}}
	if outText, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("driver: %v: %s", err, outText)
	}
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
}
