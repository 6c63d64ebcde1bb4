package devenv_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/devenv"
	"github.com/quavon/quavon/internal/testenv"
	qvalkey "github.com/quavon/quavon/internal/valkey"
)

func TestRenderACL(t *testing.T) {
	t.Parallel()
	tmpl, err := os.ReadFile("../../deploy/valkey/users.acl.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	pw := map[string]string{"quavon": "a", "sandbox": "b", "egress": "c"}
	acl, err := devenv.RenderACL(string(tmpl), pw)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(acl, "#@") && strings.Contains(acl, "PASSWORD_SHA256") || strings.Contains(acl, "\n#") {
		t.Fatalf("placeholders or comments left:\n%s", acl)
	}
	// sha256("a")
	if !strings.Contains(acl, "#ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb") {
		t.Fatalf("quavon's hash missing:\n%s", acl)
	}
	if _, err := devenv.RenderACL(string(tmpl), map[string]string{"quavon": "a"}); err == nil {
		t.Fatal("a template with users left unrendered was accepted")
	}
	if _, err := devenv.RenderACL("user quavon on #@QUAVON_PASSWORD_SHA256@ ~* +@all\n", map[string]string{"quavon": "a"}); err == nil {
		t.Fatal("a template without user default off was accepted")
	}
}

// The service starters scripts/test and quavon dev use: a cluster whose URL
// works as the tests use it, a Valkey whose ACL users work and whose default
// user is off.
func TestStartPostgresAndValkey(t *testing.T) {
	if os.Geteuid() != 0 {
		if testenv.Required() {
			t.Fatal("needs root (scripts/test runs as root)")
		}
		t.Skip("needs root: the cluster runs as the postgres user")
	}
	testenv.Program(t, "redis-server")
	if _, err := os.Stat(filepath.Join(devenv.PostgresBin, "initdb")); err != nil {
		testenv.Program(t, filepath.Join(devenv.PostgresBin, "initdb"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "devenv-test")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	pg, err := devenv.StartPostgres(ctx, filepath.Join(dir, "pg"))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Stop()
	conn, err := pgx.Connect(ctx, pg.URL)
	if err != nil {
		t.Fatal(err)
	}
	var super bool
	if err := conn.QueryRow(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&super); err != nil || !super {
		t.Fatalf("quavon_admin superuser %v %v", super, err)
	}
	conn.Close(ctx)

	vk, err := devenv.StartValkey(ctx, filepath.Join(dir, "valkey"), "../../deploy/valkey/users.acl.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	defer vk.Stop()
	for _, u := range devenv.ValkeyUsers {
		fi, err := os.Stat(filepath.Join(vk.SecretsDir, u))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s password file: %v %v", u, fi, err)
		}
		c, err := qvalkey.Open(ctx, qvalkey.Config{Addr: vk.Addr, Username: u, PasswordFile: filepath.Join(vk.SecretsDir, u)})
		if err != nil {
			t.Fatalf("as %s: %v", u, err)
		}
		c.Close()
	}
	if _, err := qvalkey.Open(ctx, qvalkey.Config{Addr: vk.Addr, Username: "default"}); err == nil {
		t.Fatal("the default user may connect")
	}
	host, port, _ := strings.Cut(vk.Addr, ":")
	out, _ := exec.Command("redis-cli", "-h", host, "-p", port, "PING").CombinedOutput()
	if !strings.HasPrefix(string(out), "NOAUTH") {
		t.Fatalf("unauthenticated PING: %s", out)
	}
	if err := vk.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
}
