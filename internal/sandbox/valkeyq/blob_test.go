package valkeyq_test

import (
	"github.com/quavon/quavon/internal/sandbox/valkeyq"

	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/testenv"
)

func ring(tb testing.TB, fills ...byte) *sandbox.KeyRing {
	tb.Helper()
	var keys []sandbox.Key
	for _, f := range fills {
		k, err := sandbox.NewKey(bytes.Repeat([]byte{f}, 32))
		if err != nil {
			tb.Fatal(err)
		}
		keys = append(keys, k)
	}
	r, err := sandbox.NewKeyRing(keys[0], keys[1:]...)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

type blobFixture struct {
	admin valkey.Client
	names valkeyq.Names
	store *valkeyq.BlobStore
}

func newBlobFixture(t *testing.T, keys *sandbox.KeyRing) blobFixture {
	t.Helper()
	admin := testenv.Valkey(t, testenv.UserControlPlane)
	names, err := valkeyq.NamesFor(testenv.Pool(t, admin))
	if err != nil {
		t.Fatal(err)
	}
	store, err := valkeyq.NewBlobStore(admin, valkeyq.BlobConfig{Names: names, Keys: keys, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return blobFixture{admin: admin, names: names, store: store}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func TestBlobRoundTrip(t *testing.T) {
	t.Parallel()
	f := newBlobFixture(t, ring(t, 1))
	ctx := context.Background()
	for _, n := range []int{1, sandbox.BlobChunkSize - 1, sandbox.BlobChunkSize, sandbox.BlobChunkSize + 1, 3*sandbox.BlobChunkSize + 17} {
		plain := randomBytes(n)
		ref, err := f.store.Store(ctx, "tenant-a", plain)
		if err != nil {
			t.Fatal(err)
		}
		if ref.Bytes != int64(n) || ref.TenantID != "tenant-a" || ref.KeyID != ring(t, 1).Current().ID() {
			t.Fatalf("ref %+v", ref)
		}
		got, err := f.store.Fetch(ctx, ref, "tenant-a")
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("n=%d: Fetch = %d bytes, %v", n, len(got), err)
		}
		// Chunks hold ciphertext, never the plaintext.
		raw, err := f.admin.Do(ctx, f.admin.B().Get().Key(f.names.Blob(ref.BlobID, 0)).Build()).AsBytes()
		if err != nil {
			t.Fatal(err)
		}
		if n >= 32 && bytes.Contains(raw, plain[:32]) {
			t.Fatal("chunk holds plaintext")
		}
		ttl, err := f.admin.Do(ctx, f.admin.B().Pttl().Key(f.names.Blob(ref.BlobID, 0)).Build()).AsInt64()
		if err != nil || ttl <= 0 || ttl > time.Minute.Milliseconds() {
			t.Fatalf("chunk TTL %d ms, %v", ttl, err)
		}
		if err := f.store.Delete(ctx, ref); err != nil {
			t.Fatal(err)
		}
		if _, err := f.store.Fetch(ctx, ref, "tenant-a"); !errors.Is(err, valkeyq.ErrBlobMissing) {
			t.Fatalf("after Delete: %v", err)
		}
	}
}

// TestBlobFreshIVs: no two chunks ever share an IV, within a blob or
// across blobs.
func TestBlobFreshIVs(t *testing.T) {
	t.Parallel()
	f := newBlobFixture(t, ring(t, 1))
	ctx := context.Background()
	seen := map[string]bool{}
	plain := randomBytes(3 * sandbox.BlobChunkSize)
	for range 3 {
		ref, err := f.store.Store(ctx, "tenant-a", plain)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			c, err := f.admin.Do(ctx, f.admin.B().Get().Key(f.names.Blob(ref.BlobID, i)).Build()).AsBytes()
			if err != nil {
				t.Fatal(err)
			}
			iv := string(c[:12])
			if seen[iv] {
				t.Fatalf("IV %x reused", iv)
			}
			seen[iv] = true
		}
	}
}

func TestBlobRotationAndCaps(t *testing.T) {
	t.Parallel()
	old := newBlobFixture(t, ring(t, 2))
	ctx := context.Background()
	ref, err := old.store.Store(ctx, "tenant-a", []byte("snapshot"))
	if err != nil {
		t.Fatal(err)
	}
	rotated, _ := valkeyq.NewBlobStore(old.admin, valkeyq.BlobConfig{Names: old.names, Keys: ring(t, 3, 2), TTL: time.Minute})
	if got, err := rotated.Fetch(ctx, ref, "tenant-a"); err != nil || string(got) != "snapshot" {
		t.Fatalf("previous key: %q, %v", got, err)
	}
	removed, _ := valkeyq.NewBlobStore(old.admin, valkeyq.BlobConfig{Names: old.names, Keys: ring(t, 3), TTL: time.Minute})
	if _, err := removed.Fetch(ctx, ref, "tenant-a"); !errors.Is(err, sandbox.ErrUnknownKey) {
		t.Fatalf("removed key: %v", err)
	}
	small, _ := valkeyq.NewBlobStore(old.admin, valkeyq.BlobConfig{Names: old.names, Keys: ring(t, 2), TTL: time.Minute, MaxBytes: 4})
	if _, err := small.Store(ctx, "tenant-a", []byte("12345")); !errors.Is(err, valkeyq.ErrBlobTooLarge) {
		t.Fatalf("store over cap: %v", err)
	}
	if _, err := small.Fetch(ctx, ref, "tenant-a"); !errors.Is(err, valkeyq.ErrBlobTooLarge) {
		t.Fatalf("fetch over cap: %v", err)
	}
	if _, err := old.store.Store(ctx, "tenant-a", nil); err == nil {
		t.Fatal("empty snapshot stored")
	}
}

// TestBlobTampering: every manipulation of the stored chunks or the ref
// fails, and Fetch never returns plaintext with an error.
func TestBlobTampering(t *testing.T) {
	t.Parallel()
	f := newBlobFixture(t, ring(t, 4))
	ctx := context.Background()
	plain := randomBytes(3*sandbox.BlobChunkSize + 5)
	get := func(key string) []byte {
		b, err := f.admin.Do(ctx, f.admin.B().Get().Key(key).Build()).AsBytes()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	set := func(key string, v []byte) {
		if err := f.admin.Do(ctx, f.admin.B().Set().Key(key).Value(valkey.BinaryString(v)).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name   string
		tamper func(ref *sandbox.SnapshotRef)
		tenant string
		want   error
	}{
		{"flipped byte", func(ref *sandbox.SnapshotRef) {
			c := get(f.names.Blob(ref.BlobID, 1))
			c[len(c)/2] ^= 1
			set(f.names.Blob(ref.BlobID, 1), c)
		}, "tenant-a", valkeyq.ErrBlobCorrupt},
		{"flipped IV", func(ref *sandbox.SnapshotRef) {
			c := get(f.names.Blob(ref.BlobID, 0))
			c[0] ^= 1
			set(f.names.Blob(ref.BlobID, 0), c)
		}, "tenant-a", valkeyq.ErrBlobCorrupt},
		{"swapped chunks", func(ref *sandbox.SnapshotRef) {
			a, b := get(f.names.Blob(ref.BlobID, 0)), get(f.names.Blob(ref.BlobID, 1))
			set(f.names.Blob(ref.BlobID, 0), b)
			set(f.names.Blob(ref.BlobID, 1), a)
		}, "tenant-a", valkeyq.ErrBlobCorrupt},
		{"dropped last chunk", func(ref *sandbox.SnapshotRef) {
			f.admin.Do(ctx, f.admin.B().Del().Key(f.names.Blob(ref.BlobID, 3)).Build())
		}, "tenant-a", valkeyq.ErrBlobMissing},
		{"truncated count", func(ref *sandbox.SnapshotRef) {
			// Claim fewer bytes: the last chunk's AAD says n/4, not n/3.
			ref.Bytes = 3 * sandbox.BlobChunkSize
		}, "tenant-a", valkeyq.ErrBlobCorrupt},
		{"truncated inside the last chunk", func(ref *sandbox.SnapshotRef) { ref.Bytes-- }, "tenant-a", valkeyq.ErrBlobCorrupt},
		{"other tenant's ref", func(ref *sandbox.SnapshotRef) {}, "tenant-b", valkeyq.ErrBlobTenant},
		{"ref relabelled to the fetching tenant", func(ref *sandbox.SnapshotRef) { ref.TenantID = "tenant-b" }, "tenant-b", valkeyq.ErrBlobCorrupt},
		{"wrong sha256", func(ref *sandbox.SnapshotRef) { ref.SHA256 = strings.Repeat("0", 64) }, "tenant-a", valkeyq.ErrBlobChecksum},
		{"chunk moved from another blob", func(ref *sandbox.SnapshotRef) {
			other, err := f.store.Store(ctx, "tenant-a", randomBytes(sandbox.BlobChunkSize))
			if err != nil {
				t.Fatal(err)
			}
			set(f.names.Blob(ref.BlobID, 0), get(f.names.Blob(other.BlobID, 0)))
		}, "tenant-a", valkeyq.ErrBlobCorrupt},
		{"other blob id", func(ref *sandbox.SnapshotRef) { ref.BlobID = strings.Repeat("f", 32) }, "tenant-a", valkeyq.ErrBlobMissing},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ref, err := f.store.Store(ctx, "tenant-a", plain)
			if err != nil {
				t.Fatal(err)
			}
			c.tamper(&ref)
			got, err := f.store.Fetch(ctx, ref, c.tenant)
			if !errors.Is(err, c.want) {
				t.Fatalf("Fetch = %v, want %v", err, c.want)
			}
			if got != nil {
				t.Fatalf("Fetch returned %d bytes with an error", len(got))
			}
		})
	}
}
