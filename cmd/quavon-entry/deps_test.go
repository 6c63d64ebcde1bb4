package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// forbidden are packages the entry program must never link: network
// clients, and cgo (which would make it dynamic and pull in libc's
// resolver and NSS). os/user is linked through archive/tar; built with
// CGO_ENABLED=0 it is the pure Go /etc/passwd reader, and runtime/cgo
// being absent is what proves that.
var forbidden = []string{"net", "net/http", "crypto/tls", "crypto/x509", "runtime/cgo", "plugin", "os/exec"}

const module = "github.com/quavon/quavon/"

func goCmd(t *testing.T, args ...string) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go toolchain not found: %v", err)
	}
	cmd := exec.Command(gobin, args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestLinksNoNetworkNoCgo(t *testing.T) {
	t.Parallel()
	out := goCmd(t, "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}", ".")
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		path, std, _ := strings.Cut(line, " ")
		seen[path] = true
		if std != "true" && !strings.HasPrefix(path, module+"internal/") && path != module+"cmd/quavon-entry" {
			t.Errorf("links %s, outside the standard library and %sinternal", path, module)
		}
	}
	for _, p := range forbidden {
		if seen[p] {
			t.Errorf("links %s", p)
		}
	}
	if !seen[module+"internal/sandbox/entry"] || !seen[module+"internal/sandbox/frame"] {
		t.Fatalf("go list output does not look like the entry program's:\n%s", out)
	}
	// PID 1 shares only the protocol with the runner.
	for _, p := range []string{"internal/sandbox/runner", "internal/sandbox/valkeyq", "internal/egress"} {
		if seen[module+p] {
			t.Errorf("links %s%s", module, p)
		}
	}
}

func TestBuildsStatic(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "quavon-entry")
	goCmd(t, "build", "-trimpath", "-o", bin, ".")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("program header %v: not a static binary", p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("needs shared libraries %v", libs)
	}
}
