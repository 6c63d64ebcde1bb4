// Package config reads Quavon's settings from the environment, in one place.
//
// Every setting is a QUAVON_* variable listed in one registry (Settings).
// Each service has its own view (LoadAPI, LoadWorker, LoadRunner, …) that
// reads only its groups of settings and refuses every other QUAVON_*
// variable: an unknown name (a typo never silently falls back to a
// default), and a known name that belongs to another service. Secrets are
// only ever read from files named by *_FILE variables, with secretfile.Read;
// a secret passed directly in the environment is refused, because
// environments leak (process listings, crash reports, child processes).
// QUAVON_TEST_* variables belong to the test suite and are ignored.
//
// The views check what can be checked without the domain packages (numbers,
// enums, host names, URLs, addresses); this package imports none of them,
// so linking it gives a process no sandbox key code. Domain checks (the
// pool name, the limit ceiling) are the assemblies' (internal/app), at
// start. Every loosening of a default (an insecure backend, the host proxy,
// a non-production environment) is listed in the view's Warnings for the
// service to log.
package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/quavon/quavon/internal/hostname"
	"github.com/quavon/quavon/internal/secretfile"
)

// Core is what every service reads.
type Core struct {
	Env     Env
	Edition Edition
	// Warnings lists every loosening of a default this view accepted; the
	// service logs each at start.
	Warnings []string
}

// Database is the control plane's PostgreSQL.
type Database struct {
	// URL is a postgres:// URL or DSN without a password.
	URL          string
	PasswordFile string
}

// Password reads the password file; empty when none is configured.
func (d Database) Password() (string, error) {
	if d.PasswordFile == "" {
		return "", nil
	}
	b, err := secretfile.Read("QUAVON_DATABASE_PASSWORD_FILE", d.PasswordFile, 1)
	return string(b), err
}

// Valkey connection settings.
type Valkey struct {
	Addr         string
	User         string
	PasswordFile string
}

// Snapshots caps the snapshots the worker builds and the sandbox unpacks.
type Snapshots struct {
	MaxBytes   int64
	MaxEntries int
}

// SandboxKeys names the pool key files.
type SandboxKeys struct {
	SigningKeyFile   string
	PreviousKeysFile string
}

// Runner settings of quavon-sandbox-runner (and `quavon scan`).
type Runner struct {
	Backend Backend
	// AllowInsecure must be true, outside production, for
	// docker-runc-insecure.
	AllowInsecure bool
	// RunscPlatform is checked against the engine's runsc runtimeArgs.
	RunscPlatform RunscPlatform
	ImagesLock    string
	ID            string // empty: the host name
	Concurrency   int
	// Prestart is how many job shapes a Docker backend keeps a container
	// started ahead for (internal/sandbox/runner/docker/prestart.go).
	Prestart int
	// CeilingJSON clamps every job's limits (SANDBOX_LIMIT_CEILING); empty
	// means the built-in ceiling. The runner's assembly decodes it.
	CeilingJSON string
	DockerHost  string
	// Registries is the instance allowlist of registry hosts a setup step
	// may reach; empty means egress registries is refused.
	Registries []string
	// EgressNetwork is the internal Docker network shared with the proxy.
	EgressNetwork string
	// EgressProxy is the proxy's address on that network (ip:port).
	EgressProxy string
	// EgressHostProxy: the proxy runs on the host at the network's gateway
	// (development only; refused in production and enterprise).
	EgressHostProxy bool
}

// BackendSettings are the settings of the firecracker and kube-gvisor backends
// (quavon-sandbox-runner only).
type BackendSettings struct {
	Firecracker Firecracker
	Kube        Kube
}

// Firecracker configures the firecracker backend.
type Firecracker struct {
	KVMDevice    string
	Lock         string // vm-images.lock.json
	ChrootBase   string
	UIDFirst     int // the uid (= gid) range, inclusive
	UIDLast      int
	CgroupParent string
	BootTimeout  time.Duration
}

// Kube configures the kube-gvisor backend.
type Kube struct {
	Kubeconfig     string // empty: in-cluster
	Namespace      string
	RuntimeClass   string
	StartTimeout   time.Duration
	SeccompProfile string // empty: RuntimeDefault
}

// GitHub is the code host's endpoints.
type GitHub struct {
	APIURL, GraphQLURL string
}

// Broker settings of quavon-token-broker.
type Broker struct {
	Listen      string
	CallersFile string
	// Apps: the review app is required, the Fixer app optional.
	Review, Fixer App
}

// App is one GitHub App's id and key file.
type App struct {
	ID             int64
	PrivateKeyFile string
}

// API settings of quavon-api.
type API struct {
	Listen string
	// ReviewWebhookSecretFile and FixerWebhookSecretFile hold the GitHub
	// Apps' webhook secrets.
	ReviewWebhookSecretFile, FixerWebhookSecretFile string
	// FixerSlug is the Fixer app's slug, for "@<slug> fix" comments.
	FixerSlug string
}

// Web settings of the dashboard quavon-api serves.
type Web struct {
	// PublicURL empty: no dashboard.
	PublicURL                    string
	GitHubURL                    string
	ClientID, ClientSecretFile   string
	SessionIdle, SessionAbsolute time.Duration
	InsecureCookies              bool
	// Admins are the instance admins (QUAVON_WEB_ADMINS).
	Admins []WebAdmin
}

// WebAdmin is an instance admin's code-host identity: host and numeric
// user id match; the login is for display only.
type WebAdmin struct {
	Host  string
	ID    int64
	Login string
}

// The per-service views.
type (
	// APIConfig is quavon-api's view.
	APIConfig struct {
		Core
		DB     Database
		API    API
		Web    Web
		GitHub GitHub
		Broker BrokerClient
		// MetricsListen is where /metrics is served; empty: off.
		MetricsListen string
	}
	// WorkerConfig is quavon-worker's view.
	WorkerConfig struct {
		Core
		DB  Database
		LLM LLM
		// MaxFixRunsPerTenantPerDay caps fix runs per tenant and UTC day
		// (FX10).
		MaxFixRunsPerTenantPerDay int
		// Worker is the worker's queues and shutdown.
		Worker Worker
		// GitHub, BrokerClient and Runs are the parts review and fix runs
		// share: one broker client (read tokens), one GitHub connection,
		// one git cache, one sandbox client. BrokerClient.Addr empty (no
		// credential): the worker reads nothing on GitHub, runs no review
		// or fix run, and fix triggers wait.
		GitHub       GitHub
		BrokerClient BrokerClient
		// MetricsListen is where /metrics is served; empty: off.
		MetricsListen string
		Runs          RunParts
		// ReviewAppSlug: "@<slug> review" comments force a review (empty:
		// commands off).
		ReviewAppSlug string
	}
	// RunnerConfig is quavon-sandbox-runner's view.
	RunnerConfig struct {
		Core
		Valkey      Valkey
		Pool        string
		SandboxKeys SandboxKeys
		Snapshots   Snapshots
		Runner      Runner
		Backends    BackendSettings
		// MetricsListen is where /metrics is served; empty (the default):
		// off.
		MetricsListen string
	}
	// EgressConfig is quavon-sandbox-egress's view.
	EgressConfig struct {
		Core
		Valkey Valkey
		Pool   string
		// Listen is host:port; an empty host listens on every interface.
		Listen string
	}
	// BrokerConfig is quavon-token-broker's view.
	BrokerConfig struct {
		Core
		GitHub GitHub
		Broker Broker
	}
	// ScanConfig is `quavon scan`'s view.
	ScanConfig struct {
		Core
		Snapshots Snapshots
		Runner    Runner
	}
	// MigrateConfig is the database commands' view.
	MigrateConfig struct {
		Core
		DB Database
	}
	// LLMConfig is `quavon llm`'s view.
	LLMConfig struct {
		Core
		LLM LLM
	}
	// GitHubSetupConfig is `quavon github setup`'s view.
	GitHubSetupConfig struct {
		Core
		GitHub GitHub
	}
	// KeysConfig is `quavon keys id`'s view.
	KeysConfig struct {
		Core
		SandboxKeys SandboxKeys
	}
)

// LoadAPI reads quavon-api's settings from environ (os.Environ() form).
func LoadAPI(environ []string) (APIConfig, error) {
	r, err := newReader(ServiceAPI, environ)
	if err != nil {
		return APIConfig{}, err
	}
	core := r.core()
	c := APIConfig{Core: core, DB: r.database(), API: r.api(), Web: r.web(core), GitHub: r.github(), MetricsListen: r.optionalListen("QUAVON_API_METRICS_LISTEN"),
		Broker: BrokerClient{Addr: r.vals["QUAVON_BROKER_ADDR"], CredentialFile: r.vals["QUAVON_BROKER_CREDENTIAL_FILE"]}}
	if c.Web.PublicURL != "" && c.Broker.CredentialFile == "" {
		r.fail("the dashboard (QUAVON_WEB_PUBLIC_URL) needs QUAVON_BROKER_CREDENTIAL_FILE: approvals re-check the approver's permission on GitHub")
	}
	c.Warnings = r.warnings
	return c, r.err()
}

// LoadWorker reads quavon-worker's settings.
func LoadWorker(environ []string) (WorkerConfig, error) {
	r, err := newReader(ServiceWorker, environ)
	if err != nil {
		return WorkerConfig{}, err
	}
	c := WorkerConfig{Core: r.core(), DB: r.database(), LLM: r.llm(),
		MaxFixRunsPerTenantPerDay: r.intRange("QUAVON_MAX_FIX_RUNS_PER_TENANT_PER_DAY", 1, 100_000), Worker: r.worker(),
		GitHub: r.github(), BrokerClient: BrokerClient{Addr: r.vals["QUAVON_BROKER_ADDR"], CredentialFile: r.vals["QUAVON_BROKER_CREDENTIAL_FILE"]},
		MetricsListen: r.optionalListen("QUAVON_WORKER_METRICS_LISTEN"),
		ReviewAppSlug: r.vals["QUAVON_GITHUB_REVIEW_APP_SLUG"]}
	// Without a credential the worker reads nothing on GitHub: the
	// default address alone does not turn it on.
	if c.BrokerClient.CredentialFile == "" {
		c.BrokerClient.Addr = ""
	}
	c.Runs = r.runParts(c.BrokerClient.Addr != "")
	c.Warnings = r.warnings
	return c, r.err()
}

// LoadRunner reads quavon-sandbox-runner's settings.
func LoadRunner(environ []string) (RunnerConfig, error) {
	r, err := newReader(ServiceRunner, environ)
	if err != nil {
		return RunnerConfig{}, err
	}
	core := r.core()
	c := RunnerConfig{Core: core, Valkey: r.valkey(), Pool: r.pool(), SandboxKeys: r.sandboxKeys(), Snapshots: r.snapshots(),
		Runner: r.runner(core), Backends: r.backends(), MetricsListen: r.optionalListen("QUAVON_SANDBOX_METRICS_LISTEN")}
	c.Warnings = r.warnings
	return c, r.err()
}

// LoadEgress reads quavon-sandbox-egress's settings.
func LoadEgress(environ []string) (EgressConfig, error) {
	r, err := newReader(ServiceEgress, environ)
	if err != nil {
		return EgressConfig{}, err
	}
	c := EgressConfig{Core: r.core(), Valkey: r.valkey(), Pool: r.pool(), Listen: r.listenAddr("QUAVON_EGRESS_LISTEN")}
	c.Warnings = r.warnings
	return c, r.err()
}

// LoadBroker reads quavon-token-broker's settings.
func LoadBroker(environ []string) (BrokerConfig, error) {
	r, err := newReader(ServiceBroker, environ)
	if err != nil {
		return BrokerConfig{}, err
	}
	c := BrokerConfig{Core: r.core(), GitHub: r.github(), Broker: r.broker()}
	c.Warnings = r.warnings
	return c, r.err()
}

// LoadScan reads `quavon scan`'s settings.
func LoadScan(environ []string) (ScanConfig, error) {
	r, err := newReader(ServiceScan, environ)
	if err != nil {
		return ScanConfig{}, err
	}
	core := r.core()
	c := ScanConfig{Core: core, Snapshots: r.snapshots(), Runner: r.runner(core)}
	c.Warnings = r.warnings
	return c, r.err()
}

// RunParts are the worker's settings for review and fix runs beyond the
// broker and GitHub: the git cache and the sandbox client.
type RunParts struct {
	GitCacheDir      string
	GitCacheMaxBytes int64
	GitURL           string
	Valkey           Valkey
	Pool             string
	SandboxKeys      SandboxKeys
	Snapshots        Snapshots
}

func (r *reader) runParts(enabled bool) RunParts {
	rp := RunParts{GitCacheDir: r.vals["QUAVON_GIT_CACHE_DIR"], GitCacheMaxBytes: int64(r.intRange("QUAVON_GIT_CACHE_MAX_BYTES", 0, 1<<50)),
		GitURL: r.vals["QUAVON_GITHUB_GIT_URL"], Valkey: r.valkey(), Pool: r.pool(), SandboxKeys: r.sandboxKeys(), Snapshots: r.snapshots()}
	if u, err := url.Parse(rp.GitURL); err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || !strings.HasSuffix(rp.GitURL, "/") {
		r.fail("QUAVON_GITHUB_GIT_URL %q: want an absolute https URL ending in /", rp.GitURL)
	}
	if enabled && rp.SandboxKeys.SigningKeyFile == "" {
		r.warn("review and fix runs without QUAVON_SANDBOX_SIGNING_KEY_FILE: review scanners are reported as not run, fix runs fail (run_tests needs the sandbox)")
	}
	return rp
}

// ReviewConfig is `quavon review`'s view: the scan's sandbox and the model.
type ReviewConfig struct {
	Scan ScanConfig
	LLM  LLM
}

// LoadReview reads `quavon review`'s settings.
func LoadReview(environ []string) (ReviewConfig, error) {
	r, err := newReader(ServiceReview, environ)
	if err != nil {
		return ReviewConfig{}, err
	}
	core := r.core()
	c := ReviewConfig{Scan: ScanConfig{Core: core, Snapshots: r.snapshots(), Runner: r.runner(core)}, LLM: r.llm()}
	c.Scan.Warnings = r.warnings
	return c, r.err()
}

// LoadMigrate reads the database commands' settings.
func LoadMigrate(environ []string) (MigrateConfig, error) {
	r, err := newReader(ServiceMigrate, environ)
	if err != nil {
		return MigrateConfig{}, err
	}
	c := MigrateConfig{Core: r.core(), DB: r.database()}
	c.Warnings = r.warnings
	return c, r.err()
}

// LoadKeys reads `quavon keys id`'s settings.
func LoadKeys(environ []string) (KeysConfig, error) {
	r, err := newReader(ServiceKeys, environ)
	if err != nil {
		return KeysConfig{}, err
	}
	c := KeysConfig{Core: r.core(), SandboxKeys: r.sandboxKeys()}
	c.Warnings = r.warnings
	return c, r.err()
}

// LoadGitHubSetup reads `quavon github setup`'s settings.
func LoadGitHubSetup(environ []string) (GitHubSetupConfig, error) {
	r, err := newReader(ServiceGitHubSetup, environ)
	if err != nil {
		return GitHubSetupConfig{}, err
	}
	c := GitHubSetupConfig{Core: r.core(), GitHub: r.github()}
	c.Warnings = r.warnings
	return c, r.err()
}

// LoadLLM reads `quavon llm`'s settings.
func LoadLLM(environ []string) (LLMConfig, error) {
	r, err := newReader(ServiceLLM, environ)
	if err != nil {
		return LLMConfig{}, err
	}
	c := LLMConfig{Core: r.core(), LLM: r.llm()}
	c.Warnings = r.warnings
	return c, r.err()
}

func (r *reader) llm() LLM {
	l, errs := parseLLM(r.vals)
	r.errs = append(r.errs, errs...)
	return l
}

// reader holds one service's raw values and collects every problem, so a
// misconfiguration is reported whole rather than one error per start.
type reader struct {
	svc      Service
	vals     map[string]string
	errs     []error
	warnings []string
}

func newReader(svc Service, environ []string) (*reader, error) {
	groups, ok := serviceGroups[svc]
	if !ok {
		return nil, fmt.Errorf("configuration: unknown service %q", svc)
	}
	r := &reader{svc: svc, vals: map[string]string{}}
	for _, s := range registry {
		if slices.Contains(groups, s.group) {
			r.vals[s.Name] = s.Default
		}
	}
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "QUAVON_") || strings.HasPrefix(name, "QUAVON_TEST_") {
			continue
		}
		if s, ok := secretBase(name); ok {
			r.fail("%s: secrets are read only from files; set %s to a file holding it", name, s.Name)
			continue
		}
		s, ok := lookup(name)
		switch {
		case !ok:
			r.fail("%s: unknown setting", name)
		case !slices.Contains(groups, s.group):
			r.fail("%s: a setting of %s, not of %s", name, joinServices(s.Services()), svc)
		default:
			r.vals[name] = value
		}
	}
	return r, nil
}

func joinServices(ss []Service) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = string(s)
	}
	return strings.Join(parts, ", ")
}

func (r *reader) fail(format string, args ...any) {
	r.errs = append(r.errs, fmt.Errorf(format, args...))
}

func (r *reader) warn(format string, args ...any) {
	r.warnings = append(r.warnings, fmt.Sprintf(format, args...))
}

func (r *reader) err() error {
	if err := errors.Join(r.errs...); err != nil {
		return fmt.Errorf("configuration of %s: %w", r.svc, err)
	}
	return nil
}

func (r *reader) bool(name string) bool {
	switch v := r.vals[name]; v {
	case "true":
		return true
	case "false":
		return false
	default:
		r.fail("%s %q: want true or false", name, v)
		return false
	}
}

func (r *reader) intRange(name string, lo, hi int64) int {
	n, err := strconv.ParseInt(r.vals[name], 10, 64)
	if err != nil || n < lo || n > hi {
		r.fail("%s: want %d..%d", name, lo, hi)
		return 0
	}
	return int(n)
}

func (r *reader) core() Core {
	c := Core{Env: Env(r.vals["QUAVON_ENV"]), Edition: Edition(r.vals["QUAVON_EDITION"])}
	if !c.Env.Valid() {
		r.fail("QUAVON_ENV %q: want production, development or test", c.Env)
	} else if c.Env != Production {
		r.warn("QUAVON_ENV=%s: development settings are allowed; never run it so in production", c.Env)
	}
	if !c.Edition.Valid() {
		r.fail("QUAVON_EDITION %q: want community or enterprise", c.Edition)
	}
	return c
}

func (r *reader) database() Database {
	d := Database{URL: r.vals["QUAVON_DATABASE_URL"], PasswordFile: r.vals["QUAVON_DATABASE_PASSWORD_FILE"]}
	if u := d.URL; u != "" {
		hasPassword := strings.Contains(strings.ToLower(u), "password=")
		if pu, err := url.Parse(u); err == nil && pu.User != nil {
			_, has := pu.User.Password()
			hasPassword = hasPassword || has
		}
		if hasPassword {
			r.fail("QUAVON_DATABASE_URL holds a password: put it in the file named by QUAVON_DATABASE_PASSWORD_FILE")
		}
	}
	return d
}

func (r *reader) valkey() Valkey {
	return Valkey{Addr: r.vals["QUAVON_VALKEY_ADDR"], User: r.vals["QUAVON_VALKEY_USER"], PasswordFile: r.vals["QUAVON_VALKEY_PASSWORD_FILE"]}
}

func (r *reader) pool() string { return r.vals["QUAVON_SANDBOX_POOL"] }

func (r *reader) sandboxKeys() SandboxKeys {
	return SandboxKeys{SigningKeyFile: r.vals["QUAVON_SANDBOX_SIGNING_KEY_FILE"], PreviousKeysFile: r.vals["QUAVON_SANDBOX_PREVIOUS_KEYS_FILE"]}
}

// hardMaxSnapshotBytes mirrors sandbox.HardMaxSnapshotBytes, which the
// runner's assembly checks again; this package imports no sandbox code.
const hardMaxSnapshotBytes = 1 << 30

func (r *reader) snapshots() Snapshots {
	return Snapshots{
		MaxBytes:   int64(r.intRange("QUAVON_SANDBOX_MAX_SNAPSHOT_BYTES", 1, hardMaxSnapshotBytes)),
		MaxEntries: r.intRange("QUAVON_SANDBOX_MAX_SNAPSHOT_ENTRIES", 1, 10_000_000),
	}
}

func (r *reader) runner(core Core) Runner {
	c := Runner{
		Backend:       Backend(r.vals["QUAVON_SANDBOX_BACKEND"]),
		AllowInsecure: r.bool("QUAVON_SANDBOX_ALLOW_INSECURE"),
		RunscPlatform: RunscPlatform(r.vals["QUAVON_SANDBOX_RUNSC_PLATFORM"]),
		ImagesLock:    r.vals["QUAVON_SANDBOX_IMAGES_LOCK"],
		ID:            r.vals["QUAVON_SANDBOX_RUNNER_ID"],
		Concurrency:   r.intRange("QUAVON_SANDBOX_CONCURRENCY", 1, 256),
		Prestart:      r.intRange("QUAVON_SANDBOX_PRESTART", 0, 16),
		CeilingJSON:   r.vals["QUAVON_SANDBOX_LIMIT_CEILING"],
		DockerHost:    r.vals["QUAVON_SANDBOX_DOCKER_HOST"],
		EgressNetwork: r.vals["QUAVON_SANDBOX_EGRESS_NETWORK"],
		EgressProxy:   r.vals["QUAVON_SANDBOX_EGRESS_PROXY"],
	}
	if !c.Backend.Valid() {
		r.fail("QUAVON_SANDBOX_BACKEND %q: want one of %v", c.Backend, Backends())
	}
	if !c.RunscPlatform.Valid() {
		r.fail("QUAVON_SANDBOX_RUNSC_PLATFORM %q: want systrap, ptrace or kvm", c.RunscPlatform)
	}
	if c.AllowInsecure {
		r.warn("QUAVON_SANDBOX_ALLOW_INSECURE=true: the docker-runc-insecure backend is allowed (container isolation only)")
	}
	if r.bool("QUAVON_SANDBOX_EGRESS_HOST_PROXY") {
		if core.Env == Production || core.Edition == Enterprise {
			r.fail("QUAVON_SANDBOX_EGRESS_HOST_PROXY=true exposes the host to setup steps: refused in production and in the enterprise edition")
		}
		c.EgressHostProxy = true
		r.warn("QUAVON_SANDBOX_EGRESS_HOST_PROXY=true: setup steps can reach the host's own services on the egress network's gateway")
	}
	if v := r.vals["QUAVON_SANDBOX_REGISTRIES"]; v != "" {
		for _, h := range strings.Split(v, ",") {
			h = strings.TrimSpace(h)
			if err := hostname.Validate(h); err != nil {
				r.fail("QUAVON_SANDBOX_REGISTRIES: %v", err)
				continue
			}
			c.Registries = append(c.Registries, h)
		}
	}
	if p := c.EgressProxy; p != "" {
		if _, err := netip.ParseAddrPort(p); err != nil {
			r.fail("QUAVON_SANDBOX_EGRESS_PROXY: want ip:port of the proxy on the egress network")
		}
	}
	return c
}

func (r *reader) duration(name string, lo, hi time.Duration) time.Duration {
	d, err := time.ParseDuration(r.vals[name])
	if err != nil || d < lo || d > hi {
		r.fail("%s %q: want a duration from %s to %s", name, r.vals[name], lo, hi)
	}
	return d
}

// absPath accepts a clean absolute path (or, when optional, nothing).
func (r *reader) absPath(name string, optional bool) string {
	v := r.vals[name]
	if v == "" && optional {
		return ""
	}
	if !strings.HasPrefix(v, "/") || path.Clean(v) != v {
		r.fail("%s %q: want a clean absolute path", name, v)
	}
	return v
}

var k8sNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

func (r *reader) backends() BackendSettings {
	fc := Firecracker{
		KVMDevice:    r.absPath("QUAVON_SANDBOX_KVM_DEVICE", false),
		Lock:         r.absPath("QUAVON_SANDBOX_FIRECRACKER_LOCK", false),
		ChrootBase:   r.absPath("QUAVON_SANDBOX_FIRECRACKER_CHROOT_BASE", false),
		CgroupParent: r.vals["QUAVON_SANDBOX_FIRECRACKER_CGROUP_PARENT"],
		BootTimeout:  r.duration("QUAVON_SANDBOX_FIRECRACKER_BOOT_TIMEOUT", time.Second, 10*time.Minute),
	}
	if fc.ChrootBase == "/" {
		r.fail("QUAVON_SANDBOX_FIRECRACKER_CHROOT_BASE must not be /")
	}
	lo, hi, ok := strings.Cut(r.vals["QUAVON_SANDBOX_FIRECRACKER_UID_RANGE"], "-")
	first, err1 := strconv.Atoi(lo)
	last, err2 := strconv.Atoi(hi)
	// Below 65536+1 would collide with system and sandbox users (65532).
	if !ok || err1 != nil || err2 != nil || first <= 65536 || last < first || last > 1<<31-2 {
		r.fail("QUAVON_SANDBOX_FIRECRACKER_UID_RANGE %q: want FIRST-LAST above 65536, e.g. 900000-900999", r.vals["QUAVON_SANDBOX_FIRECRACKER_UID_RANGE"])
	}
	fc.UIDFirst, fc.UIDLast = first, last
	for _, seg := range strings.Split(fc.CgroupParent, "/") {
		if seg == "" || seg == "." || seg == ".." || !k8sNameRE.MatchString(seg) {
			r.fail("QUAVON_SANDBOX_FIRECRACKER_CGROUP_PARENT %q: want a relative path of [a-z0-9-] names", fc.CgroupParent)
			break
		}
	}
	k := Kube{
		Kubeconfig:     r.absPath("QUAVON_SANDBOX_KUBECONFIG", true),
		Namespace:      r.vals["QUAVON_SANDBOX_KUBE_NAMESPACE"],
		RuntimeClass:   r.vals["QUAVON_SANDBOX_KUBE_RUNTIME_CLASS"],
		StartTimeout:   r.duration("QUAVON_SANDBOX_KUBE_START_TIMEOUT", time.Second, time.Hour),
		SeccompProfile: r.vals["QUAVON_SANDBOX_KUBE_SECCOMP_PROFILE"],
	}
	if !k8sNameRE.MatchString(k.Namespace) {
		r.fail("QUAVON_SANDBOX_KUBE_NAMESPACE %q: want a Kubernetes name", k.Namespace)
	}
	if !k8sNameRE.MatchString(k.RuntimeClass) {
		r.fail("QUAVON_SANDBOX_KUBE_RUNTIME_CLASS %q: want a Kubernetes name", k.RuntimeClass)
	}
	if p := k.SeccompProfile; p != "" && (strings.HasPrefix(p, "/") || path.Clean(p) != p || strings.HasPrefix(p, "..")) {
		r.fail("QUAVON_SANDBOX_KUBE_SECCOMP_PROFILE %q: want a path relative to the kubelet's seccomp directory", p)
	}
	return BackendSettings{Firecracker: fc, Kube: k}
}

func (r *reader) listenAddr(name string) string {
	v := r.vals[name]
	if _, port, err := net.SplitHostPort(v); err != nil {
		r.fail("%s %q: want host:port", name, v)
	} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		r.fail("%s %q: want a port 1-65535", name, v)
	}
	return v
}

// optionalListen is a host:port where empty means off and port 0 a port
// the system picks (tests).
func (r *reader) optionalListen(name string) string {
	v := r.vals[name]
	if v == "" {
		return ""
	}
	if _, port, err := net.SplitHostPort(v); err != nil {
		r.fail("%s %q: want host:port", name, v)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 || strconv.Itoa(n) != port {
		r.fail("%s %q: want a port 0-65535", name, v)
	}
	return v
}

func (r *reader) api() API {
	return API{Listen: r.vals["QUAVON_API_LISTEN"], ReviewWebhookSecretFile: r.vals["QUAVON_GITHUB_REVIEW_WEBHOOK_SECRET_FILE"],
		FixerWebhookSecretFile: r.vals["QUAVON_GITHUB_FIXER_WEBHOOK_SECRET_FILE"], FixerSlug: r.vals["QUAVON_GITHUB_FIXER_APP_SLUG"]}
}

func (r *reader) web(core Core) Web {
	w := Web{PublicURL: r.vals["QUAVON_WEB_PUBLIC_URL"], GitHubURL: r.vals["QUAVON_GITHUB_WEB_URL"],
		ClientID: r.vals["QUAVON_GITHUB_REVIEW_CLIENT_ID"], ClientSecretFile: r.vals["QUAVON_GITHUB_REVIEW_CLIENT_SECRET_FILE"],
		SessionIdle:     r.duration("QUAVON_WEB_SESSION_IDLE", time.Minute, 30*24*time.Hour),
		SessionAbsolute: r.duration("QUAVON_WEB_SESSION_ABSOLUTE", time.Minute, 90*24*time.Hour),
		InsecureCookies: r.bool("QUAVON_WEB_INSECURE_COOKIES"), Admins: r.webAdmins("QUAVON_WEB_ADMINS")}
	if w.PublicURL == "" {
		return w
	}
	if w.ClientID == "" || w.ClientSecretFile == "" {
		r.fail("the dashboard (QUAVON_WEB_PUBLIC_URL) needs QUAVON_GITHUB_REVIEW_CLIENT_ID and QUAVON_GITHUB_REVIEW_CLIENT_SECRET_FILE")
	}
	if w.SessionIdle > w.SessionAbsolute {
		r.fail("QUAVON_WEB_SESSION_IDLE is longer than QUAVON_WEB_SESSION_ABSOLUTE")
	}
	switch {
	case w.InsecureCookies && core.Env == Production:
		r.fail("QUAVON_WEB_INSECURE_COOKIES=true is refused in production")
	case w.InsecureCookies:
		r.warn("QUAVON_WEB_INSECURE_COOKIES=true: dashboard cookies travel without Secure (plain-http development only)")
	case !strings.HasPrefix(w.PublicURL, "https://"):
		r.fail("QUAVON_WEB_PUBLIC_URL %q: want https (or QUAVON_WEB_INSECURE_COOKIES=true in development)", w.PublicURL)
	}
	return w
}

// webAdmins reads "HOST/ID[:LOGIN],…".
func (r *reader) webAdmins(name string) []WebAdmin {
	var out []WebAdmin
	seen := map[string]bool{}
	for _, e := range strings.Split(r.vals[name], ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		host, rest, ok := strings.Cut(e, "/")
		idText, login, _ := strings.Cut(rest, ":")
		id, err := strconv.ParseInt(idText, 10, 64)
		switch {
		case !ok || host == "" || strings.ContainsAny(host, " /:@") || host != strings.ToLower(host):
			r.fail("%s entry %q: want HOST/ID or HOST/ID:LOGIN with a lower-case host (github.com/583231:octocat)", name, e)
			continue
		case err != nil || id <= 0 || strconv.FormatInt(id, 10) != idText:
			r.fail("%s entry %q: the id must be the user's positive numeric id, not a login", name, e)
			continue
		case len(login) > 100 || strings.ContainsAny(login, " /:,"):
			r.fail("%s entry %q: the login is 1-100 characters without spaces, slashes or colons", name, e)
			continue
		}
		key := host + "/" + idText
		if seen[key] {
			r.fail("%s: %s is listed twice", name, key)
			continue
		}
		seen[key] = true
		out = append(out, WebAdmin{Host: host, ID: id, Login: login})
	}
	return out
}

func (r *reader) github() GitHub {
	g := GitHub{APIURL: r.vals["QUAVON_GITHUB_API_URL"], GraphQLURL: r.vals["QUAVON_GITHUB_GRAPHQL_URL"]}
	for name, v := range map[string]string{"QUAVON_GITHUB_API_URL": g.APIURL, "QUAVON_GITHUB_GRAPHQL_URL": g.GraphQLURL} {
		u, err := url.Parse(v)
		if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			r.fail("%s %q: want an absolute https URL", name, v)
		} else if u.Scheme == "http" {
			r.warn("%s is plain http: tokens travel unencrypted (the emulator only)", name)
		}
	}
	return g
}

func (r *reader) broker() Broker {
	b := Broker{Listen: r.vals["QUAVON_BROKER_LISTEN"], CallersFile: r.vals["QUAVON_BROKER_CALLERS_FILE"]}
	if b.CallersFile == "" {
		r.fail("QUAVON_BROKER_CALLERS_FILE is not set: the broker grants nothing without it")
	}
	b.Review = r.app("REVIEW", true)
	b.Fixer = r.app("FIXER", false)
	return b
}

func (r *reader) app(kind string, required bool) App {
	idName, keyName := "QUAVON_GITHUB_"+kind+"_APP_ID", "QUAVON_GITHUB_"+kind+"_PRIVATE_KEY_FILE"
	a := App{PrivateKeyFile: r.vals[keyName]}
	id := r.vals[idName]
	switch {
	case id == "" && a.PrivateKeyFile == "" && !required:
	case id == "" || a.PrivateKeyFile == "":
		r.fail("%s and %s: set both", idName, keyName)
	default:
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil || n <= 0 {
			r.fail("%s %q: want the app's numeric id", idName, id)
		}
		a.ID = n
	}
	return a
}
