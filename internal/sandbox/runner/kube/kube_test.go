package kube_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/sandbox/entry"
	"github.com/quavon/quavon/internal/sandbox/frame"
	"github.com/quavon/quavon/internal/sandbox/runner"
	"github.com/quavon/quavon/internal/sandbox/runner/kube"
	"github.com/quavon/quavon/internal/snapshot"
)

const ns = "quavon-sandbox"

const image = "registry.example/quavon/sandbox-node@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// kubelet plays the node: what it does with a new pod is the test's.
type kubelet func(ctx context.Context, c *fake.Clientset, p *corev1.Pod)

// attacher runs the real entry program's logic on the attach stream, or
// blocks until the stream is cancelled (block).
type attacher struct {
	block    bool
	mu       sync.Mutex
	attached []string
	done     chan struct{}
}

func (a *attacher) Attach(ctx context.Context, namespace, pod, container string, stdin io.Reader, stdout io.Writer) error {
	a.mu.Lock()
	a.attached = append(a.attached, namespace+"/"+pod+"/"+container)
	a.mu.Unlock()
	defer close(a.done)
	if a.block {
		<-ctx.Done()
		return ctx.Err()
	}
	dir, _ := os.MkdirTemp("", "kubeguest")
	defer os.RemoveAll(dir)
	cfg := entry.Config{WorkDir: filepath.Join(dir, "work"), OutDir: filepath.Join(dir, "out"), TmpDir: filepath.Join(dir, "tmp"), Shell: "/bin/sh", Env: []string{"PATH=/usr/bin:/bin", "CI=true"}}
	for _, d := range []string{cfg.WorkDir, cfg.OutDir, cfg.TmpDir} {
		os.Mkdir(d, 0o700)
	}
	return entry.Run(ctx, cfg, stdin, stdout)
}

func setStatus(ctx context.Context, c *fake.Clientset, p *corev1.Pod, phase corev1.PodPhase, st corev1.ContainerState) {
	p = p.DeepCopy()
	p.Status.Phase = phase
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: kube.ContainerName, State: st}}
	c.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
}

func newBackend(t *testing.T, a *attacher, k kubelet, start time.Duration) (*kube.Backend, *fake.Clientset) {
	t.Helper()
	c := fake.NewClientset(&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc"})
	b, err := kube.New(context.Background(), kube.Config{Client: c, Attacher: a, Namespace: ns, RuntimeClass: "gvisor",
		StartTimeout: start, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := c.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && ev.Type == "ADDED" {
				go k(ctx, c, p)
			}
		}
	}()
	return b, c
}

func limits() sandbox.Limits {
	return sandbox.Limits{CPUMillis: 1500, MemoryBytes: 256 << 20, Pids: 128, WallClockSeconds: 20, SetupSeconds: 10,
		WorkBytes: 32 << 20, TmpBytes: 16 << 20, OutputBytes: 1 << 20, NoFile: 256, FileSizeBytes: 16 << 20}
}

type outcome struct {
	out  *runner.Output
	perr error
	res  runner.ExecResult
	err  error
}

func run(t *testing.T, b *kube.Backend, spec runner.ContainerSpec, command string) outcome {
	t.Helper()
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "README"), []byte("hello\n"), 0o644)
	base, _, _ := snapshot.Build(src, snapshot.Limits{})
	key, _ := frame.NewKey()
	req := &frame.Request{RunCommand: command, OutputBytes: 1 << 20, MaxEntries: 100, MaxUnpackedBytes: 1 << 20}
	var in bytes.Buffer
	frame.WriteInput(&in, key, req, base, nil)
	outR, outW := io.Pipe()
	parsed := make(chan outcome, 1)
	go func() {
		out, perr := runner.ReadOutput(outR, key, req, runner.OutputLimits{Total: 1 << 20, Raw: 4 << 20}, nil)
		outR.CloseWithError(io.ErrClosedPipe)
		parsed <- outcome{out: out, perr: perr}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := b.Exec(ctx, spec, &in, outW)
	outW.Close()
	o := <-parsed
	o.res, o.err = res, err
	return o
}

func spec(id string) runner.ContainerSpec {
	return runner.ContainerSpec{JobID: id, ImageRef: image, Env: []string{"PATH=/usr/bin:/bin", "HOME=/work/.home", "CI=true"}, Limits: limits()}
}

// TestJobLifecycle: create, attach, wait, collect, delete, with the pod
// read back from the API holding every setting of the Docker backend.
func TestJobLifecycle(t *testing.T) {
	t.Parallel()
	a := &attacher{done: make(chan struct{})}
	var seen *corev1.Pod
	var mu sync.Mutex
	b, c := newBackend(t, a, func(ctx context.Context, c *fake.Clientset, p *corev1.Pod) {
		got, err := c.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return
		}
		mu.Lock()
		seen = got
		mu.Unlock()
		setStatus(ctx, c, got, corev1.PodRunning, corev1.ContainerState{Running: &corev1.ContainerStateRunning{}})
		<-a.done
		setStatus(ctx, c, got, corev1.PodSucceeded, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}})
	}, time.Minute)
	o := run(t, b, spec("job-kube-1"), "cat README; echo CI=$CI; exit 4")
	if o.err != nil || o.perr != nil || o.out.Exit == nil {
		t.Fatalf("%v %v %+v", o.err, o.perr, o.out)
	}
	if r := o.out.Result(frame.StepRun); r == nil || r.ExitCode != 4 || !strings.Contains(o.out.Files[frame.StdoutName], "hello\nCI=true") {
		t.Fatalf("run %+v %q", r, o.out.Files[frame.StdoutName])
	}
	mu.Lock()
	p := seen
	mu.Unlock()
	if p == nil {
		t.Fatal("the kubelet never saw the pod")
	}
	checkPod(t, p)
	if len(a.attached) != 1 || a.attached[0] != ns+"/"+p.Name+"/sandbox" {
		t.Errorf("attached %v", a.attached)
	}
	if _, err := c.CoreV1().Pods(ns).Get(context.Background(), p.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("pod not deleted: %v", err)
	}
	var verbs []string
	for _, act := range c.Actions() {
		if act.GetResource().Resource == "pods" && act.GetSubresource() == "" && act.GetVerb() != "get" && act.GetVerb() != "watch" {
			verbs = append(verbs, act.GetVerb())
		}
	}
	if strings.Join(verbs, " ") != "create delete" {
		t.Errorf("pod calls %v", verbs)
	}
}

func checkPod(t *testing.T, p *corev1.Pod) {
	t.Helper()
	s := p.Spec
	f := func(b *bool) bool { return b != nil && !*b }
	tr := func(b *bool) bool { return b != nil && *b }
	if s.RuntimeClassName == nil || *s.RuntimeClassName != "gvisor" || !f(s.AutomountServiceAccountToken) || !f(s.EnableServiceLinks) ||
		s.HostNetwork || s.HostPID || s.HostIPC || !f(s.ShareProcessNamespace) || s.RestartPolicy != corev1.RestartPolicyNever ||
		s.TerminationGracePeriodSeconds == nil || *s.TerminationGracePeriodSeconds != 0 || s.DNSPolicy != corev1.DNSNone ||
		s.ServiceAccountName != "" || len(s.InitContainers) != 0 || len(s.Containers) != 1 || s.ActiveDeadlineSeconds == nil {
		t.Errorf("pod spec %+v", s)
	}
	if len(p.Labels) != 1 || p.Labels[kube.LabelJobID] != "job-kube-1" || len(p.Annotations) != 0 {
		t.Errorf("labels %v annotations %v", p.Labels, p.Annotations)
	}
	ps := s.SecurityContext
	if ps == nil || *ps.RunAsUser != 65532 || *ps.RunAsGroup != 65532 || !tr(ps.RunAsNonRoot) || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security %+v", ps)
	}
	ct := s.Containers[0]
	cs := ct.SecurityContext
	if cs == nil || !f(cs.AllowPrivilegeEscalation) || !f(cs.Privileged) || !tr(cs.ReadOnlyRootFilesystem) || !tr(cs.RunAsNonRoot) ||
		*cs.RunAsUser != 65532 || len(cs.Capabilities.Drop) != 1 || cs.Capabilities.Drop[0] != "ALL" || len(cs.Capabilities.Add) != 0 {
		t.Errorf("container security %+v", cs)
	}
	if ct.Image != image || len(ct.Command) != 1 || ct.Command[0] != runner.EntryPath || !ct.Stdin || !ct.StdinOnce || ct.TTY ||
		len(ct.Ports) != 0 || len(ct.EnvFrom) != 0 {
		t.Errorf("container %+v", ct)
	}
	if len(ct.Env) != 3 || ct.Env[2].Name != "CI" || ct.Env[2].Value != "true" {
		t.Errorf("env %v", ct.Env)
	}
	lim := ct.Resources.Limits
	if lim.Cpu().MilliValue() != 1500 || lim.Memory().Value() != 256<<20 || !ct.Resources.Requests.Cpu().Equal(*lim.Cpu()) || !ct.Resources.Requests.Memory().Equal(*lim.Memory()) {
		t.Errorf("resources %+v", ct.Resources)
	}
	sizes := map[string]int64{"work": 32 << 20, "out": 1 << 20, "tmp": 16 << 20, "shm": 1 << 20}
	for _, v := range s.Volumes {
		if v.EmptyDir == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory || v.EmptyDir.SizeLimit.Cmp(*resource.NewQuantity(sizes[v.Name], resource.BinarySI)) != 0 {
			t.Errorf("volume %s: %+v", v.Name, v.VolumeSource)
		}
		delete(sizes, v.Name)
	}
	if len(sizes) != 0 || len(s.Volumes) != 4 {
		t.Errorf("volumes %+v", s.Volumes)
	}
}

// TestPodNeverStarts: an image that cannot be pulled keeps the pod
// pending; the job fails at the start timeout with the kubelet's reason,
// and the pod is deleted.
func TestPodNeverStarts(t *testing.T) {
	t.Parallel()
	a := &attacher{done: make(chan struct{})}
	b, c := newBackend(t, a, func(ctx context.Context, c *fake.Clientset, p *corev1.Pod) {
		setStatus(ctx, c, p, corev1.PodPending, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}})
	}, time.Second)
	o := run(t, b, spec("job-kube-2"), "true")
	if o.err == nil || !strings.Contains(o.err.Error(), "did not start within 1s (ImagePullBackOff)") {
		t.Fatalf("err %v", o.err)
	}
	if len(a.attached) != 0 {
		t.Error("attached to a pod that never ran")
	}
	if pods, _ := c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{}); len(pods.Items) != 0 {
		t.Errorf("pods left: %d", len(pods.Items))
	}
}

// TestNodeDisappears: the pod runs, then its node goes (the pod's phase
// turns Unknown, or the pod is deleted under the runner): the job ends
// without a verdict, the stream is cancelled and the pod deleted.
func TestNodeDisappears(t *testing.T) {
	t.Parallel()
	for name, lose := range map[string]func(ctx context.Context, c *fake.Clientset, p *corev1.Pod){
		"unknown": func(ctx context.Context, c *fake.Clientset, p *corev1.Pod) {
			setStatus(ctx, c, p, corev1.PodUnknown, corev1.ContainerState{Running: &corev1.ContainerStateRunning{}})
		},
		"deleted": func(ctx context.Context, c *fake.Clientset, p *corev1.Pod) {
			c.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{})
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := &attacher{block: true, done: make(chan struct{})}
			b, c := newBackend(t, a, func(ctx context.Context, c *fake.Clientset, p *corev1.Pod) {
				setStatus(ctx, c, p, corev1.PodRunning, corev1.ContainerState{Running: &corev1.ContainerStateRunning{}})
				for i := 0; i < 500 && len(a.attachedNow()) == 0; i++ {
					time.Sleep(10 * time.Millisecond)
				}
				got, _ := c.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
				lose(ctx, c, got)
			}, time.Minute)
			o := run(t, b, spec("job-kube-3"), "true")
			if o.err != nil || o.res.ExitCode != 1 || o.res.TimedOut || o.out.Exit != nil {
				t.Fatalf("%v %+v %+v", o.err, o.res, o.out.Exit)
			}
			select {
			case <-a.done:
			case <-time.After(5 * time.Second):
				t.Fatal("the attach stream was not cancelled")
			}
			if pods, _ := c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{}); len(pods.Items) != 0 {
				t.Errorf("pods left: %d", len(pods.Items))
			}
		})
	}
}

func (a *attacher) attachedNow() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.attached...)
}

// TestRefusals: no gVisor RuntimeClass, a NetworkPolicy that allows
// egress, a local image id, setup-step egress.
func TestRefusals(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	c := fake.NewClientset(&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runc"})
	if _, err := kube.New(context.Background(), kube.Config{Client: c, Attacher: &attacher{}, Namespace: ns, RuntimeClass: "gvisor", Log: log}); err == nil || !strings.Contains(err.Error(), "not gVisor") {
		t.Errorf("runc handler: %v", err)
	}
	if _, err := kube.New(context.Background(), kube.Config{Client: fake.NewClientset(), Attacher: &attacher{}, Namespace: ns, RuntimeClass: "gvisor", Log: log}); err == nil {
		t.Error("no RuntimeClass accepted")
	}
	a := &attacher{done: make(chan struct{})}
	b, c2 := newBackend(t, a, func(context.Context, *fake.Clientset, *corev1.Pod) {}, time.Second)
	np := kube.DenyAll(ns)
	np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{}}
	c2.NetworkingV1().NetworkPolicies(ns).Update(context.Background(), np, metav1.UpdateOptions{})
	if o := run(t, b, spec("job-kube-4"), "true"); o.err == nil || !strings.Contains(o.err.Error(), "allows traffic") {
		t.Errorf("open policy: %v", o.err)
	}
	c2.NetworkingV1().NetworkPolicies(ns).Delete(context.Background(), kube.PolicyName, metav1.DeleteOptions{})
	if o := run(t, b, spec("job-kube-5"), "true"); o.err == nil || !strings.Contains(o.err.Error(), "missing") {
		t.Errorf("no policy: %v", o.err)
	}
	s := spec("job-kube-6")
	s.ImageRef = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	if _, err := b.PodSpec("x", s); err == nil {
		t.Error("a local image id accepted")
	}
	if err := b.CheckEgress(context.Background(), "", netip.AddrPort{}, false); err == nil {
		t.Error("egress accepted")
	}
	if kube.JobLabel("_"+strings.Repeat("a", 63)) == "_"+strings.Repeat("a", 63) || kube.JobLabel("job-1") != "job-1" {
		t.Error("job label")
	}
}
