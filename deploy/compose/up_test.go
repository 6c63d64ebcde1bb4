package compose_test

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/testenv"
)

// baseImage is deploy/images' debootstrap base (bash, coreutils): the
// probes below run in it, inside the network namespaces of the services.
const baseImage = "quavon/sandbox-base:bookworm"

// TestComposeUp brings compose.yaml up as an operator would (Docker
// Compose v2, init-secrets, the images of deploy/compose/build, PostgreSQL
// and Valkey built offline with --offline-deps) and checks the running
// stack: every service up (migrate done, Postgres healthy, nothing
// restarting), the api's /healthz on the published port, /healthz of the
// api's, worker's and publisher's metrics listeners from the metrics
// network, the Docker socket in the runner alone, the runner unable to
// reach Postgres or the api (while it reaches Valkey, and the api reaches
// Postgres, so the probe can tell), and the egress proxy alone on the
// egress network.
func TestComposeUp(t *testing.T) {
	if testing.Short() {
		t.Skip("brings the whole stack up")
	}
	testenv.Root(t, "init-secrets chowns the secret files to their readers")
	testenv.Docker(t)
	lock := testenv.ImagesLock(t)
	platform := testenv.RunscPlatform(t)
	if err := exec.Command("docker", "compose", "version").Run(); err != nil {
		if testenv.Required() {
			t.Fatalf("docker compose (Compose v2) is required (QUAVON_TEST_REQUIRE_SERVICES=1) but does not run: %v; scripts/test installs it", err)
		}
		t.Skipf("docker compose (Compose v2) not available: %v", err)
	}
	if err := exec.Command("docker", "image", "inspect", baseImage).Run(); err != nil {
		t.Fatalf("%s is missing: deploy/images/build (scripts/test runs it) makes it", baseImage)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// scripts/test builds the images before go test (QUAVON_TEST_COMPOSE_TAG);
	// by hand, the test builds them (a cold build takes long).
	tag := os.Getenv("QUAVON_TEST_COMPOSE_TAG")
	build := tag == ""
	if build {
		tag = "composetest"
	}
	start := time.Now()
	if build {
		run(t, root, nil, "deploy/compose/build", "--tag", tag)
	}
	cmd := exec.Command("deploy/compose/build", "--offline-deps", "--tag", tag)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("deploy/compose/build --offline-deps: %v\n%s", err, stderr.String())
	}
	deps := strings.Fields(string(out))
	if len(deps) != 2 {
		t.Fatalf("build --offline-deps printed %q", deps)
	}
	for _, bin := range []string{"quavon", "quavon-api", "quavon-worker", "quavon-publisher", "quavon-token-broker", "quavon-sandbox-runner", "quavon-sandbox-egress"} {
		if err := exec.Command("docker", "image", "inspect", "quavon/"+bin+":"+tag).Run(); err != nil {
			t.Fatalf("image quavon/%s:%s is missing (deploy/compose/build --tag %s)", bin, tag, tag)
		}
	}
	t.Logf("images ready in %s", time.Since(start).Round(time.Second))

	// The operator's layout: compose.yaml beside init-secrets and the
	// Postgres init script, the Valkey ACL template one level up.
	dir := t.TempDir()
	composeDir := filepath.Join(dir, "deploy", "compose")
	for src, dst := range map[string]string{
		"compose.yaml":                "compose.yaml",
		"init-secrets":                "init-secrets",
		"postgres/10-quavon-roles.sh": "postgres/10-quavon-roles.sh",
		"../valkey/users.acl.tmpl":    "../valkey/users.acl.tmpl",
	} {
		copyFile(t, filepath.Join(root, "deploy", "compose", src), filepath.Join(composeDir, dst))
	}
	// What `quavon github setup --out secrets` writes: the apps' keys and
	// secrets (made here; no GitHub is reached).
	secrets := filepath.Join(composeDir, "secrets")
	if err := os.MkdirAll(secrets, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, app := range []string{"review", "fixer"} {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(secrets, app+"_private_key"), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
		writeFile(t, filepath.Join(secrets, app+"_webhook_secret"), []byte(testenv.RandomString(t, "abcdefghijklmnopqrstuvwxyz0123456789", 32)))
	}
	writeFile(t, filepath.Join(secrets, "review_client_secret"), []byte(testenv.RandomString(t, "abcdef0123456789", 40)))
	quavon := filepath.Join(dir, "quavon")
	run(t, root, nil, "go", "build", "-o", quavon, "./cmd/quavon")
	run(t, composeDir, nil, "./init-secrets", "--quavon", quavon)

	port := freePort(t)
	project := "quavontest" + strings.ToLower(testenv.RandomString(t, "abcdefghijklmnopqrstuvwxyz", 6))
	env := []string{
		"QUAVON_VERSION=" + tag, "QUAVON_POSTGRES_IMAGE=" + deps[0], "QUAVON_VALKEY_IMAGE=" + deps[1],
		"QUAVON_IMAGES_LOCK=" + lock, "QUAVON_SANDBOX_RUNSC_PLATFORM=" + platform,
		"QUAVON_API_PORT=127.0.0.1:" + strconv.Itoa(port),
		"QUAVON_GITHUB_REVIEW_APP_ID=1001", "QUAVON_GITHUB_FIXER_APP_ID=1002", "QUAVON_GITHUB_REVIEW_APP_SLUG=quavon-review",
	}
	compose := func(args ...string) (string, error) {
		return runErr(composeDir, env, "docker", append([]string{"compose", "-p", project, "-f", "compose.yaml"}, args...)...)
	}
	// A run killed before its clean-up leaves its project behind, holding
	// the fixed subnets (broker, sandbox-egress) and the egress network's
	// fixed name: take such leftovers down first (one bring-up test runs
	// on a Docker Engine at a time).
	stale, err := runErr("", nil, "docker", "network", "ls", "--filter", "label=com.docker.compose.project",
		"--format", `{{.Label "com.docker.compose.project"}}`)
	if err != nil {
		t.Fatalf("docker network ls: %v\n%s", err, stale)
	}
	for _, p := range slices.Compact(slices.Sorted(slices.Values(strings.Fields(stale)))) {
		if !strings.HasPrefix(p, "quavontest") {
			continue
		}
		t.Logf("taking down %s, left behind by an earlier run", p)
		if out, err := runErr(composeDir, env, "docker", "compose", "-p", p, "-f", "compose.yaml", "down", "--volumes",
			"--remove-orphans", "--timeout", "10"); err != nil {
			t.Fatalf("docker compose -p %s down: %v\n%s", p, err, out)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := compose("logs", "--no-color", "--tail", "40")
			t.Logf("docker compose logs:\n%s", out)
		}
		down := time.Now()
		if out, err := compose("down", "--volumes", "--remove-orphans", "--timeout", "10"); err != nil {
			t.Errorf("docker compose down: %v\n%s", err, out)
		}
		t.Logf("docker compose down in %s", time.Since(down).Round(time.Second))
	})
	up := time.Now()
	if out, err := compose("up", "--detach", "--no-build", "--pull", "never", "--quiet-pull"); err != nil {
		t.Fatalf("docker compose up: %v\n%s", err, out)
	}

	// Every service up: migrate exited 0, Postgres healthy, the others
	// running, and the api answering on its published port.
	want := []string{"api", "egress", "migrate", "postgres", "publisher", "runner", "token-broker", "valkey", "worker"}
	var ps []psEntry
	deadline := time.Now().Add(3 * time.Minute)
	for {
		out, err := compose("ps", "--all", "--format", "json")
		if err != nil {
			t.Fatalf("docker compose ps: %v\n%s", err, out)
		}
		ps = parsePS(t, out)
		if stackUp(ps, want) && httpStatus("http://127.0.0.1:"+strconv.Itoa(port)+"/healthz") == http.StatusNoContent {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stack did not come up within 3 minutes: %+v", ps)
		}
		time.Sleep(time.Second)
	}
	t.Logf("stack up in %s", time.Since(up).Round(time.Second))
	containers := map[string]string{} // service → container id
	for _, p := range ps {
		containers[p.Service] = p.ID
	}

	// /healthz of each metrics listener, from the metrics network (where a
	// Prometheus would be attached).
	for _, svc := range []string{"api", "worker", "publisher"} {
		out, err := runErr("", nil, "docker", "run", "--rm", "--network", project+"_metrics", baseImage, "timeout", "10", "bash", "-c",
			`exec 3<>/dev/tcp/`+svc+`/9090 && printf 'GET /healthz HTTP/1.0\r\nHost: x\r\n\r\n' >&3 && head -n 1 <&3`)
		if err != nil || !strings.Contains(out, " 204 ") {
			t.Errorf("%s's metrics /healthz from the metrics network: %v %q", svc, err, out)
		}
	}

	// The worker's git (review and fix runs clone and fetch with it, over
	// HTTPS): as the worker's user in its read-only container, a repository
	// in the git cache volume, and the HTTPS remote helper there (the
	// connection is refused; the helper is not missing).
	if out, err := compose("exec", "-T", "worker", "git", "init", "-q", "--bare", "/var/lib/quavon/git/probe.git"); err != nil {
		t.Errorf("git init in the worker's git cache: %v\n%s", err, out)
	} else if out, err := compose("exec", "-T", "worker", "rm", "-rf", "/var/lib/quavon/git/probe.git"); err != nil {
		t.Errorf("rm in the worker's container: %v\n%s", err, out)
	}
	if out, err := compose("exec", "-T", "worker", "git", "ls-remote", "https://127.0.0.1:9/x.git"); err == nil ||
		strings.Contains(out, "remote-https") || !strings.Contains(out, "127.0.0.1") {
		t.Errorf("git over HTTPS in the worker's container: %v\n%s", err, out)
	}

	// The Docker socket: in the runner, in nothing else.
	for svc, id := range containers {
		var mounts []struct{ Source, Destination string }
		inspect(t, id, "{{json .Mounts}}", &mounts)
		sock := slices.ContainsFunc(mounts, func(m struct{ Source, Destination string }) bool {
			return strings.HasSuffix(m.Source, "docker.sock") || strings.HasSuffix(m.Destination, "docker.sock")
		})
		if sock != (svc == "runner") {
			t.Errorf("%s: Docker socket mounted = %v", svc, sock)
		}
	}

	// SB5 in the running stack: from the runner's network namespace
	// Postgres and the api are unreachable, by name and by address, while
	// Valkey is reachable; from the api's, Postgres is (the probe works).
	pgIP := address(t, containers["postgres"], project+"_backend")
	apiIP := address(t, containers["api"], project+"_backend")
	probe := func(ns, host string, port int) bool {
		_, err := runErr("", nil, "docker", "run", "--rm", "--network", "container:"+containers[ns], baseImage, "timeout", "5", "bash", "-c",
			fmt.Sprintf("exec 3<>/dev/tcp/%s/%d", host, port))
		return err == nil
	}
	// The probes run side by side: an unreachable address costs its
	// timeout.
	type target struct {
		ns, host string
		port     int
		want     bool
	}
	targets := []target{
		{"runner", "valkey", 6379, true}, {"api", pgIP, 5432, true},
		{"runner", "postgres", 5432, false}, {"runner", pgIP, 5432, false}, {"runner", "api", 8080, false},
		{"runner", apiIP, 8080, false}, {"runner", "token-broker", 8443, false}, {"runner", "172.29.10.10", 8443, false},
		{"runner", "worker", 9090, false},
	}
	got := make([]bool, len(targets))
	var wg sync.WaitGroup
	for i, tg := range targets {
		wg.Add(1)
		go func() { defer wg.Done(); got[i] = probe(tg.ns, tg.host, tg.port) }()
	}
	wg.Wait()
	for i, tg := range targets {
		switch {
		case got[i] == tg.want:
		case tg.want:
			t.Errorf("the %s cannot reach %s:%d: the probe cannot tell", tg.ns, tg.host, tg.port)
		default:
			t.Errorf("SB5: the %s reaches %s:%d", tg.ns, tg.host, tg.port)
		}
	}

	// The egress proxy alone on the egress network.
	var members map[string]struct{ Name string }
	inspectNetwork(t, "quavon-sandbox-egress", &members)
	alone := len(members) == 1
	for id := range members {
		alone = alone && containers["egress"] != "" && strings.HasPrefix(id, containers["egress"])
	}
	if !alone {
		t.Errorf("quavon-sandbox-egress members %+v, want the egress proxy (%s) alone", members, containers["egress"])
	}

	t.Logf("checks done %s after up", time.Since(up).Round(time.Second))

	// Nothing restarted behind the checks' back.
	for svc, id := range containers {
		var restarts int
		inspect(t, id, "{{json .RestartCount}}", &restarts)
		if restarts != 0 {
			t.Errorf("%s restarted %d times", svc, restarts)
		}
	}
}

type psEntry struct {
	ID, Service, State, Health string
	ExitCode                   int
}

// parsePS reads `docker compose ps --format json`: one object per line (or
// one array, as older Compose v2 releases print).
func parsePS(t *testing.T, out string) []psEntry {
	t.Helper()
	out = strings.TrimSpace(out)
	var ps []psEntry
	if strings.HasPrefix(out, "[") {
		if err := json.Unmarshal([]byte(out), &ps); err != nil {
			t.Fatalf("docker compose ps: %v\n%s", err, out)
		}
		return ps
	}
	for _, line := range strings.Split(out, "\n") {
		if line == "" {
			continue
		}
		var p psEntry
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatalf("docker compose ps: %v\n%s", err, line)
		}
		ps = append(ps, p)
	}
	return ps
}

func stackUp(ps []psEntry, want []string) bool {
	seen := map[string]bool{}
	for _, p := range ps {
		switch {
		case p.Service == "migrate" && p.State == "exited" && p.ExitCode == 0:
		case p.Service == "postgres" && p.State == "running" && p.Health == "healthy":
		case p.Service != "migrate" && p.Service != "postgres" && p.State == "running":
		default:
			return false
		}
		seen[p.Service] = true
	}
	for _, s := range want {
		if !seen[s] {
			return false
		}
	}
	return len(seen) == len(want)
}

func httpStatus(url string) int {
	c := http.Client{Timeout: 3 * time.Second}
	res, err := c.Get(url)
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

func inspect(t *testing.T, id, format string, v any) {
	t.Helper()
	out, err := runErr("", nil, "docker", "inspect", "--format", format, id)
	if err != nil {
		t.Fatalf("docker inspect %s: %v\n%s", id, err, out)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("docker inspect %s: %v\n%s", id, err, out)
	}
}

func inspectNetwork(t *testing.T, name string, v any) {
	t.Helper()
	out, err := runErr("", nil, "docker", "network", "inspect", "--format", "{{json .Containers}}", name)
	if err != nil {
		t.Fatalf("docker network inspect %s: %v\n%s", name, err, out)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("docker network inspect %s: %v\n%s", name, err, out)
	}
}

// address is a container's IPv4 address on a network.
func address(t *testing.T, id, network string) string {
	t.Helper()
	var nets map[string]struct{ IPAddress string }
	inspect(t, id, "{{json .NetworkSettings.Networks}}", &nets)
	ip := nets[network].IPAddress
	if net.ParseIP(ip) == nil {
		t.Fatalf("container %s has no address on %s: %+v", id, network, nets)
	}
	return ip
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	out, err := runErr(dir, env, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

func runErr(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	return out.String(), err
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, fi.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
