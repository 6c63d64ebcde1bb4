// Package doctor checks a Quavon install from the host and the environment
// of one of its processes (`quavon doctor`): each check gives pass, warn or
// fail with what it found and a hint to fix it.
//
// The checks and the condition each fails on:
//
//	config       the process's view refuses its environment (unknown
//	             settings, secrets not as files, bad values)
//	backend      docker-runc-insecure in production (fail) or elsewhere
//	             (warn); firecracker without a usable KVM device (fail)
//	huge-pages   (docker-runsc) the host's kernel gives gVisor no huge
//	             pages for the sandbox's memory (shmem_enabled never or
//	             deny: warn, with the line that sets advise)
//	placement    enterprise edition with the sandbox runner on the same host
//	             as quavon-api or quavon-worker (fail)
//	docker-socket a Quavon process other than the runner can reach the
//	             Docker socket in its own file system (fail; warn in
//	             development, where everything shares one host)
//	database     the database is unreachable as the configured role (fail)
//	migrations   the schema is behind or ahead of this binary (fail; with
//	             the operator's settings, --service "quavon migrate": a
//	             service role cannot read the migrator's table, a warning)
//	valkey       Valkey is unreachable or refuses the ACL user (fail)
//	broker       the token broker does not accept a connection (fail)
//	webhook-secret (quavon-api) the review app's webhook secret is not set
//	             (fail; the Fixer's: warn), not a file secretfile accepts
//	             (fail), or readable by group or others (warn)
//	clock-skew   (api, worker, publisher, broker) this host's clock and the
//	             Date of GitHub's API answer differ by SkewWarn (5 s, warn)
//	             or SkewFail (30 s, fail); GitHub unreachable (fail)
//	github-app   (api, publisher: through the broker) an app's installation
//	             lacks a permission of github.AppPermissions or an event of
//	             github.AppEvents, the broker holds no review app key, or
//	             GitHub refuses to list the installations (fail); more
//	             permissions than needed, a suspended installation, no
//	             Fixer app or no installation (warn)
//	model        (quavon-worker) a configured feature's model does not
//	             answer llm.Probe with a well-formed tool call within
//	             llm.ProbeCeiling (fail); no model at all (warn)
//
// With --canary (quavon-worker), a self-test of the live install
// (canary.go): a signed sandbox job through the worker's client runs the
// escape probe, built in the job from source by the go image class, with a
// fresh canary in the doctor's environment and in a 0600 file here, and
// the worker's *_FILE settings' paths to read; the fix agent loop runs in
// process with the eval harness's obey-injection policy on a repository
// whose issue and file inject instructions. Every attempt must fail.
//
//	canary-network   the job reached TCP, UDP, IPv6 or DNS, saw an
//	                 interface other than loopback, opened a raw or packet
//	                 socket or a tun device (fail)
//	canary-secrets   the canary in the job's or PID 1's environment, a
//	                 credential-like key there, a host file read (the
//	                 canary file, the worker's secret files, directly or
//	                 through /proc/1/root), cloud metadata reached, mounted
//	                 secrets, PID 1's memory, or the canary in an artefact
//	                 (fail)
//	canary-escape    the Docker socket present, a host process visible,
//	                 capabilities held, a read-only path written, mount,
//	                 ptrace, setuid, exec from /tmp or a call of the
//	                 seccomp profile's deny list allowed (fail)
//	canary-injection a denied path or the canary survived ValidatePatch,
//	                 the unknown tool ran, or the canary reached an output
//	                 channel (fail)
//
// Each of the three job checks fails when the job did not run (no signing
// key, no runner, no go image class).
package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/client"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/sandbox/runner/docker"
	"github.com/quavon/quavon/internal/sandbox/runner/firecracker"
	"github.com/quavon/quavon/internal/valkey"
)

// Status is a check's outcome.
type Status string

const (
	Pass Status = "pass"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Result is one check's outcome.
type Result struct {
	Check  string `json:"check"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	Hint   string `json:"hint,omitempty"`
}

// Options say what to check.
type Options struct {
	// Service is the process whose environment Environ is.
	Service config.Service
	Environ []string
	// Proc is the proc file system (default /proc): the placement and
	// Docker socket checks read the processes running on this host.
	Proc string
	// ShmemTHP is the kernel's huge page setting for shared memory
	// (default docker.ShmemTHPFile).
	ShmemTHP string
	// Timeout bounds each network check (default 5 s).
	Timeout time.Duration
	// ModelTimeout bounds the model probe (default 2 min: a cold local
	// model loads first).
	ModelTimeout time.Duration
	// Canary (quavon-worker only) adds the self-test: the probe job
	// through the worker's sandbox client and the injection through the
	// fix path (canary.go). CanaryTimeout bounds the job (default 5 min).
	Canary        bool
	CanaryTimeout time.Duration
}

// Services doctor knows the environment of.
var Services = []config.Service{config.ServiceAPI, config.ServiceWorker, config.ServicePublisher, config.ServiceRunner,
	config.ServiceEgress, config.ServiceBroker, config.ServiceMigrate}

// Run runs every check that applies to o.Service.
func Run(ctx context.Context, o Options) []Result {
	if o.Proc == "" {
		o.Proc = "/proc"
	}
	if o.ShmemTHP == "" {
		o.ShmemTHP = docker.ShmemTHPFile
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Second
	}
	if o.ModelTimeout == 0 {
		o.ModelTimeout = 2 * time.Minute
	}
	env := lookup(o.Environ)
	core := config.Core{Env: config.Env(env("QUAVON_ENV")), Edition: config.Edition(env("QUAVON_EDITION"))}
	var out []Result
	var db *config.Database
	var vk *config.Valkey
	var broker *config.BrokerClient
	var ghAPI string          // GitHub's API root, for the clock
	var webhooks *config.API  // quavon-api's webhook secrets
	var model *config.LLM     // the worker's models
	var runs *config.RunParts // the worker's sandbox client (--canary)
	var err error
	switch o.Service {
	case config.ServiceAPI:
		var c config.APIConfig
		c, err = config.LoadAPI(o.Environ)
		db, broker, ghAPI, webhooks = &c.DB, &c.Broker, c.GitHub.APIURL, &c.API
	case config.ServiceWorker:
		var c config.WorkerConfig
		c, err = config.LoadWorker(o.Environ)
		db, ghAPI, model, runs = &c.DB, c.GitHub.APIURL, &c.LLM, &c.Runs
	case config.ServicePublisher:
		var c config.PublisherConfig
		c, err = config.LoadPublisher(o.Environ)
		db, broker, ghAPI = &c.DB, &c.Broker, c.GitHub.APIURL
	case config.ServiceRunner:
		var c config.RunnerConfig
		c, err = config.LoadRunner(o.Environ)
		vk = &c.Valkey
	case config.ServiceEgress:
		var c config.EgressConfig
		c, err = config.LoadEgress(o.Environ)
		vk = &c.Valkey
	case config.ServiceBroker:
		var c config.BrokerConfig
		c, err = config.LoadBroker(o.Environ)
		ghAPI = c.GitHub.APIURL
	case config.ServiceMigrate:
		var c config.MigrateConfig
		c, err = config.LoadMigrate(o.Environ)
		db = &c.DB
	default:
		return []Result{{Check: "config", Status: Fail, Detail: fmt.Sprintf("unknown service %q", o.Service),
			Hint: "one of " + fmt.Sprint(Services)}}
	}
	if err != nil {
		out = append(out, Result{Check: "config", Status: Fail, Detail: err.Error(), Hint: "fix the setting named (docs/configuration.md lists each process's settings)"})
		db, vk, broker, ghAPI, webhooks, model, runs = nil, nil, nil, "", nil, nil, nil
	} else {
		out = append(out, Result{Check: "config", Status: Pass, Detail: fmt.Sprintf("%s accepts its environment", o.Service)})
	}
	if o.Service == config.ServiceRunner {
		out = append(out, Backend(core, env("QUAVON_SANDBOX_BACKEND"), env("QUAVON_SANDBOX_KVM_DEVICE")))
		if b := config.Backend(env("QUAVON_SANDBOX_BACKEND")); b == config.BackendRunsc || b == config.BackendRuncInsecure {
			cctx, cancel := context.WithTimeout(ctx, o.Timeout)
			out = append(out, Runtime(cctx, b, env("QUAVON_SANDBOX_DOCKER_HOST"), env("QUAVON_SANDBOX_RUNSC_PLATFORM")))
			cancel()
		}
		if config.Backend(env("QUAVON_SANDBOX_BACKEND")) == config.BackendRunsc {
			out = append(out, HugePages(o.ShmemTHP))
		}
	}
	out = append(out, Placement(core, o.Proc), DockerSocket(core, o.Proc, env("QUAVON_SANDBOX_DOCKER_HOST")))
	if db != nil {
		cctx, cancel := context.WithTimeout(ctx, o.Timeout)
		out = append(out, Database(cctx, *db, o.Service)...)
		cancel()
	}
	if broker != nil && broker.CredentialFile != "" {
		b := Broker(*broker, o.Timeout)
		out = append(out, b)
		if b.Status == Pass {
			out = append(out, Apps(ctx, *broker, 3*o.Timeout)...)
		}
	}
	if vk != nil {
		cctx, cancel := context.WithTimeout(ctx, o.Timeout)
		out = append(out, Valkey(cctx, *vk))
		cancel()
	}
	if webhooks != nil {
		out = append(out, WebhookSecrets(*webhooks)...)
	}
	if ghAPI != "" {
		out = append(out, ClockSkew(ctx, ghAPI, o.Timeout))
	}
	if model != nil {
		out = append(out, Model(ctx, *model, o.ModelTimeout)...)
	}
	if o.Canary {
		out = append(out, workerCanary(ctx, o, runs)...)
	}
	return out
}

// lookup reads a setting from environ, or its registry default.
func lookup(environ []string) func(string) string {
	m := map[string]string{}
	for _, s := range config.Settings() {
		m[s.Name] = s.Default
	}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return func(k string) string { return m[k] }
}

// Backend checks the sandbox backend against the environment (SB6) and,
// for firecracker, the KVM device.
func Backend(core config.Core, backend, kvm string) Result {
	r := Result{Check: "backend"}
	switch config.Backend(backend) {
	case config.BackendRuncInsecure:
		if core.Env == config.Production || core.Edition == config.Enterprise {
			r.Status, r.Detail = Fail, fmt.Sprintf("docker-runc-insecure (container isolation only) in %s/%s", core.Env, core.Edition)
			r.Hint = "use docker-runsc (gVisor), firecracker or kube-gvisor"
			return r
		}
		r.Status, r.Detail, r.Hint = Warn, "docker-runc-insecure: container isolation only (development)", "use docker-runsc for anything but development"
	case config.BackendFirecracker:
		if err := firecracker.ProbeKVM(kvm); err != nil {
			r.Status, r.Detail, r.Hint = Fail, err.Error(), "run the runner on bare metal or with nested virtualisation, or choose docker-runsc"
			return r
		}
		r.Status, r.Detail = Pass, "firecracker with a usable KVM device "+kvm
	case config.BackendRunsc, config.BackendKubeGVisor:
		r.Status, r.Detail = Pass, backend+" (gVisor)"
	default:
		r.Status, r.Detail, r.Hint = Fail, fmt.Sprintf("unknown backend %q", backend), fmt.Sprint("one of ", config.Backends())
	}
	return r
}

// Runtime shows the Docker backend's effective runtime (SB11): the
// runner's own start-up check of the engine (docker.New: a runsc runtime
// with the configured --platform and --oci-seccomp), and the version of
// the runsc binary the engine runs, read with --version on this host.
func Runtime(ctx context.Context, backend config.Backend, dockerHost, platform string) Result {
	r := Result{Check: "runtime"}
	cli, err := client.NewClientWithOpts(client.WithHost(dockerHost), client.WithAPIVersionNegotiation())
	if err != nil {
		r.Status, r.Detail, r.Hint = Fail, err.Error(), "QUAVON_SANDBOX_DOCKER_HOST names the Docker Engine the runner uses"
		return r
	}
	defer cli.Close()
	if _, err := docker.New(ctx, cli, docker.Mode(backend), platform); err != nil {
		r.Status, r.Detail, r.Hint = Fail, err.Error(), "deploy/images/README.md and scripts/lib/runsc.sh show the engine's runsc runtime"
		return r
	}
	if backend == config.BackendRuncInsecure {
		r.Status, r.Detail = Pass, "runc (container isolation only)"
		return r
	}
	info, err := cli.Info(ctx)
	if err != nil {
		r.Status, r.Detail = Fail, "docker info: "+err.Error()
		return r
	}
	path := info.Runtimes["runsc"].Path
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	version, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if err != nil || !strings.HasPrefix(version, "runsc version ") {
		r.Status, r.Detail = Warn, fmt.Sprintf("runsc (%s) on platform %s; its version is not readable on this host (%v)", path, platform, err)
		r.Hint = "run quavon doctor on the runner's host to see the runsc version"
		return r
	}
	r.Status, r.Detail = Pass, fmt.Sprintf("%s (%s), platform %s, --oci-seccomp", version, path, platform)
	return r
}

// HugePages checks that the host's kernel grants gVisor's request for huge
// pages on the sandbox's memory (docker.ShmemTHPFile). Without them jobs
// run more slowly, no less safely: a warning.
func HugePages(file string) Result {
	r := Result{Check: "huge-pages"}
	v, err := docker.ShmemTHP(file)
	switch {
	case err != nil:
		r.Status, r.Detail = Warn, err.Error()
		r.Hint = "gVisor asks for huge pages on a kernel with transparent huge pages (CONFIG_TRANSPARENT_HUGEPAGE)"
	case !docker.ShmemTHPServesGVisor(v):
		r.Status, r.Detail = Warn, fmt.Sprintf("shmem_enabled is %s: %s", v, docker.ShmemTHPCost)
		r.Hint = "echo advise > " + file + " (only memory that asks for huge pages gets them; keep it across reboots, e.g. with sysfsutils or a systemd-tmpfiles line: w " + file + " - - - - advise)"
	default:
		r.Status, r.Detail = Pass, fmt.Sprintf("shmem_enabled is %s: gVisor's application memory gets huge pages", v)
	}
	return r
}

// processes lists the Quavon service processes on this host by name, with
// their pids.
func processes(proc string) map[string][]int {
	out := map[string][]int{}
	ents, _ := os.ReadDir(proc)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(proc, e.Name(), "comm"))
		if err != nil {
			continue
		}
		name := strings.TrimSpace(string(b))
		// comm is cut at 15 bytes: quavon-sandbox-runner is "quavon-sandbox-".
		for _, svc := range []string{"quavon-api", "quavon-worker", "quavon-publisher", "quavon-token-broker", "quavon-sandbox-runner", "quavon-sandbox-egress"} {
			if name == svc || (len(svc) > 15 && name == svc[:15] && matchesExe(proc, e.Name(), svc)) {
				out[svc] = append(out[svc], pid)
			}
		}
	}
	return out
}

func matchesExe(proc, pid, svc string) bool {
	b, err := os.ReadFile(filepath.Join(proc, pid, "cmdline"))
	if err != nil {
		return false
	}
	argv0, _, _ := strings.Cut(string(b), "\x00")
	return filepath.Base(argv0) == svc
}

// Placement fails in the enterprise edition when the sandbox runner runs on
// the same host as quavon-api or quavon-worker (spec §3 Placement).
func Placement(core config.Core, proc string) Result {
	r := Result{Check: "placement"}
	ps := processes(proc)
	runner := len(ps["quavon-sandbox-runner"]) > 0
	var with []string
	for _, svc := range []string{"quavon-api", "quavon-worker"} {
		if len(ps[svc]) > 0 {
			with = append(with, svc)
		}
	}
	switch {
	case !runner:
		r.Status, r.Detail = Pass, "no sandbox runner on this host"
	case len(with) == 0:
		r.Status, r.Detail = Pass, "the sandbox runner runs on this host without quavon-api or quavon-worker"
	case core.Edition == config.Enterprise:
		r.Status, r.Detail = Fail, "the sandbox runner runs on the same host as "+strings.Join(with, " and ")
		r.Hint = "the enterprise edition needs the runner on hosts of its own (spec §3 Placement)"
	default:
		r.Status, r.Detail = Warn, "the sandbox runner runs on the same host as "+strings.Join(with, " and ")
		r.Hint = "put the runner on a host of its own (required in the enterprise edition)"
	}
	return r
}

// DockerSocket fails when a Quavon process other than the runner can
// reach the Docker socket in its own file system (its mount namespace,
// through /proc/PID/root): only the runner may hold it (SB11).
func DockerSocket(core config.Core, proc, dockerHost string) Result {
	r := Result{Check: "docker-socket"}
	sock := "/var/run/docker.sock"
	if p, ok := strings.CutPrefix(dockerHost, "unix://"); ok && p != "" {
		sock = p
	}
	ps := processes(proc)
	var holders []string
	checked := 0
	for svc, pids := range ps {
		if svc == "quavon-sandbox-runner" {
			continue
		}
		for _, pid := range pids {
			fi, err := os.Stat(filepath.Join(proc, strconv.Itoa(pid), "root", sock))
			if errors.Is(err, os.ErrPermission) {
				continue
			}
			checked++
			if err == nil && fi.Mode()&os.ModeSocket != 0 {
				holders = append(holders, fmt.Sprintf("%s (pid %d)", svc, pid))
			}
		}
	}
	slices.Sort(holders)
	switch {
	case len(holders) == 0 && checked == 0:
		r.Status, r.Detail = Pass, "no other Quavon process on this host to check"
	case len(holders) == 0:
		r.Status, r.Detail = Pass, fmt.Sprintf("%s is out of reach of the %d other Quavon process(es) here", sock, checked)
	case core.Env == config.Production:
		r.Status, r.Detail = Fail, sock+" is reachable by "+strings.Join(holders, ", ")
		r.Hint = "mount the Docker socket into the runner's container only (compose, Helm)"
	default:
		r.Status, r.Detail = Warn, sock+" is reachable by "+strings.Join(holders, ", ")
		r.Hint = "in production only the runner may reach it"
	}
	return r
}

// Database checks the connection as the configured role, tenancy (every
// tenant table under forced row-level security with the tenant policy,
// owned by quavon_owner; a service's role neither superuser, nor
// BYPASSRLS, nor the owner of anything) and that the schema is exactly
// this binary's.
func Database(ctx context.Context, cfg config.Database, service config.Service) []Result {
	db, err := postgres.OpenConfigured(ctx, cfg, 1)
	if err != nil {
		return []Result{{Check: "database", Status: Fail, Detail: err.Error(), Hint: "check QUAVON_DATABASE_URL, the password file and that PostgreSQL runs"}}
	}
	defer db.Close()
	out := []Result{{Check: "database", Status: Pass, Detail: "connected"}, Tenancy(ctx, db.Pool, service)}
	ms, err := postgres.Migrations()
	if err != nil {
		return append(out, Result{Check: "migrations", Status: Fail, Detail: err.Error()})
	}
	var have int
	if err := db.Pool.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM quavon_schema_migrations").Scan(&have); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42501" {
			// A service role may not read the migrator's table.
			return append(out, Result{Check: "migrations", Status: Warn, Detail: "not readable as this service's role",
				Hint: "run quavon doctor --service 'quavon migrate' with the operator's database settings"})
		}
		return append(out, Result{Check: "migrations", Status: Fail, Detail: "reading quavon_schema_migrations: " + err.Error(), Hint: "run quavon migrate"})
	}
	switch {
	case have < len(ms):
		return append(out, Result{Check: "migrations", Status: Fail, Detail: fmt.Sprintf("schema at %d, this binary needs %d", have, len(ms)), Hint: "run quavon migrate"})
	case have > len(ms):
		return append(out, Result{Check: "migrations", Status: Fail, Detail: fmt.Sprintf("schema at %d, newer than this binary's %d", have, len(ms)), Hint: "run the newer quavon"})
	}
	return append(out, Result{Check: "migrations", Status: Pass, Detail: fmt.Sprintf("schema at %d (current)", have)})
}

// Tenancy is the tenancy check of Database (spec: RLS forced everywhere,
// the services' role owns nothing). The operator's role (quavon migrate)
// may own and bypass: only the tables are checked for it.
func Tenancy(ctx context.Context, db *pgxpool.Pool, service config.Service) Result {
	problems, err := postgres.CheckTenancy(ctx, db)
	if err != nil {
		return Result{Check: "tenancy", Status: Fail, Detail: "reading the catalog: " + err.Error()}
	}
	if service != config.ServiceMigrate {
		var role string
		var super, bypass bool
		var owned []string
		if err := db.QueryRow(ctx, `SELECT current_user, rolsuper, rolbypassrls,
				coalesce((SELECT array_agg(c.relname ORDER BY c.relname) FROM pg_class c
					WHERE c.relowner = r.oid AND c.relnamespace = 'public'::regnamespace), '{}')
			FROM pg_roles r WHERE r.rolname = current_user`).Scan(&role, &super, &bypass, &owned); err != nil {
			return Result{Check: "tenancy", Status: Fail, Detail: "reading the role: " + err.Error()}
		}
		switch {
		case super:
			problems = append(problems, fmt.Sprintf("the role %s is a superuser", role))
		case bypass:
			problems = append(problems, fmt.Sprintf("the role %s has BYPASSRLS", role))
		}
		if len(owned) > 0 {
			problems = append(problems, fmt.Sprintf("the role %s owns %s", role, strings.Join(owned[:min(len(owned), 5)], ", ")))
		}
	}
	if len(problems) > 0 {
		detail := strings.Join(problems[:min(len(problems), 5)], "; ")
		if len(problems) > 5 {
			detail += fmt.Sprintf("; and %d more", len(problems)-5)
		}
		return Result{Check: "tenancy", Status: Fail, Detail: detail,
			Hint: "a service connects as a login role that is only a member of quavon_app (no superuser, no BYPASSRLS, owning nothing); a table changed by hand gets back ENABLE and FORCE ROW LEVEL SECURITY, its tenant policy and OWNER TO quavon_owner as internal/postgres/migrations/0001_control_plane.sql sets them"}
	}
	return Result{Check: "tenancy", Status: Pass, Detail: "every tenant table under forced row-level security, owned by quavon_owner"}
}

// Valkey checks that the ACL user logs in.
func Valkey(ctx context.Context, cfg config.Valkey) Result {
	c, err := valkey.Open(ctx, valkey.Config{Addr: cfg.Addr, Username: cfg.User, PasswordFile: cfg.PasswordFile})
	if err != nil {
		return Result{Check: "valkey", Status: Fail, Detail: err.Error(), Hint: "check QUAVON_VALKEY_ADDR, the user and its password file (deploy/valkey/README.md)"}
	}
	c.Close()
	return Result{Check: "valkey", Status: Pass, Detail: "logged in as " + cfg.User}
}

// Broker checks that the token broker's address accepts a connection.
func Broker(cfg config.BrokerClient, timeout time.Duration) Result {
	network, addr := "tcp", cfg.Addr
	if p, ok := strings.CutPrefix(cfg.Addr, "unix:"); ok {
		network, addr = "unix", p
	}
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return Result{Check: "broker", Status: Fail, Detail: err.Error(), Hint: "start quavon-token-broker, or fix QUAVON_BROKER_ADDR"}
	}
	c.Close()
	return Result{Check: "broker", Status: Pass, Detail: "the token broker answers at " + cfg.Addr}
}

// Failed says whether any result failed.
func Failed(rs []Result) bool {
	for _, r := range rs {
		if r.Status == Fail {
			return true
		}
	}
	return false
}

// WriteText writes one line per result.
func WriteText(w io.Writer, rs []Result) {
	for _, r := range rs {
		fmt.Fprintf(w, "%-4s  %-16s %s\n", r.Status, r.Check, r.Detail)
		if r.Hint != "" && r.Status != Pass {
			fmt.Fprintf(w, "      %-16s fix: %s\n", "", r.Hint)
		}
	}
}

// WriteJSON writes the results as one JSON object.
func WriteJSON(w io.Writer, rs []Result) error {
	return json.NewEncoder(w).Encode(map[string]any{"ok": !Failed(rs), "checks": rs})
}
