package docker

import (
	"bytes"
	"errors"
	"fmt"
	"os"
)

// ShmemTHPFile is the host kernel's setting for transparent huge pages of
// shared memory (memfds, shared anonymous mappings, SysV shm).
//
// gVisor keeps a sandbox's application memory in a memfd and asks for huge
// pages on it with madvise (runsc --app-huge-pages, on by default). The
// kernel grants them only when this setting is advise (or always,
// within_size, force); with its default, never, the sandboxed programs run
// on 4 KiB pages and under systrap every first touch of one is a fault the
// sentry serves. Measured on this repository's machines (runsc 20240729
// systrap, no KVM, in a VM): node filling 400 MB took 2.1 s with never and
// 1.3 s with advise (389 MB of ShmemHugePages); BenchmarkScan50Files under
// runsc 9.0 s against 7.8 s (mean of five runs each, alternating: ast-grep,
// go list and bandit gain, the node tools do not). deploy/images/README.md
// has the table. The runc backend and the host's own processes do not use
// this setting.
const ShmemTHPFile = "/sys/kernel/mm/transparent_hugepage/shmem_enabled"

// ShmemTHPCost is what a host without huge pages for gVisor costs, as the
// runner's warning, quavon doctor and the host set-up say it.
const ShmemTHPCost = "sandboxed programs run on 4 KiB pages, a scan about 13% more slowly"

// ShmemTHP reads a shmem_enabled file and returns the selected value, the
// one the kernel shows in brackets ("always within_size advise [never]
// deny force" is never).
func ShmemTHP(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	for _, f := range bytes.Fields(b) {
		if len(f) > 2 && f[0] == '[' && f[len(f)-1] == ']' {
			return string(f[1 : len(f)-1]), nil
		}
	}
	return "", fmt.Errorf("%s: no selected value in %q", file, bytes.TrimSpace(b))
}

// ShmemTHPServesGVisor reports whether the kernel grants gVisor's madvise
// for huge pages under setting v.
func ShmemTHPServesGVisor(v string) bool {
	switch v {
	case "advise", "always", "within_size", "force":
		return true
	}
	return false
}

// EnableShmemTHP sets file to advise when it is never or deny, the least
// the kernel needs to grant gVisor huge pages: only mappings that ask with
// madvise get them, so nothing else on the host changes. Any other value
// is the host's choice and stays. It returns the value before and whether
// it wrote.
func EnableShmemTHP(file string) (before string, changed bool, err error) {
	before, err = ShmemTHP(file)
	if err != nil {
		return "", false, err
	}
	if ShmemTHPServesGVisor(before) {
		return before, false, nil
	}
	if err := os.WriteFile(file, []byte("advise"), 0); err != nil {
		return before, false, fmt.Errorf("setting %s to advise: %w", file, err)
	}
	return before, true, nil
}

// ShmemTHPNote says in one line what EnableShmemTHP did or why it could
// not, for the progress output of the tools that prepare a host.
func ShmemTHPNote(file string) string {
	before, changed, err := EnableShmemTHP(file)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "huge pages for gVisor: this kernel has no " + file + " (" + ShmemTHPCost + ")"
	case err != nil:
		return fmt.Sprintf("huge pages for gVisor: %v (%s)", err, ShmemTHPCost)
	case changed:
		return fmt.Sprintf("huge pages for gVisor: %s was %s, now advise", file, before)
	}
	return fmt.Sprintf("huge pages for gVisor: %s is %s", file, before)
}
