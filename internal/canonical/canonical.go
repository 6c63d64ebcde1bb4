// Package canonical is Quavon's one implementation of RFC 8785, the JSON
// Canonicalization Scheme (JCS): sorted keys (by UTF-16 code units), no
// insignificant white space, ECMAScript number and string serialisation. It
// wraps github.com/gowebpki/jcs (checked against the RFC's vectors in this
// package's tests) so that every signature and hash over JSON in Quavon (the
// sandbox contract's HMACs, the audit log's hash chain) canonicalises the
// same way.
//
// It is a leaf that links only the standard library and the JCS library, so
// a binary that must not link sandbox key code (quavon-api) can use it.
package canonical

import (
	"encoding/json"

	"github.com/gowebpki/jcs"
)

// JSON returns the RFC 8785 canonical JSON of v (encoded with encoding/json
// first, so struct tags and omitempty apply).
func JSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jcs.Transform(raw)
}

// Transform returns the RFC 8785 canonical form of the JSON text raw. It
// refuses duplicate keys, invalid surrogates and numbers outside I-JSON
// (IEEE 754 double precision), so what is canonicalised is what any
// conforming decoder reads.
func Transform(raw []byte) ([]byte, error) { return jcs.Transform(raw) }
