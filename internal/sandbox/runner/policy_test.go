package runner

import (
	"errors"
	"strings"
	"testing"
)

func TestBackendPolicy(t *testing.T) {
	t.Parallel()
	cases := []struct {
		p       BackendPolicy
		wantErr string
		warn    bool
	}{
		{BackendPolicy{Backend: BackendRunsc, Production: true}, "", false},
		{BackendPolicy{Backend: BackendRunsc, Enterprise: true}, "", false},
		{BackendPolicy{Backend: BackendRuncInsecure, AllowInsecure: true}, "", true},
		{BackendPolicy{Backend: BackendRuncInsecure}, "QUAVON_SANDBOX_ALLOW_INSECURE", false},
		{BackendPolicy{Backend: BackendRuncInsecure, Production: true, AllowInsecure: true}, "production", false},
		{BackendPolicy{Backend: BackendRuncInsecure, Enterprise: true, AllowInsecure: true}, "enterprise", false},
		{BackendPolicy{Backend: BackendFirecracker}, "needs a KVM check", false},
		{BackendPolicy{Backend: BackendFirecracker, KVM: func() error { return errors.New("/dev/kvm does not exist") }}, "never a fallback", false},
		{BackendPolicy{Backend: BackendFirecracker, KVM: func() error { return nil }, Production: true, Enterprise: true}, "", false},
		{BackendPolicy{Backend: BackendKubeGVisor, Production: true, Enterprise: true}, "", false},
		{BackendPolicy{Backend: "docker"}, "want docker-runsc", false},
		{BackendPolicy{Backend: ""}, "want docker-runsc", false},
	}
	for _, c := range cases {
		warn, err := c.p.Check()
		if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%+v: err %v, want %q", c.p, err, c.wantErr)
		}
		if (warn != "") != c.warn {
			t.Errorf("%+v: warning %q", c.p, warn)
		}
	}
}
