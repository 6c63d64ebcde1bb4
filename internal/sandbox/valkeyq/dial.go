package valkeyq

import (
	"context"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/snapshot"
	qvalkey "github.com/quavon/quavon/internal/valkey"
)

// Dial opens the worker's client of the sandbox pool from its settings:
// the signing key ring, Valkey as the worker's ACL user, the pool's names
// and snapshot limits. The worker and quavon doctor --canary use it;
// closeFn closes the Valkey connection.
func Dial(ctx context.Context, rp config.RunParts) (client *Client, closeFn func(), err error) {
	keys, err := sandbox.LoadKeyRing(rp.SandboxKeys.SigningKeyFile, rp.SandboxKeys.PreviousKeysFile)
	if err != nil {
		return nil, nil, err
	}
	vk, err := qvalkey.Open(ctx, qvalkey.Config{Addr: rp.Valkey.Addr, Username: rp.Valkey.User, PasswordFile: rp.Valkey.PasswordFile})
	if err != nil {
		return nil, nil, err
	}
	names, err := NamesFor(rp.Pool)
	if err != nil {
		vk.Close()
		return nil, nil, err
	}
	blobs, err := NewBlobStore(vk, BlobConfig{Names: names, Keys: keys, MaxBytes: rp.Snapshots.MaxBytes})
	if err != nil {
		vk.Close()
		return nil, nil, err
	}
	client, err = NewClient(rp.Pool, NewQueue(vk, names, keys), blobs,
		snapshot.Limits{MaxBytes: rp.Snapshots.MaxBytes, MaxEntries: rp.Snapshots.MaxEntries})
	if err != nil {
		vk.Close()
		return nil, nil, err
	}
	return client, vk.Close, nil
}
