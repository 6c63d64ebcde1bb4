// Package audit records who did what in the caller's transaction: the entry
// commits or rolls back with the change it describes. The audit_log table
// is append-only (the app role may only SELECT and INSERT, and a trigger
// refuses UPDATE and DELETE to everyone) and tenant-scoped by RLS.
package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"
)

// Event is one audit entry.
type Event struct {
	// ActorUserID is the Quavon user, when a user acted.
	ActorUserID string
	// Actor names the actor for people: a login, "system", "github".
	Actor string
	// Action is dotted lower case: repository.policy.update, token.create …
	Action      string
	SubjectType string
	SubjectID   string
	// Metadata is stored as JSON (at most 64 KiB).
	Metadata any
}

var actionRE = regexp.MustCompile(`^[a-z_]+(\.[a-z_]+)+$`)

const maxMetadataBytes = 64 << 10

// Record writes e in tx, whose tenant it belongs to. It returns the entry's
// id.
func Record(ctx context.Context, tx pgx.Tx, e Event) (int64, error) {
	switch {
	case !actionRE.MatchString(e.Action):
		return 0, fmt.Errorf("audit: action %q: want dotted lower case", e.Action)
	case e.Actor == "" || e.SubjectType == "" || e.SubjectID == "":
		return 0, errors.New("audit: actor, subject type and subject id are required")
	}
	meta := []byte("{}")
	if e.Metadata != nil {
		var err error
		if meta, err = json.Marshal(e.Metadata); err != nil {
			return 0, fmt.Errorf("audit: metadata: %w", err)
		}
	}
	if len(meta) > maxMetadataBytes {
		return 0, fmt.Errorf("audit: metadata of %d bytes, at most %d", len(meta), maxMetadataBytes)
	}
	var actorUser *string
	if e.ActorUserID != "" {
		actorUser = &e.ActorUserID
	}
	var id int64
	err := tx.QueryRow(ctx, `INSERT INTO audit_log (tenant_id, actor_user_id, actor, action, subject_type, subject_id, metadata)
		VALUES (quavon_current_tenant(), $1, $2, $3, $4, $5, $6) RETURNING id`,
		actorUser, e.Actor, e.Action, e.SubjectType, e.SubjectID, meta).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("audit: %w", err)
	}
	return id, nil
}
