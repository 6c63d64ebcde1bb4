package valkeyq

import (
	"github.com/quavon/quavon/internal/sandbox"

	"context"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/valkey-io/valkey-go"
)

const (
	ivSize  = sandbox.BlobIVSize
	tagSize = sandbox.BlobTagSize
)

// Blob errors. Fetch returns no plaintext with any of them.
var (
	ErrBlobTenant   = errors.New("snapshot belongs to another tenant")
	ErrBlobMissing  = errors.New("snapshot chunk missing or expired")
	ErrBlobCorrupt  = errors.New("snapshot chunk failed authentication")
	ErrBlobChecksum = errors.New("snapshot SHA-256 or size mismatch")
	ErrBlobTooLarge = errors.New("snapshot larger than the configured maximum")
)

// BlobStore keeps encrypted snapshots in Valkey. The worker stores, the
// runner fetches and deletes; both hold the pool key ring.
type BlobStore struct {
	client   valkey.Client
	names    Names
	keys     *sandbox.KeyRing
	ttl      time.Duration
	maxBytes int64
}

// BlobConfig configures a BlobStore.
type BlobConfig struct {
	Names    Names
	Keys     *sandbox.KeyRing
	TTL      time.Duration // chunk lifetime; 0 means MaxJobTTL
	MaxBytes int64         // MAX_SNAPSHOT_BYTES; 0 means DefaultMaxSnapshotBytes
}

// NewBlobStore validates cfg and returns a store.
func NewBlobStore(client valkey.Client, cfg BlobConfig) (*BlobStore, error) {
	if cfg.Keys == nil || cfg.Names.prefix == "" {
		return nil, errors.New("NewBlobStore: key ring and names are required")
	}
	if cfg.TTL == 0 {
		cfg.TTL = sandbox.MaxJobTTL
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = sandbox.DefaultMaxSnapshotBytes
	}
	if cfg.TTL < time.Second || cfg.MaxBytes < 0 || cfg.MaxBytes > sandbox.HardMaxSnapshotBytes {
		return nil, fmt.Errorf("NewBlobStore: ttl %s or max bytes %d out of range", cfg.TTL, cfg.MaxBytes)
	}
	return &BlobStore{client: client, names: cfg.Names, keys: cfg.Keys, ttl: cfg.TTL, maxBytes: cfg.MaxBytes}, nil
}

func chunkCount(n int64) int { return sandbox.BlobChunkCount(n) }

func blobAAD(tenantID, blobID string, i, count int) []byte {
	return sandbox.BlobAAD(tenantID, blobID, i, count)
}

func blobAEAD(k sandbox.Key, blobID string) (cipher.AEAD, error) {
	return sandbox.BlobCipher(k, blobID)
}

// batchChunks is how many chunks travel in one pipelined round trip. Batches
// let encryption, hashing and transfer overlap instead of running in turn.
const batchChunks = 4

// chunkBufs recycles ciphertext buffers between Store calls: a 64 MiB
// snapshot would otherwise allocate (and zero) 64 MiB per store.
var chunkBufs = sync.Pool{New: func() any {
	b := make([]byte, ivSize+sandbox.BlobChunkSize+tagSize)
	return &b
}}

// Store encrypts plaintext (a gzip tar) for tenantID under the current key
// and returns the ref that goes into the signed job.
func (s *BlobStore) Store(ctx context.Context, tenantID string, plaintext []byte) (sandbox.SnapshotRef, error) {
	n := int64(len(plaintext))
	if n == 0 {
		return sandbox.SnapshotRef{}, errors.New("BlobStore.Store: empty snapshot")
	}
	if n > s.maxBytes {
		return sandbox.SnapshotRef{}, fmt.Errorf("BlobStore.Store: %w: %d > %d bytes", ErrBlobTooLarge, n, s.maxBytes)
	}
	if !sandbox.ValidTenantID(tenantID) {
		return sandbox.SnapshotRef{}, errors.New("BlobStore.Store: invalid tenant id")
	}
	var idb [16]byte
	rand.Read(idb[:])
	blobID := hex.EncodeToString(idb[:])
	k := s.keys.Current()
	aead, err := blobAEAD(k, blobID)
	if err != nil {
		return sandbox.SnapshotRef{}, fmt.Errorf("BlobStore.Store: %w", err)
	}
	sum := make(chan [sha256.Size]byte, 1)
	go func() { sum <- sha256.Sum256(plaintext) }()

	count := chunkCount(n)
	type batch struct {
		cmds valkey.Commands
		bufs []*[]byte
	}
	batches := make(chan batch, 1)
	sent := make(chan error, 1)
	go func() {
		var first error
		for b := range batches {
			if first != nil {
				continue // drain; the blob is deleted below
			}
			for _, r := range s.client.DoMulti(ctx, b.cmds...) {
				if err := r.Error(); err != nil && first == nil {
					first = err
				}
			}
			if first == nil {
				// Every reply arrived, so the values were written and the
				// buffers are free. After an error (a cancelled context
				// can return before the write) they are left to the GC.
				for _, p := range b.bufs {
					chunkBufs.Put(p)
				}
			}
		}
		sent <- first
	}()
	var cur batch
	for i := range count {
		chunk := plaintext[int64(i)*sandbox.BlobChunkSize : min(int64(i+1)*sandbox.BlobChunkSize, n)]
		p := chunkBufs.Get().(*[]byte)
		buf := (*p)[:ivSize]
		rand.Read(buf) // fresh IV per chunk
		buf = aead.Seal(buf, buf[:ivSize], chunk, blobAAD(tenantID, blobID, i, count))
		cur.cmds = append(cur.cmds, s.client.B().Set().Key(s.names.Blob(blobID, i)).Value(valkey.BinaryString(buf)).Px(s.ttl).Build())
		cur.bufs = append(cur.bufs, p)
		if len(cur.cmds) == batchChunks || i == count-1 {
			batches <- cur
			cur = batch{}
		}
	}
	close(batches)
	digest := <-sum
	if err := <-sent; err != nil {
		s.deleteChunks(context.WithoutCancel(ctx), blobID, count)
		return sandbox.SnapshotRef{}, fmt.Errorf("BlobStore.Store %s: %w", blobID, err)
	}
	return sandbox.SnapshotRef{TenantID: tenantID, BlobID: blobID, KeyID: k.ID(), SHA256: hex.EncodeToString(digest[:]), Bytes: n}, nil
}

// Fetch returns the plaintext of ref if and only if it belongs to tenantID,
// every chunk is present and authentic in its place, and size and SHA-256
// match. On any error it returns nil: no partial plaintext ever leaves.
func (s *BlobStore) Fetch(ctx context.Context, ref sandbox.SnapshotRef, tenantID string) ([]byte, error) {
	if err := ref.Validate(tenantID); err != nil {
		if ref.TenantID != tenantID {
			return nil, fmt.Errorf("BlobStore.Fetch: %w", ErrBlobTenant)
		}
		return nil, fmt.Errorf("BlobStore.Fetch: %w", err)
	}
	if ref.Bytes > s.maxBytes {
		return nil, fmt.Errorf("BlobStore.Fetch %s: %w: %d > %d", ref.BlobID, ErrBlobTooLarge, ref.Bytes, s.maxBytes)
	}
	k, ok := s.keys.Lookup(ref.KeyID)
	if !ok {
		return nil, fmt.Errorf("BlobStore.Fetch %s: %w: %s", ref.BlobID, sandbox.ErrUnknownKey, ref.KeyID)
	}
	aead, err := blobAEAD(k, ref.BlobID)
	if err != nil {
		return nil, fmt.Errorf("BlobStore.Fetch: %w", err)
	}
	count := chunkCount(ref.Bytes)

	// Round trips run ahead of decryption, and hashing runs behind it.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	replies := make(chan []chunkReply, 1)
	go func() {
		defer close(replies)
		for b := 0; b < count && ctx.Err() == nil; b += batchChunks {
			cmds := make(valkey.Commands, 0, batchChunks)
			for i := b; i < min(b+batchChunks, count); i++ {
				cmds = append(cmds, s.client.B().Get().Key(s.names.Blob(ref.BlobID, i)).Build())
			}
			var batch []chunkReply
			for _, r := range s.client.DoMulti(ctx, cmds...) {
				data, err := r.AsBytes()
				if valkey.IsValkeyNil(err) {
					err = ErrBlobMissing
				}
				batch = append(batch, chunkReply{data, err})
			}
			select {
			case replies <- batch:
			case <-ctx.Done():
			}
		}
	}()
	return assemble(ctx, replies, aead, ref, tenantID, count)
}

// assemble decrypts the replies in order and checks size and SHA-256; the
// hash runs behind decryption on another goroutine.
func assemble(ctx context.Context, replies <-chan []chunkReply, aead cipher.AEAD, ref sandbox.SnapshotRef, tenantID string, count int) ([]byte, error) {
	plain := make(chan []byte, batchChunks)
	sum := make(chan [sha256.Size]byte, 1)
	go func() {
		h := sha256.New()
		for p := range plain {
			h.Write(p)
		}
		var d [sha256.Size]byte
		h.Sum(d[:0])
		sum <- d
	}()
	out, err := decrypt(ctx, replies, plain, aead, ref, tenantID, count)
	close(plain)
	digest := <-sum
	if err != nil {
		return nil, err
	}
	if int64(len(out)) != ref.Bytes || hex.EncodeToString(digest[:]) != ref.SHA256 {
		return nil, fmt.Errorf("BlobStore.Fetch %s: %w", ref.BlobID, ErrBlobChecksum)
	}
	return out, nil
}

// chunkReply is one GET reply: ciphertext, or ErrBlobMissing or a
// transport error.
type chunkReply struct {
	data []byte
	err  error
}

// decrypt opens the chunks in order as their replies arrive and passes each
// plaintext chunk on to the hasher.
func decrypt(ctx context.Context, replies <-chan []chunkReply, plain chan<- []byte, aead cipher.AEAD, ref sandbox.SnapshotRef, tenantID string, count int) ([]byte, error) {
	out := make([]byte, 0, ref.Bytes)
	i := 0
	for batch := range replies {
		for _, r := range batch {
			ct, err := r.data, r.err
			if i >= count {
				return nil, fmt.Errorf("BlobStore.Fetch %s: %w: more chunks than %d", ref.BlobID, ErrBlobCorrupt, count)
			}
			if err != nil {
				return nil, fmt.Errorf("BlobStore.Fetch %s chunk %d: %w", ref.BlobID, i, err)
			}
			want := min(sandbox.BlobChunkSize, ref.Bytes-int64(i)*sandbox.BlobChunkSize)
			if int64(len(ct)) != ivSize+want+tagSize {
				return nil, fmt.Errorf("BlobStore.Fetch %s chunk %d: %w", ref.BlobID, i, ErrBlobCorrupt)
			}
			start := len(out)
			out, err = aead.Open(out, ct[:ivSize], ct[ivSize:], blobAAD(tenantID, ref.BlobID, i, count))
			if err != nil {
				return nil, fmt.Errorf("BlobStore.Fetch %s chunk %d: %w", ref.BlobID, i, ErrBlobCorrupt)
			}
			plain <- out[start:]
			i++
		}
	}
	if i != count {
		return nil, fmt.Errorf("BlobStore.Fetch %s: %w", ref.BlobID, ctx.Err())
	}
	return out, nil
}

// Delete removes every chunk of ref. The runner calls it after each job,
// whatever the outcome.
func (s *BlobStore) Delete(ctx context.Context, ref sandbox.SnapshotRef) error {
	if !sandbox.ValidBlobID(ref.BlobID) || ref.Bytes <= 0 || ref.Bytes > sandbox.HardMaxSnapshotBytes {
		return errors.New("BlobStore.Delete: invalid ref")
	}
	return s.deleteChunks(ctx, ref.BlobID, chunkCount(ref.Bytes))
}

func (s *BlobStore) deleteChunks(ctx context.Context, blobID string, count int) error {
	keys := make([]string, count)
	for i := range keys {
		keys[i] = s.names.Blob(blobID, i)
	}
	if err := s.client.Do(ctx, s.client.B().Del().Key(keys...).Build()).Error(); err != nil {
		return fmt.Errorf("BlobStore.Delete %s: %w", blobID, err)
	}
	return nil
}
