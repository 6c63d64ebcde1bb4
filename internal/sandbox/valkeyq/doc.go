// Package valkeyq is the sandbox contract's transport over Valkey: the job
// stream (Queue for the worker, Consumer for the runner), signed results,
// encrypted snapshot blobs (BlobStore), the replay guard and the egress
// proxy's per-job grants (EgressGrants: put and revoked by the runner, looked
// up read-only by the proxy). Key names per pool are in Names.
//
// The contract itself (types, signing, keys) is package sandbox, which links
// no Valkey client; this package adds only storage and delivery.
package valkeyq
