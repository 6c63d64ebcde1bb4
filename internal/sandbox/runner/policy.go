package runner

import (
	"errors"
	"fmt"
)

// Backend names as configured (QUAVON_SANDBOX_BACKEND).
const (
	BackendRunsc        = "docker-runsc"
	BackendRuncInsecure = "docker-runc-insecure"
	BackendFirecracker  = "firecracker"
	BackendKubeGVisor   = "kube-gvisor"
)

// BackendPolicy is where the runner decides whether it may start at all.
//
// docker-runsc (gVisor) is always allowed. docker-runc-insecure gives
// container isolation only: it is refused in production and in the
// enterprise edition, and elsewhere needs QUAVON_SANDBOX_ALLOW_INSECURE=true,
// and then comes with a warning to log loudly. firecracker needs a usable
// KVM device: KVM probes it, and without a probe or with a failing one the
// runner refuses to start. kube-gvisor (pods with runtimeClassName gvisor)
// is allowed like docker-runsc. Nothing ever falls back to another
// backend.
type BackendPolicy struct {
	Backend       string
	Production    bool
	Enterprise    bool
	AllowInsecure bool
	// KVM checks the KVM device (firecracker.ProbeKVM); nil refuses
	// firecracker.
	KVM func() error
}

// Check returns a warning to log (insecure mode) or why the runner must
// refuse to start.
func (p BackendPolicy) Check() (warning string, err error) {
	switch p.Backend {
	case BackendRunsc:
		return "", nil
	case BackendRuncInsecure:
		switch {
		case p.Production:
			return "", errors.New("docker-runc-insecure is refused when QUAVON_ENV=production: use docker-runsc")
		case p.Enterprise:
			return "", errors.New("docker-runc-insecure is refused in the enterprise edition: use docker-runsc")
		case !p.AllowInsecure:
			return "", errors.New("docker-runc-insecure needs QUAVON_SANDBOX_ALLOW_INSECURE=true (development only)")
		}
		return "INSECURE SANDBOX: docker-runc-insecure runs repository code with container isolation only (runc, shared kernel); never use it for code you do not trust", nil
	case BackendFirecracker:
		if p.KVM == nil {
			return "", errors.New("the firecracker backend needs a KVM check, and this mode has none: refused")
		}
		if err := p.KVM(); err != nil {
			return "", fmt.Errorf("the firecracker backend needs a usable KVM device: %w; refusing to start (never a fallback to another backend)", err)
		}
		return "", nil
	case BackendKubeGVisor:
		return "", nil
	}
	return "", fmt.Errorf("sandbox backend %q: want docker-runsc, docker-runc-insecure, firecracker or kube-gvisor", p.Backend)
}
