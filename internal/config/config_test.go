package config

import (
	"strings"
	"testing"
)

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err := Load([]string{"HOME=/root", "QUAVON_TEST_VALKEY_ADDR=x"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Env != Production {
		t.Fatalf("QUAVON_ENV defaults to %q, want production", c.Env)
	}
	if c.Sandbox.Pool != "default" || c.Sandbox.MaxSnapshotBytes != 128<<20 || c.SnapshotLimits().MaxEntries != 50_000 {
		t.Fatalf("sandbox defaults %+v", c.Sandbox)
	}
}

func TestLoadRefuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		env  []string
		want string
	}{
		{[]string{"QUAVON_SANDBOX_SIGNING_KEY=abc"}, "QUAVON_SANDBOX_SIGNING_KEY: secrets are read only from files"},
		{[]string{"QUAVON_VALKEY_PASSWORD=abc"}, "QUAVON_VALKEY_PASSWORD_FILE"},
		{[]string{"QUAVON_SANDBOX_SIGNNG_KEY_FILE=/x"}, "QUAVON_SANDBOX_SIGNNG_KEY_FILE: unknown setting"},
		{[]string{"QUAVON_ENV=prod"}, `QUAVON_ENV "prod"`},
		{[]string{"QUAVON_ENV="}, `QUAVON_ENV ""`},
		{[]string{"QUAVON_SANDBOX_POOL=A B"}, "QUAVON_SANDBOX_POOL"},
		{[]string{"QUAVON_SANDBOX_MAX_SNAPSHOT_BYTES=-1"}, "QUAVON_SANDBOX_MAX_SNAPSHOT_BYTES"},
		{[]string{"QUAVON_SANDBOX_MAX_SNAPSHOT_BYTES=2147483648"}, "QUAVON_SANDBOX_MAX_SNAPSHOT_BYTES"},
		{[]string{"QUAVON_SANDBOX_MAX_SNAPSHOT_ENTRIES=0"}, "QUAVON_SANDBOX_MAX_SNAPSHOT_ENTRIES"},
		{[]string{"QUAVON_EDITION=free"}, "QUAVON_EDITION"},
		{[]string{"QUAVON_SANDBOX_EGRESS_HOST_PROXY=true"}, "refused in production"},
		{[]string{"QUAVON_ENV=development", "QUAVON_EDITION=enterprise", "QUAVON_SANDBOX_EGRESS_HOST_PROXY=true"}, "refused in production"},
		{[]string{"QUAVON_SANDBOX_EGRESS_HOST_PROXY=yes"}, "QUAVON_SANDBOX_EGRESS_HOST_PROXY"},
		{[]string{"QUAVON_EGRESS_LISTEN=3128"}, "QUAVON_EGRESS_LISTEN"},
		{[]string{"QUAVON_EGRESS_LISTEN=:99999"}, "QUAVON_EGRESS_LISTEN"},
		{[]string{"QUAVON_EGRESS_LISTEN=:http"}, "QUAVON_EGRESS_LISTEN"},
		{[]string{"QUAVON_SANDBOX_REGISTRIES=registry.npmjs.org,10.0.0.1"}, "QUAVON_SANDBOX_REGISTRIES"},
		{[]string{"QUAVON_SANDBOX_EGRESS_PROXY=proxy:3128"}, "QUAVON_SANDBOX_EGRESS_PROXY"},
		{[]string{"QUAVON_SANDBOX_ALLOW_INSECURE=yes"}, "QUAVON_SANDBOX_ALLOW_INSECURE"},
		{[]string{"QUAVON_SANDBOX_RUNSC_PLATFORM=fast"}, "QUAVON_SANDBOX_RUNSC_PLATFORM"},
		{[]string{"QUAVON_SANDBOX_CONCURRENCY=0"}, "QUAVON_SANDBOX_CONCURRENCY"},
		{[]string{"QUAVON_SANDBOX_LIMIT_CEILING={\"pids\":1}"}, "QUAVON_SANDBOX_LIMIT_CEILING"},
		{[]string{"QUAVON_SANDBOX_LIMIT_CEILING={\"pidz\":1}"}, "QUAVON_SANDBOX_LIMIT_CEILING"},
		{[]string{"QUAVON_SANDBOX_MAX_SNAPSHOT_ENTRIES=many"}, "QUAVON_SANDBOX_MAX_SNAPSHOT_ENTRIES"},
		{[]string{"QUAVON_DATABASE_PASSWORD=abc"}, "QUAVON_DATABASE_PASSWORD_FILE"},
		{[]string{"QUAVON_DATABASE_URL=postgres://quavon:abc@db/quavon"}, "QUAVON_DATABASE_URL holds a password"},
		{[]string{"QUAVON_DATABASE_URL=host=db user=quavon password=abc"}, "QUAVON_DATABASE_URL holds a password"},
		{[]string{"QUAVON_MAX_FIX_RUNS_PER_TENANT_PER_DAY=0"}, "QUAVON_MAX_FIX_RUNS_PER_TENANT_PER_DAY"},
	}
	for _, c := range cases {
		_, err := Load(c.env)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Load(%q) = %v, want %q", c.env, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "abc") {
			t.Errorf("Load(%q) echoes the secret: %v", c.env, err)
		}
	}
	// All problems at once.
	_, err := Load([]string{"QUAVON_ENV=x", "QUAVON_NOPE=1"})
	if err == nil || !strings.Contains(err.Error(), "QUAVON_ENV") || !strings.Contains(err.Error(), "QUAVON_NOPE") {
		t.Fatalf("want both errors, got %v", err)
	}
}

func TestSandboxKeysRequiresAFile(t *testing.T) {
	t.Parallel()
	c, err := Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SandboxKeys(); err == nil || !strings.Contains(err.Error(), "QUAVON_SANDBOX_SIGNING_KEY_FILE") {
		t.Fatalf("SandboxKeys without a file: %v", err)
	}
}

func TestRunnerSettings(t *testing.T) {
	t.Parallel()
	c, err := Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Runner.Backend != "docker-runsc" || c.Runner.AllowInsecure || c.Edition != Community || c.Runner.Ceiling != DefaultCeiling {
		t.Fatalf("runner defaults %+v", c.Runner)
	}
	ceiling := `{"cpuMillis":500,"memoryBytes":1000000,"pids":10,"wallClockSeconds":5,"setupSeconds":5,"workBytes":1000,"tmpBytes":1000,"outputBytes":1000,"noFile":10,"fileSizeBytes":1000}`
	c, err = Load([]string{"QUAVON_SANDBOX_LIMIT_CEILING=" + ceiling, "QUAVON_SANDBOX_ALLOW_INSECURE=true", "QUAVON_SANDBOX_CONCURRENCY=4"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Runner.Ceiling.Pids != 10 || !c.Runner.AllowInsecure || c.Runner.Concurrency != 4 {
		t.Fatalf("runner %+v", c.Runner)
	}
}
