package devstack

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/auth"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/repos"
)

// DemoPolicy is the demo repository's policy: the scanners and the
// acceptance check on, the fix agent with approval, triggered by FixLabel,
// running the module's tests in the sandbox.
const DemoPolicy = `{"version": 1, "features": {
  "fix": {"mode": "approval", "triggerLabels": ["` + FixLabel + `"], "testCommand": "go test ./..."},
  "sast": {"mode": "on"},
  "acceptance": {"mode": "on"}}}`

// SetDemoPolicy gives the demo repository DemoPolicy the way a maintainer
// would: a user with repo:manage and repo:review on it whose dashboard
// identity is DemoAdmin on the emulator, an API token for that user, and a
// PUT of the policy through the api (audited there).
func (st *Stack) SetDemoPolicy(ctx context.Context) error {
	db, err := postgres.Open(ctx, st.DatabaseURL, "", 2)
	if err != nil {
		return err
	}
	defer db.Close()
	var tenant, repoID string
	// The superuser sees every tenant (RLS does not apply to it).
	if err := db.Pool.QueryRow(ctx, "SELECT tenant_id::text, id::text FROM repositories WHERE owner = $1 AND name = $2",
		DemoOrg, DemoRepo).Scan(&tenant, &repoID); err != nil {
		return fmt.Errorf("the demo repository is not recorded (installation event lost?): %w", err)
	}
	var token string
	err = db.InTenant(ctx, postgres.TenantID(tenant), func(tx pgx.Tx) error {
		var user string
		if err := tx.QueryRow(ctx, "INSERT INTO users (tenant_id, display_name) VALUES (quavon_current_tenant(), $1) RETURNING id::text",
			DemoAdmin+" (quavon dev)").Scan(&user); err != nil {
			return err
		}
		// The dashboard identity: DemoAdmin on the emulator (admin there),
		// so the approval's live permission check asks GitHub about it.
		if _, err := tx.Exec(ctx, "INSERT INTO user_identities (tenant_id, user_id, host, login, external_id) VALUES (quavon_current_tenant(), $1, 'github.com', $2, $3)",
			user, DemoAdmin, st.GitHub.AdminID); err != nil {
			return err
		}
		for _, role := range []string{repos.RoleManage, repos.RoleReview} {
			if _, err := tx.Exec(ctx, "INSERT INTO role_grants (tenant_id, user_id, repository_id, role) VALUES (quavon_current_tenant(), $1, $2, $3)",
				user, repoID, role); err != nil {
				return err
			}
		}
		exp := time.Now().Add(24 * time.Hour)
		token, _, err = auth.Create(ctx, tx, postgres.TenantID(tenant), user, "quavon dev", &exp)
		return err
	})
	if err != nil {
		return fmt.Errorf("demo API token: %w", err)
	}
	u := strings.TrimSuffix(st.DashboardURL, "/") + "/api/v1/repos/" + DemoOrg + "/" + DemoRepo + "/policy"
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, u, bytes.NewReader([]byte(DemoPolicy)))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("If-Match", `"0"`)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		return fmt.Errorf("PUT policy: %d %s", res.StatusCode, b)
	}
	return nil
}
