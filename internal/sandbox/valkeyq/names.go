package valkeyq

import (
	"fmt"

	"github.com/quavon/quavon/internal/sandbox"
)

// ConsumerGroup is the one consumer group every runner of a pool joins.
const ConsumerGroup = "runners"

// Names builds the Valkey key names of one pool.
type Names struct {
	prefix string
}

// NamesFor returns the key names of pool. The default pool uses the prefix
// quavon-sandbox; pool p uses quavon-sandbox-p, so an ACL pattern
// quavon-sandbox:* never covers another pool's keys.
func NamesFor(pool string) (Names, error) {
	if err := sandbox.ValidatePool(pool); err != nil {
		return Names{}, err
	}
	if pool == sandbox.DefaultPool {
		return Names{prefix: "quavon-sandbox"}, nil
	}
	return Names{prefix: "quavon-sandbox-" + pool}, nil
}

// Prefix is the key prefix without the trailing colon.
func (n Names) Prefix() string { return n.prefix }

// Jobs is the stream that carries signed jobs.
func (n Names) Jobs() string { return n.prefix + ":jobs" }

// Result is the list the runner pushes the signed result of jobID to.
func (n Names) Result(jobID string) string { return n.prefix + ":result:" + jobID }

// Blob is the key of chunk i of a snapshot blob.
func (n Names) Blob(blobID string, i int) string {
	return fmt.Sprintf("%s:blob:%s:%d", n.prefix, blobID, i)
}

// Seen is the replay guard of jobID.
func (n Names) Seen(jobID string) string { return n.prefix + ":seen:" + jobID }

// Egress is where the egress proxy looks up a per-job token.
func (n Names) Egress(token string) string { return n.prefix + ":egress:" + token }
