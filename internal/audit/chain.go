package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/quavon/quavon/internal/canonical"
)

// Domain starts every hashed entry, so an entry hash is never mistaken for
// another hash over JSON.
const Domain = "quavon-audit-entry:v1"

// Genesis is the prev_hash of a chain's first entry.
var Genesis = strings.Repeat("0", 64)

// Entry is one audit entry as stored, hashed and exported; see the package
// documentation for the exact form.
type Entry struct {
	TenantID    string          `json:"tenant_id"`
	Seq         int64           `json:"seq"`
	At          string          `json:"at"`
	ActorUserID string          `json:"actor_user_id,omitempty"`
	Actor       string          `json:"actor"`
	Action      string          `json:"action"`
	SubjectType string          `json:"subject_type"`
	SubjectID   string          `json:"subject_id"`
	Metadata    json.RawMessage `json:"metadata"`
	// PrevHash and Hash are empty for an entry written before the chain
	// began (migration 0005).
	PrevHash string `json:"prev_hash,omitempty"`
	Hash     string `json:"hash,omitempty"`
}

// ComputeHash returns the hex SHA-256 of Domain, a newline and the canonical
// JSON of e without its Hash.
func (e Entry) ComputeHash() (string, error) {
	e.Hash = ""
	c, err := canonical.JSON(e)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write([]byte(Domain))
	h.Write([]byte{'\n'})
	h.Write(c)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// FormatTime is the form of "at": UTC, microseconds (PostgreSQL's
// precision), always six digits.
func FormatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }
