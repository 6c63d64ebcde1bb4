// Package config reads Quavon's settings from the environment, in one place.
//
// Every setting is a QUAVON_* variable. Secrets are only ever read from
// files named by *_FILE variables: a secret passed directly in the
// environment is refused, because environments leak (process listings,
// crash reports, child processes). Unknown QUAVON_* variables are refused
// too, so a typo never silently falls back to a default. QUAVON_TEST_*
// variables belong to the test suite and are ignored here.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/snapshot"
)

// Env is the deployment environment. The zero value is not valid; Load
// defaults to production.
type Env string

// Environments.
const (
	Production  Env = "production"
	Development Env = "development"
	Test        Env = "test"
)

// Config is every setting a Quavon process may read.
type Config struct {
	Env     Env
	Edition Edition
	Sandbox Sandbox
	Runner  Runner
	Egress  Egress
	Valkey  Valkey
	DB      Database
	API     API
	// MaxFixRunsPerTenantPerDay caps fix runs per tenant and UTC day (FX10).
	MaxFixRunsPerTenantPerDay int
	// LLM is the model configuration (llm.go).
	LLM LLM
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
	b, err := os.ReadFile(d.PasswordFile)
	if err != nil {
		return "", fmt.Errorf("QUAVON_DATABASE_PASSWORD_FILE: %w", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// API settings of quavon-api.
type API struct {
	Listen string
	// ReviewWebhookSecretFile and FixerWebhookSecretFile hold the GitHub
	// Apps' webhook secrets.
	ReviewWebhookSecretFile, FixerWebhookSecretFile string
}

// Egress settings of quavon-sandbox-egress.
type Egress struct {
	// Listen is host:port; an empty host listens on every interface.
	Listen string
}

// Edition is community (self-hosted) or enterprise (hosted, multi-tenant).
type Edition string

// Editions.
const (
	Community  Edition = "community"
	Enterprise Edition = "enterprise"
)

// Runner settings of quavon-sandbox-runner.
type Runner struct {
	// Backend is docker-runsc, docker-runc-insecure or firecracker.
	Backend string
	// AllowInsecure must be true, outside production, for
	// docker-runc-insecure.
	AllowInsecure bool
	// RunscPlatform is checked against the engine's runsc runtimeArgs.
	RunscPlatform string
	ImagesLock    string
	ID            string // empty: the host name
	Concurrency   int
	// Ceiling clamps every job's limits (SANDBOX_LIMIT_CEILING).
	Ceiling    sandbox.Limits
	DockerHost string
	// Registries is the instance allowlist of registry hosts a setup step
	// may reach (QUAVON_SANDBOX_REGISTRIES, comma-separated); empty means
	// egress registries is refused.
	Registries []string
	// EgressNetwork is the internal Docker network shared with the proxy.
	EgressNetwork string
	// EgressProxy is the proxy's address on that network (ip:port).
	EgressProxy string
	// EgressHostProxy: the proxy runs on the host at the network's gateway
	// (development only; refused in production and enterprise).
	EgressHostProxy bool
}

// DefaultCeiling is SANDBOX_LIMIT_CEILING unless configured.
var DefaultCeiling = sandbox.Limits{
	CPUMillis: 2000, MemoryBytes: 4 << 30, Pids: 1024, WallClockSeconds: 1800, SetupSeconds: 900,
	WorkBytes: 4 << 30, TmpBytes: 1 << 30, OutputBytes: 8 << 20, NoFile: 4096, FileSizeBytes: 2 << 30,
}

// Sandbox settings shared by the worker and the runner.
type Sandbox struct {
	Pool             string
	SigningKeyFile   string
	PreviousKeysFile string
	MaxSnapshotBytes int64
	// MaxSnapshotEntries caps files and directories in one snapshot.
	MaxSnapshotEntries int
}

// Valkey connection settings.
type Valkey struct {
	Addr         string
	User         string
	PasswordFile string
}

// The variables Load knows, with their defaults.
var known = map[string]string{
	"QUAVON_ENV":                             string(Production),
	"QUAVON_SANDBOX_POOL":                    sandbox.DefaultPool,
	"QUAVON_SANDBOX_SIGNING_KEY_FILE":        "",
	"QUAVON_SANDBOX_PREVIOUS_KEYS_FILE":      "",
	"QUAVON_SANDBOX_MAX_SNAPSHOT_BYTES":      strconv.Itoa(sandbox.DefaultMaxSnapshotBytes),
	"QUAVON_SANDBOX_MAX_SNAPSHOT_ENTRIES":    strconv.Itoa(snapshot.DefaultMaxEntries),
	"QUAVON_EDITION":                         string(Community),
	"QUAVON_SANDBOX_BACKEND":                 "docker-runsc",
	"QUAVON_SANDBOX_ALLOW_INSECURE":          "false",
	"QUAVON_SANDBOX_RUNSC_PLATFORM":          "systrap",
	"QUAVON_SANDBOX_IMAGES_LOCK":             "/etc/quavon/images.lock.json",
	"QUAVON_SANDBOX_RUNNER_ID":               "",
	"QUAVON_SANDBOX_CONCURRENCY":             "2",
	"QUAVON_SANDBOX_LIMIT_CEILING":           "",
	"QUAVON_SANDBOX_DOCKER_HOST":             "unix:///var/run/docker.sock",
	"QUAVON_SANDBOX_REGISTRIES":              "",
	"QUAVON_SANDBOX_EGRESS_NETWORK":          "quavon-sandbox-egress",
	"QUAVON_SANDBOX_EGRESS_PROXY":            "",
	"QUAVON_SANDBOX_EGRESS_HOST_PROXY":       "false",
	"QUAVON_EGRESS_LISTEN":                   ":3128",
	"QUAVON_VALKEY_ADDR":                     "127.0.0.1:6379",
	"QUAVON_VALKEY_USER":                     "",
	"QUAVON_VALKEY_PASSWORD_FILE":            "",
	"QUAVON_DATABASE_URL":                    "",
	"QUAVON_DATABASE_PASSWORD_FILE":          "",
	"QUAVON_API_LISTEN":                      ":8080",
	"QUAVON_MAX_FIX_RUNS_PER_TENANT_PER_DAY": "50",
	// The model layer (llm.go). A feature's empty PROVIDER, MODEL, BASE_URL
	// or API_KEY_FILE inherits the default endpoint's.
	"QUAVON_LLM_PROVIDER":                      "",
	"QUAVON_LLM_MODEL":                         "",
	"QUAVON_LLM_BASE_URL":                      "",
	"QUAVON_LLM_API_KEY_FILE":                  "",
	"QUAVON_LLM_REQUEST_TIMEOUT":               "5m",
	"QUAVON_LLM_MAX_RETRIES":                   "4",
	"QUAVON_LLM_RETRY_MAX_WAIT":                "2m",
	"QUAVON_LLM_PRICES":                        "",
	"QUAVON_LLM_REVIEW_PROVIDER":               "",
	"QUAVON_LLM_REVIEW_MODEL":                  "",
	"QUAVON_LLM_REVIEW_BASE_URL":               "",
	"QUAVON_LLM_REVIEW_API_KEY_FILE":           "",
	"QUAVON_LLM_REVIEW_RUN_MAX_TOKENS":         "2000000",
	"QUAVON_LLM_REVIEW_RUN_MAX_COST_USD":       "3",
	"QUAVON_LLM_REVIEW_DAILY_MAX_TOKENS":       "50000000",
	"QUAVON_LLM_REVIEW_DAILY_MAX_COST_USD":     "100",
	"QUAVON_LLM_ACCEPTANCE_PROVIDER":           "",
	"QUAVON_LLM_ACCEPTANCE_MODEL":              "",
	"QUAVON_LLM_ACCEPTANCE_BASE_URL":           "",
	"QUAVON_LLM_ACCEPTANCE_API_KEY_FILE":       "",
	"QUAVON_LLM_ACCEPTANCE_RUN_MAX_TOKENS":     "300000",
	"QUAVON_LLM_ACCEPTANCE_RUN_MAX_COST_USD":   "0.5",
	"QUAVON_LLM_ACCEPTANCE_DAILY_MAX_TOKENS":   "10000000",
	"QUAVON_LLM_ACCEPTANCE_DAILY_MAX_COST_USD": "20",
	"QUAVON_LLM_FIX_PROVIDER":                  "",
	"QUAVON_LLM_FIX_MODEL":                     "",
	"QUAVON_LLM_FIX_BASE_URL":                  "",
	"QUAVON_LLM_FIX_API_KEY_FILE":              "",
	"QUAVON_LLM_FIX_RUN_MAX_TOKENS":            "4000000",
	"QUAVON_LLM_FIX_RUN_MAX_COST_USD":          "10",
	"QUAVON_LLM_FIX_DAILY_MAX_TOKENS":          "100000000",
	"QUAVON_LLM_FIX_DAILY_MAX_COST_USD":        "200",
}

// secretNames are refused outright: their _FILE form must be used.
var secretNames = []string{
	"QUAVON_SANDBOX_SIGNING_KEY", "QUAVON_SANDBOX_PREVIOUS_KEYS", "QUAVON_VALKEY_PASSWORD",
	"QUAVON_ENCRYPTION_KEY", "QUAVON_DATABASE_PASSWORD", "QUAVON_GITHUB_REVIEW_WEBHOOK_SECRET",
	"QUAVON_GITHUB_FIXER_WEBHOOK_SECRET", "QUAVON_LLM_API_KEY", "QUAVON_LLM_REVIEW_API_KEY",
	"QUAVON_LLM_ACCEPTANCE_API_KEY", "QUAVON_LLM_FIX_API_KEY",
}

// Load reads environ (os.Environ() form) and validates it. Every problem is
// reported, not just the first.
func Load(environ []string) (Config, error) {
	vals := make(map[string]string, len(known))
	for k, v := range known {
		vals[k] = v
	}
	var errs []error
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "QUAVON_") || strings.HasPrefix(name, "QUAVON_TEST_") {
			continue
		}
		if slices.Contains(secretNames, name) {
			errs = append(errs, fmt.Errorf("%s: secrets are read only from files; set %s_FILE to a file holding it", name, name))
			continue
		}
		if _, ok := known[name]; !ok {
			errs = append(errs, fmt.Errorf("%s: unknown setting", name))
			continue
		}
		vals[name] = value
	}

	c := Config{
		Env:     Env(vals["QUAVON_ENV"]),
		Edition: Edition(vals["QUAVON_EDITION"]),
		Egress:  Egress{Listen: vals["QUAVON_EGRESS_LISTEN"]},
		Runner: Runner{
			Backend:       vals["QUAVON_SANDBOX_BACKEND"],
			RunscPlatform: vals["QUAVON_SANDBOX_RUNSC_PLATFORM"],
			ImagesLock:    vals["QUAVON_SANDBOX_IMAGES_LOCK"],
			ID:            vals["QUAVON_SANDBOX_RUNNER_ID"],
			DockerHost:    vals["QUAVON_SANDBOX_DOCKER_HOST"],
			Ceiling:       DefaultCeiling,
			EgressNetwork: vals["QUAVON_SANDBOX_EGRESS_NETWORK"],
			EgressProxy:   vals["QUAVON_SANDBOX_EGRESS_PROXY"],
		},
		Sandbox: Sandbox{
			Pool:             vals["QUAVON_SANDBOX_POOL"],
			SigningKeyFile:   vals["QUAVON_SANDBOX_SIGNING_KEY_FILE"],
			PreviousKeysFile: vals["QUAVON_SANDBOX_PREVIOUS_KEYS_FILE"],
		},
		Valkey: Valkey{
			Addr:         vals["QUAVON_VALKEY_ADDR"],
			User:         vals["QUAVON_VALKEY_USER"],
			PasswordFile: vals["QUAVON_VALKEY_PASSWORD_FILE"],
		},
	}
	switch c.Env {
	case Production, Development, Test:
	default:
		errs = append(errs, fmt.Errorf("QUAVON_ENV %q: want production, development or test", c.Env))
	}
	if _, err := sandbox.NamesFor(c.Sandbox.Pool); err != nil {
		errs = append(errs, fmt.Errorf("QUAVON_SANDBOX_POOL: %w", err))
	}
	n, err := strconv.ParseInt(vals["QUAVON_SANDBOX_MAX_SNAPSHOT_BYTES"], 10, 64)
	if err != nil || n <= 0 || n > sandbox.HardMaxSnapshotBytes {
		errs = append(errs, fmt.Errorf("QUAVON_SANDBOX_MAX_SNAPSHOT_BYTES: want 1..%d", sandbox.HardMaxSnapshotBytes))
	}
	c.Sandbox.MaxSnapshotBytes = n
	e, err := strconv.Atoi(vals["QUAVON_SANDBOX_MAX_SNAPSHOT_ENTRIES"])
	if err != nil || e <= 0 || e > 10_000_000 {
		errs = append(errs, errors.New("QUAVON_SANDBOX_MAX_SNAPSHOT_ENTRIES: want 1..10000000"))
	}
	c.Sandbox.MaxSnapshotEntries = e
	switch c.Edition {
	case Community, Enterprise:
	default:
		errs = append(errs, fmt.Errorf("QUAVON_EDITION %q: want community or enterprise", c.Edition))
	}
	switch v := vals["QUAVON_SANDBOX_ALLOW_INSECURE"]; v {
	case "true", "false":
		c.Runner.AllowInsecure = v == "true"
	default:
		errs = append(errs, fmt.Errorf("QUAVON_SANDBOX_ALLOW_INSECURE %q: want true or false", v))
	}
	switch c.Runner.RunscPlatform {
	case "systrap", "ptrace", "kvm":
	default:
		errs = append(errs, fmt.Errorf("QUAVON_SANDBOX_RUNSC_PLATFORM %q: want systrap, ptrace or kvm", c.Runner.RunscPlatform))
	}
	if n, err := strconv.Atoi(vals["QUAVON_SANDBOX_CONCURRENCY"]); err != nil || n < 1 || n > 256 {
		errs = append(errs, errors.New("QUAVON_SANDBOX_CONCURRENCY: want 1..256"))
	} else {
		c.Runner.Concurrency = n
	}
	if _, port, err := net.SplitHostPort(c.Egress.Listen); err != nil {
		errs = append(errs, fmt.Errorf("QUAVON_EGRESS_LISTEN %q: want host:port", c.Egress.Listen))
	} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		errs = append(errs, fmt.Errorf("QUAVON_EGRESS_LISTEN %q: want a port 1-65535", c.Egress.Listen))
	}
	switch v := vals["QUAVON_SANDBOX_EGRESS_HOST_PROXY"]; v {
	case "false":
	case "true":
		if c.Env == Production || c.Edition == Enterprise {
			errs = append(errs, errors.New("QUAVON_SANDBOX_EGRESS_HOST_PROXY=true exposes the host to setup steps: refused in production and in the enterprise edition"))
		}
		c.Runner.EgressHostProxy = true
	default:
		errs = append(errs, fmt.Errorf("QUAVON_SANDBOX_EGRESS_HOST_PROXY %q: want true or false", v))
	}
	if v := vals["QUAVON_SANDBOX_REGISTRIES"]; v != "" {
		for _, h := range strings.Split(v, ",") {
			h = strings.TrimSpace(h)
			if err := sandbox.ValidateHost(h); err != nil {
				errs = append(errs, fmt.Errorf("QUAVON_SANDBOX_REGISTRIES: %w", err))
				continue
			}
			c.Runner.Registries = append(c.Runner.Registries, h)
		}
	}
	if p := c.Runner.EgressProxy; p != "" {
		if ap, err := netip.ParseAddrPort(p); err != nil || !ap.Addr().Is4() && !ap.Addr().Is6() {
			errs = append(errs, errors.New("QUAVON_SANDBOX_EGRESS_PROXY: want ip:port of the proxy on the egress network"))
		}
	}
	if v := vals["QUAVON_SANDBOX_LIMIT_CEILING"]; v != "" {
		dec := json.NewDecoder(strings.NewReader(v))
		dec.DisallowUnknownFields()
		var l sandbox.Limits
		if err := dec.Decode(&l); err != nil {
			errs = append(errs, fmt.Errorf("QUAVON_SANDBOX_LIMIT_CEILING: want a JSON object of every limit: %w", err))
		} else if err := l.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("QUAVON_SANDBOX_LIMIT_CEILING: %w", err))
		} else {
			c.Runner.Ceiling = l
		}
	}
	c.DB = Database{URL: vals["QUAVON_DATABASE_URL"], PasswordFile: vals["QUAVON_DATABASE_PASSWORD_FILE"]}
	if u := c.DB.URL; u != "" {
		hasPassword := strings.Contains(strings.ToLower(u), "password=")
		if pu, err := url.Parse(u); err == nil && pu.User != nil {
			_, has := pu.User.Password()
			hasPassword = hasPassword || has
		}
		if hasPassword {
			errs = append(errs, errors.New("QUAVON_DATABASE_URL holds a password: put it in the file named by QUAVON_DATABASE_PASSWORD_FILE"))
		}
	}
	c.API = API{Listen: vals["QUAVON_API_LISTEN"], ReviewWebhookSecretFile: vals["QUAVON_GITHUB_REVIEW_WEBHOOK_SECRET_FILE"],
		FixerWebhookSecretFile: vals["QUAVON_GITHUB_FIXER_WEBHOOK_SECRET_FILE"]}
	if n, err := strconv.Atoi(vals["QUAVON_MAX_FIX_RUNS_PER_TENANT_PER_DAY"]); err != nil || n < 1 || n > 100000 {
		errs = append(errs, errors.New("QUAVON_MAX_FIX_RUNS_PER_TENANT_PER_DAY: want 1..100000"))
	} else {
		c.MaxFixRunsPerTenantPerDay = n
	}
	llm, llmErrs := parseLLM(vals)
	c.LLM = llm
	errs = append(errs, llmErrs...)
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("configuration: %w", err)
	}
	return c, nil
}

// SnapshotLimits are the caps on snapshots the worker builds and the sandbox
// unpacks.
func (c Config) SnapshotLimits() snapshot.Limits {
	return snapshot.Limits{MaxBytes: c.Sandbox.MaxSnapshotBytes, MaxEntries: c.Sandbox.MaxSnapshotEntries}
}

// SandboxKeys loads the pool key ring; a process that signs or verifies
// sandbox jobs refuses to start without a valid one.
func (c Config) SandboxKeys() (*sandbox.KeyRing, error) {
	if c.Sandbox.SigningKeyFile == "" {
		return nil, errors.New("QUAVON_SANDBOX_SIGNING_KEY_FILE is not set")
	}
	return sandbox.LoadKeyRing(c.Sandbox.SigningKeyFile, c.Sandbox.PreviousKeysFile)
}
