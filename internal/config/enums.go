package config

import "slices"

// Env is the deployment environment. The zero value is not valid; the
// views default to production.
type Env string

// Environments.
const (
	Production  Env = "production"
	Development Env = "development"
	Test        Env = "test"
)

// Valid reports whether e is one of the environments.
func (e Env) Valid() bool { return e == Production || e == Development || e == Test }

// Edition is community (self-hosted) or enterprise (hosted, multi-tenant).
type Edition string

// Editions.
const (
	Community  Edition = "community"
	Enterprise Edition = "enterprise"
)

// Valid reports whether e is one of the editions.
func (e Edition) Valid() bool { return e == Community || e == Enterprise }

// Backend is the sandbox runner's backend (spec §3 "Runtimes"). Which
// backend may run where is the runner's policy (runner.BackendPolicy).
type Backend string

// Backends.
const (
	BackendRunsc        Backend = "docker-runsc"
	BackendRuncInsecure Backend = "docker-runc-insecure"
	BackendFirecracker  Backend = "firecracker"
	// BackendKubeGVisor runs each job as a Kubernetes pod with
	// runtimeClassName gvisor (containerd's runsc handler).
	BackendKubeGVisor Backend = "kube-gvisor"
)

var backends = []Backend{BackendRunsc, BackendRuncInsecure, BackendFirecracker, BackendKubeGVisor}

// Backends lists the known backends.
func Backends() []Backend { return slices.Clone(backends) }

// Valid reports whether b is a known backend.
func (b Backend) Valid() bool { return slices.Contains(backends, b) }

// RunscPlatform is gVisor's platform, as the engine's runsc runtime is
// configured (--platform).
type RunscPlatform string

// Platforms.
const (
	PlatformSystrap RunscPlatform = "systrap"
	PlatformPtrace  RunscPlatform = "ptrace"
	PlatformKVM     RunscPlatform = "kvm"
)

// Valid reports whether p is a runsc platform.
func (p RunscPlatform) Valid() bool {
	return p == PlatformSystrap || p == PlatformPtrace || p == PlatformKVM
}
