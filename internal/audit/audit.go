package audit

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/canonical"
)

// Event is one audit entry as a caller describes it.
type Event struct {
	// ActorUserID is the Quavon user (a uuid), when a user acted.
	ActorUserID string
	// Actor names the actor for people: a login, "system", "github".
	Actor string
	// Action is dotted lower case: repository.policy.update, token.create …
	Action      string
	SubjectType string
	SubjectID   string
	// Metadata is stored as RFC 8785 canonical JSON (at most 64 KiB; numbers
	// are IEEE 754 doubles).
	Metadata any
}

var (
	actionRE = regexp.MustCompile(`^[a-z_]+(\.[a-z_]+)+$`)
	uuidRE   = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
)

const maxMetadataBytes = 64 << 10

// Record writes e in tx, whose tenant it belongs to, as the next entry of the
// tenant's chain, and returns the entry's row id. It holds the tenant's chain
// head locked until tx ends: call it last in the transaction.
func Record(ctx context.Context, tx pgx.Tx, e Event) (int64, error) {
	entry, err := e.entry()
	if err != nil {
		return 0, err
	}
	var prev []byte
	var at time.Time
	err = tx.QueryRow(ctx, "SELECT tenant::text, head_seq, head_hash, entry_at FROM quavon_audit_head()").
		Scan(&entry.TenantID, &entry.Seq, &prev, &at)
	if err != nil {
		return 0, fmt.Errorf("audit: chain head: %w", err)
	}
	entry.Seq++
	entry.At = FormatTime(at)
	entry.PrevHash = fmt.Sprintf("%x", prev)
	hash, err := entry.ComputeHash()
	if err != nil {
		return 0, fmt.Errorf("audit: %w", err)
	}
	hashBytes, _ := hex.DecodeString(hash)
	var actorUser *string
	if entry.ActorUserID != "" {
		actorUser = &entry.ActorUserID
	}
	var id int64
	err = tx.QueryRow(ctx, `INSERT INTO audit_log (tenant_id, seq, at, actor_user_id, actor, action, subject_type, subject_id, metadata, prev_hash, hash)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id`,
		entry.TenantID, entry.Seq, at, actorUser, entry.Actor, entry.Action, entry.SubjectType, entry.SubjectID,
		string(entry.Metadata), prev, hashBytes).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("audit: %w", err)
	}
	return id, nil
}

// entry checks e and returns its entry without tenant, position, time and
// hashes.
func (e Event) entry() (Entry, error) {
	switch {
	case !actionRE.MatchString(e.Action):
		return Entry{}, fmt.Errorf("audit: action %q: want dotted lower case", e.Action)
	case e.Actor == "" || e.SubjectType == "" || e.SubjectID == "":
		return Entry{}, errors.New("audit: actor, subject type and subject id are required")
	case e.ActorUserID != "" && !uuidRE.MatchString(e.ActorUserID):
		return Entry{}, fmt.Errorf("audit: actor user id %q: want a uuid", e.ActorUserID)
	}
	for name, s := range map[string]string{"actor": e.Actor, "subject type": e.SubjectType, "subject id": e.SubjectID} {
		if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
			return Entry{}, fmt.Errorf("audit: %s: want UTF-8 text without NUL", name)
		}
	}
	meta := []byte("{}")
	if e.Metadata != nil {
		var err error
		if meta, err = canonical.JSON(e.Metadata); err != nil {
			return Entry{}, fmt.Errorf("audit: metadata: %w", err)
		}
	}
	if len(meta) > maxMetadataBytes {
		return Entry{}, fmt.Errorf("audit: metadata of %d bytes, at most %d", len(meta), maxMetadataBytes)
	}
	// PostgreSQL's jsonb cannot hold U+0000; say so rather than fail in SQL.
	if bytes.Contains(meta, []byte(`\u0000`)) {
		return Entry{}, errors.New("audit: metadata: a string holds U+0000")
	}
	return Entry{
		// The database prints uuids in lower case; the hash covers that form.
		ActorUserID: strings.ToLower(e.ActorUserID),
		Actor:       e.Actor, Action: e.Action, SubjectType: e.SubjectType, SubjectID: e.SubjectID,
		Metadata: json.RawMessage(meta),
	}, nil
}
