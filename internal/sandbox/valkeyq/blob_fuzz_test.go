package valkeyq

import (
	"github.com/quavon/quavon/internal/sandbox"

	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// sealForTest encrypts plaintext the way Store does, without Valkey.
func sealForTest(tb testing.TB, k sandbox.Key, tenant, blobID string, plaintext []byte) (sandbox.SnapshotRef, [][]byte) {
	tb.Helper()
	aead, err := blobAEAD(k, blobID)
	if err != nil {
		tb.Fatal(err)
	}
	n := int64(len(plaintext))
	count := chunkCount(n)
	var chunks [][]byte
	for i := range count {
		chunk := plaintext[int64(i)*sandbox.BlobChunkSize : min(int64(i+1)*sandbox.BlobChunkSize, n)]
		iv := make([]byte, ivSize)
		rand.Read(iv)
		chunks = append(chunks, aead.Seal(iv, iv, chunk, blobAAD(tenant, blobID, i, count)))
	}
	sum := sha256.Sum256(plaintext)
	return sandbox.SnapshotRef{TenantID: tenant, BlobID: blobID, KeyID: k.ID(), SHA256: hex.EncodeToString(sum[:]), Bytes: n}, chunks
}

func openForTest(k sandbox.Key, ref sandbox.SnapshotRef, tenant string, chunks [][]byte) ([]byte, error) {
	aead, err := blobAEAD(k, ref.BlobID)
	if err != nil {
		return nil, err
	}
	replies := make(chan []chunkReply, len(chunks))
	for _, c := range chunks {
		replies <- []chunkReply{{data: c}}
	}
	close(replies)
	return assemble(context.Background(), replies, aead, ref, tenant, chunkCount(ref.Bytes))
}

// FuzzBlobReader feeds hostile chunk bytes and sizes to the blob reader:
// it either returns exactly the original plaintext or an error and nothing.
func FuzzBlobReader(f *testing.F) {
	k := testKey(f, 1)
	blobID := "0123456789abcdef0123456789abcdef"
	f.Add([]byte("hello snapshot"), []byte{}, 0, int64(0))
	f.Add(bytes.Repeat([]byte{'x'}, sandbox.BlobChunkSize+3), []byte{1, 2, 3}, 1, int64(-1))
	f.Add([]byte("z"), []byte{0xff}, 0, int64(1))
	f.Fuzz(func(t *testing.T, plaintext, garbage []byte, at int, sizeDelta int64) {
		if len(plaintext) == 0 || len(plaintext) > 3*sandbox.BlobChunkSize {
			return
		}
		ref, chunks := sealForTest(t, k, "tenant-a", blobID, plaintext)
		ref.Bytes += sizeDelta
		if len(garbage) > 0 && len(chunks) > 0 {
			i := (at%len(chunks) + len(chunks)) % len(chunks)
			c := chunks[i]
			pos := int(uint(at) % uint(len(c)))
			chunks[i] = append(append(append([]byte{}, c[:pos]...), garbage...), c[pos+len(garbage)/2%max(1, len(c)-pos):]...)
		}
		if ref.Bytes <= 0 || ref.Bytes > 4*sandbox.BlobChunkSize {
			return
		}
		got, err := openForTest(k, ref, "tenant-a", chunks)
		if err != nil {
			if got != nil {
				t.Fatal("plaintext returned with an error")
			}
			return
		}
		if !bytes.Equal(got, plaintext) {
			t.Fatalf("reader returned %d bytes that differ from the original", len(got))
		}
	})
}

func TestBlobReaderOffline(t *testing.T) {
	t.Parallel()
	k := testKey(t, 1)
	plain := bytes.Repeat([]byte("0123456789"), sandbox.BlobChunkSize/5)
	ref, chunks := sealForTest(t, k, "tenant-a", "0123456789abcdef0123456789abcdef", plain)
	if got, err := openForTest(k, ref, "tenant-a", chunks); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("open: %v", err)
	}
	if _, err := openForTest(k, ref, "tenant-a", append(chunks, chunks[0])); err == nil {
		t.Fatal("an extra chunk was accepted")
	}
	if _, err := openForTest(k, ref, "tenant-a", chunks[:1]); err == nil {
		t.Fatal("a missing chunk was accepted")
	}
	if _, err := openForTest(testKey(t, 2), ref, "tenant-a", chunks); err == nil {
		t.Fatal("another key opened the blob")
	}
}
