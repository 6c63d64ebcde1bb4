package bench

import (
	"github.com/quavon/quavon/internal/sandbox/valkeyq"

	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/testenv"
)

func benchRing(b *testing.B) *sandbox.KeyRing {
	k, err := sandbox.NewKey(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		b.Fatal(err)
	}
	r, err := sandbox.NewKeyRing(k)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkSignVerify signs a typical fix-test job and verifies it the way
// the runner does (envelope, canonical JSON, HMAC, strict decode, schema,
// clock; the replay guard is in memory so Valkey latency is not counted).
func BenchmarkSignVerify(b *testing.B) {
	ring := benchRing(b)
	now := time.Now().UTC()
	ref := sandbox.SnapshotRef{TenantID: "tenant-a", BlobID: "0123456789abcdef0123456789abcdef", KeyID: ring.Current().ID(),
		SHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", Bytes: 4 << 20}
	ov := ref
	ov.BlobID = "fedcba9876543210fedcba9876543210"
	job := &sandbox.SandboxJob{
		Pool: sandbox.DefaultPool, TenantID: "tenant-a", Purpose: sandbox.PurposeFixTest, ImageClass: "node",
		Base: ref, Overlay: &ov, SetupCommand: "npm ci --ignore-scripts=false", RunCommand: "npm test",
		Egress: sandbox.Egress{Mode: sandbox.EgressRegistries, Hosts: []string{"registry.npmjs.org"}},
		Env:    map[sandbox.SandboxEnvKey]string{sandbox.EnvCI: "true", sandbox.EnvNodeEnv: "test"},
		Limits: sandbox.Limits{CPUMillis: 2000, MemoryBytes: 2 << 30, Pids: 512, WallClockSeconds: 600, SetupSeconds: 300,
			WorkBytes: 4 << 30, TmpBytes: 512 << 20, OutputBytes: 4 << 20, NoFile: 4096, FileSizeBytes: 1 << 30},
		Artefacts: []string{"junit.xml"},
		IssuedAt:  now, NotAfter: now.Add(10 * time.Minute),
	}
	v, err := sandbox.NewVerifier(ring, sandbox.DefaultPool, nopGuard{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		job.ID = fmt.Sprintf("job-bench-%08d", i)
		env, err := sandbox.SignJob(ring, job)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := v.Verify(ctx, env); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N), "µs/sign+verify")
}

type nopGuard struct{}

func (nopGuard) Remember(context.Context, string, time.Time) (bool, error) { return true, nil }

// BenchmarkBlob stores and fetches a snapshot through real Valkey, sealed
// (HKDF, AES-256-GCM in 1 MiB chunks, SHA-256) and, interleaved in the same
// loop, as one plain SET and GET of the same bytes. It reports both and
// their ratio (goal: sealed/plain ≤ 1.3).
func BenchmarkBlob(b *testing.B) {
	admin := testenv.Valkey(b, testenv.UserControlPlane)
	names, err := valkeyq.NamesFor(testenv.Pool(b, admin))
	if err != nil {
		b.Fatal(err)
	}
	store, err := valkeyq.NewBlobStore(admin, valkeyq.BlobConfig{Names: names, Keys: benchRing(b), TTL: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	for _, size := range []int{1 << 20, 64 << 20} {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			data := make([]byte, size)
			rand.Read(data)
			ctx := context.Background()
			plainKey := names.Prefix() + ":bench-plain"
			var plain, sealed time.Duration
			b.SetBytes(int64(size))
			for b.Loop() {
				t0 := time.Now()
				if err := admin.Do(ctx, admin.B().Set().Key(plainKey).Value(valkey.BinaryString(data)).Build()).Error(); err != nil {
					b.Fatal(err)
				}
				got, err := admin.Do(ctx, admin.B().Get().Key(plainKey).Build()).AsBytes()
				if err != nil || len(got) != size {
					b.Fatal(err)
				}
				t1 := time.Now()
				ref, err := store.Store(ctx, "tenant-a", data)
				if err != nil {
					b.Fatal(err)
				}
				out, err := store.Fetch(ctx, ref, "tenant-a")
				if err != nil || len(out) != size {
					b.Fatal(err)
				}
				t2 := time.Now()
				plain += t1.Sub(t0)
				sealed += t2.Sub(t1)
				if err := store.Delete(ctx, ref); err != nil {
					b.Fatal(err)
				}
			}
			n := float64(b.N)
			b.ReportMetric(float64(plain.Microseconds())/n/1000, "plain-ms/op")
			b.ReportMetric(float64(sealed.Microseconds())/n/1000, "sealed-ms/op")
			b.ReportMetric(float64(sealed)/float64(plain), "sealed/plain")
		})
	}
}
