package main

import (
	"github.com/quavon/quavon/internal/deptest"

	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Beyond the privilege table's rules (deptest), the entry program links
// nothing outside the standard library and Quavon's own packages, no
// network client, no cgo (which would make it dynamic and pull in libc's
// resolver and NSS) and no os/exec (it starts steps itself). os/user is
// linked through archive/tar; built with CGO_ENABLED=0 it is the pure Go
// /etc/passwd reader, and runtime/cgo being absent is what proves that.
var forbidden = deptest.All(deptest.AppKeys, deptest.Writes, deptest.Models, deptest.Containers, deptest.SandboxKeys,
	deptest.Database, deptest.Valkey, deptest.CodeHost, deptest.Proxy, deptest.Runner, deptest.Network, []deptest.Rule{
		{Pattern: "crypto/tls", Reason: "a network client: PID 1 talks to nothing but its pipes"},
		{Pattern: "crypto/x509", Reason: "a network client: PID 1 talks to nothing but its pipes"},
		{Pattern: "runtime/cgo", Reason: "cgo makes PID 1 dynamic (libc, NSS)"},
		{Pattern: "plugin", Reason: "loads code at run time"},
		{Pattern: "os/exec", Reason: "PID 1 starts the steps itself"},
	})

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

func TestDeps(t *testing.T) {
	t.Parallel()
	deptest.Check(t, forbidden)
	for _, path := range deptest.List(t, ".") {
		if strings.Contains(strings.Split(path, "/")[0], ".") && !strings.HasPrefix(path, module) {
			t.Errorf("links %s, outside the standard library and %sinternal", path, module)
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
