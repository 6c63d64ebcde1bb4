package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/secretfile"
)

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err := LoadRunner([]string{"HOME=/root", "QUAVON_TEST_VALKEY_ADDR=x"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Env != Production || len(c.Warnings) != 0 {
		t.Fatalf("QUAVON_ENV defaults to %q (warnings %q), want production and none", c.Env, c.Warnings)
	}
	if c.Pool != "default" || c.Snapshots.MaxBytes != 128<<20 || c.Snapshots.MaxEntries != 50_000 {
		t.Fatalf("sandbox defaults %+v %+v", c.Pool, c.Snapshots)
	}
	if c.Runner.Backend != BackendRunsc || c.Runner.AllowInsecure || c.Edition != Community || c.Runner.CeilingJSON != "" ||
		c.Runner.RunscPlatform != PlatformSystrap {
		t.Fatalf("runner defaults %+v", c.Runner)
	}
}

func TestLoadRefuses(t *testing.T) {
	t.Parallel()
	type load func([]string) error
	runner := func(e []string) error { _, err := LoadRunner(e); return err }
	api := func(e []string) error { _, err := LoadAPI(e); return err }
	egress := func(e []string) error { _, err := LoadEgress(e); return err }
	worker := func(e []string) error { _, err := LoadWorker(e); return err }
	broker := func(e []string) error { _, err := LoadBroker(e); return err }
	cases := []struct {
		load load
		env  []string
		want string
	}{
		{runner, []string{"QUAVON_SANDBOX_SIGNING_KEY=abc"}, "QUAVON_SANDBOX_SIGNING_KEY: secrets are read only from files; set QUAVON_SANDBOX_SIGNING_KEY_FILE"},
		{runner, []string{"QUAVON_VALKEY_PASSWORD=abc"}, "QUAVON_VALKEY_PASSWORD_FILE"},
		{api, []string{"QUAVON_GITHUB_REVIEW_PRIVATE_KEY=abc"}, "QUAVON_GITHUB_REVIEW_PRIVATE_KEY_FILE"},
		{runner, []string{"QUAVON_SANDBOX_SIGNNG_KEY_FILE=/x"}, "QUAVON_SANDBOX_SIGNNG_KEY_FILE: unknown setting"},
		{runner, []string{"QUAVON_ENV=prod"}, `QUAVON_ENV "prod"`},
		{runner, []string{"QUAVON_ENV="}, `QUAVON_ENV ""`},
		{runner, []string{"QUAVON_SANDBOX_MAX_SNAPSHOT_BYTES=-1"}, "QUAVON_SANDBOX_MAX_SNAPSHOT_BYTES"},
		{runner, []string{"QUAVON_SANDBOX_MAX_SNAPSHOT_BYTES=2147483648"}, "QUAVON_SANDBOX_MAX_SNAPSHOT_BYTES"},
		{runner, []string{"QUAVON_SANDBOX_MAX_SNAPSHOT_ENTRIES=0"}, "QUAVON_SANDBOX_MAX_SNAPSHOT_ENTRIES"},
		{runner, []string{"QUAVON_SANDBOX_MAX_SNAPSHOT_ENTRIES=many"}, "QUAVON_SANDBOX_MAX_SNAPSHOT_ENTRIES"},
		{runner, []string{"QUAVON_EDITION=free"}, "QUAVON_EDITION"},
		{runner, []string{"QUAVON_SANDBOX_EGRESS_HOST_PROXY=true"}, "refused in production"},
		{runner, []string{"QUAVON_ENV=development", "QUAVON_EDITION=enterprise", "QUAVON_SANDBOX_EGRESS_HOST_PROXY=true"}, "refused in production"},
		{runner, []string{"QUAVON_SANDBOX_EGRESS_HOST_PROXY=yes"}, "QUAVON_SANDBOX_EGRESS_HOST_PROXY"},
		{runner, []string{"QUAVON_SANDBOX_REGISTRIES=registry.npmjs.org,10.0.0.1"}, "QUAVON_SANDBOX_REGISTRIES"},
		{runner, []string{"QUAVON_SANDBOX_REGISTRIES=registry.0x7f"}, "QUAVON_SANDBOX_REGISTRIES"},
		{runner, []string{"QUAVON_SANDBOX_EGRESS_PROXY=proxy:3128"}, "QUAVON_SANDBOX_EGRESS_PROXY"},
		{runner, []string{"QUAVON_SANDBOX_ALLOW_INSECURE=yes"}, "QUAVON_SANDBOX_ALLOW_INSECURE"},
		{runner, []string{"QUAVON_SANDBOX_RUNSC_PLATFORM=fast"}, "QUAVON_SANDBOX_RUNSC_PLATFORM"},
		{runner, []string{"QUAVON_SANDBOX_BACKEND=podman"}, "QUAVON_SANDBOX_BACKEND"},
		{runner, []string{"QUAVON_SANDBOX_CONCURRENCY=0"}, "QUAVON_SANDBOX_CONCURRENCY"},
		{egress, []string{"QUAVON_EGRESS_LISTEN=3128"}, "QUAVON_EGRESS_LISTEN"},
		{egress, []string{"QUAVON_EGRESS_LISTEN=:99999"}, "QUAVON_EGRESS_LISTEN"},
		{egress, []string{"QUAVON_EGRESS_LISTEN=:http"}, "QUAVON_EGRESS_LISTEN"},
		{api, []string{"QUAVON_DATABASE_PASSWORD=abc"}, "QUAVON_DATABASE_PASSWORD_FILE"},
		{api, []string{"QUAVON_DATABASE_URL=postgres://quavon:abc@db/quavon"}, "QUAVON_DATABASE_URL holds a password"},
		{api, []string{"QUAVON_DATABASE_URL=host=db user=quavon password=abc"}, "QUAVON_DATABASE_URL holds a password"},
		{worker, []string{"QUAVON_MAX_FIX_RUNS_PER_TENANT_PER_DAY=0"}, "QUAVON_MAX_FIX_RUNS_PER_TENANT_PER_DAY"},
		// Another service's settings are refused, with who reads them.
		{api, []string{"QUAVON_SANDBOX_SIGNING_KEY_FILE=/k"}, "QUAVON_SANDBOX_SIGNING_KEY_FILE: a setting of quavon keys, quavon-sandbox-runner, quavon-worker, not of quavon-api"},
		{api, []string{"QUAVON_GITHUB_REVIEW_PRIVATE_KEY_FILE=/k"}, "a setting of quavon-token-broker, not of quavon-api"},
		{worker, []string{"QUAVON_GITHUB_FIXER_PRIVATE_KEY_FILE=/k"}, "a setting of quavon-token-broker"},
		{egress, []string{"QUAVON_SANDBOX_SIGNING_KEY_FILE=/k"}, "not of quavon-sandbox-egress"},
		{runner, []string{"QUAVON_DATABASE_URL=postgres://db/q"}, "not of quavon-sandbox-runner"},
		{broker, []string{"QUAVON_DATABASE_URL=postgres://db/q", "QUAVON_BROKER_CALLERS_FILE=/c", "QUAVON_GITHUB_REVIEW_APP_ID=1", "QUAVON_GITHUB_REVIEW_PRIVATE_KEY_FILE=/k"}, "not of quavon-token-broker"},
		{broker, nil, "QUAVON_BROKER_CALLERS_FILE is not set"},
		{broker, []string{"QUAVON_BROKER_CALLERS_FILE=/c"}, "QUAVON_GITHUB_REVIEW_APP_ID and QUAVON_GITHUB_REVIEW_PRIVATE_KEY_FILE: set both"},
		{broker, []string{"QUAVON_BROKER_CALLERS_FILE=/c", "QUAVON_GITHUB_REVIEW_APP_ID=x", "QUAVON_GITHUB_REVIEW_PRIVATE_KEY_FILE=/k"}, `QUAVON_GITHUB_REVIEW_APP_ID "x"`},
		{broker, []string{"QUAVON_BROKER_CALLERS_FILE=/c", "QUAVON_GITHUB_REVIEW_APP_ID=1", "QUAVON_GITHUB_REVIEW_PRIVATE_KEY_FILE=/k", "QUAVON_GITHUB_FIXER_APP_ID=2"}, "QUAVON_GITHUB_FIXER_APP_ID and QUAVON_GITHUB_FIXER_PRIVATE_KEY_FILE: set both"},
		{broker, []string{"QUAVON_BROKER_CALLERS_FILE=/c", "QUAVON_GITHUB_REVIEW_APP_ID=1", "QUAVON_GITHUB_REVIEW_PRIVATE_KEY_FILE=/k", "QUAVON_GITHUB_API_URL=ftp://x/"}, "QUAVON_GITHUB_API_URL"},
	}
	for _, c := range cases {
		err := c.load(c.env)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("load(%q) = %v, want %q", c.env, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "abc") {
			t.Errorf("load(%q) echoes the secret: %v", c.env, err)
		}
	}
	// All problems at once.
	_, err := LoadRunner([]string{"QUAVON_ENV=x", "QUAVON_NOPE=1"})
	if err == nil || !strings.Contains(err.Error(), "QUAVON_ENV") || !strings.Contains(err.Error(), "QUAVON_NOPE") {
		t.Fatalf("want both errors, got %v", err)
	}
}

// Every loosening of a default is a warning for the service to log.
func TestLooseningsAreWarnings(t *testing.T) {
	t.Parallel()
	ceiling := `{"cpuMillis":500,"memoryBytes":1000000,"pids":10,"wallClockSeconds":5,"setupSeconds":5,"workBytes":1000,"tmpBytes":1000,"outputBytes":1000,"noFile":10,"fileSizeBytes":1000}`
	c, err := LoadRunner([]string{"QUAVON_ENV=development", "QUAVON_SANDBOX_LIMIT_CEILING=" + ceiling, "QUAVON_SANDBOX_ALLOW_INSECURE=true",
		"QUAVON_SANDBOX_CONCURRENCY=4", "QUAVON_SANDBOX_EGRESS_HOST_PROXY=true"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Runner.CeilingJSON != ceiling || !c.Runner.AllowInsecure || c.Runner.Concurrency != 4 || !c.Runner.EgressHostProxy {
		t.Fatalf("runner %+v", c.Runner)
	}
	for _, want := range []string{"QUAVON_ENV=development", "QUAVON_SANDBOX_ALLOW_INSECURE=true", "QUAVON_SANDBOX_EGRESS_HOST_PROXY=true"} {
		if !slices.ContainsFunc(c.Warnings, func(w string) bool { return strings.Contains(w, want) }) {
			t.Errorf("no warning for %s: %q", want, c.Warnings)
		}
	}
	b, err := LoadBroker([]string{"QUAVON_BROKER_CALLERS_FILE=/c", "QUAVON_GITHUB_REVIEW_APP_ID=1", "QUAVON_GITHUB_REVIEW_PRIVATE_KEY_FILE=/k",
		"QUAVON_GITHUB_API_URL=http://127.0.0.1:1/", "QUAVON_GITHUB_GRAPHQL_URL=http://127.0.0.1:1/graphql"})
	if err != nil {
		t.Fatal(err)
	}
	if b.Broker.Review.ID != 1 || b.Broker.Fixer.ID != 0 || len(b.Warnings) != 2 {
		t.Fatalf("broker %+v warnings %q", b.Broker, b.Warnings)
	}
}

// The registry is consistent: unique names, every setting read by some
// service, secrets named *_FILE, and no two services disagree on a name.
func TestRegistry(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, s := range Settings() {
		if seen[s.Name] || !strings.HasPrefix(s.Name, "QUAVON_") || strings.HasPrefix(s.Name, "QUAVON_TEST_") {
			t.Errorf("%s: duplicate or badly named", s.Name)
		}
		seen[s.Name] = true
		if len(s.Services()) == 0 {
			t.Errorf("%s: no service reads it", s.Name)
		}
		if s.Secret != strings.HasSuffix(s.Name, "_FILE") && !strings.HasSuffix(s.Name, "_CALLERS_FILE") && s.Name != "QUAVON_SANDBOX_IMAGES_LOCK" {
			t.Errorf("%s: secret settings are exactly the *_FILE ones (but the callers file)", s.Name)
		}
		if s.Doc == "" {
			t.Errorf("%s: undocumented", s.Name)
		}
	}
}

func TestSecretFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		return p
	}
	ok := write("ok", "s3cret-value-long-enough\n", 0o600)
	if b, err := secretfile.Read("QUAVON_X_FILE", ok, 8); err != nil || string(b) != "s3cret-value-long-enough" {
		t.Fatalf("%q %v", b, err)
	}
	for name, p := range map[string]string{
		"group-writable": write("gw", "s3cret-value-long-enough", 0o620),
		"world-writable": write("ww", "s3cret-value-long-enough", 0o602),
		"short":          write("short", "abc\n", 0o600),
		"directory":      dir,
		"missing":        filepath.Join(dir, "nope"),
		"unset":          "",
	} {
		_, err := secretfile.Read("QUAVON_X_FILE", p, 8)
		if err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "QUAVON_X_FILE") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
