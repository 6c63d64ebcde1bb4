package sandbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"strconv"
)

// Blob format constants, fixed by the spec (§3 "Snapshot transport"). The
// store itself (Valkey) is in package valkeyq; the key derivation stays
// here, next to the only holder of the pool key's bytes.
const (
	BlobInfo      = "quavon-sandbox-blob:v1"
	BlobChunkSize = 1 << 20
	// BlobIVSize is each chunk's fresh GCM nonce; BlobTagSize its tag.
	BlobIVSize  = 12
	BlobTagSize = 16

	// HardMaxSnapshotBytes bounds any snapshot ref, whatever the
	// configuration says.
	HardMaxSnapshotBytes = 1 << 30
	// DefaultMaxSnapshotBytes is MAX_SNAPSHOT_BYTES unless configured.
	DefaultMaxSnapshotBytes = 128 << 20
)

// BlobChunkCount is the number of BlobChunkSize chunks n bytes take.
func BlobChunkCount(n int64) int { return int((n + BlobChunkSize - 1) / BlobChunkSize) }

// BlobAAD binds chunk i of count to its tenant and blob, so chunks cannot be
// reordered, truncated or moved between blobs or tenants.
func BlobAAD(tenantID, blobID string, i, count int) []byte {
	return []byte(BlobInfo + ":" + tenantID + ":" + blobID + ":" + strconv.Itoa(i) + "/" + strconv.Itoa(count))
}

// BlobCipher is the AES-256-GCM cipher of one blob: its key is
// HKDF-SHA256(pool key, salt = blobID, info = BlobInfo).
func BlobCipher(k Key, blobID string) (cipher.AEAD, error) {
	dk, err := hkdf.Key(sha256.New, k.secret, []byte(blobID), BlobInfo, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(dk)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}
