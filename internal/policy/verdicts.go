package policy

import (
	"crypto/sha256"
	"encoding/hex"
)

// verdictsDomain starts what VerdictsSHA256 hashes, so the hash cannot be
// mistaken for a hash of anything else Quavon hashes.
const verdictsDomain = "quavon-policy-verdicts:v1\n"

// VerdictsSHA256 is the hex SHA-256 of the policy a feature obeys (the
// effective policy after every downgrade, in Marshal's canonical form): what
// an output awaiting approval binds as its policy hash, and what the
// dashboard compares it with, so an approval given under one policy is not
// valid under another.
func (e Effective) VerdictsSHA256() (string, error) {
	doc, err := Marshal(e.Policy)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write([]byte(verdictsDomain))
	h.Write(doc)
	return hex.EncodeToString(h.Sum(nil)), nil
}
