// Package helm_test renders deploy/helm/quavon with Helm's own libraries
// (lint, values coalescing, the template engine in strict mode), decodes
// every manifest strictly (unknown or duplicate fields fail) into the
// Kubernetes API types of client-go's scheme, and holds the result to the
// spec's placement rules: the runner alone on the tainted sandbox node and
// alone with the Docker socket (SB6), nothing reaching it and it reaching
// only Valkey (SB5), the app keys in the broker alone, one Secret per
// workload, hardened pods, probes, resources and PodDisruptionBudgets, and
// every QUAVON_* variable one that the container's binary reads.
//
// Not run here (no cluster): applying the manifests to an API server
// (server-side validation, admission, Pod Security), NetworkPolicy
// enforcement by a CNI, scheduling onto a tainted node, the kube-gvisor
// backend's pods. README.md says how to run those by hand.
package helm_test

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/quavon/quavon/internal/config"
)

const chartDir = "quavon"

// required are the values the chart refuses to render without.
const required = `
github: {reviewAppID: "12345", fixerAppID: "67890", reviewAppSlug: quavon-review}
broker: {callers: "publisher review-read,review-write 0000000000000000000000000000000000000000000000000000000000000000\n"}
runner: {imagesLock: '{"version":1,"classes":{}}'}
`

func values(t testing.TB, extra ...string) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, doc := range append([]string{required}, extra...) {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		out = merge(out, m)
	}
	return out
}

func merge(a, b map[string]any) map[string]any {
	for k, v := range b {
		if bm, ok := v.(map[string]any); ok {
			if am, ok := a[k].(map[string]any); ok {
				a[k] = merge(am, bm)
				continue
			}
		}
		a[k] = v
	}
	return a
}

// manifests are the decoded objects of one rendering.
type manifests struct {
	objs []runtime.Object
	vals map[string]any
}

var docSep = regexp.MustCompile(`(?m)^---\s*$`)

func render(t testing.TB, vals map[string]any) *manifests {
	t.Helper()
	ch, err := loader.LoadDir(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	rv, err := util.ToRenderValues(ch, vals, common.ReleaseOptions{Name: "q", Namespace: "quavon", IsInstall: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := engine.Engine{Strict: true}.Render(ch, rv)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	codec := k8sjson.NewSerializerWithOptions(k8sjson.DefaultMetaFactory, scheme.Scheme, scheme.Scheme,
		k8sjson.SerializerOptions{Yaml: true, Strict: true})
	m := &manifests{vals: vals}
	for _, name := range sortedKeys(out) {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		for _, doc := range docSep.Split(out[name], -1) {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			obj, gvk, err := codec.Decode([]byte(doc), nil, nil)
			if err != nil {
				t.Fatalf("%s: strict decode: %v\n%s", name, err, doc)
			}
			if gvk.Version == "" || gvk.Kind == "" {
				t.Fatalf("%s: no apiVersion/kind", name)
			}
			m.objs = append(m.objs, obj)
		}
	}
	return m
}

var scenarios = []struct {
	name  string
	extra []string
}{
	{"docker-runsc", nil},
	{"docker-runsc with runner metrics", []string{`runner: {metricsPort: 9100}`}},
	{"kube-gvisor", []string{`runner: {backend: kube-gvisor}`}},
	{"review app only", []string{`github: {fixerAppID: ""}`}},
}

func TestChartLint(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			l := lint.RunAll(chartDir, values(t, sc.extra...), "quavon", lint.WithSkipSchemaValidation(false))
			for _, msg := range l.Messages {
				if msg.Severity >= support.WarningSev {
					t.Errorf("helm lint: %s", msg)
				}
			}
		})
	}
}

func TestChartSeparation(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			m := render(t, values(t, sc.extra...))
			if errs := check(m); len(errs) > 0 {
				t.Fatalf("the chart breaks the placement rules:\n  %s", strings.Join(errs, "\n  "))
			}
		})
	}
}

func TestChartRefusesMissingValues(t *testing.T) {
	for _, tc := range []struct{ name, vals, want string }{
		{"no review app", `github: {reviewAppID: ""}`, "github.reviewAppID"},
		{"no callers", `broker: {callers: ""}`, "broker.callers"},
		{"no review app slug", `github: {reviewAppSlug: ""}`, "github.reviewAppSlug"},
		{"no lockfile", `runner: {imagesLock: ""}`, "runner.imagesLock"},
		{"unknown backend", `runner: {backend: docker-runc-insecure}`, "runner.backend"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch, err := loader.LoadDir(chartDir)
			if err != nil {
				t.Fatal(err)
			}
			rv, err := util.ToRenderValues(ch, values(t, tc.vals), common.ReleaseOptions{Name: "q", Namespace: "quavon"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := (engine.Engine{Strict: true}).Render(ch, rv); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("rendered anyway or wrong error: %v", err)
			}
		})
	}
}

// TestChartCheckCatches breaks a rendering in the ways the rules forbid and
// expects each to be named.
func TestChartCheckCatches(t *testing.T) {
	for _, tc := range []struct {
		name   string
		extra  []string
		break_ func(*manifests)
		want   string
	}{
		{"socket in the worker", nil, func(m *manifests) {
			p := m.pod("worker")
			p.Volumes = append(p.Volumes, corev1.Volume{Name: "sock", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/run/docker.sock"}}})
		}, "SB6"},
		{"worker tolerates the sandbox taint", nil, func(m *manifests) {
			m.pod("worker").Tolerations = m.pod("sandbox-runner").Tolerations
		}, "taint"},
		{"runner reaches everything", nil, func(m *manifests) {
			np := m.policy("sandbox-runner")
			np.Spec.Egress = append(np.Spec.Egress, networkingv1.NetworkPolicyEgressRule{})
		}, "SB5"},
		{"runner reaches postgres", nil, func(m *manifests) {
			np := m.policy("sandbox-runner")
			np.Spec.Egress[0].To = append(np.Spec.Egress[0].To, networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "postgresql"}}})
		}, "SB5"},
		{"runner admits connections", nil, func(m *manifests) {
			np := m.policy("sandbox-runner")
			np.Spec.Ingress = append(np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{})
		}, "SB5"},
		{"no default deny", nil, func(m *manifests) {
			m.objs = slices.DeleteFunc(m.objs, func(o runtime.Object) bool {
				np, ok := o.(*networkingv1.NetworkPolicy)
				return ok && strings.HasSuffix(np.Name, "default-deny")
			})
		}, "default-deny"},
		{"app keys in the api", nil, func(m *manifests) {
			p := m.pod("api")
			p.Volumes[0].Secret.SecretName = "quavon-token-broker"
		}, "private keys"},
		{"writable root", nil, func(m *manifests) {
			f := false
			m.pod("token-broker").Containers[0].SecurityContext.ReadOnlyRootFilesystem = &f
		}, "readOnlyRootFilesystem"},
		{"service account token in the docker runner", nil, func(m *manifests) {
			tr := true
			m.pod("sandbox-runner").AutomountServiceAccountToken = &tr
		}, "service account token"},
		{"no PDB", nil, func(m *manifests) {
			m.objs = slices.DeleteFunc(m.objs, func(o runtime.Object) bool {
				p, ok := o.(*policyv1.PodDisruptionBudget)
				return ok && p.Name == "q-api"
			})
		}, "PodDisruptionBudget"},
		{"no limits", nil, func(m *manifests) { m.pod("worker").Containers[0].Resources.Limits = nil }, "resources"},
		{"another process's setting", nil, func(m *manifests) {
			c := &m.pod("api").Containers[0]
			c.Env = append(c.Env, corev1.EnvVar{Name: "QUAVON_SANDBOX_SIGNING_KEY_FILE", Value: "/run/secrets/quavon/signing-key"})
		}, "not read by quavon-api"},
		{"socket in the publisher", nil, func(m *manifests) {
			p := m.pod("publisher")
			p.Volumes = append(p.Volumes, corev1.Volume{Name: "sock", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/run/docker.sock"}}})
		}, "SB6"},
		{"app keys in the publisher", nil, func(m *manifests) {
			p := m.pod("publisher")
			p.Volumes[0].Secret.Items = append(p.Volumes[0].Secret.Items, corev1.KeyToPath{Key: "fixer-private-key", Path: "fixer-private-key"})
		}, "private keys"},
		{"pool key in the publisher", nil, func(m *manifests) {
			p := m.pod("publisher")
			p.Volumes[0].Secret.Items = append(p.Volumes[0].Secret.Items, corev1.KeyToPath{Key: "signing-key", Path: "signing-key"})
		}, "publisher mounts"},
		{"publisher reaches Valkey", nil, func(m *manifests) {
			np := m.policy("publisher")
			np.Spec.Egress[0].To = append(np.Spec.Egress[0].To, networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "valkey"}}})
		}, "publisher may reach"},
		{"publisher reaches everything", nil, func(m *manifests) {
			np := m.policy("publisher")
			np.Spec.Egress = append(np.Spec.Egress, networkingv1.NetworkPolicyEgressRule{})
		}, "publisher's egress rule"},
		{"publisher not a broker client", nil, func(m *manifests) {
			delete(m.pods()["publisher"].Labels, "quavon.dev/broker-client")
		}, "broker-client"},
		{"api a broker client", nil, func(m *manifests) {
			m.pods()["api"].Labels["quavon.dev/broker-client"] = "true"
		}, "broker-client"},
		{"publisher cannot reach the broker", nil, func(m *manifests) {
			np := m.policy("publisher")
			np.Spec.Egress = slices.DeleteFunc(np.Spec.Egress, func(r networkingv1.NetworkPolicyEgressRule) bool {
				return len(r.To) == 1 && r.To[0].PodSelector != nil && r.To[0].PodSelector.MatchLabels[componentLabel] == "token-broker"
			})
		}, "cannot reach the broker"},
		{"kube runner may touch pods elsewhere", []string{`runner: {backend: kube-gvisor}`}, func(m *manifests) {
			for _, o := range m.objs {
				if r, ok := o.(*rbacv1.Role); ok {
					r.Namespace = "quavon"
				}
			}
		}, "Role"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := render(t, values(t, tc.extra...))
			tc.break_(m)
			errs := check(m)
			if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, tc.want) }) {
				t.Fatalf("no error mentioning %q; got %q", tc.want, errs)
			}
		})
	}
}

// workloads maps each pod's component to its binary and settings view.
var workloads = map[string]struct {
	binary string
	view   config.Service
}{
	"api":            {"quavon-api", config.ServiceAPI},
	"worker":         {"quavon-worker", config.ServiceWorker},
	"token-broker":   {"quavon-token-broker", config.ServiceBroker},
	"sandbox-runner": {"quavon-sandbox-runner", config.ServiceRunner},
	"migrate":        {"quavon", config.ServiceMigrate},
	"publisher":      {"quavon-publisher", config.ServicePublisher},
}

// brokerCallers are the workloads that request tokens (ARCHITECTURE.md's
// process table): the worker's read sets and the publisher's write sets.
var brokerCallers = []string{"publisher", "worker"}

const componentLabel = "app.kubernetes.io/component"

// pods returns every pod template by component.
func (m *manifests) pods() map[string]*corev1.PodTemplateSpec {
	out := map[string]*corev1.PodTemplateSpec{}
	for _, o := range m.objs {
		switch x := o.(type) {
		case *appsv1.Deployment:
			out[x.Spec.Template.Labels[componentLabel]] = &x.Spec.Template
		case *batchv1.Job:
			out[x.Spec.Template.Labels[componentLabel]] = &x.Spec.Template
		case *appsv1.StatefulSet, *appsv1.DaemonSet, *corev1.Pod, *batchv1.CronJob:
			out["unexpected workload kind "+reflect.TypeOf(o).String()] = &corev1.PodTemplateSpec{}
		}
	}
	return out
}

func (m *manifests) pod(component string) *corev1.PodSpec { return &m.pods()[component].Spec }

func (m *manifests) policy(component string) *networkingv1.NetworkPolicy {
	for _, o := range m.objs {
		if np, ok := o.(*networkingv1.NetworkPolicy); ok && np.Spec.PodSelector.MatchLabels[componentLabel] == component {
			return np
		}
	}
	return nil
}

func (m *manifests) val(path ...string) any {
	var cur any = m.vals
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}

// peers reads a NetworkPolicyPeer list from the values (defaults from the
// chart's values.yaml when the test did not set them).
func peers(m *manifests, fail func(string, ...any), path ...string) []networkingv1.NetworkPolicyPeer {
	v := m.val(path...)
	if v == nil {
		ch, err := loader.LoadDir(chartDir)
		if err != nil {
			fail("%v", err)
			return nil
		}
		cur := any(ch.Values)
		for _, p := range path {
			mm, _ := cur.(map[string]any)
			cur = mm[p]
		}
		v = cur
	}
	b, err := yaml.Marshal(v)
	var out []networkingv1.NetworkPolicyPeer
	if err == nil {
		err = yaml.UnmarshalStrict(b, &out)
	}
	if err != nil || len(out) == 0 {
		fail("values %s: want a list of NetworkPolicyPeers (%v)", strings.Join(path, "."), err)
	}
	return out
}

func check(m *manifests) []string {
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	docker := m.val("runner", "backend") != "kube-gvisor"
	pods := m.pods()
	taintKey := "quavon.dev/sandbox"

	for _, comp := range sortedKeys(workloads) {
		if pods[comp] == nil {
			fail("workload %s is missing", comp)
		}
	}
	secretHolders := map[string][]string{}
	for _, comp := range sortedKeys(pods) {
		w, known := workloads[comp]
		if !known {
			fail("unexpected workload %q", comp)
			continue
		}
		spec := &pods[comp].Spec
		runner := comp == "sandbox-runner"
		if spec.HostNetwork || spec.HostPID || spec.HostIPC {
			fail("%s: host namespaces", comp)
		}
		tokenOK := runner && !docker
		if spec.AutomountServiceAccountToken == nil || (*spec.AutomountServiceAccountToken && !tokenOK) {
			fail("%s: mounts a service account token it has no use for", comp)
		}
		for _, tol := range spec.Tolerations {
			if (tol.Key == taintKey || tol.Operator == corev1.TolerationOpExists && tol.Key == "") && !(runner && docker) {
				fail("%s tolerates the sandbox node's taint: only the runner may run there", comp)
			}
		}
		if runner && docker {
			if spec.NodeSelector[taintKey] != "true" || !slices.ContainsFunc(spec.Tolerations, func(t corev1.Toleration) bool {
				return t.Key == taintKey && t.Effect == corev1.TaintEffectNoSchedule
			}) {
				fail("sandbox-runner: not pinned to the tainted sandbox node")
			}
		}
		if ps := spec.SecurityContext; ps == nil || ps.SeccompProfile == nil || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			fail("%s: pod seccomp profile is not RuntimeDefault", comp)
		} else if !(runner && docker) && (ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.RunAsUser == nil || *ps.RunAsUser != 65532) {
			fail("%s: does not run as 65532", comp)
		}
		for _, v := range spec.Volumes {
			if v.HostPath != nil {
				if !(runner && docker && v.HostPath.Path == m.valOr("/var/run/docker.sock", "runner", "docker", "socketPath")) {
					fail("SB6: %s mounts the host path %s: only the runner (docker-runsc) has the Docker socket", comp, v.HostPath.Path)
				}
			}
			if v.Secret != nil {
				secretHolders[v.Secret.SecretName] = append(secretHolders[v.Secret.SecretName], comp)
			}
			if v.Projected != nil || v.CSI != nil || v.PersistentVolumeClaim != nil {
				fail("%s: unexpected volume %s", comp, v.Name)
			}
		}
		if runner && docker && !slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.HostPath != nil }) {
			fail("sandbox-runner (docker-runsc) lacks the Docker socket")
		}
		if len(spec.Containers) != 1 || len(spec.InitContainers) > 0 {
			fail("%s: want one container", comp)
			continue
		}
		c := spec.Containers[0]
		if got := imageBinary(c.Image); got != w.binary {
			fail("%s: image %s does not run %s", comp, c.Image, w.binary)
		}
		sc := c.SecurityContext
		switch {
		case sc == nil:
			fail("%s: no container securityContext", comp)
		case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
			fail("%s: readOnlyRootFilesystem is not true", comp)
		case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation, sc.Privileged != nil && *sc.Privileged:
			fail("%s: may escalate privileges", comp)
		case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
			fail("%s: capabilities are not drop [ALL]", comp)
		}
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
			fail("%s: resources lack requests or limits", comp)
		}
		if comp == "api" || comp == "worker" || comp == "token-broker" || comp == "publisher" {
			if c.ReadinessProbe == nil || c.LivenessProbe == nil {
				fail("%s: no readiness or liveness probe", comp)
			}
		}
		checkEnv(comp, w.view, spec, c, fail)
	}

	// Secrets: one workload each; the apps' private keys in the broker alone.
	brokerSecret := m.valOr("quavon-token-broker", "secrets", "broker")
	for _, name := range sortedKeys(secretHolders) {
		h := secretHolders[name]
		if len(h) > 1 {
			fail("Secret %s is mounted by %v: every workload has its own", name, h)
		}
		if name == brokerSecret && !slices.Equal(h, []string{"token-broker"}) {
			fail("Secret %s (the apps' private keys) is mounted by %v: only the token broker holds the apps' private keys", name, h)
		}
	}
	for _, comp := range sortedKeys(pods) {
		if comp == "token-broker" {
			continue
		}
		for _, v := range pods[comp].Spec.Volumes {
			if v.Secret != nil && slices.ContainsFunc(v.Secret.Items, func(k corev1.KeyToPath) bool { return strings.Contains(k.Key, "private-key") }) {
				fail("%s mounts %s: only the token broker holds the apps' private keys", comp, v.Secret.SecretName)
			}
		}
	}

	// PodDisruptionBudgets for every Deployment.
	for _, o := range m.objs {
		d, ok := o.(*appsv1.Deployment)
		if !ok {
			continue
		}
		if !slices.ContainsFunc(m.objs, func(o runtime.Object) bool {
			p, ok := o.(*policyv1.PodDisruptionBudget)
			return ok && reflect.DeepEqual(p.Spec.Selector, d.Spec.Selector)
		}) {
			fail("Deployment %s has no PodDisruptionBudget", d.Name)
		}
	}

	checkPublisher(m, fail)
	checkNetworkPolicies(m, docker, fail)
	if !docker {
		checkKubeBackend(m, fail)
	}
	return errs
}

func (m *manifests) valOr(def string, path ...string) string {
	if s, ok := m.val(path...).(string); ok && s != "" {
		return s
	}
	return def
}

func checkNetworkPolicies(m *manifests, docker bool, fail func(string, ...any)) {
	var deny bool
	for _, o := range m.objs {
		np, ok := o.(*networkingv1.NetworkPolicy)
		if ok && np.Namespace == "" && len(np.Spec.PodSelector.MatchLabels) == 0 && len(np.Spec.PodSelector.MatchExpressions) == 0 &&
			len(np.Spec.Ingress) == 0 && len(np.Spec.Egress) == 0 && slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) &&
			slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
			deny = true
		}
	}
	if !deny {
		fail("no default-deny NetworkPolicy (empty pod selector, Ingress and Egress, no rules) in the release's namespace")
	}
	for comp := range workloads {
		if m.policy(comp) == nil {
			fail("%s: no NetworkPolicy of its own", comp)
		}
	}
	// SB5: the runner's egress only to Valkey, DNS (and, for kube-gvisor,
	// the API server); no ingress except a scraper on its metrics port.
	np := m.policy("sandbox-runner")
	if np == nil {
		return
	}
	allowed := append(peers(m, fail, "valkey", "peers"), peers(m, fail, "dns", "peers")...)
	if !docker {
		allowed = append(allowed, peers(m, fail, "runner", "kube", "apiServerPeers")...)
	}
	for i, r := range np.Spec.Egress {
		if len(r.To) == 0 || len(r.Ports) == 0 {
			fail("SB5: the runner's egress rule %d allows every destination or port", i)
		}
		for _, p := range r.To {
			if !slices.ContainsFunc(allowed, func(a networkingv1.NetworkPolicyPeer) bool { return reflect.DeepEqual(a, p) }) {
				fail("SB5: the runner may reach %+v: only Valkey (and DNS, the API server for kube-gvisor)", p)
			}
		}
	}
	metricsPort := m.val("runner", "metricsPort")
	for i, r := range np.Spec.Ingress {
		if metricsPort == nil || len(r.From) == 0 || len(r.Ports) != 1 || fmt.Sprint(r.Ports[0].Port.IntValue()) != fmt.Sprint(metricsPort) {
			fail("SB5: the runner admits connections (ingress rule %d): nothing connects to it but a scraper on its metrics port", i)
		}
	}
	// The broker admits only its callers.
	if bp := m.policy("token-broker"); bp != nil {
		for i, r := range bp.Spec.Ingress {
			if len(r.From) == 0 {
				fail("the broker's ingress rule %d admits anyone", i)
			}
		}
	}
}

// checkPublisher holds the broker's callers and the publisher to their
// placement: exactly the worker and the publisher carry the broker-client
// label and a broker credential and may reach the broker's pods; the
// publisher mounts its database password and broker credential only and
// reaches Postgres, DNS, the broker and public HTTPS (GitHub) only.
func checkPublisher(m *manifests, fail func(string, ...any)) {
	pods := m.pods()
	brokerPeer := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
		"app.kubernetes.io/name": "quavon", "app.kubernetes.io/instance": "q", componentLabel: "token-broker"}}}
	for _, comp := range sortedKeys(pods) {
		caller := slices.Contains(brokerCallers, comp)
		if labelled := pods[comp].Labels["quavon.dev/broker-client"] == "true"; labelled != caller {
			fail("%s: label quavon.dev/broker-client=%v, want %v (only %v request tokens)", comp, labelled, caller, brokerCallers)
		}
		cred := slices.ContainsFunc(pods[comp].Spec.Volumes, func(v corev1.Volume) bool {
			return v.Secret != nil && slices.ContainsFunc(v.Secret.Items, func(k corev1.KeyToPath) bool { return k.Key == "broker-credential" })
		})
		if cred != caller {
			fail("%s: mounts a broker credential: %v, want %v", comp, cred, caller)
		}
		if np := m.policy(comp); caller && np != nil && !slices.ContainsFunc(np.Spec.Egress, func(r networkingv1.NetworkPolicyEgressRule) bool {
			return slices.ContainsFunc(r.To, func(p networkingv1.NetworkPolicyPeer) bool { return reflect.DeepEqual(p, brokerPeer) })
		}) {
			fail("%s cannot reach the broker (no egress rule to its pods)", comp)
		}
	}
	if p := pods["publisher"]; p != nil {
		for _, v := range p.Spec.Volumes {
			if v.Secret == nil {
				continue
			}
			for _, k := range v.Secret.Items {
				if k.Key != "database-password" && k.Key != "broker-credential" {
					fail("publisher mounts %s: it holds its database password and its broker credential only", k.Key)
				}
			}
		}
	}
	np := m.policy("publisher")
	if np == nil {
		return
	}
	allowed := append(append(append(peers(m, fail, "database", "peers"), peers(m, fail, "dns", "peers")...),
		peers(m, fail, "internet", "peers")...), brokerPeer)
	for i, r := range np.Spec.Egress {
		if len(r.To) == 0 || len(r.Ports) == 0 {
			fail("the publisher's egress rule %d allows every destination or port", i)
		}
		for _, p := range r.To {
			if !slices.ContainsFunc(allowed, func(a networkingv1.NetworkPolicyPeer) bool { return reflect.DeepEqual(a, p) }) {
				fail("the publisher may reach %+v: only Postgres, DNS, the broker and GitHub", p)
			}
		}
	}
	for i, r := range np.Spec.Ingress {
		if len(r.From) == 0 {
			fail("the publisher's ingress rule %d admits anyone: only a scraper on its metrics port", i)
		}
	}
}

func checkKubeBackend(m *manifests, fail func(string, ...any)) {
	ns := m.valOr("quavon-sandbox", "runner", "kube", "namespace")
	var rc *nodev1.RuntimeClass
	var denyInSandbox bool
	for _, o := range m.objs {
		switch x := o.(type) {
		case *rbacv1.Role:
			if x.Namespace != ns {
				fail("Role %s is in namespace %q: the runner's rights are in the sandbox namespace %s only", x.Name, x.Namespace, ns)
			}
		case *rbacv1.ClusterRole:
			for _, r := range x.Rules {
				if !slices.Equal(r.Resources, []string{"runtimeclasses"}) || !slices.Equal(r.Verbs, []string{"get"}) {
					fail("ClusterRole %s grants %v on %v: cluster-wide the runner may only get its RuntimeClass", x.Name, r.Verbs, r.Resources)
				}
			}
		case *nodev1.RuntimeClass:
			rc = x
		case *networkingv1.NetworkPolicy:
			if x.Namespace == ns && len(x.Spec.PodSelector.MatchLabels) == 0 && len(x.Spec.Ingress) == 0 && len(x.Spec.Egress) == 0 && len(x.Spec.PolicyTypes) == 2 {
				denyInSandbox = true
			}
		}
	}
	if rc == nil || rc.Handler != "runsc" || rc.Scheduling == nil || rc.Scheduling.NodeSelector["quavon.dev/sandbox"] != "true" {
		fail("RuntimeClass gvisor with handler runsc scheduled onto the sandbox nodes is missing")
	}
	if !denyInSandbox {
		fail("the sandbox namespace has no deny-all NetworkPolicy")
	}
}

// checkEnv holds a container's QUAVON_* variables to its binary's view, and
// its *_FILE settings to keys of the Secret it mounts.
func checkEnv(comp string, view config.Service, spec *corev1.PodSpec, c corev1.Container, fail func(string, ...any)) {
	settings := map[string]config.Setting{}
	for _, st := range config.Settings() {
		settings[st.Name] = st
	}
	files := map[string]bool{}
	for _, vm := range c.VolumeMounts {
		for _, v := range spec.Volumes {
			if v.Name == vm.Name && v.Secret != nil {
				for _, it := range v.Secret.Items {
					files[vm.MountPath+"/"+it.Path] = true
				}
			}
		}
	}
	for _, e := range c.Env {
		if !strings.HasPrefix(e.Name, "QUAVON_") {
			continue
		}
		st, ok := settings[e.Name]
		switch {
		case !ok:
			fail("%s: %s is not in the settings registry (secrets only through _FILE)", comp, e.Name)
		case !slices.Contains(st.Services(), view):
			fail("%s: %s is not read by %s (it would refuse to start)", comp, e.Name, view)
		case st.Secret && !files[e.Value]:
			fail("%s: %s=%s is not a key of a Secret it mounts", comp, e.Name, e.Value)
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			fail("%s: %s comes from a Secret as a variable: secrets are files", comp, e.Name)
		}
	}
}

func imageBinary(image string) string {
	i := strings.LastIndex(image, "/")
	bin, _, _ := strings.Cut(image[i+1:], ":")
	return bin
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
