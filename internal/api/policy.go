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

	"github.com/quavon/quavon/internal/auth"
	"github.com/quavon/quavon/internal/policy"
	"github.com/quavon/quavon/internal/repos"
)

// managedRepository finds owner/name and checks that the principal holds
// repo:manage on it.
func managedRepository(ctx context.Context, tx pgx.Tx, p *auth.Principal, owner, name string) (*repos.Repository, error) {
	return repos.FindWithRole(ctx, tx, p.UserID, owner, name, repos.RoleManage)
}

// policyResponse is the body of GET and PUT.
type policyResponse struct {
	Repository string          `json:"repository"`
	Version    int64           `json:"version"`
	Policy     json.RawMessage `json:"policy"`
	Effective  effectiveView   `json:"effective"`
}

type effectiveView struct {
	Review      string             `json:"review"`
	Fix         string             `json:"fix"`
	ReviewFixes string             `json:"reviewFixes"`
	SAST        string             `json:"sast"`
	Acceptance  string             `json:"acceptance"`
	Invalid     string             `json:"invalid,omitempty"`
	Downgrades  []policy.Downgrade `json:"downgrades,omitempty"`
}

func etag(version int64) string { return `"` + strconv.FormatInt(version, 10) + `"` }

func respond(w http.ResponseWriter, status int, r *repos.Repository, doc []byte, version int64) error {
	eff := policy.Resolve(doc, policy.RepoFacts{Private: r.Visibility != "public"})
	shown := doc
	if shown == nil { // no row: the defaults
		var err error
		if shown, err = policy.Marshal(policy.Default()); err != nil {
			return err
		}
	}
	view := effectiveView{
		Review: string(eff.ReviewMode()), Fix: string(eff.FixMode()), ReviewFixes: string(eff.ReviewFixDelivery()),
		SAST: string(eff.SASTMode()), Acceptance: string(eff.AcceptanceMode()), Downgrades: eff.Downgrades,
	}
	if eff.Invalid != nil {
		view.Invalid = eff.Invalid.Error()
	}
	w.Header().Set("ETag", etag(version))
	writeJSON(w, status, policyResponse{Repository: r.FullName(), Version: version, Policy: shown, Effective: view})
	return nil
}

func (s *Server) getPolicy(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var repo *repos.Repository
	var doc []byte
	var version int64
	err := s.DB.InTenant(r.Context(), p.Tenant, func(tx pgx.Tx) error {
		var err error
		if repo, err = managedRepository(r.Context(), tx, p, r.PathValue("owner"), r.PathValue("repo")); err != nil {
			return err
		}
		doc, version, err = repos.Policy(r.Context(), tx, repo.ID, false)
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
	var repo *repos.Repository
	var version int64
	err = s.DB.InTenant(r.Context(), p.Tenant, func(tx pgx.Tx) error {
		ctx := r.Context()
		if repo, err = managedRepository(ctx, tx, p, r.PathValue("owner"), r.PathValue("repo")); err != nil {
			return err
		}
		up, err := repos.UpdatePolicy(ctx, tx, repo, p.UserID, newPolicy, canonical, want)
		if errors.Is(err, repos.ErrVersionConflict) {
			return errPreconditionFailed
		}
		if err != nil {
			return err
		}
		version = up.To
		return nil
	})
	if err != nil {
		return fmt.Errorf("put policy: %w", err)
	}
	return respond(w, http.StatusOK, repo, canonical, version)
}
