package testenv_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/devenv"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/testenv"
)

// A control plane is a copy of the migrated template database: its schema,
// grants, row-level security and database settings must be exactly those
// of a database migrated from nothing, or every test on a control plane
// would test another schema than the one we ship.
func TestControlPlaneIsAFreshMigration(t *testing.T) {
	pgDump := testenv.Program(t, filepath.Join(devenv.PostgresBin, "pg_dump"))
	cp := testenv.NewControlPlane(t, 2)
	fresh := testenv.NewDatabase(t)
	if _, err := postgres.Migrate(context.Background(), fresh.AdminPool(t)); err != nil {
		t.Fatal(err)
	}
	dump := func(db *testenv.TestDatabase) string {
		t.Helper()
		out, err := exec.Command(pgDump, "--schema-only", "--create", "--restrict-key=quavon", "--dbname", db.AdminURL).Output()
		if err != nil {
			t.Fatalf("pg_dump %s: %v", db.Name, err)
		}
		return strings.ReplaceAll(string(out), db.Name, "DATABASE")
	}
	a, b := dump(cp.DB), dump(fresh)
	if a != b {
		al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
		for i := 0; i < min(len(al), len(bl)); i++ {
			if al[i] != bl[i] {
				t.Fatalf("the control plane's schema differs from a fresh migration's at line %d:\n%s\nagainst\n%s", i+1, al[i], bl[i])
			}
		}
		t.Fatalf("the control plane's schema has %d lines, a fresh migration's %d", len(al), len(bl))
	}
	if !strings.Contains(a, "FORCE ROW LEVEL SECURITY") || !strings.Contains(a, "GRANT") {
		t.Fatal("the dump shows no forced row-level security or grants: it compares nothing")
	}
}
