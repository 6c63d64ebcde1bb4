package repos

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/audit"
	"github.com/quavon/quavon/internal/policy"
)

// PolicyUpdate is the outcome of UpdatePolicy.
type PolicyUpdate struct {
	From, To int64
	Changes  []policy.Change
}

// UpdatePolicy replaces repo's policy with newPolicy (canonical is its
// Marshal form) if the stored version is still want, and records the
// change with its field-level diff in the audit log, in tx. A stale want
// is ErrVersionConflict. The policy API and the dashboard both save
// through here.
func UpdatePolicy(ctx context.Context, tx pgx.Tx, repo *Repository, userID string, newPolicy policy.Policy, canonical []byte, want int64) (*PolicyUpdate, error) {
	oldDoc, current, err := Policy(ctx, tx, repo.ID, true)
	if err != nil {
		return nil, err
	}
	if current != want {
		return nil, ErrVersionConflict
	}
	old := policy.Default()
	if oldDoc != nil {
		if parsed, err := policy.Parse(oldDoc); err == nil {
			old = parsed
		}
	}
	version, err := SavePolicy(ctx, tx, repo.ID, canonical, current, userID)
	if err != nil {
		return nil, err
	}
	changes := policy.Diff(old, newPolicy)
	_, err = audit.Record(ctx, tx, audit.Event{
		ActorUserID: userID, Actor: "user:" + userID, Action: "repository.policy.update",
		SubjectType: "repository", SubjectID: repo.ID,
		Metadata: map[string]any{"repository": repo.FullName(), "fromVersion": current, "toVersion": version, "changes": changes},
	})
	if err != nil {
		return nil, err
	}
	return &PolicyUpdate{From: current, To: version, Changes: changes}, nil
}
