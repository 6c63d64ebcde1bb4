package sandbox

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/quavon/quavon/internal/canonical"
)

// Signing domains: a job signature can never be replayed as a result.
const (
	JobDomain    = "quavon-sandbox-job:v1"
	ResultDomain = "quavon-sandbox-result:v1"
)

// Envelope size caps: a job is small; a result carries capped artefacts.
const (
	MaxJobEnvelopeBytes    = 64 << 10
	MaxResultEnvelopeBytes = 80 << 20
)

// The outcomes of verification, in the order they are checked. Each is
// distinct so the runner can report exactly why it refused.
var (
	ErrMalformedEnvelope = errors.New("malformed envelope")
	ErrUnknownKey        = errors.New("unknown key id")
	ErrBadSignature      = errors.New("bad signature")
	ErrSchemaInvalid     = errors.New("schema-invalid")
	ErrExpired           = errors.New("expired")
	ErrTooFarAhead       = errors.New("too far ahead")
	ErrReplayed          = errors.New("replayed")
)

// Envelope is the wire form of a signed job or result.
type Envelope struct {
	KeyID     string          `json:"keyId"`
	Signature string          `json:"sig"`
	Payload   json.RawMessage `json:"payload"`
}

func mac(k Key, domain string, payload []byte) []byte {
	h := hmac.New(sha256.New, k.secret)
	h.Write([]byte(domain))
	h.Write([]byte{'\n'})
	h.Write(payload)
	return h.Sum(nil)
}

// seal signs v under the ring's current key.
func seal(r *KeyRing, domain string, v any) ([]byte, error) {
	c, err := canonical.JSON(v)
	if err != nil {
		return nil, fmt.Errorf("sandbox.seal: %w", err)
	}
	k := r.Current()
	return json.Marshal(Envelope{KeyID: k.ID(), Signature: hex.EncodeToString(mac(k, domain, c)), Payload: c})
}

// open checks the envelope, key and signature and returns the canonical
// payload the signature covers. Nothing else of the input is trusted.
func open(r *KeyRing, domain string, data []byte, maxBytes int) ([]byte, error) {
	if len(data) > maxBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrMalformedEnvelope, len(data), maxBytes)
	}
	var env Envelope
	if err := decodeStrict(data, &env); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformedEnvelope, err)
	}
	if !keyIDRE.MatchString(env.KeyID) {
		return nil, fmt.Errorf("%w: keyId", ErrMalformedEnvelope)
	}
	sig, err := hex.DecodeString(env.Signature)
	if err != nil || len(sig) != sha256.Size || env.Signature != hex.EncodeToString(sig) {
		return nil, fmt.Errorf("%w: sig", ErrMalformedEnvelope)
	}
	if len(env.Payload) == 0 || env.Payload[0] != '{' {
		return nil, fmt.Errorf("%w: payload is not an object", ErrMalformedEnvelope)
	}
	// Canonicalising rejects duplicate keys, bad surrogates and numbers
	// outside I-JSON, so what is verified is what is decoded.
	c, err := canonical.Transform(env.Payload)
	if err != nil {
		return nil, fmt.Errorf("%w: payload: %v", ErrMalformedEnvelope, err)
	}
	k, ok := r.Lookup(env.KeyID)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownKey, env.KeyID)
	}
	if !hmac.Equal(sig, mac(k, domain, c)) {
		return nil, ErrBadSignature
	}
	return c, nil
}

// decodeCanonical decodes signed canonical JSON into v strictly: unknown
// fields and wrong types are refused, and re-encoding v must give back the
// exact bytes, so no field can be smuggled past the struct (JSON keys are
// case-sensitive here, unlike encoding/json's matching, and empty optional
// fields must be omitted).
func decodeCanonical(payload []byte, v any) error {
	if err := decodeStrict(payload, v); err != nil {
		return err
	}
	again, err := canonical.JSON(v)
	if err != nil {
		return err
	}
	if !bytes.Equal(again, payload) {
		return errors.New("not in canonical form: a field is mis-cased, empty where it must be omitted, or not representable")
	}
	return nil
}

// decodeValid decodes signed canonical JSON into v and validates it; every
// failure is ErrSchemaInvalid.
func decodeValid(payload []byte, v interface{ Validate() error }) error {
	if err := decodeCanonical(payload, v); err != nil {
		return fmt.Errorf("%w: %v", ErrSchemaInvalid, err)
	}
	if err := v.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrSchemaInvalid, err)
	}
	return nil
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// SignJob returns the envelope of job signed under the ring's current key.
// It validates first: the worker never sends what a runner would refuse.
func SignJob(r *KeyRing, job *SandboxJob) ([]byte, error) {
	if err := job.Validate(); err != nil {
		return nil, fmt.Errorf("sandbox.SignJob %s: %w", job.ID, err)
	}
	return seal(r, JobDomain, job)
}

// SignResult returns the envelope of res signed under the ring's current key.
func SignResult(r *KeyRing, res *SandboxResult) ([]byte, error) {
	if err := res.Validate(); err != nil {
		return nil, fmt.Errorf("sandbox.SignResult %s: %w", res.JobID, err)
	}
	return seal(r, ResultDomain, res)
}

// OpenJob verifies envelope, key and signature and decodes the job with its
// schema checked. Time and replay checks are the [Verifier]'s.
func OpenJob(r *KeyRing, data []byte) (*SandboxJob, error) {
	c, err := open(r, JobDomain, data, MaxJobEnvelopeBytes)
	if err != nil {
		return nil, err
	}
	var job SandboxJob
	if err := decodeValid(c, &job); err != nil {
		return nil, err
	}
	return &job, nil
}

// OpenResult verifies a result envelope and decodes the result with its
// schema checked.
func OpenResult(r *KeyRing, data []byte) (*SandboxResult, error) {
	c, err := open(r, ResultDomain, data, MaxResultEnvelopeBytes)
	if err != nil {
		return nil, err
	}
	var res SandboxResult
	if err := decodeValid(c, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Reason maps a verification error to the stable code reported in a
// rejected result.
func Reason(err error) RejectReason {
	for _, c := range []struct {
		err error
		r   RejectReason
	}{
		{ErrMalformedEnvelope, RejectMalformed}, {ErrUnknownKey, RejectUnknownKey},
		{ErrBadSignature, RejectBadSignature}, {ErrSchemaInvalid, RejectSchemaInvalid},
		{ErrExpired, RejectExpired}, {ErrTooFarAhead, RejectTooFarAhead},
		{ErrReplayed, RejectReplayed},
	} {
		if errors.Is(err, c.err) {
			return c.r
		}
	}
	return ""
}
