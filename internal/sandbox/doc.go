// Package sandbox is the contract between the worker, which asks for code to
// be run, and the sandbox runner (zone Z3), which runs it: the job and result
// types, signing over their RFC 8785 canonical JSON (package canonical), the
// pool keys and the blob key derivation. It is a leaf: it links no Valkey
// client, so a process that only needs the types does not get a transport,
// and its transport (package valkeyq) can change without touching the
// contract.
//
// A job travels as an [Envelope]: the job's RFC 8785 canonical JSON,
// HMAC-SHA256 signed under the pool key with the domain string
// "quavon-sandbox-job:v1". The runner verifies in a fixed order, each step
// with its own error, and touches no container runtime before all of them
// pass:
//
//	malformed envelope → unknown key id → bad signature → schema-invalid
//	→ expired → too far ahead → replayed
//
// Results come back the same way under "quavon-sandbox-result:v1".
//
// Repository snapshots never travel in the job. The worker encrypts them
// into 1 MiB AES-256-GCM chunks under a per-blob key ([BlobStore]) and the
// signed job carries only a [SnapshotRef] that binds tenant, blob id, key id,
// SHA-256 and size. [BlobCipher] derives each blob's key; the chunks live in
// Valkey (valkeyq.BlobStore).
//
// Transport is Valkey Streams (package valkeyq: Queue on the worker side,
// Consumer on the runner side): a runner acknowledges a job as soon as it has
// read it and no runner ever claims another's pending entries, so a job runs
// at most once; a runner that dies leaves the worker waiting until its
// deadline. The egress proxy's per-job credentials ([EgressGrant]) travel the
// same way (valkeyq.EgressGrants).
//
// Keys in Valkey, for pool "default" (prefix quavon-sandbox) and any other
// pool p (prefix quavon-sandbox-p):
//
//	<prefix>:jobs                 stream of signed jobs, consumer group "runners"
//	<prefix>:result:<jobId>       list holding the signed result (TTL)
//	<prefix>:blob:<blobId>:<n>    encrypted snapshot chunk n (TTL)
//	<prefix>:seen:<jobId>         replay guard, SET NX until the job expires
//	<prefix>:egress:<token>       egress proxy credentials (setup step only)
package sandbox
