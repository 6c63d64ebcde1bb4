package config

import (
	"slices"
	"strings"
)

// Service is a Quavon process (or CLI mode) with its own view of the
// settings. A service reads only the groups of settings it needs; any other
// QUAVON_* setting in its environment is refused, so a setting meant for
// another process (a private key path given to the API, say) is a start-up
// error rather than silently ignored.
type Service string

// The services.
const (
	ServiceAPI    Service = "quavon-api"
	ServiceWorker Service = "quavon-worker"
	ServiceRunner Service = "quavon-sandbox-runner"
	ServiceEgress Service = "quavon-sandbox-egress"
	ServiceBroker Service = "quavon-token-broker"
	// ServiceScan is `quavon scan`: a worker-side client and a runner in
	// one process, over a private Valkey.
	ServiceScan Service = "quavon scan"
	// ServiceMigrate is `quavon migrate` and the other database commands.
	ServiceMigrate Service = "quavon migrate"
	// ServiceKeys is `quavon keys id`.
	ServiceKeys Service = "quavon keys"
	// ServiceLLM is `quavon llm probe` (and the CLI's local model runs).
	ServiceLLM Service = "quavon llm"
	// ServicePublisher is quavon-publisher, the only writer to GitHub.
	ServicePublisher Service = "quavon-publisher"
	// ServiceGitHubSetup is `quavon github setup` (the apps' manifest flow).
	ServiceGitHubSetup Service = "quavon github setup"
	// ServiceReview is `quavon review`: `quavon scan`'s sandbox and the
	// configured review model.
	ServiceReview Service = "quavon review"
)

// group is a set of settings that belong together and are read together.
type group string

const (
	gCore        group = "core"
	gDatabase    group = "database"
	gValkey      group = "valkey"
	gPool        group = "sandbox pool"
	gSandboxKeys group = "sandbox keys"
	gSnapshot    group = "snapshots"
	gRunner      group = "runner"
	// gBackends are the Firecracker and Kubernetes backends' settings:
	// quavon-sandbox-runner only (quavon scan drives the local Docker
	// Engine).
	gBackends group = "runner backends"
	gEgress   group = "egress proxy"
	gAPI      group = "api"
	gGitHub   group = "github"
	gBroker   group = "broker"
	gFixCaps  group = "fix caps"
	gLLM      group = "model"
	gWorker   group = "worker"
	// gWeb is the dashboard quavon-api serves; gBrokerClient is how a
	// service reaches the token broker.
	gWeb          group = "dashboard"
	gBrokerClient group = "broker client"
	gPublisher    group = "publisher"
	// gReviewApp is the review app's slug (the publisher's reconcile, the
	// worker's "@<slug> review" commands).
	gReviewApp group = "review app"
	// gGitCache is the worker's hardened git cache, shared by review and
	// fix runs.
	gGitCache group = "git cache"
)

var serviceGroups = map[Service][]group{
	// The API and the worker get the github group, the broker's client
	// settings (QUAVON_BROKER_ADDR, QUAVON_BROKER_CREDENTIAL_FILE) and, for
	// the worker, the sandbox groups with the features that use them.
	ServiceAPI: {gCore, gDatabase, gAPI, gWeb, gGitHub, gBrokerClient},
	// The worker's review and fix runs share one broker client, GitHub
	// connection, git cache and sandbox client.
	ServiceWorker: {gCore, gDatabase, gFixCaps, gLLM, gWorker, gGitHub, gBrokerClient, gGitCache, gReviewApp,
		gValkey, gPool, gSandboxKeys, gSnapshot},
	ServiceRunner:  {gCore, gValkey, gPool, gSandboxKeys, gSnapshot, gRunner, gBackends},
	ServiceEgress:  {gCore, gValkey, gPool, gEgress},
	ServiceBroker:  {gCore, gGitHub, gBroker},
	ServiceScan:    {gCore, gSnapshot, gRunner},
	ServiceMigrate: {gCore, gDatabase},
	ServiceKeys:    {gCore, gSandboxKeys},
	ServiceLLM:     {gCore, gLLM},
	// The publisher: the database, GitHub's endpoints and write tokens from
	// the broker; no model, no sandbox key, no Valkey.
	ServicePublisher:   {gCore, gDatabase, gGitHub, gBrokerClient, gReviewApp, gPublisher},
	ServiceGitHubSetup: {gCore, gGitHub},
	ServiceReview:      {gCore, gSnapshot, gRunner, gLLM},
}

// Setting is one QUAVON_* variable.
type Setting struct {
	Name    string
	Default string
	// Secret marks a *_FILE setting that names a secret file; the variable
	// without _FILE is refused outright.
	Secret bool
	Doc    string
	group  group
}

// Services lists the services that read s.
func (s Setting) Services() []Service {
	var out []Service
	for svc, gs := range serviceGroups {
		if slices.Contains(gs, s.group) {
			out = append(out, svc)
		}
	}
	slices.Sort(out)
	return out
}

// registry is every setting any Quavon process reads: the one list that
// Load, the per-service views and the configuration reference use.
var registry = []Setting{
	{Name: "QUAVON_ENV", Default: string(Production), group: gCore, Doc: "`production`, `development` or `test`"},
	{Name: "QUAVON_EDITION", Default: string(Community), group: gCore, Doc: "`community` or `enterprise` (enterprise refuses the insecure backend)"},

	{Name: "QUAVON_DATABASE_URL", group: gDatabase, Doc: "PostgreSQL ≥ 15, a URL or DSN without a password; services log in as a member of `quavon_app` only"},
	{Name: "QUAVON_DATABASE_PASSWORD_FILE", Secret: true, group: gDatabase, Doc: "the database password"},

	{Name: "QUAVON_VALKEY_ADDR", Default: "127.0.0.1:6379", group: gValkey, Doc: "Valkey / Redis ≥ 7.0"},
	{Name: "QUAVON_VALKEY_USER", group: gValkey, Doc: "the process's ACL user (`deploy/valkey/README.md`)"},
	{Name: "QUAVON_VALKEY_PASSWORD_FILE", Secret: true, group: gValkey, Doc: "that user's password"},

	{Name: "QUAVON_SANDBOX_POOL", Default: "default", group: gPool, Doc: "runner pool; pool `p` uses keys `quavon-sandbox-p:*`"},
	{Name: "QUAVON_SANDBOX_SIGNING_KEY_FILE", Secret: true, group: gSandboxKeys, Doc: "the pool key: standard base64 of ≥ 32 random bytes (`quavon keys generate`)"},
	{Name: "QUAVON_SANDBOX_PREVIOUS_KEYS_FILE", Secret: true, group: gSandboxKeys, Doc: "previous pool keys, one per line, accepted for verification only"},
	{Name: "QUAVON_SANDBOX_MAX_SNAPSHOT_BYTES", Default: "134217728", group: gSnapshot, Doc: "largest compressed snapshot"},
	{Name: "QUAVON_SANDBOX_MAX_SNAPSHOT_ENTRIES", Default: "50000", group: gSnapshot, Doc: "most files and directories in one snapshot"},

	{Name: "QUAVON_SANDBOX_BACKEND", Default: string(BackendRunsc), group: gRunner, Doc: "`docker-runsc`, `docker-runc-insecure` (development only, with `QUAVON_SANDBOX_ALLOW_INSECURE=true`), `firecracker` (KVM hosts; refused without a usable `/dev/kvm`), `kube-gvisor` (Kubernetes pods with `runtimeClassName: gvisor`)"},
	{Name: "QUAVON_SANDBOX_ALLOW_INSECURE", Default: "false", group: gRunner, Doc: "allows `docker-runc-insecure` outside production"},
	{Name: "QUAVON_SANDBOX_RUNSC_PLATFORM", Default: string(PlatformSystrap), group: gRunner, Doc: "must equal the `--platform` of the engine's runsc runtime"},
	{Name: "QUAVON_SANDBOX_IMAGES_LOCK", Default: "/etc/quavon/images.lock.json", group: gRunner, Doc: "image lockfile (read-only)"},
	{Name: "QUAVON_SANDBOX_RUNNER_ID", group: gRunner, Doc: "runner id in results (default: the host name)"},
	{Name: "QUAVON_SANDBOX_CONCURRENCY", Default: "2", group: gRunner, Doc: "jobs a runner runs at once"},
	{Name: "QUAVON_SANDBOX_PRESTART", Default: "0", group: gRunner, Doc: "Docker backends: how many job shapes (image, limits, environment) get a container started ahead of their next job, each serving one job: saves the container's start (~0.2 s runc, ~0.5 s gVisor), but a waiting gVisor sandbox uses CPU (~5% of a core) and slows other work on the host; jobs with setup-step egress never get one"},
	{Name: "QUAVON_SANDBOX_LIMIT_CEILING", group: gRunner, Doc: "JSON object of every limit; each job's limits are clamped to it (default built in)"},
	{Name: "QUAVON_SANDBOX_DOCKER_HOST", Default: "unix:///var/run/docker.sock", group: gRunner, Doc: "the Docker Engine (never from a job)"},
	{Name: "QUAVON_SANDBOX_REGISTRIES", group: gRunner, Doc: "registry hosts setup steps may reach (comma-separated); empty: egress `registries` is refused"},
	{Name: "QUAVON_SANDBOX_EGRESS_NETWORK", Default: "quavon-sandbox-egress", group: gRunner, Doc: "internal Docker network shared with the proxy (created if missing)"},
	{Name: "QUAVON_SANDBOX_EGRESS_PROXY", group: gRunner, Doc: "the proxy's `ip:port` on that network"},
	{Name: "QUAVON_SANDBOX_EGRESS_HOST_PROXY", Default: "false", group: gRunner, Doc: "development only: the proxy listens on the host at the network's gateway; refused in production and enterprise"},

	{Name: "QUAVON_SANDBOX_KVM_DEVICE", Default: "/dev/kvm", group: gBackends, Doc: "firecracker: the KVM device; the runner refuses to start unless it opens read-write and answers KVM's API version"},
	{Name: "QUAVON_SANDBOX_FIRECRACKER_LOCK", Default: "/etc/quavon/vm-images.lock.json", group: gBackends, Doc: "firecracker: Firecracker, jailer, guest kernel and one ext4 rootfs per image class, each by path and SHA-256 (`deploy/images/build --rootfs`)"},
	{Name: "QUAVON_SANDBOX_FIRECRACKER_CHROOT_BASE", Default: "/srv/jailer", group: gBackends, Doc: "firecracker: the jailer's `--chroot-base-dir`; one chroot per VM below it, removed after every run"},
	{Name: "QUAVON_SANDBOX_FIRECRACKER_UID_RANGE", Default: "900000-900999", group: gBackends, Doc: "firecracker: uids (= gids) the jailer runs VMs as, one per running VM, never shared; no other user may own them"},
	{Name: "QUAVON_SANDBOX_FIRECRACKER_CGROUP_PARENT", Default: "quavon-sandbox", group: gBackends, Doc: "firecracker: cgroup v2 parent (`--parent-cgroup`) of every VM's cgroup"},
	{Name: "QUAVON_SANDBOX_FIRECRACKER_BOOT_TIMEOUT", Default: "30s", group: gBackends, Doc: "firecracker: how long a VM may take until its entry program connects over vsock"},
	{Name: "QUAVON_SANDBOX_KUBECONFIG", group: gBackends, Doc: "kube-gvisor: kubeconfig file of the runner's service account (empty: in-cluster configuration)"},
	{Name: "QUAVON_SANDBOX_KUBE_NAMESPACE", Default: "quavon-sandbox", group: gBackends, Doc: "kube-gvisor: the namespace sandbox pods run in (nothing else should)"},
	{Name: "QUAVON_SANDBOX_KUBE_RUNTIME_CLASS", Default: "gvisor", group: gBackends, Doc: "kube-gvisor: the RuntimeClass of containerd's runsc handler; it must exist"},
	{Name: "QUAVON_SANDBOX_KUBE_START_TIMEOUT", Default: "2m", group: gBackends, Doc: "kube-gvisor: how long a pod may take to be scheduled, pull its image and start"},
	{Name: "QUAVON_SANDBOX_KUBE_SECCOMP_PROFILE", group: gBackends, Doc: "kube-gvisor: a `Localhost` seccomp profile path on the node (Quavon's `seccomp.json`); empty: `RuntimeDefault`"},

	{Name: "QUAVON_SANDBOX_METRICS_LISTEN", group: gBackends, Doc: "where `quavon-sandbox-runner` serves Prometheus `/metrics`; empty (default): off, as the runner listens on no port. Give it an address only the scraper can reach"},

	{Name: "QUAVON_EGRESS_LISTEN", Default: ":3128", group: gEgress, Doc: "where `quavon-sandbox-egress` listens"},

	{Name: "QUAVON_API_LISTEN", Default: ":8080", group: gAPI, Doc: "where `quavon-api` listens"},
	{Name: "QUAVON_API_METRICS_LISTEN", Default: ":9090", group: gAPI, Doc: "where `quavon-api` serves Prometheus `/metrics`, a listener of its own; empty: off"},
	{Name: "QUAVON_GITHUB_REVIEW_WEBHOOK_SECRET_FILE", Secret: true, group: gAPI, Doc: "the review app's webhook secret (≥ 16 characters)"},
	{Name: "QUAVON_GITHUB_FIXER_WEBHOOK_SECRET_FILE", Secret: true, group: gAPI, Doc: "the Fixer app's webhook secret (≥ 16 characters)"},
	{Name: "QUAVON_GITHUB_FIXER_APP_SLUG", group: gGitHub, Doc: "the Fixer app's slug: `@<slug> fix` in an issue comment starts a fix (empty: only labels do); the publisher opens fix pull requests only when it is set, and its reconcile trusts only `<slug>[bot]`"},

	{Name: "QUAVON_WEB_PUBLIC_URL", group: gWeb, Doc: "where the dashboard is reached (`https://quavon.example.com`); empty: no dashboard. The review app's OAuth callback URL is this plus `/auth/callback`"},
	{Name: "QUAVON_GITHUB_WEB_URL", Default: "https://github.com", group: gWeb, Doc: "GitHub's web root, for the OAuth sign-in (GHES: `https://HOST`)"},
	{Name: "QUAVON_GITHUB_REVIEW_CLIENT_ID", group: gWeb, Doc: "the review app's OAuth client id (dashboard sign-in)"},
	{Name: "QUAVON_GITHUB_REVIEW_CLIENT_SECRET_FILE", Secret: true, group: gWeb, Doc: "the review app's OAuth client secret"},
	{Name: "QUAVON_WEB_SESSION_IDLE", Default: "12h", group: gWeb, Doc: "a dashboard session ends after this long without a request"},
	{Name: "QUAVON_WEB_SESSION_ABSOLUTE", Default: "168h", group: gWeb, Doc: "a dashboard session ends this long after sign-in, whatever its use"},
	{Name: "QUAVON_WEB_ADMINS", group: gWeb, Doc: "the instance admins: comma-separated code-host identities `HOST/ID` or `HOST/ID:LOGIN` (the numeric user id, as `GET /users/LOGIN` shows it, is what matches; the login is for display), e.g. `github.com/583231:octocat`. They see the dashboard's grants page (`/admin/grants`) and grant and revoke roles in every tenant; they sign in like any user, so each needs an identity in at least one tenant (`quavon admin grant`). Empty: no instance admin in the dashboard"},
	{Name: "QUAVON_WEB_INSECURE_COOKIES", Default: "false", group: gWeb, Doc: "plain-http development only: cookies without `Secure` and the `__Host-` prefix (refused in production)"},
	{Name: "QUAVON_BROKER_ADDR", Default: "unix:/run/quavon/broker.sock", group: gBrokerClient, Doc: "the token broker's address (`unix:/path` or `ip:port`)"},
	{Name: "QUAVON_BROKER_CREDENTIAL_FILE", Secret: true, group: gBrokerClient, Doc: "this service's broker credential (`quavon broker credential`); its SHA-256 is in the broker's callers file with the service's role. quavon-worker without one reads nothing on GitHub: no review runs (pull request events queue none), and fix triggers wait"},

	{Name: "QUAVON_GITHUB_API_URL", Default: "https://api.github.com/", group: gGitHub, Doc: "GitHub's REST root (GitHub Enterprise Server: `https://HOST/api/v3/`)"},
	{Name: "QUAVON_GITHUB_GRAPHQL_URL", Default: "https://api.github.com/graphql", group: gGitHub, Doc: "GitHub's GraphQL endpoint (GHES: `https://HOST/api/graphql`)"},

	{Name: "QUAVON_BROKER_LISTEN", Default: "unix:/run/quavon/broker.sock", group: gBroker, Doc: "where the broker listens: `unix:/path`, or a loopback or private `ip:port`"},
	{Name: "QUAVON_BROKER_CALLERS_FILE", group: gBroker, Doc: "callers and the token sets each may have: `role sets sha256(credential)` per line"},
	{Name: "QUAVON_GITHUB_REVIEW_APP_ID", group: gBroker, Doc: "the review app's id"},
	{Name: "QUAVON_GITHUB_REVIEW_PRIVATE_KEY_FILE", Secret: true, group: gBroker, Doc: "the review app's private key (PEM)"},
	{Name: "QUAVON_GITHUB_FIXER_APP_ID", group: gBroker, Doc: "the Fixer app's id (empty: no Fixer app)"},
	{Name: "QUAVON_GITHUB_FIXER_PRIVATE_KEY_FILE", Secret: true, group: gBroker, Doc: "the Fixer app's private key (PEM)"},

	{Name: "QUAVON_MAX_FIX_RUNS_PER_TENANT_PER_DAY", Default: "50", group: gFixCaps, Doc: "fix-run cap per tenant and UTC day (FX10)"},

	{Name: "QUAVON_GIT_CACHE_DIR", Default: "/var/lib/quavon/git", group: gGitCache, Doc: "the worker's bare repositories (0700), fetched for review and fix runs"},
	{Name: "QUAVON_GIT_CACHE_MAX_BYTES", Default: "21474836480", group: gGitCache, Doc: "the git cache's size cap; least recently used repositories are evicted"},
	{Name: "QUAVON_GITHUB_GIT_URL", Default: "https://github.com/", group: gGitCache, Doc: "the clone root: `https://HOST/` (GHES: the instance's root)"},
	{Name: "QUAVON_WORKER_REVIEW_CONCURRENCY", Default: "2", group: gWorker, Doc: "jobs of the `review` queue (pull request events, review runs) one worker runs at once"},
	{Name: "QUAVON_WORKER_FIX_CONCURRENCY", Default: "2", group: gWorker, Doc: "jobs of the `fix` queue (issue events, fix runs) one worker runs at once"},
	{Name: "QUAVON_WORKER_MAINTENANCE_CONCURRENCY", Default: "1", group: gWorker, Doc: "jobs of the `maintenance` queue (retention sweep, approval expiry) one worker runs at once"},
	{Name: "QUAVON_WORKER_SHUTDOWN_GRACE", Default: "30s", group: gWorker, Doc: "on SIGTERM, how long running jobs may finish; then they are cancelled, roll back and fail with the reason (retried later)"},
	{Name: "QUAVON_SAST_BYO_SCANNERS", group: gWorker, Doc: "bring-your-own scanner images repositories may run (`features.sast.byo`): comma-separated `byo` names of the runner's image lockfile, each also in that lockfile; empty: none. A name a policy lists that is not here is reported as a missing scanner"},
	{Name: "QUAVON_WORKER_METRICS_LISTEN", Default: ":9090", group: gWorker, Doc: "where `quavon-worker` serves Prometheus `/metrics` (its only listener); empty: off"},

	{Name: "QUAVON_GITHUB_REVIEW_APP_SLUG", group: gReviewApp, Doc: "the review app's slug. quavon-publisher (required): reconcile trusts only reviews by `<slug>[bot]` and check runs of that app; quavon-worker: `@<slug> review` comments force a review (empty: commands off)"},

	{Name: "QUAVON_PUBLISHER_CONCURRENCY", Default: "4", group: gPublisher, Doc: "jobs of the `publish` queue the publisher runs at once"},
	{Name: "QUAVON_PUBLISHER_WRITE_SPACING", Default: "1s", group: gPublisher, Doc: "minimum interval between two writes of one installation (GitHub: content-creating requests serially, a second apart); a job that must wait is snoozed, freeing its worker"},
	{Name: "QUAVON_PUBLISHER_SHUTDOWN_GRACE", Default: "30s", group: gPublisher, Doc: "on SIGTERM, how long running publish jobs may finish; then they are cancelled (an interrupted write is reconciled by the retry)"},
	{Name: "QUAVON_PUBLISHER_METRICS_LISTEN", Default: ":9090", group: gPublisher, Doc: "where `quavon-publisher` serves Prometheus `/metrics` and `/healthz` (its only listener): publish jobs by kind and outcome (snoozed = waiting for the write spacing), their latencies and the `publish` queue's depth; empty: off"},

	{Name: "QUAVON_LLM_PROVIDER", group: gLLM, Doc: "`anthropic` or `openai` (every OpenAI-compatible server); empty: no model, the model features are off"},
	{Name: "QUAVON_LLM_MODEL", group: gLLM, Doc: "model name (Azure: the deployment name)"},
	{Name: "QUAVON_LLM_BASE_URL", group: gLLM, Doc: "base URL of an OpenAI-compatible server or a proxy"},
	{Name: "QUAVON_LLM_API_KEY_FILE", Secret: true, group: gLLM, Doc: "the provider's API key"},
	{Name: "QUAVON_LLM_REQUEST_TIMEOUT", Default: "5m", group: gLLM, Doc: "one HTTP request to the provider"},
	{Name: "QUAVON_LLM_MAX_RETRIES", Default: "4", group: gLLM, Doc: "retries of 429, 529/overloaded and 5xx answers"},
	{Name: "QUAVON_LLM_RETRY_MAX_WAIT", Default: "2m", group: gLLM, Doc: "total wait of those retries"},
	{Name: "QUAVON_LLM_PRICES", group: gLLM, Doc: "JSON prices in USD per million tokens by model, over the built-in table"},
	{Name: "QUAVON_LLM_REVIEW_PROVIDER", group: gLLM, Doc: "the review model's provider (default: QUAVON_LLM_PROVIDER)"},
	{Name: "QUAVON_LLM_REVIEW_MODEL", group: gLLM, Doc: "the review model (default: QUAVON_LLM_MODEL)"},
	{Name: "QUAVON_LLM_REVIEW_BASE_URL", group: gLLM, Doc: "the review model's base URL"},
	{Name: "QUAVON_LLM_REVIEW_API_KEY_FILE", Secret: true, group: gLLM, Doc: "the review model's API key"},
	{Name: "QUAVON_LLM_REVIEW_RUN_MAX_TOKENS", Default: "2000000", group: gLLM, Doc: "tokens one review run may use"},
	{Name: "QUAVON_LLM_REVIEW_RUN_MAX_COST_USD", Default: "3", group: gLLM, Doc: "US dollars one review run may cost"},
	{Name: "QUAVON_LLM_REVIEW_DAILY_MAX_TOKENS", Default: "50000000", group: gLLM, Doc: "tokens review runs of one tenant may use per UTC day"},
	{Name: "QUAVON_LLM_REVIEW_DAILY_MAX_COST_USD", Default: "100", group: gLLM, Doc: "US dollars review runs of one tenant may cost per UTC day"},
	{Name: "QUAVON_LLM_ACCEPTANCE_PROVIDER", group: gLLM, Doc: "the acceptance model's provider (default: QUAVON_LLM_PROVIDER)"},
	{Name: "QUAVON_LLM_ACCEPTANCE_MODEL", group: gLLM, Doc: "the acceptance model (default: QUAVON_LLM_MODEL)"},
	{Name: "QUAVON_LLM_ACCEPTANCE_BASE_URL", group: gLLM, Doc: "the acceptance model's base URL"},
	{Name: "QUAVON_LLM_ACCEPTANCE_API_KEY_FILE", Secret: true, group: gLLM, Doc: "the acceptance model's API key"},
	{Name: "QUAVON_LLM_ACCEPTANCE_RUN_MAX_TOKENS", Default: "300000", group: gLLM, Doc: "tokens one acceptance run may use"},
	{Name: "QUAVON_LLM_ACCEPTANCE_RUN_MAX_COST_USD", Default: "0.5", group: gLLM, Doc: "US dollars one acceptance run may cost"},
	{Name: "QUAVON_LLM_ACCEPTANCE_DAILY_MAX_TOKENS", Default: "10000000", group: gLLM, Doc: "tokens acceptance runs of one tenant may use per UTC day"},
	{Name: "QUAVON_LLM_ACCEPTANCE_DAILY_MAX_COST_USD", Default: "20", group: gLLM, Doc: "US dollars acceptance runs of one tenant may cost per UTC day"},
	{Name: "QUAVON_LLM_FIX_PROVIDER", group: gLLM, Doc: "the fix model's provider (default: QUAVON_LLM_PROVIDER)"},
	{Name: "QUAVON_LLM_FIX_MODEL", group: gLLM, Doc: "the fix model (default: QUAVON_LLM_MODEL)"},
	{Name: "QUAVON_LLM_FIX_BASE_URL", group: gLLM, Doc: "the fix model's base URL"},
	{Name: "QUAVON_LLM_FIX_API_KEY_FILE", Secret: true, group: gLLM, Doc: "the fix model's API key"},
	{Name: "QUAVON_LLM_FIX_RUN_MAX_TOKENS", Default: "4000000", group: gLLM, Doc: "tokens one fix run may use"},
	{Name: "QUAVON_LLM_FIX_RUN_MAX_COST_USD", Default: "10", group: gLLM, Doc: "US dollars one fix run may cost"},
	{Name: "QUAVON_LLM_FIX_DAILY_MAX_TOKENS", Default: "100000000", group: gLLM, Doc: "tokens fix runs of one tenant may use per UTC day"},
	{Name: "QUAVON_LLM_FIX_DAILY_MAX_COST_USD", Default: "200", group: gLLM, Doc: "US dollars fix runs of one tenant may cost per UTC day"},
}

// Settings returns the registry, for the configuration reference and the
// doctor.
func Settings() []Setting { return slices.Clone(registry) }

func lookup(name string) (Setting, bool) {
	for _, s := range registry {
		if s.Name == name {
			return s, true
		}
	}
	return Setting{}, false
}

// secretBase returns the name a secret is refused under (X for X_FILE).
func secretBase(name string) (Setting, bool) {
	for _, s := range registry {
		if s.Secret && strings.TrimSuffix(s.Name, "_FILE") == name {
			return s, true
		}
	}
	return Setting{}, false
}
