package runner

import (
	"context"
	"io"
	"maps"
	"net/netip"
	"slices"

	"github.com/quavon/quavon/internal/sandbox"
)

// Container identity inside every sandbox: uid and gid 65532, HOME under the
// /work tmpfs, a fixed PATH. Nothing of the runner's own environment enters.
const (
	SandboxUID  = 65532
	SandboxHome = "/work/.home"
	SandboxPath = "/usr/local/bin:/usr/bin:/bin"
	EntryPath   = "/opt/quavon/entry"
)

// ContainerSpec is everything a backend needs to run one sandbox.
type ContainerSpec struct {
	JobID    string
	ImageRef string   // pinned: sha256:<id> or repository@sha256:<digest>
	Env      []string // complete KEY=VALUE list
	Limits   sandbox.Limits
	// Network is empty (no network at all) or the internal egress network
	// the setup step reaches the proxy through.
	Network string
}

// ExecResult is how the container ended.
type ExecResult struct {
	ExitCode int
	TimedOut bool // killed by the runner at the wall clock
	// OOMKilled: the runtime reports that the container hit its memory
	// limit (under gVisor the whole sandbox then dies).
	OOMKilled bool
}

// Backend runs one container per call. Exec writes stdin to the
// container's standard input, copies its standard output to stdout, kills
// it at Limits.WallClockSeconds and removes it before returning, whatever
// happened.
type Backend interface {
	Name() string
	Exec(ctx context.Context, spec ContainerSpec, stdin io.Reader, stdout io.Writer) (ExecResult, error)
	// Isolate cuts a running job's container off every network (the end
	// of its setup step).
	Isolate(ctx context.Context, jobID string) error
	// CheckEgress reports whether network is fit to carry setup-step
	// egress to the proxy at proxy (on the host when hostProxy).
	CheckEgress(ctx context.Context, network string, proxy netip.AddrPort, hostProxy bool) error
}

// ContainerEnv is the complete environment of a job's container: fixed PATH
// and HOME plus the job's allowlisted keys, in the keys' order.
func ContainerEnv(job *sandbox.SandboxJob) []string {
	env := []string{"PATH=" + SandboxPath, "HOME=" + SandboxHome}
	for _, k := range slices.Sorted(maps.Keys(job.Env)) {
		env = append(env, string(k)+"="+job.Env[k])
	}
	return env
}

// OutputSink is what a backend's Exec writes the sandbox's output to, when
// it wants to know more than whether the next write fails: Refused is
// closed as soon as the parser has stopped reading (a frame that does not
// verify, the raw cap), so the backend can end the sandbox at once rather
// than at the sandbox's next write or its wall clock.
type OutputSink interface {
	io.Writer
	Refused() <-chan struct{}
}

type outputSink struct {
	*io.PipeWriter
	refused <-chan struct{}
}

func (s *outputSink) Refused() <-chan struct{} { return s.refused }
