package firecracker_test

import (
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/sandbox/runner/firecracker"
)

// TestParseLock: the shape deploy/images/rootfs writes is accepted; tags,
// relative paths, mismatched versions and unknown fields are not.
func TestParseLock(t *testing.T) {
	t.Parallel()
	h := strings.Repeat("a", 64)
	good := `{"version":1,"firecracker":{"version":"1.13.1","path":"/opt/vm/firecracker","sha256":"` + h + `"},
	"jailer":{"version":"1.13.1","path":"/opt/vm/jailer","sha256":"` + h + `"},
	"kernel":{"path":"/opt/vm/vmlinux","sha256":"` + h + `","config_sha256":"` + h + `"},
	"rootfs":{"byo:smoke":{"image":"sha256:` + h + `","path":"/opt/vm/byo-smoke.ext4","sha256":"` + h + `"}}}`
	if _, err := firecracker.ParseLock([]byte(good)); err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]string{
		"relative path": strings.Replace(good, "/opt/vm/vmlinux", "vmlinux", 1),
		"versions":      strings.Replace(good, `"1.13.1","path":"/opt/vm/jailer"`, `"1.13.2","path":"/opt/vm/jailer"`, 1),
		"unknown field": strings.Replace(good, `"version":1,`, `"version":1,"extra":1,`, 1),
		"short digest":  strings.Replace(good, `"sha256":"`+h+`"},`+"\n\t\"jailer\"", `"sha256":"abc"},`+"\n\t\"jailer\"", 1),
		"exec name":     strings.Replace(good, "/opt/vm/firecracker", "/opt/vm/fc", 1),
		"class":         strings.Replace(good, `"byo:smoke"`, `"ruby"`, 1),
	} {
		if _, err := firecracker.ParseLock([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
