package doctor_test

import (
	"encoding/json"
	"testing"

	"github.com/quavon/quavon/internal/doctor"
	"github.com/quavon/quavon/internal/sandbox"
)

// FuzzEvaluateCanary: the probe's output is the sandbox's (hostile): any
// stdout gives three results, each a pass or a fail with a capped detail,
// and never a pass unless enough probes reported blocked.
func FuzzEvaluateCanary(f *testing.F) {
	b, _ := json.Marshal(blockedProbes())
	f.Add(string(b))
	f.Add(`{"env self":"blocked: keys QUAVON_X"}`)
	f.Add("{{{}")
	f.Fuzz(func(t *testing.T, stdout string) {
		j := doctor.CanaryJob{Result: &sandbox.SandboxResult{Status: sandbox.StatusCompleted,
			Artefacts: map[string]string{"stdout.log": stdout}}, Canaries: []string{"QUAVON-DOCTOR-CANARY-x"}}
		rs := doctor.EvaluateCanary(j)
		if len(rs) != 3 {
			t.Fatalf("%d results", len(rs))
		}
		var probes map[string]string
		for _, r := range rs {
			if len(r.Detail) > 1024 || (r.Status != doctor.Pass && r.Status != doctor.Fail) {
				t.Fatalf("%+v", r)
			}
			if r.Status == doctor.Pass && probes == nil {
				// A pass needs a JSON object of at least 25 verdicts.
				start, end := -1, -1
				for i := range stdout {
					if stdout[i] == '{' && start < 0 {
						start = i
					}
					if stdout[i] == '}' {
						end = i
					}
				}
				if start < 0 || end < start || json.Unmarshal([]byte(stdout[start:end+1]), &probes) != nil || len(probes) < 25 {
					t.Fatalf("pass without verdicts: %q", stdout)
				}
			}
		}
	})
}
