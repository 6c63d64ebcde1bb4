// Package kube runs sandbox jobs as Kubernetes pods with runtimeClassName
// gvisor (containerd's runsc handler): a runner.Backend for clusters where
// the runner has no Docker Engine (spec §3 "k3s": the Kubernetes-native
// backend of the Helm chart).
//
// Each job is one pod with the Docker backend's settings as a pod spec
// (PodSpec): uid and gid 65532 and non-root enforced, read-only root file
// system, every capability dropped, no privilege escalation, a seccomp
// profile (RuntimeDefault, or Quavon's profile installed on the node as a
// Localhost profile), no service account token, no service links, no host
// namespaces, no DNS (the only name server is an unused loopback
// address), CPU and memory limits equal to the requests, memory-backed
// emptyDir volumes with size limits for /work, /out, /tmp and /dev/shm,
// restart never, no grace period, and one label: the job id. A
// NetworkPolicy of the namespace selects every pod and allows nothing in
// and nothing out; the runner creates it if missing and refuses to run a
// job when it is missing or allows anything.
//
// The input goes in and the output comes out over the pod's attach stream
// (stdin and stdout of the entry program, PID 1): the same authenticated
// frames, parsed by the same code with the same caps as on Docker. The
// runner deletes the pod after collecting the output, whatever happened:
// a wall-clock kill, a pod that never starts (start timeout, with the
// reason the kubelet gives), a node that disappears (the pod lost or
// deleted under the runner).
//
// Not expressible as a pod spec, and so left to the node's configuration:
// the pids limit (kubelet --pod-max-pids), the nofile and fsize rlimits
// (containerd's defaults; fsize is bounded by the emptyDir size limits),
// noexec on /out and /tmp, and the container log: the kubelet writes a
// container's stdout to the node's disk, so the frames of a job (repository
// output, authenticated but not encrypted) sit in the node's pod logs until
// they rotate. Setup-step egress is not offered on this backend
// (CheckEgress refuses it): a NetworkPolicy cannot cut an established
// connection as Isolate must.
package kube

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/quavon/quavon/internal/sandbox/runner"
)

// Names the backend uses.
const (
	LabelJobID    = "quavon.dev/job-id"
	ContainerName = "sandbox"
	PolicyName    = "quavon-sandbox-deny-all"
	podPrefix     = "quavon-sandbox-"
	shmBytes      = 1 << 20
)

// Attacher streams a running pod container's stdin and stdout.
type Attacher interface {
	Attach(ctx context.Context, namespace, pod, container string, stdin io.Reader, stdout io.Writer) error
}

// Config configures the backend.
type Config struct {
	Client       kubernetes.Interface
	Attacher     Attacher
	Namespace    string
	RuntimeClass string
	StartTimeout time.Duration
	// SeccompProfile is a Localhost profile's path below the kubelet's
	// seccomp directory; empty means RuntimeDefault.
	SeccompProfile string
	Log            *slog.Logger
}

// Backend is a runner.Backend on Kubernetes.
type Backend struct {
	cfg     Config
	handler string
}

var _ runner.Backend = (*Backend)(nil)

// New checks that the RuntimeClass exists and that the namespace's
// deny-all NetworkPolicy is in place (creating it if missing).
func New(ctx context.Context, cfg Config) (*Backend, error) {
	if cfg.Client == nil || cfg.Attacher == nil || cfg.Log == nil || cfg.Namespace == "" || cfg.RuntimeClass == "" {
		return nil, errors.New("kube.New: client, attacher, log, namespace and runtime class are required")
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 2 * time.Minute
	}
	rc, err := cfg.Client.NodeV1().RuntimeClasses().Get(ctx, cfg.RuntimeClass, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("kube-gvisor: RuntimeClass %q: %w (install gVisor's containerd handler and its RuntimeClass)", cfg.RuntimeClass, err)
	}
	if !strings.Contains(rc.Handler, "runsc") && !strings.Contains(rc.Handler, "gvisor") {
		return nil, fmt.Errorf("kube-gvisor: RuntimeClass %q uses handler %q, not gVisor's runsc", cfg.RuntimeClass, rc.Handler)
	}
	b := &Backend{cfg: cfg, handler: rc.Handler}
	if err := b.ensurePolicy(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// DenyAll is the namespace's NetworkPolicy: every pod, no rule, both
// directions.
func DenyAll(namespace string) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: PolicyName, Namespace: namespace},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}
}

func (b *Backend) ensurePolicy(ctx context.Context) error {
	np := b.cfg.Client.NetworkingV1().NetworkPolicies(b.cfg.Namespace)
	_, err := np.Create(ctx, DenyAll(b.cfg.Namespace), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kube-gvisor: NetworkPolicy %s: %w", PolicyName, err)
	}
	return b.checkPolicy(ctx)
}

// checkPolicy refuses a missing policy or one that allows anything.
func (b *Backend) checkPolicy(ctx context.Context) error {
	p, err := b.cfg.Client.NetworkingV1().NetworkPolicies(b.cfg.Namespace).Get(ctx, PolicyName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("kube-gvisor: the deny-all NetworkPolicy %s is missing: %w", PolicyName, err)
	}
	s := p.Spec
	both := len(s.PolicyTypes) == 2 && s.PolicyTypes[0] != s.PolicyTypes[1]
	if len(s.PodSelector.MatchLabels) != 0 || len(s.PodSelector.MatchExpressions) != 0 || len(s.Ingress) != 0 || len(s.Egress) != 0 || !both {
		return fmt.Errorf("kube-gvisor: NetworkPolicy %s allows traffic or does not select every pod: refused", PolicyName)
	}
	return nil
}

// Name is the backend's name.
func (b *Backend) Name() string { return runner.BackendKubeGVisor }

// Runtime names the RuntimeClass and its handler.
func (b *Backend) Runtime() string { return "gvisor (" + b.cfg.RuntimeClass + ": " + b.handler + ")" }

// Close releases nothing.
func (b *Backend) Close() error { return nil }

// CheckEgress refuses: see the package doc.
func (b *Backend) CheckEgress(context.Context, string, netip.AddrPort, bool) error {
	return errors.New("kube-gvisor: setup-step egress is not offered on this backend")
}

// Isolate has nothing to cut: pods never get egress.
func (b *Backend) Isolate(context.Context, string) error { return nil }

var labelValueRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$`)

// JobLabel is the label value of a job id: the id itself, or for an id
// that is no valid label value (64 characters, a leading or trailing _ or
// -) "h-" and 32 hex of its SHA-256.
func JobLabel(jobID string) string {
	if labelValueRE.MatchString(jobID) {
		return jobID
	}
	sum := sha256.Sum256([]byte(jobID))
	return "h-" + hex.EncodeToString(sum[:16])
}

// PodSpec is the pod a job runs in.
func (b *Backend) PodSpec(name string, spec runner.ContainerSpec) (*corev1.Pod, error) {
	if !strings.Contains(spec.ImageRef, "@sha256:") {
		return nil, fmt.Errorf("kube-gvisor: image %s: a cluster pulls by registry digest (repository@sha256:…), not a local image id", spec.ImageRef)
	}
	l := spec.Limits
	f, t := false, true
	uid := int64(runner.SandboxUID)
	zero := int64(0)
	deadline := l.WallClockSeconds + int64(b.cfg.StartTimeout/time.Second) + 30
	seccomp := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	if p := b.cfg.SeccompProfile; p != "" {
		seccomp = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: &p}
	}
	var env []corev1.EnvVar
	for _, kv := range spec.Env {
		k, v, _ := strings.Cut(kv, "=")
		env = append(env, corev1.EnvVar{Name: k, Value: v})
	}
	res := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(l.CPUMillis, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(l.MemoryBytes, resource.BinarySI),
	}
	mem := func(n int64) corev1.VolumeSource {
		return corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(n, resource.BinarySI)}}
	}
	rc := b.cfg.RuntimeClass
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: b.cfg.Namespace, Labels: map[string]string{LabelJobID: JobLabel(spec.JobID)}},
		Spec: corev1.PodSpec{
			RuntimeClassName:              &rc,
			AutomountServiceAccountToken:  &f,
			EnableServiceLinks:            &f,
			HostNetwork:                   false,
			HostPID:                       false,
			HostIPC:                       false,
			ShareProcessNamespace:         &f,
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &zero,
			ActiveDeadlineSeconds:         &deadline,
			Hostname:                      "sandbox",
			DNSPolicy:                     corev1.DNSNone,
			DNSConfig:                     &corev1.PodDNSConfig{Nameservers: []string{"127.0.0.1"}},
			SecurityContext: &corev1.PodSecurityContext{
				RunAsUser: &uid, RunAsGroup: &uid, RunAsNonRoot: &t, FSGroup: &uid, SeccompProfile: seccomp,
			},
			Containers: []corev1.Container{{
				Name:            ContainerName,
				Image:           spec.ImageRef,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{runner.EntryPath},
				Env:             env,
				WorkingDir:      "/work",
				Stdin:           true,
				StdinOnce:       true,
				TTY:             false,
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: &f, Privileged: &f, ReadOnlyRootFilesystem: &t, RunAsNonRoot: &t,
					RunAsUser: &uid, RunAsGroup: &uid, Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					SeccompProfile: seccomp,
				},
				Resources: corev1.ResourceRequirements{Limits: res, Requests: res.DeepCopy()},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "work", MountPath: "/work"}, {Name: "out", MountPath: "/out"},
					{Name: "tmp", MountPath: "/tmp"}, {Name: "shm", MountPath: "/dev/shm"},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "work", VolumeSource: mem(l.WorkBytes)}, {Name: "out", VolumeSource: mem(l.OutputBytes)},
				{Name: "tmp", VolumeSource: mem(l.TmpBytes)}, {Name: "shm", VolumeSource: mem(shmBytes)},
			},
		},
	}, nil
}

// Exec runs one job's pod to the end and deletes it.
func (b *Backend) Exec(ctx context.Context, spec runner.ContainerSpec, stdin io.Reader, stdout io.Writer) (res runner.ExecResult, err error) {
	if err := b.checkPolicy(ctx); err != nil {
		return res, err
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	name := podPrefix + hex.EncodeToString(rnd[:])
	pod, err := b.PodSpec(name, spec)
	if err != nil {
		return res, err
	}
	pods := b.cfg.Client.CoreV1().Pods(b.cfg.Namespace)
	// Watch first, so no change of the pod is missed.
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		return res, fmt.Errorf("kube-gvisor: watch: %w", err)
	}
	defer w.Stop()
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return res, fmt.Errorf("kube-gvisor: create pod: %w", err)
	}
	cleanup := context.WithoutCancel(ctx)
	defer func() {
		dctx, cancel := context.WithTimeout(cleanup, 30*time.Second)
		defer cancel()
		zero := int64(0)
		if derr := pods.Delete(dctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); derr != nil && !apierrors.IsNotFound(derr) && err == nil {
			err = fmt.Errorf("kube-gvisor: delete pod %s: %w", name, derr)
		}
	}()
	wall := time.NewTimer(time.Duration(spec.Limits.WallClockSeconds) * time.Second)
	defer wall.Stop()

	// Until the container runs.
	start := time.NewTimer(b.cfg.StartTimeout)
	defer start.Stop()
	waiting := "Pending"
	for running := false; !running; {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return res, errors.New("kube-gvisor: the pod watch ended before the pod started")
			}
			p, gone, err := podOf(ev)
			if err != nil {
				return res, err
			}
			if gone {
				return res, errors.New("kube-gvisor: the pod was deleted before it started (its node went away?)")
			}
			st := containerState(p)
			switch {
			case st != nil && st.Running != nil:
				running = true
			case st != nil && st.Terminated != nil, p.Status.Phase == corev1.PodFailed, p.Status.Phase == corev1.PodSucceeded:
				return res, fmt.Errorf("kube-gvisor: the pod ended before it could be attached: %s", clip(reasonOf(p)))
			case st != nil && st.Waiting != nil:
				waiting = st.Waiting.Reason
			case p.Status.Reason != "":
				waiting = p.Status.Reason
			}
		case <-start.C:
			return res, fmt.Errorf("kube-gvisor: the pod did not start within %s (%s)", b.cfg.StartTimeout, clip(waiting))
		case <-wall.C:
			res.TimedOut, res.ExitCode = true, killedExit
			return res, nil
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
	b.cfg.Log.Info("kube-gvisor: pod running", slog.String("job_id", spec.JobID), slog.String("pod", name))

	actx, stopAttach := context.WithCancel(ctx)
	defer stopAttach()
	attached := make(chan error, 1)
	go func() { attached <- b.cfg.Attacher.Attach(actx, b.cfg.Namespace, name, ContainerName, stdin, stdout) }()
	var refused <-chan struct{}
	if s, ok := stdout.(runner.OutputSink); ok {
		refused = s.Refused()
	}
	streamDone := false
	for {
		select {
		case <-wall.C:
			res.TimedOut, res.ExitCode = true, killedExit
			stopAttach()
			return res, nil
		case <-ctx.Done():
			return res, ctx.Err()
		case <-refused:
			res.ExitCode = killedExit
			stopAttach()
			return res, nil
		case aerr := <-attached:
			attached, streamDone = nil, true
			if aerr != nil && !errors.Is(aerr, context.Canceled) {
				b.cfg.Log.Warn("kube-gvisor: attach stream ended with an error", slog.String("job_id", spec.JobID), slog.String("error", clip(aerr.Error())))
			}
		case ev, ok := <-w.ResultChan():
			if !ok {
				return res, errors.New("kube-gvisor: the pod watch ended while the pod ran")
			}
			p, gone, err := podOf(ev)
			if err != nil {
				return res, err
			}
			if gone || p.Status.Phase == corev1.PodUnknown || p.Status.Phase == corev1.PodFailed && containerState(p).Terminated == nil {
				// The node went away (or the pod was removed under us):
				// whatever arrived stays; there is no verdict.
				stopAttach()
				res.ExitCode = 1
				b.cfg.Log.Warn("kube-gvisor: pod lost", slog.String("job_id", spec.JobID), slog.String("reason", clip(reasonOf(p))))
				return res, nil
			}
			if st := containerState(p); st != nil && st.Terminated != nil {
				res.ExitCode = int(st.Terminated.ExitCode)
				res.OOMKilled = st.Terminated.Reason == "OOMKilled"
				if !streamDone {
					select {
					case <-attached:
					case <-time.After(10 * time.Second):
						stopAttach()
					}
				}
				return res, nil
			}
		}
	}
}

const killedExit = 128 + 9

func podOf(ev watch.Event) (*corev1.Pod, bool, error) {
	if ev.Type == watch.Error {
		return nil, false, fmt.Errorf("kube-gvisor: watch: %v", apierrors.FromObject(ev.Object))
	}
	p, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return nil, false, errors.New("kube-gvisor: watch: not a pod")
	}
	return p, ev.Type == watch.Deleted || p.DeletionTimestamp != nil, nil
}

func containerState(p *corev1.Pod) *corev1.ContainerState {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == ContainerName {
			return &p.Status.ContainerStatuses[i].State
		}
	}
	return &corev1.ContainerState{}
}

func reasonOf(p *corev1.Pod) string {
	if p == nil {
		return ""
	}
	if st := containerState(p); st.Terminated != nil {
		return st.Terminated.Reason
	} else if st.Waiting != nil {
		return st.Waiting.Reason
	}
	return strings.TrimSpace(string(p.Status.Phase) + " " + p.Status.Reason)
}

func clip(s string) string {
	if len(s) > 120 {
		s = s[:120]
	}
	return strings.ToValidUTF8(s, "?")
}
