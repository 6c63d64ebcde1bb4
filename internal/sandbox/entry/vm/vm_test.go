package vm

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/sandbox/frame"
)

func TestLayouts(t *testing.T) {
	t.Parallel()
	sa := SockaddrVM(frame.VsockPort)
	if binary.LittleEndian.Uint16(sa[0:]) != 40 || binary.LittleEndian.Uint32(sa[4:]) != 1024 || binary.LittleEndian.Uint32(sa[8:]) != 2 {
		t.Fatalf("sockaddr_vm %x", sa)
	}
	info := RandPoolInfo(make([]byte, frame.SeedSize))
	if binary.LittleEndian.Uint32(info[0:]) != 8*frame.SeedSize || binary.LittleEndian.Uint32(info[4:]) != frame.SeedSize || len(info) != 8+frame.SeedSize {
		t.Fatalf("rand_pool_info %x", info[:8])
	}
}

// TestJobMounts: /out and /tmp never execute, nothing is suid or a device
// node, sizes are the job's.
func TestJobMounts(t *testing.T) {
	t.Parallel()
	ms := JobMounts(&frame.Boot{OutputBytes: 1 << 20, TmpBytes: 2 << 20})
	want := map[string]string{"/work": "", "/out": "size=1048576,uid=65532,gid=65532,mode=0700", "/tmp": "size=2097152,mode=1777", "/dev/shm": "size=1048576,mode=1777"}
	for _, m := range ms {
		w, ok := want[m.Target]
		if !ok || m.Data != w {
			t.Errorf("%s: %q", m.Target, m.Data)
		}
		if m.Flags&(1<<1) == 0 || m.Flags&(1<<2) == 0 { // MS_NOSUID, MS_NODEV
			t.Errorf("%s: flags %b", m.Target, m.Flags)
		}
		if m.Target != "/work" && m.Flags&(1<<3) == 0 { // MS_NOEXEC
			t.Errorf("%s may execute", m.Target)
		}
	}
	if err := Run(t.Context()); err == nil || !strings.Contains(err.Error(), "only as the guest's init") {
		t.Fatalf("Run outside a VM: %v", err)
	}
}
