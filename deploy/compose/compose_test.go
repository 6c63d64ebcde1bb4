// Package compose_test holds deploy/compose/compose.yaml to the spec's
// placement rules: SB5 (the runner only on the sandbox-control network with
// Valkey, never where Postgres, the API, the worker or the broker are), SB6
// (the Docker socket only in the runner, which publishes no port), the app
// private keys only in the token broker, every secret in exactly one
// service, the egress proxy alone on the internal egress network, every
// service on exactly the networks the spec's process table gives it (the
// publisher: the database, the broker and GitHub), a broker credential
// exactly for the broker's callers, and every QUAVON_* variable one that
// the service's own binary reads.
package compose_test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/quavon/quavon/internal/config"
)

type composeFile struct {
	Name     string                  `yaml:"name"`
	Services map[string]*service     `yaml:"services"`
	Networks map[string]*network     `yaml:"networks"`
	Volumes  map[string]struct{}     `yaml:"volumes"`
	Secrets  map[string]secretSource `yaml:"secrets"`
	// Extensions are the x-* anchors; any other top-level key is refused.
	Extensions map[string]any `yaml:",inline"`
}

type secretSource struct {
	File string `yaml:"file"`
}

// service lists every key the file may use: a key not listed here (say
// privileged, pid, network_mode, devices, cap_add, volumes_from) fails the
// decode, so a new one is a conscious change of this test.
type service struct {
	Image       string               `yaml:"image"`
	Command     []string             `yaml:"command"`
	User        string               `yaml:"user"`
	ReadOnly    bool                 `yaml:"read_only"`
	CapDrop     []string             `yaml:"cap_drop"`
	SecurityOpt []string             `yaml:"security_opt"`
	Restart     string               `yaml:"restart"`
	Tmpfs       []string             `yaml:"tmpfs"`
	ShmSize     string               `yaml:"shm_size"`
	Environment map[string]string    `yaml:"environment"`
	Secrets     []string             `yaml:"secrets"`
	Volumes     []string             `yaml:"volumes"`
	Ports       []string             `yaml:"ports"`
	Networks    serviceNetworks      `yaml:"networks"`
	DependsOn   map[string]dependsOn `yaml:"depends_on"`
	Healthcheck *struct {
		Test     []string `yaml:"test"`
		Interval string   `yaml:"interval"`
		Timeout  string   `yaml:"timeout"`
		Retries  int      `yaml:"retries"`
	} `yaml:"healthcheck"`
}

type dependsOn struct {
	Condition string `yaml:"condition"`
}

type network struct {
	Name       string            `yaml:"name"`
	Internal   bool              `yaml:"internal"`
	Driver     string            `yaml:"driver"`
	DriverOpts map[string]string `yaml:"driver_opts"`
	Labels     map[string]string `yaml:"labels"`
	IPAM       *struct {
		Config []struct {
			Subnet string `yaml:"subnet"`
		} `yaml:"config"`
	} `yaml:"ipam"`
}

// serviceNetworks is the list or the map form of a service's networks.
type serviceNetworks map[string]struct {
	IPv4Address string `yaml:"ipv4_address"`
}

func (n *serviceNetworks) UnmarshalYAML(v *yaml.Node) error {
	*n = serviceNetworks{}
	if v.Kind == yaml.SequenceNode {
		var names []string
		if err := v.Decode(&names); err != nil {
			return err
		}
		for _, name := range names {
			(*n)[name] = struct {
				IPv4Address string `yaml:"ipv4_address"`
			}{}
		}
		return nil
	}
	var m map[string]struct {
		IPv4Address string `yaml:"ipv4_address"`
	}
	if err := v.Decode(&m); err != nil {
		return err
	}
	for k, x := range m {
		(*n)[k] = x
	}
	return nil
}

// Services of the file and the binary each runs (the migrate job runs the
// quavon CLI's migrate view).
var quavonServices = map[string]struct {
	image string
	view  config.Service
}{
	"migrate":      {"quavon", config.ServiceMigrate},
	"api":          {"quavon-api", config.ServiceAPI},
	"worker":       {"quavon-worker", config.ServiceWorker},
	"token-broker": {"quavon-token-broker", config.ServiceBroker},
	"runner":       {"quavon-sandbox-runner", config.ServiceRunner},
	"egress":       {"quavon-sandbox-egress", config.ServiceEgress},
	"publisher":    {"quavon-publisher", config.ServicePublisher},
}

// wantNetworks is each service's exact set of networks (ARCHITECTURE.md's
// process table): a service joins no network it has no business on.
var wantNetworks = map[string][]string{
	"postgres":     {"backend"},
	"valkey":       {"sandbox-control", "sandbox-queue"},
	"migrate":      {"backend"},
	"api":          {"backend", "broker", "edge", "metrics"},
	"worker":       {"backend", "broker", "metrics", "outbound", "sandbox-queue"},
	"publisher":    {"backend", "broker", "metrics", "outbound"},
	"token-broker": {"broker", "outbound"},
	"runner":       {"sandbox-control"},
	"egress":       {"outbound", "sandbox-control", "sandbox-egress"},
}

// Who may share a network with whom. A network's members must all be in
// one of these sets.
var (
	backendMembers        = []string{"postgres", "migrate", "api", "worker", "publisher"}
	sandboxControlMembers = []string{"valkey", "runner", "egress"}
	sandboxQueueMembers   = []string{"valkey", "worker"}
	brokerMembers         = []string{"token-broker", "api", "worker", "publisher"}
)

var interpolation = regexp.MustCompile(`\$\{([A-Z0-9_]+)(?:(:-|:\?)([^}]*))?\}`)

// load reads compose.yaml the way Compose does without an .env file: a
// ${VAR:-default} becomes its default and a required ${VAR:?message} the
// placeholder "1" (the app ids are numbers).
func load(t testing.TB, path string) *composeFile {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := interpolation.ReplaceAllStringFunc(string(raw), func(m string) string {
		p := interpolation.FindStringSubmatch(m)
		switch p[2] {
		case ":-":
			return p[3]
		case ":?":
			return "1"
		}
		return ""
	})
	dec := yaml.NewDecoder(bytes.NewReader([]byte(text)))
	dec.KnownFields(true)
	var f composeFile
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for k := range f.Extensions {
		if !strings.HasPrefix(k, "x-") {
			t.Fatalf("%s: unknown top-level key %q", path, k)
		}
	}
	return &f
}

func TestComposeSeparation(t *testing.T) {
	f := load(t, "compose.yaml")
	if errs := check(f); len(errs) > 0 {
		t.Fatalf("compose.yaml breaks the placement rules:\n  %s", strings.Join(errs, "\n  "))
	}
}

// TestComposeCheckCatches runs the checks on broken copies of the file, so
// each rule is known to fire.
func TestComposeCheckCatches(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(*composeFile)
		want   string
	}{
		{"socket in the worker", func(f *composeFile) {
			f.Services["worker"].Volumes = append(f.Services["worker"].Volumes, "/var/run/docker.sock:/var/run/docker.sock")
		}, "SB6"},
		{"socket dir in the api", func(f *composeFile) {
			f.Services["api"].Volumes = append(f.Services["api"].Volumes, "/run:/host-run:ro")
		}, "SB6"},
		{"runner on backend", func(f *composeFile) {
			f.Services["runner"].Networks["backend"] = struct {
				IPv4Address string `yaml:"ipv4_address"`
			}{}
		}, "SB5"},
		{"postgres on sandbox-control", func(f *composeFile) {
			f.Services["postgres"].Networks["sandbox-control"] = struct {
				IPv4Address string `yaml:"ipv4_address"`
			}{}
		}, "SB5"},
		{"runner publishes a port", func(f *composeFile) { f.Services["runner"].Ports = []string{"9090:9090"} }, "port"},
		{"app key in the worker", func(f *composeFile) {
			f.Services["worker"].Secrets = append(f.Services["worker"].Secrets, "review_private_key")
		}, "private key"},
		{"signing key in the api", func(f *composeFile) {
			f.Services["api"].Secrets = append(f.Services["api"].Secrets, "sandbox_signing_key")
		}, "sandbox_signing_key"},
		{"second member on the egress network", func(f *composeFile) {
			f.Services["runner"].Networks["sandbox-egress"] = struct {
				IPv4Address string `yaml:"ipv4_address"`
			}{}
		}, "egress network"},
		{"egress network not internal", func(f *composeFile) { f.Networks["sandbox-egress"].Internal = false }, "internal"},
		{"backend not internal", func(f *composeFile) { f.Networks["backend"].Internal = false }, "internal"},
		{"writable root", func(f *composeFile) { f.Services["egress"].ReadOnly = false }, "read_only"},
		{"capabilities kept", func(f *composeFile) { f.Services["token-broker"].CapDrop = nil }, "cap_drop"},
		{"another process's setting", func(f *composeFile) {
			f.Services["api"].Environment["QUAVON_SANDBOX_SIGNING_KEY_FILE"] = "/run/secrets/x"
		}, "not read by quavon-api"},
		{"secret given directly", func(f *composeFile) {
			f.Services["api"].Environment["QUAVON_DATABASE_PASSWORD"] = "hunter2"
		}, "QUAVON_DATABASE_PASSWORD"},
		{"publisher on sandbox-control", func(f *composeFile) {
			f.Services["publisher"].Networks["sandbox-control"] = struct {
				IPv4Address string `yaml:"ipv4_address"`
			}{}
		}, "publisher: networks"},
		{"publisher off the broker network", func(f *composeFile) { delete(f.Services["publisher"].Networks, "broker") }, "broker credential"},
		{"socket in the publisher", func(f *composeFile) {
			f.Services["publisher"].Volumes = append(f.Services["publisher"].Volumes, "/var/run/docker.sock:/var/run/docker.sock")
		}, "SB6"},
		{"app key in the publisher", func(f *composeFile) {
			f.Services["publisher"].Secrets = append(f.Services["publisher"].Secrets, "fixer_private_key")
		}, "private key"},
		{"pool key in the publisher", func(f *composeFile) {
			f.Services["publisher"].Secrets = append(f.Services["publisher"].Secrets, "worker_sandbox_signing_key")
		}, "pool key"},
		{"runner with a broker credential", func(f *composeFile) {
			f.Services["runner"].Secrets = append(f.Services["runner"].Secrets, "worker_broker_credential")
		}, "broker credential"},
		{"worker beside the runner", func(f *composeFile) {
			f.Services["worker"].Networks["sandbox-control"] = struct {
				IPv4Address string `yaml:"ipv4_address"`
			}{}
		}, "SB5"},
		{"publisher missing", func(f *composeFile) { delete(f.Services, "publisher") }, "publisher is missing"},
		{"proxy address elsewhere", func(f *composeFile) {
			f.Services["runner"].Environment["QUAVON_SANDBOX_EGRESS_PROXY"] = "172.29.20.11:3128"
		}, "QUAVON_SANDBOX_EGRESS_PROXY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := load(t, "compose.yaml")
			tc.break_(f)
			errs := check(f)
			if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, tc.want) }) {
				t.Fatalf("no error mentioning %q; got %q", tc.want, errs)
			}
		})
	}
}

// check returns every broken rule.
func check(f *composeFile) []string {
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }

	members := map[string][]string{} // network → services
	for _, name := range sortedKeys(f.Services) {
		s := f.Services[name]
		for n := range s.Networks {
			if f.Networks[n] == nil {
				fail("%s: network %q is not defined", name, n)
			}
			members[n] = append(members[n], name)
		}
		if len(s.Networks) == 0 {
			fail("%s: no networks listed (it would join the default network with every other service)", name)
		}
		if !slices.Contains(s.SecurityOpt, "no-new-privileges:true") {
			fail("%s: security_opt lacks no-new-privileges:true", name)
		}
		checkMounts(name, s, fail)
		if len(s.Ports) > 0 && name != "api" {
			fail("%s publishes a port (%v): only the api takes connections from outside", name, s.Ports)
		}
	}
	for n := range members {
		sort.Strings(members[n])
	}
	for _, name := range sortedKeys(wantNetworks) {
		if _, ok := f.Services[name]; !ok {
			fail("service %s is missing", name)
		}
	}
	for _, name := range sortedKeys(f.Services) {
		want, ok := wantNetworks[name]
		if got := sortedKeys(f.Services[name].Networks); !ok || !slices.Equal(got, want) {
			fail("%s: networks %v, want %v", name, got, want)
		}
		// Every broker caller holds its own credential, read by its
		// QUAVON_BROKER_CREDENTIAL_FILE.
		if _, on := f.Services[name].Networks["broker"]; on && name != "token-broker" &&
			f.Services[name].Environment["QUAVON_BROKER_CREDENTIAL_FILE"] != "/run/secrets/"+name+"_broker_credential" {
			fail("%s is on the broker network without its broker credential (%s_broker_credential)", name, name)
		}
	}

	for _, name := range sortedKeys(quavonServices) {
		want := quavonServices[name]
		s := f.Services[name]
		if s == nil {
			fail("service %s is missing", name)
			continue
		}
		if img := imageBinary(s.Image); img != want.image {
			fail("%s: image %q does not run %s", name, s.Image, want.image)
		}
		if !s.ReadOnly {
			fail("%s: read_only is not set", name)
		}
		if !slices.Equal(s.CapDrop, []string{"ALL"}) {
			fail("%s: cap_drop is %v, want [ALL]", name, s.CapDrop)
		}
		if name != "runner" && !strings.HasPrefix(s.User, "65532") {
			fail("%s: runs as %q, want 65532", name, s.User)
		}
		checkEnvironment(name, want.view, s, fail)
	}

	// Secrets: each in one service, keys only where the spec puts them.
	holders := map[string][]string{}
	for _, name := range sortedKeys(f.Services) {
		for _, sec := range f.Services[name].Secrets {
			if _, ok := f.Secrets[sec]; !ok {
				fail("%s: secret %q is not defined", name, sec)
			}
			holders[sec] = append(holders[sec], name)
		}
	}
	for _, sec := range sortedKeys(f.Secrets) {
		h := holders[sec]
		switch {
		case len(h) == 0:
			fail("secret %s is defined but no service has it", sec)
		case len(h) > 1:
			fail("secret %s is shared by %v: every service gets its own copy", sec, h)
		}
		if strings.HasSuffix(sec, "private_key") && !slices.Equal(h, []string{"token-broker"}) {
			fail("secret %s (an app private key) is held by %v: only the token broker holds the apps' private keys", sec, h)
		}
		if strings.HasSuffix(sec, "sandbox_signing_key") && slices.ContainsFunc(h, func(s string) bool { return s != "runner" && s != "worker" }) {
			fail("secret %s is held by %v: only the runner and the worker hold the pool key", sec, h)
		}
		// A broker credential belongs to a caller on the broker network.
		if strings.HasSuffix(sec, "_broker_credential") {
			for _, m := range h {
				if _, on := f.Services[m].Networks["broker"]; !on || !slices.Contains(brokerMembers, m) || m == "token-broker" {
					fail("secret %s (a broker credential) is held by %s, which is not one of the broker's callers on its network", sec, m)
				}
			}
		}
	}

	// SB5: the runner's networks hold nothing but Valkey and the egress proxy.
	if r := f.Services["runner"]; r != nil {
		for n := range r.Networks {
			for _, m := range members[n] {
				if m != "runner" && m != "valkey" && m != "egress" {
					fail("SB5: the runner shares network %s with %s: it may reach only Valkey (and nothing reaches it)", n, m)
				}
			}
		}
	}
	if p := f.Services["postgres"]; p != nil {
		for n := range p.Networks {
			for _, m := range members[n] {
				if !slices.Contains(backendMembers, m) {
					fail("SB5: %s shares network %s with Postgres", m, n)
				}
			}
		}
	}
	for n, allowed := range map[string][]string{"backend": backendMembers, "sandbox-control": sandboxControlMembers, "sandbox-queue": sandboxQueueMembers, "broker": brokerMembers} {
		for _, m := range members[n] {
			if !slices.Contains(allowed, m) {
				fail("SB5: %s is on network %s (allowed: %v)", m, n, allowed)
			}
		}
	}
	for _, n := range []string{"backend", "sandbox-control", "sandbox-queue", "broker", "sandbox-egress", "metrics"} {
		if nw := f.Networks[n]; nw == nil || !nw.Internal {
			fail("network %s must exist and be internal (no route out)", n)
		}
	}

	// The egress network: named as the runner expects, internal, the host
	// without an address, the proxy its only member at the runner's address.
	eg := f.Networks["sandbox-egress"]
	if eg != nil {
		if eg.DriverOpts["com.docker.network.bridge.inhibit_ipv4"] != "true" {
			fail("egress network: com.docker.network.bridge.inhibit_ipv4 must be true (the host gets no address)")
		}
		if !slices.Equal(members["sandbox-egress"], []string{"egress"}) {
			fail("egress network: members %v, want the egress proxy alone", members["sandbox-egress"])
		}
		if r := f.Services["runner"]; r != nil && r.Environment["QUAVON_SANDBOX_EGRESS_NETWORK"] != eg.Name {
			fail("QUAVON_SANDBOX_EGRESS_NETWORK %q is not the egress network's name %q", r.Environment["QUAVON_SANDBOX_EGRESS_NETWORK"], eg.Name)
		}
	}
	if r, e := f.Services["runner"], f.Services["egress"]; r != nil && e != nil {
		proxy := r.Environment["QUAVON_SANDBOX_EGRESS_PROXY"]
		ip := e.Networks["sandbox-egress"].IPv4Address
		listen := e.Environment["QUAVON_EGRESS_LISTEN"]
		if host, _, err := net.SplitHostPort(proxy); err != nil || host != ip || proxy != listen {
			fail("QUAVON_SANDBOX_EGRESS_PROXY %q must be the proxy's address on the egress network (%s) and its QUAVON_EGRESS_LISTEN (%q)", proxy, ip, listen)
		}
	}
	return errs
}

// hostSocket matches host paths that give container-runtime access.
var hostSocket = regexp.MustCompile(`(^|/)(docker|containerd|podman|crio)\.sock$|^/(var/)?run/?$|^/var/run/docker|^/run/containerd|^/var/lib/docker`)

// allowedBinds are the host files each service may mount.
var allowedBinds = map[string][]string{
	"runner":       {"/var/run/docker.sock", "/var/lib/quavon/images.lock.json"},
	"token-broker": {"./secrets/broker-callers"},
	"postgres":     {"./postgres/10-quavon-roles.sh"},
}

func checkMounts(name string, s *service, fail func(string, ...any)) {
	for _, v := range s.Volumes {
		src, _, _ := strings.Cut(v, ":")
		if hostSocket.MatchString(src) && name != "runner" {
			fail("SB6: %s mounts %s: only the runner has container-runtime access", name, src)
		}
		if !strings.HasPrefix(src, "/") && !strings.HasPrefix(src, ".") {
			continue // a named volume
		}
		if !slices.Contains(allowedBinds[name], src) {
			fail("%s mounts the host path %s (allowed: %v)", name, src, allowedBinds[name])
		}
	}
}

// checkEnvironment holds a Quavon service's QUAVON_* variables to its own
// view of the registry, and its secrets to its *_FILE settings.
func checkEnvironment(name string, view config.Service, s *service, fail func(string, ...any)) {
	settings := map[string]config.Setting{}
	for _, st := range config.Settings() {
		settings[st.Name] = st
	}
	used := map[string]bool{}
	for _, k := range sortedKeys(s.Environment) {
		v := s.Environment[k]
		st, ok := settings[k]
		switch {
		case !strings.HasPrefix(k, "QUAVON_"):
			fail("%s: variable %s is not a Quavon setting", name, k)
		case !ok:
			if _, secret := settings[k+"_FILE"]; secret {
				fail("%s: %s given directly: secrets only through %s_FILE", name, k, k)
			} else {
				fail("%s: %s is not in the settings registry", name, k)
			}
		case !slices.Contains(st.Services(), view):
			fail("%s: %s is not read by %s (it would refuse to start)", name, k, view)
		case st.Secret:
			sec, ok := strings.CutPrefix(v, "/run/secrets/")
			if !ok || !slices.Contains(s.Secrets, sec) {
				fail("%s: %s=%s is not one of its own secrets", name, k, v)
			}
			used[sec] = true
		}
	}
	for _, sec := range s.Secrets {
		if !used[sec] {
			fail("%s: secret %s is mounted but no setting reads it", name, sec)
		}
	}
}

func imageBinary(image string) string {
	_, last, _ := strings.Cut(image, "/")
	if last == "" {
		last = image
	}
	bin, _, _ := strings.Cut(last, ":")
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
