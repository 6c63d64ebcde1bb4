package policy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/sandbox"
)

// TestPolicyFitsTheSandboxContract builds the sandbox job a fix run would
// send from policies at the edges of the schema: whatever the policy
// accepts, the job contract must accept too, or fix runs would fail late.
func TestPolicyFitsTheSandboxContract(t *testing.T) {
	t.Parallel()
	hosts := make([]string, MaxRegistries)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("r%d.example.com", i)
	}
	cmds := []string{
		strings.Repeat("x", MaxCommandBytes),
		"set -e\n\tmake test",
		"printf '%s' \"ünïcødé\" && echo $HOME > /tmp/o",
	}
	for _, limits := range []string{
		`{"cpuMillis":100,"memoryBytes":67108864,"wallClockSeconds":10,"setupSeconds":1}`,
		`{"cpuMillis":16000,"memoryBytes":17179869184,"wallClockSeconds":3600,"setupSeconds":3600}`,
	} {
		for _, cmd := range cmds {
			q := func(s string) string { return fmt.Sprintf("%q", s) }
			doc := fixDoc(`"mode":"approval","egress":"registries","registries":["` + strings.Join(hosts, `","`) + `"],` +
				`"setupCommand":` + q(cmd) + `,"testCommand":` + q(cmd) + `,"limits":` + limits)
			p := mustParse(t, doc)
			f := p.Features.Fix
			now := time.Now().UTC()
			j := sandbox.SandboxJob{
				ID: "job-00000001", Pool: "default", TenantID: "tenant-a", Purpose: sandbox.PurposeFixTest, ImageClass: "node",
				Base: sandbox.SnapshotRef{TenantID: "tenant-a", BlobID: "0123456789abcdef0123456789abcdef", KeyID: "0123456789abcdef",
					SHA256: strings.Repeat("e3", 32), Bytes: 10},
				SetupCommand: f.SetupCommand, RunCommand: f.TestCommand,
				Egress: sandbox.Egress{Mode: sandbox.EgressMode(f.Egress), Hosts: f.Registries},
				Limits: sandbox.Limits{CPUMillis: f.Limits.CPUMillis, MemoryBytes: f.Limits.MemoryBytes, Pids: 128,
					WallClockSeconds: f.Limits.WallClockSeconds, SetupSeconds: f.Limits.SetupSeconds,
					WorkBytes: 64 << 20, TmpBytes: 16 << 20, OutputBytes: 1 << 20, NoFile: 256, FileSizeBytes: 64 << 20},
				IssuedAt: now, NotAfter: now.Add(5 * time.Minute),
			}
			if err := j.Validate(); err != nil {
				t.Errorf("limits %s, command %.20q: job refused: %v", limits, cmd, err)
			}
		}
	}
}
