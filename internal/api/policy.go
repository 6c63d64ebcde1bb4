package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/quavon/quavon/internal/audit"
	"github.com/quavon/quavon/internal/auth"
	"github.com/quavon/quavon/internal/policy"
)

// repository is what the policy endpoints need of a repository row.
type repository struct {
	ID         string
	Owner      string
	Name       string
	Visibility string
}

// managedRepository finds owner/name in the tenant and checks that the
// principal holds repo:manage on it.
func managedRepository(ctx context.Context, tx pgx.Tx, p *auth.Principal, owner, name string) (*repository, error) {
	var r repository
	err := tx.QueryRow(ctx, `SELECT id::text, owner, name, visibility FROM repositories
		WHERE host = 'github.com' AND lower(owner) = lower($1) AND lower(name) = lower($2)`, owner, name).
		Scan(&r.ID, &r.Owner, &r.Name, &r.Visibility)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNotFound
	}
	if err != nil {
		return nil, err
	}
	var ok bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM role_grants
		WHERE user_id = $1 AND repository_id = $2 AND role = 'repo:manage')`, p.UserID, r.ID).Scan(&ok); err != nil {
		return nil, err
	}
	if !ok {
		return nil, errForbidden
	}
	return &r, nil
}

// storedPolicy reads the repository's policy row: its document and
// version, or (nil, 0) when it has none.
func storedPolicy(ctx context.Context, tx pgx.Tx, repoID string, forUpdate bool) ([]byte, int64, error) {
	q := "SELECT document::text, version FROM repository_policies WHERE repository_id = $1"
	if forUpdate {
		q += " FOR UPDATE"
	}
	var doc string
	var version int64
	err := tx.QueryRow(ctx, q, repoID).Scan(&doc, &version)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, nil
	}
	return []byte(doc), version, err
}

// policyResponse is the body of GET and PUT.
type policyResponse struct {
	Repository string          `json:"repository"`
	Version    int64           `json:"version"`
	Policy     json.RawMessage `json:"policy"`
	Effective  effectiveView   `json:"effective"`
}

type effectiveView struct {
	Fix         string             `json:"fix"`
	ReviewFixes string             `json:"reviewFixes"`
	SAST        string             `json:"sast"`
	Acceptance  string             `json:"acceptance"`
	Invalid     string             `json:"invalid,omitempty"`
	Downgrades  []policy.Downgrade `json:"downgrades,omitempty"`
}

func etag(version int64) string { return `"` + strconv.FormatInt(version, 10) + `"` }

func respond(w http.ResponseWriter, status int, r *repository, doc []byte, version int64) error {
	eff := policy.Resolve(doc, policy.RepoFacts{Private: r.Visibility != "public"})
	shown := doc
	if shown == nil { // no row: the defaults
		var err error
		if shown, err = policy.Marshal(policy.Default()); err != nil {
			return err
		}
	}
	view := effectiveView{
		Fix: string(eff.FixMode()), ReviewFixes: string(eff.ReviewFixDelivery()),
		SAST: string(eff.SASTMode()), Acceptance: string(eff.AcceptanceMode()), Downgrades: eff.Downgrades,
	}
	if eff.Invalid != nil {
		view.Invalid = eff.Invalid.Error()
	}
	w.Header().Set("ETag", etag(version))
	writeJSON(w, status, policyResponse{Repository: r.Owner + "/" + r.Name, Version: version, Policy: shown, Effective: view})
	return nil
}

func (s *Server) getPolicy(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var repo *repository
	var doc []byte
	var version int64
	err := s.DB.InTenant(r.Context(), p.Tenant, func(tx pgx.Tx) error {
		var err error
		if repo, err = managedRepository(r.Context(), tx, p, r.PathValue("owner"), r.PathValue("repo")); err != nil {
			return err
		}
		doc, version, err = storedPolicy(r.Context(), tx, repo.ID, false)
		return err
	})
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, repo, doc, version)
}

// putPolicy replaces the policy. It needs If-Match with the ETag of the
// version the client read ("0" when the repository had none): a stale one
// is refused with 412, so two editors never overwrite each other unseen.
// The change and its field-level diff go to the audit log in the same
// transaction.
func (s *Server) putPolicy(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return errMediaType
	}
	match := r.Header.Get("If-Match")
	if match == "" {
		return errPreconditionRequired
	}
	want, err := strconv.ParseInt(strings.Trim(strings.TrimPrefix(match, "W/"), `"`), 10, 64)
	if err != nil || want < 0 {
		return errPreconditionFailed
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		return err
	}
	if len(body) > MaxBodyBytes {
		return errTooLarge
	}
	newPolicy, err := policy.Parse(body)
	if err != nil {
		return err // *policy.ValidationError: 422 with the field errors
	}
	canonical, err := policy.Marshal(newPolicy)
	if err != nil {
		return err
	}
	var repo *repository
	var version int64
	err = s.DB.InTenant(r.Context(), p.Tenant, func(tx pgx.Tx) error {
		ctx := r.Context()
		if repo, err = managedRepository(ctx, tx, p, r.PathValue("owner"), r.PathValue("repo")); err != nil {
			return err
		}
		oldDoc, current, err := storedPolicy(ctx, tx, repo.ID, true)
		if err != nil {
			return err
		}
		if current != want {
			return errPreconditionFailed
		}
		old := policy.Default()
		if oldDoc != nil {
			if parsed, err := policy.Parse(oldDoc); err == nil {
				old = parsed
			}
		}
		version = current + 1
		if current == 0 {
			// A concurrent first PUT loses on the primary key (23505): mapped to 412 below.
			_, err = tx.Exec(ctx, `INSERT INTO repository_policies (tenant_id, repository_id, document, version, updated_by)
				VALUES (quavon_current_tenant(), $1, $2, 1, $3)`, repo.ID, canonical, p.UserID)
		} else {
			_, err = tx.Exec(ctx, `UPDATE repository_policies SET document = $2, version = $3, updated_at = now(), updated_by = $4
				WHERE repository_id = $1`, repo.ID, canonical, version, p.UserID)
		}
		if err != nil {
			if isUniqueViolation(err) {
				return errPreconditionFailed
			}
			return err
		}
		_, err = audit.Record(ctx, tx, audit.Event{
			ActorUserID: p.UserID, Actor: "user:" + p.UserID, Action: "repository.policy.update",
			SubjectType: "repository", SubjectID: repo.ID,
			Metadata: map[string]any{
				"repository": repo.Owner + "/" + repo.Name, "fromVersion": current, "toVersion": version,
				"changes": policy.Diff(old, newPolicy),
			},
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("put policy: %w", err)
	}
	return respond(w, http.StatusOK, repo, canonical, version)
}

func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}
