package sandbox

import (
	"strings"
	"testing"
	"time"
)

func TestValidJobValidates(t *testing.T) {
	t.Parallel()
	if err := validJob().Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
}

func TestJobValidateRejects(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 5000)
	ghToken := "ghp_" + strings.Repeat("Z", 36)
	cases := []struct {
		name string
		mut  func(j *SandboxJob)
		want string
	}{
		{"short id", func(j *SandboxJob) { j.ID = "abc" }, "id:"},
		{"id with slash", func(j *SandboxJob) { j.ID = "abcdefgh/../x" }, "id:"},
		{"pool", func(j *SandboxJob) { j.Pool = "Default" }, "pool:"},
		{"tenant", func(j *SandboxJob) { j.TenantID = "" }, "tenantId:"},
		{"purpose", func(j *SandboxJob) { j.Purpose = "shell" }, "purpose"},
		{"image tag", func(j *SandboxJob) { j.ImageClass = "node:latest" }, "imageClass"},
		{"byo bad", func(j *SandboxJob) { j.ImageClass = "byo:../x" }, "imageClass"},
		{"base other tenant", func(j *SandboxJob) { j.Base.TenantID = "tenant-2" }, "base: tenantId"},
		{"overlay other tenant", func(j *SandboxJob) { j.Overlay.TenantID = "tenant-2" }, "overlay: tenantId"},
		{"overlay same blob", func(j *SandboxJob) { j.Overlay.BlobID = j.Base.BlobID }, "same blob"},
		{"blob id upper", func(j *SandboxJob) { j.Base.BlobID = strings.Repeat("A", 32) }, "blobId"},
		{"sha256", func(j *SandboxJob) { j.Base.SHA256 = "abc" }, "sha256"},
		{"bytes zero", func(j *SandboxJob) { j.Base.Bytes = 0 }, "bytes"},
		{"bytes huge", func(j *SandboxJob) { j.Base.Bytes = HardMaxSnapshotBytes + 1 }, "bytes"},
		{"no run command", func(j *SandboxJob) { j.RunCommand = "" }, "runCommand: empty"},
		{"long command", func(j *SandboxJob) { j.RunCommand = long }, "runCommand: longer"},
		{"NUL command", func(j *SandboxJob) { j.SetupCommand = "a\x00b" }, "setupCommand"},
		{"egress mode", func(j *SandboxJob) { j.Egress.Mode = "" }, "egress.mode"},
		{"egress none with hosts", func(j *SandboxJob) { j.Egress.Mode = EgressNone }, "takes no hosts"},
		{"registries without setup", func(j *SandboxJob) { j.SetupCommand = "" }, "there is none"},
		{"registries no hosts", func(j *SandboxJob) { j.Egress.Hosts = nil }, "want 1-16 hosts"},
		{"host ip", func(j *SandboxJob) { j.Egress.Hosts = []string{"169.254.169.254"} }, "IP literal"},
		{"host port", func(j *SandboxJob) { j.Egress.Hosts = []string{"example.com:443"} }, "egress.hosts[0]"},
		{"host wildcard", func(j *SandboxJob) { j.Egress.Hosts = []string{"*.example.com"} }, "egress.hosts[0]"},
		{"host trailing dot", func(j *SandboxJob) { j.Egress.Hosts = []string{"example.com."} }, "egress.hosts[0]"},
		{"host upper", func(j *SandboxJob) { j.Egress.Hosts = []string{"Example.com"} }, "egress.hosts[0]"},
		{"host single label", func(j *SandboxJob) { j.Egress.Hosts = []string{"localhost"} }, "fully qualified"},
		{"host dup", func(j *SandboxJob) { j.Egress.Hosts = []string{"a.io", "a.io"} }, "duplicate"},
		{"env key", func(j *SandboxJob) { j.Env = map[SandboxEnvKey]string{"LD_PRELOAD": "/x.so"} }, "not allowed"},
		{"env proxy", func(j *SandboxJob) { j.Env = map[SandboxEnvKey]string{"HTTPS_PROXY": "http://x"} }, "not allowed"},
		{"env path", func(j *SandboxJob) { j.Env = map[SandboxEnvKey]string{"PATH": "/tmp"} }, "not allowed"},
		{"env secret", func(j *SandboxJob) { j.Env = map[SandboxEnvKey]string{EnvCI: ghToken} }, "looks like a secret"},
		{"env newline", func(j *SandboxJob) { j.Env = map[SandboxEnvKey]string{EnvCI: "a\nb"} }, "printable"},
		{"limit zero", func(j *SandboxJob) { j.Limits.Pids = 0 }, "pids"},
		{"limit huge", func(j *SandboxJob) { j.Limits.OutputBytes = 1 << 40 }, "outputBytes"},
		{"setup beyond wall", func(j *SandboxJob) { j.Limits.SetupSeconds = j.Limits.WallClockSeconds + 1 }, "setupSeconds exceeds"},
		{"artefact path", func(j *SandboxJob) { j.Artefacts = []string{"../etc/passwd"} }, "artefacts[0]"},
		{"artefact hidden", func(j *SandboxJob) { j.Artefacts = []string{".env"} }, "artefacts[0]"},
		{"artefact reserved", func(j *SandboxJob) { j.Artefacts = []string{"exit.json"} }, "entry program"},
		{"artefact dup", func(j *SandboxJob) { j.Artefacts = []string{"a", "a"} }, "duplicate"},
		{"no times", func(j *SandboxJob) { j.IssuedAt = time.Time{} }, "required"},
		{"not UTC", func(j *SandboxJob) { j.NotAfter = j.NotAfter.In(time.FixedZone("x", 3600)) }, "UTC"},
		{"inverted", func(j *SandboxJob) { j.NotAfter = j.IssuedAt.Add(-time.Second) }, "after issuedAt"},
		{"ttl", func(j *SandboxJob) { j.NotAfter = j.IssuedAt.Add(MaxJobTTL + time.Second) }, "more than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			j := validJob()
			c.mut(j)
			err := j.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate() = %v, want error containing %q", err, c.want)
			}
			if strings.Contains(err.Error(), ghToken) {
				t.Fatal("error message echoes a secret")
			}
		})
	}
}

func TestLimitsClamp(t *testing.T) {
	t.Parallel()
	l := testLimits()
	ceiling := l
	ceiling.MemoryBytes = 128 << 20
	ceiling.Pids = 1 << 20
	got := l.Clamp(ceiling)
	if got.MemoryBytes != 128<<20 || got.Pids != l.Pids || got.CPUMillis != l.CPUMillis {
		t.Fatalf("Clamp = %+v", got)
	}
	if l.MemoryBytes != 512<<20 {
		t.Fatal("Clamp modified its receiver")
	}
}
