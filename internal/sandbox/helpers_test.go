package sandbox

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"
)

var testNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func testKey(tb testing.TB, fill byte) Key {
	tb.Helper()
	k, err := NewKey(bytes.Repeat([]byte{fill}, 32))
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

func testRing(tb testing.TB, cur Key, prev ...Key) *KeyRing {
	tb.Helper()
	r, err := NewKeyRing(cur, prev...)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

func testRef(tenant string, blob byte) SnapshotRef {
	return SnapshotRef{
		TenantID: tenant,
		BlobID:   string(bytes.Repeat([]byte{blob}, 32)),
		KeyID:    "0123456789abcdef",
		SHA256:   string(bytes.Repeat([]byte{'e'}, 64)),
		Bytes:    1234,
	}
}

func testLimits() Limits {
	return Limits{
		CPUMillis: 1000, MemoryBytes: 512 << 20, Pids: 256, WallClockSeconds: 300, SetupSeconds: 120,
		WorkBytes: 1 << 30, TmpBytes: 64 << 20, OutputBytes: 1 << 20, NoFile: 1024, FileSizeBytes: 256 << 20,
	}
}

// validJob is a job that passes every check at testNow.
func validJob() *SandboxJob {
	ov := testRef("tenant-1", 'b')
	return &SandboxJob{
		ID:           "job-0001-abcdef",
		Pool:         DefaultPool,
		TenantID:     "tenant-1",
		Purpose:      PurposeFixTest,
		ImageClass:   "node",
		Base:         testRef("tenant-1", 'a'),
		Overlay:      &ov,
		SetupCommand: "npm ci",
		RunCommand:   "npm test",
		Egress:       Egress{Mode: EgressRegistries, Hosts: []string{"registry.npmjs.org"}},
		Env:          map[SandboxEnvKey]string{EnvCI: "true", EnvNodeEnv: "test"},
		Limits:       testLimits(),
		Artefacts:    []string{"junit.xml"},
		IssuedAt:     testNow.Add(-time.Minute),
		NotAfter:     testNow.Add(10 * time.Minute),
	}
}

// memGuard is an in-memory ReplayGuard for unit tests; the Valkey one is
// tested against the real server.
type memGuard struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (g *memGuard) Remember(_ context.Context, id string, _ time.Time) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.seen == nil {
		g.seen = map[string]bool{}
	}
	if g.seen[id] {
		return false, nil
	}
	g.seen[id] = true
	return true, nil
}
