package doctor_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/doctor"
	"github.com/quavon/quavon/internal/sandbox/runner/docker"
	"github.com/quavon/quavon/internal/testenv"
)

func TestBackend(t *testing.T) {
	t.Parallel()
	prod := config.Core{Env: config.Production, Edition: config.Community}
	dev := config.Core{Env: config.Development, Edition: config.Community}
	devEnt := config.Core{Env: config.Development, Edition: config.Enterprise}
	for _, tc := range []struct {
		name    string
		core    config.Core
		backend string
		kvm     string
		want    doctor.Status
		detail  string
	}{
		{"runsc", prod, "docker-runsc", "", doctor.Pass, "gVisor"},
		{"kube", prod, "kube-gvisor", "", doctor.Pass, "gVisor"},
		{"insecure in production", prod, "docker-runc-insecure", "", doctor.Fail, "container isolation only"},
		{"insecure in enterprise", devEnt, "docker-runc-insecure", "", doctor.Fail, "container isolation only"},
		{"insecure in development", dev, "docker-runc-insecure", "", doctor.Warn, "development"},
		{"firecracker without KVM", prod, "firecracker", "/nonexistent/kvm", doctor.Fail, "does not exist"},
		{"firecracker on a non-KVM device", prod, "firecracker", "/dev/null", doctor.Fail, "no usable KVM device"},
		{"unknown", prod, "lxc", "", doctor.Fail, "unknown backend"},
	} {
		r := doctor.Backend(tc.core, tc.backend, tc.kvm)
		if r.Status != tc.want || !strings.Contains(r.Detail, tc.detail) {
			t.Errorf("%s: %s %q, want %s with %q", tc.name, r.Status, r.Detail, tc.want, tc.detail)
		}
		if r.Status != doctor.Pass && r.Hint == "" {
			t.Errorf("%s: no hint", tc.name)
		}
	}
}

// fakeProc is a proc file system with the named processes.
func fakeProc(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for i, n := range names {
		pd := filepath.Join(dir, strconv.Itoa(100+i))
		os.MkdirAll(filepath.Join(pd, "root"), 0o755)
		comm := n
		if len(comm) > 15 {
			comm = comm[:15]
		}
		os.WriteFile(filepath.Join(pd, "comm"), []byte(comm+"\n"), 0o644)
		os.WriteFile(filepath.Join(pd, "cmdline"), []byte("/usr/local/bin/"+n+"\x00--x\x00"), 0o644)
	}
	os.MkdirAll(filepath.Join(dir, "self"), 0o755) // not a pid
	return dir
}

func TestPlacement(t *testing.T) {
	t.Parallel()
	ent := config.Core{Env: config.Production, Edition: config.Enterprise}
	com := config.Core{Env: config.Production, Edition: config.Community}
	for _, tc := range []struct {
		name  string
		core  config.Core
		procs []string
		want  doctor.Status
	}{
		{"runner with api, enterprise", ent, []string{"quavon-sandbox-runner", "quavon-api"}, doctor.Fail},
		{"runner with worker, enterprise", ent, []string{"quavon-worker", "quavon-sandbox-runner"}, doctor.Fail},
		{"runner with api, community", com, []string{"quavon-sandbox-runner", "quavon-api"}, doctor.Warn},
		{"runner alone, enterprise", ent, []string{"quavon-sandbox-runner", "quavon-sandbox-egress"}, doctor.Pass},
		{"api alone, enterprise", ent, []string{"quavon-api", "quavon-worker"}, doctor.Pass},
		// comm is cut at 15 bytes: another program's "quavon-sandbox-" is not the runner.
		{"look-alike", ent, []string{"quavon-sandbox-lookalike", "quavon-api"}, doctor.Pass},
	} {
		r := doctor.Placement(tc.core, fakeProc(t, tc.procs...))
		if r.Status != tc.want {
			t.Errorf("%s: %s %q, want %s", tc.name, r.Status, r.Detail, tc.want)
		}
	}
}

func TestDockerSocket(t *testing.T) {
	t.Parallel()
	prod := config.Core{Env: config.Production, Edition: config.Community}
	dev := config.Core{Env: config.Development, Edition: config.Community}
	proc := fakeProc(t, "quavon-sandbox-runner", "quavon-worker", "quavon-api")
	// The runner (pid 100) holds the socket: fine.
	sock := func(pid int) {
		d := filepath.Join(proc, strconv.Itoa(pid), "root", "var", "run")
		os.MkdirAll(d, 0o755)
		// A real socket: a unix listener at a short path, then moved in place.
		short := filepath.Join(os.TempDir(), "qd-"+strconv.Itoa(os.Getpid())+"-"+strconv.Itoa(pid))
		ln, err := net.Listen("unix", short)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		if err := os.Rename(short, filepath.Join(d, "docker.sock")); err != nil {
			t.Fatal(err)
		}
	}
	sock(100)
	if r := doctor.DockerSocket(prod, proc, "unix:///var/run/docker.sock"); r.Status != doctor.Pass {
		t.Fatalf("runner only: %s %q", r.Status, r.Detail)
	}
	sock(101) // the worker can reach it too
	r := doctor.DockerSocket(prod, proc, "unix:///var/run/docker.sock")
	if r.Status != doctor.Fail || !strings.Contains(r.Detail, "quavon-worker (pid 101)") {
		t.Fatalf("worker with the socket in production: %s %q", r.Status, r.Detail)
	}
	if r := doctor.DockerSocket(dev, proc, ""); r.Status != doctor.Warn {
		t.Fatalf("worker with the socket in development: %s %q", r.Status, r.Detail)
	}
	// A regular file at the path is not a socket.
	os.WriteFile(filepath.Join(proc, "102", "root", "docker.sock"), nil, 0o644)
	if r := doctor.DockerSocket(prod, proc, "unix:///docker.sock"); r.Status != doctor.Pass {
		t.Fatalf("another path: %s %q", r.Status, r.Detail)
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	rs := doctor.Run(context.Background(), doctor.Options{Service: config.ServiceBroker, Environ: []string{"QUAVON_DATABASE_URL=postgres://db/q"}, Proc: t.TempDir()})
	if rs[0].Check != "config" || rs[0].Status != doctor.Fail || !strings.Contains(rs[0].Detail, "QUAVON_DATABASE_URL") {
		t.Fatalf("a setting of another process: %+v", rs[0])
	}
	rs = doctor.Run(context.Background(), doctor.Options{Service: config.ServiceEgress, Environ: []string{"QUAVON_VALKEY_PASSWORD=x"}, Proc: t.TempDir()})
	if rs[0].Status != doctor.Fail || !strings.Contains(rs[0].Detail, "_FILE") {
		t.Fatalf("a secret not as a file: %+v", rs[0])
	}
	rs = doctor.Run(context.Background(), doctor.Options{Service: "quavon-nonsense", Proc: t.TempDir()})
	if !doctor.Failed(rs) {
		t.Fatalf("an unknown service: %+v", rs)
	}
}

func find(rs []doctor.Result, check string) doctor.Result {
	for _, r := range rs {
		if r.Check == check {
			return r
		}
	}
	return doctor.Result{Check: check, Status: "absent"}
}

func TestDatabaseAndMigrations(t *testing.T) {
	t.Parallel()
	cp := testenv.NewControlPlane(t, 2)
	u, _ := url.Parse(cp.AppURL)
	pw, _ := u.User.Password()
	u.User = url.User(u.User.Username())
	pwFile := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(pwFile, []byte(pw), 0o600)
	ctx := context.Background()
	// As a service: connected, the migrator's table out of reach (GitHub
	// is a local server, for the clock).
	gh := httptest.NewServer(http.NotFoundHandler())
	defer gh.Close()
	rs := doctor.Run(ctx, doctor.Options{Service: config.ServiceWorker, Environ: []string{"QUAVON_DATABASE_URL=" + u.String(),
		"QUAVON_DATABASE_PASSWORD_FILE=" + pwFile, "QUAVON_GITHUB_API_URL=" + gh.URL + "/", "QUAVON_GITHUB_GRAPHQL_URL=" + gh.URL + "/graphql"},
		Proc: t.TempDir()})
	if find(rs, "database").Status != doctor.Pass || find(rs, "migrations").Status != doctor.Warn || find(rs, "tenancy").Status != doctor.Pass ||
		doctor.Failed(rs) {
		t.Fatalf("the worker's role: %+v", rs)
	}
	workerRun := func() []doctor.Result {
		return doctor.Run(ctx, doctor.Options{Service: config.ServiceWorker, Environ: []string{"QUAVON_DATABASE_URL=" + u.String(),
			"QUAVON_DATABASE_PASSWORD_FILE=" + pwFile, "QUAVON_GITHUB_API_URL=" + gh.URL + "/", "QUAVON_GITHUB_GRAPHQL_URL=" + gh.URL + "/graphql"},
			Proc: t.TempDir()})
	}
	// The service's role owning a table, or able to bypass RLS: tenancy
	// fails.
	role := u.User.Username()
	for _, c := range []struct{ break_, restore, want string }{
		{"CREATE TABLE doctor_owned (x int); ALTER TABLE doctor_owned OWNER TO " + role, "DROP TABLE doctor_owned", "owns doctor_owned"},
		{"ALTER ROLE " + role + " BYPASSRLS", "ALTER ROLE " + role + " NOBYPASSRLS", "BYPASSRLS"},
	} {
		if _, err := cp.Admin.Exec(ctx, c.break_); err != nil {
			t.Fatal(err)
		}
		if r := find(workerRun(), "tenancy"); r.Status != doctor.Fail || !strings.Contains(r.Detail, c.want) {
			t.Errorf("%s: %+v", c.break_, r)
		}
		if _, err := cp.Admin.Exec(ctx, c.restore); err != nil {
			t.Fatal(err)
		}
	}
	// A tenant table without forced RLS: tenancy fails for every service.
	if _, err := cp.Admin.Exec(ctx, "ALTER TABLE repositories NO FORCE ROW LEVEL SECURITY"); err != nil {
		t.Fatal(err)
	}
	if r := find(workerRun(), "tenancy"); r.Status != doctor.Fail || !strings.Contains(r.Detail, "repositories") {
		t.Errorf("RLS not forced: %+v", r)
	}
	if _, err := cp.Admin.Exec(ctx, "ALTER TABLE repositories FORCE ROW LEVEL SECURITY"); err != nil {
		t.Fatal(err)
	}
	// As the operator.
	au, _ := url.Parse(cp.DB.AdminURL)
	apw, _ := au.User.Password()
	au.User = url.User(au.User.Username())
	os.WriteFile(pwFile, []byte(apw), 0o600)
	env := []string{"QUAVON_DATABASE_URL=" + au.String(), "QUAVON_DATABASE_PASSWORD_FILE=" + pwFile}
	run := func() []doctor.Result {
		return doctor.Run(ctx, doctor.Options{Service: config.ServiceMigrate, Environ: env, Proc: t.TempDir()})
	}
	rs = run()
	if find(rs, "database").Status != doctor.Pass || find(rs, "migrations").Status != doctor.Pass || find(rs, "tenancy").Status != doctor.Pass ||
		doctor.Failed(rs) {
		t.Fatalf("a migrated database: %+v", rs)
	}
	// A schema behind this binary.
	var last int
	cp.Admin.QueryRow(ctx, "SELECT max(version) FROM quavon_schema_migrations").Scan(&last)
	if _, err := cp.Admin.Exec(ctx, "DELETE FROM quavon_schema_migrations WHERE version = $1", last); err != nil {
		t.Fatal(err)
	}
	if r := find(run(), "migrations"); r.Status != doctor.Fail || !strings.Contains(r.Hint, "quavon migrate") {
		t.Fatalf("a pending migration: %+v", r)
	}
	// A schema ahead of it.
	cp.Admin.Exec(ctx, "INSERT INTO quavon_schema_migrations (version, name) VALUES ($1, 'x'), ($2, 'future')", last, last+1)
	if r := find(run(), "migrations"); r.Status != doctor.Fail || !strings.Contains(r.Detail, "newer") {
		t.Fatalf("a newer schema: %+v", r)
	}
	// A wrong password.
	os.WriteFile(pwFile, []byte("wrong"), 0o600)
	if r := find(run(), "database"); r.Status != doctor.Fail {
		t.Fatalf("a wrong password: %+v", r)
	}
}

func TestValkey(t *testing.T) {
	t.Parallel()
	cfg := testenv.ValkeyConfig(t, "egress")
	env := []string{"QUAVON_VALKEY_ADDR=" + cfg.Addr, "QUAVON_VALKEY_USER=egress", "QUAVON_VALKEY_PASSWORD_FILE=" + cfg.PasswordFile}
	rs := doctor.Run(context.Background(), doctor.Options{Service: config.ServiceEgress, Environ: env, Proc: t.TempDir()})
	if r := find(rs, "valkey"); r.Status != doctor.Pass {
		t.Fatalf("the egress user: %+v", r)
	}
	bad := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(bad, []byte("not-the-password"), 0o600)
	env[2] = "QUAVON_VALKEY_PASSWORD_FILE=" + bad
	rs = doctor.Run(context.Background(), doctor.Options{Service: config.ServiceEgress, Environ: env, Proc: t.TempDir()})
	if r := find(rs, "valkey"); r.Status != doctor.Fail {
		t.Fatalf("a wrong password: %+v", r)
	}
}

func TestBroker(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sock := filepath.Join(dir, "b.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if r := doctor.Broker(config.BrokerClient{Addr: "unix:" + sock}, time.Second); r.Status != doctor.Pass {
		t.Fatalf("listening: %+v", r)
	}
	ln.Close()
	if r := doctor.Broker(config.BrokerClient{Addr: "unix:" + sock}, time.Second); r.Status != doctor.Fail {
		t.Fatalf("gone: %+v", r)
	}
	tl, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := tl.Addr().String()
	tl.Close()
	if r := doctor.Broker(config.BrokerClient{Addr: addr}, time.Second); r.Status != doctor.Fail {
		t.Fatalf("tcp, nothing listening: %+v", r)
	}
}

// TestRuntime: the runner's Docker runtime as the runner checks it at
// start, with the runsc version; a platform other than the engine's, or no
// engine, fails.
func TestRuntime(t *testing.T) {
	t.Parallel()
	testenv.Docker(t)
	platform := testenv.RunscPlatform(t)
	ctx := context.Background()
	const host = "unix:///var/run/docker.sock"
	if r := doctor.Runtime(ctx, config.BackendRunsc, host, platform); r.Status != doctor.Pass || !strings.Contains(r.Detail, "runsc version ") {
		t.Errorf("the engine's runsc: %+v", r)
	}
	other := "ptrace"
	if platform == other {
		other = "systrap"
	}
	if r := doctor.Runtime(ctx, config.BackendRunsc, host, other); r.Status != doctor.Fail || !strings.Contains(r.Detail, "--platform") {
		t.Errorf("another platform: %+v", r)
	}
	if r := doctor.Runtime(ctx, config.BackendRunsc, "unix://"+filepath.Join(t.TempDir(), "none.sock"), platform); r.Status != doctor.Fail {
		t.Errorf("no engine: %+v", r)
	}
	if r := doctor.Runtime(ctx, config.BackendRuncInsecure, host, platform); r.Status != doctor.Pass {
		t.Errorf("runc: %+v", r)
	}
}

// TestHugePages: the runner's host must let gVisor have huge pages; the
// kernel's own formats of the setting, and the check only for docker-runsc.
func TestHugePages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	never := file("never", "always within_size advise [never] deny force\n")
	for _, tc := range []struct {
		file   string
		want   doctor.Status
		detail string
		hint   bool // says how to set advise
	}{
		{never, doctor.Warn, "shmem_enabled is never", true},
		{file("deny", "always within_size advise never [deny] force\n"), doctor.Warn, "is deny", true},
		{file("advise", "always within_size [advise] never deny force\n"), doctor.Pass, "is advise", false},
		{file("always", "[always] within_size advise never deny force\n"), doctor.Pass, "is always", false},
		{file("old", "always advise [never]\n"), doctor.Warn, "is never", true},
		{file("garbled", "always advise never\n"), doctor.Warn, "no selected value", false},
		{filepath.Join(dir, "absent"), doctor.Warn, "no such file", false},
	} {
		r := doctor.HugePages(tc.file)
		if r.Status != tc.want || !strings.Contains(r.Detail, tc.detail) {
			t.Errorf("%s: %s %q, want %s with %q", filepath.Base(tc.file), r.Status, r.Detail, tc.want, tc.detail)
		}
		if tc.hint && !strings.Contains(r.Hint, "echo advise > "+tc.file) {
			t.Errorf("%s: hint %q does not say how to set advise", filepath.Base(tc.file), r.Hint)
		}
	}
	run := func(backend string) doctor.Result {
		return find(doctor.Run(context.Background(), doctor.Options{Service: config.ServiceRunner, Proc: t.TempDir(), ShmemTHP: never,
			Environ: []string{"QUAVON_SANDBOX_BACKEND=" + backend, "QUAVON_SANDBOX_DOCKER_HOST=unix://" + filepath.Join(dir, "none.sock")}}), "huge-pages")
	}
	if r := run("docker-runsc"); r.Status != doctor.Warn {
		t.Errorf("quavon-sandbox-runner on docker-runsc, shmem never: %+v", r)
	}
	if r := run("docker-runc-insecure"); r.Status != "absent" {
		t.Errorf("quavon-sandbox-runner on runc: %+v", r)
	}
}

// TestHostHugePages: the services of scripts/test (internal/devenv's
// EnsureDockerd) leave this host's kernel granting gVisor huge pages, as
// scripts/scan and quavon dev do, so the sandbox tests and benchmarks run
// as a well-set-up runner host would.
func TestHostHugePages(t *testing.T) {
	t.Parallel()
	testenv.Docker(t)
	if r := doctor.HugePages(docker.ShmemTHPFile); r.Status != doctor.Pass {
		t.Fatalf("after EnsureDockerd: %s %s (%s)", r.Status, r.Detail, r.Hint)
	}
}
