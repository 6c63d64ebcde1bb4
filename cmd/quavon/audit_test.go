package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/audit"
	"github.com/quavon/quavon/internal/testenv"
)

// dbEnv is the environment of a database command that logs in as a new
// member of role.
func dbEnv(t *testing.T, db *testenv.TestDatabase, role string) []string {
	t.Helper()
	raw, _ := db.LoginRole(t, role)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	u.User = url.User(u.User.Username())
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte(pw+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"QUAVON_DATABASE_URL=" + u.String(), "QUAVON_DATABASE_PASSWORD_FILE=" + pwFile}
}

// quavon audit verify and export as an auditor: intact chains, an export
// that is its own anchor, a row a superuser edited named with its position.
func TestAuditVerifyAndExport(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	ctx := context.Background()
	a := cp.Seed(t, "alpha", "app", "private")
	b := cp.Seed(t, "beta", "app", "private")
	for i, s := range []testenv.Seeded{a, a, a, b, a, b} {
		err := cp.App.InTenant(ctx, s.Tenant, func(tx pgx.Tx) error {
			_, err := audit.Record(ctx, tx, audit.Event{ActorUserID: s.User, Actor: "user:ada", Action: "repository.policy.update",
				SubjectType: "repository", SubjectID: s.Repository, Metadata: map[string]any{"i": i, "note": "<&>\u00e9"}})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	env := dbEnv(t, cp.DB, "quavon_auditor")
	quavon := func(args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		err := run(ctx, args, env, &out, &errOut)
		return out.String(), errOut.String(), err
	}

	out, _, err := quavon("audit", "verify")
	if err != nil {
		t.Fatalf("verify: %v\n%s", err, out)
	}
	for _, want := range []string{"intact  " + string(a.Tenant) + "  4 entries, head 4 ", "intact  " + string(b.Tenant) + "  2 entries, head 2 ",
		"2 tenants: every chain intact"} {
		if !strings.Contains(out, want) {
			t.Errorf("verify output lacks %q:\n%s", want, out)
		}
	}

	file := filepath.Join(t.TempDir(), "audit.jsonl")
	_, stderr, err := quavon("audit", "export", "--out", file)
	if err != nil || !strings.Contains(stderr, "exported 6 entries of 2 tenants to "+file) {
		t.Fatalf("export: %v %s", err, stderr)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Errorf("export file mode %v", fi.Mode().Perm())
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 6 {
		t.Fatalf("%d lines:\n%s", len(lines), data)
	}
	prev := map[string]string{}
	for _, l := range lines {
		var e audit.Entry
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatal(err)
		}
		want, _ := e.ComputeHash()
		if e.Hash != want || (prev[e.TenantID] == "" && e.PrevHash != audit.Genesis) || (prev[e.TenantID] != "" && e.PrevHash != prev[e.TenantID]) {
			t.Fatalf("line does not chain: %s", l)
		}
		prev[e.TenantID] = e.Hash
		if !strings.Contains(l, `"note":"<&>é"`) {
			t.Fatalf("line is not canonical JSON: %s", l)
		}
	}
	stdout, _, err := quavon("audit", "export")
	if err != nil || stdout != string(data) {
		t.Fatalf("export to stdout differs from the file (%v):\n%s", err, stdout)
	}
	only, _, err := quavon("audit", "export", "--tenant", string(b.Tenant))
	if err != nil || strings.Count(only, "\n") != 2 || strings.Contains(only, string(a.Tenant)) {
		t.Fatalf("export of beta (%v):\n%s", err, only)
	}

	out, _, err = quavon("audit", "verify", "--anchor", file)
	if err != nil || !strings.Contains(out, "4 checked against the anchor") {
		t.Fatalf("verify against its own export: %v\n%s", err, out)
	}

	// A superuser edits alpha's second entry.
	if _, err := cp.Admin.Exec(ctx, `BEGIN; SET LOCAL session_replication_role = replica;
		UPDATE audit_log SET actor = 'user:mallory' WHERE tenant_id = '`+string(a.Tenant)+`' AND seq = 2; COMMIT`); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := cp.Admin.QueryRow(ctx, "SELECT id FROM audit_log WHERE tenant_id = $1 AND seq = 2", string(a.Tenant)).Scan(&id); err != nil {
		t.Fatal(err)
	}
	out, _, err = quavon("audit", "verify")
	var ee *exitStatus
	if !errors.As(err, &ee) || ee.code != 1 {
		t.Fatalf("verify of a tampered log: %v\n%s", err, out)
	}
	want := fmt.Sprintf("BROKEN  %s  entry 2 (row id %d): its hash does not match its content", a.Tenant, id)
	if !strings.Contains(out, want) || !strings.Contains(out, "intact  "+string(b.Tenant)) ||
		!strings.Contains(err.Error(), "1 of 2 tenants' chains are broken") {
		t.Fatalf("verify output lacks %q:\n%s\n%v", want, out, err)
	}
	if out, _, err := quavon("audit", "verify", "--tenant", string(b.Tenant)); err != nil || strings.Contains(out, string(a.Tenant)) {
		t.Fatalf("verify of beta alone: %v\n%s", err, out)
	}
	// Export still writes everything, and says the chain is broken.
	_, stderr, err = quavon("audit", "export", "--out", file)
	if !errors.As(err, &ee) || ee.code != 1 || !strings.Contains(stderr, "the chain is broken at entry 2") {
		t.Fatalf("export of a tampered log: %v %s", err, stderr)
	}
	if data, _ := os.ReadFile(file); strings.Count(string(data), "\n") != 6 || !strings.Contains(string(data), "user:mallory") {
		t.Fatalf("the export of a tampered log:\n%s", data)
	}
}

func TestAuditUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"audit"}, {"audit", "fix"}, {"audit", "verify", "--tenant", "acme"}, {"audit", "export", "x"}} {
		if err := run(context.Background(), args, nil, &bytes.Buffer{}, nil); !errors.Is(err, errUsage) {
			t.Errorf("run(%q) = %v, want usage", args, err)
		}
	}
	// A bad anchor is refused before any connection.
	bad := filepath.Join(t.TempDir(), "anchor")
	os.WriteFile(bad, []byte("{\"tenant_id\": \"nope\", \"seq\": 1}\n"), 0o600)
	err := run(context.Background(), []string{"audit", "verify", "--anchor", bad}, nil, &bytes.Buffer{}, nil)
	if err == nil || !strings.Contains(err.Error(), "anchor line 1") {
		t.Fatalf("bad anchor: %v", err)
	}
}
