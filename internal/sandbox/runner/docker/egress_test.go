package docker_test

import (
	"github.com/quavon/quavon/internal/sandbox/valkeyq"

	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/network"

	"github.com/quavon/quavon/internal/egress"
	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/sandbox/runner"
	"github.com/quavon/quavon/internal/sandbox/runner/docker"
	"github.com/quavon/quavon/internal/testenv"
)

// registryLabel is what the injected resolver answers for the registry:
// a public address, so the proxy's classifier lets it through. It is only a
// label: the injected dialer routes it to the local TLS server, and nothing
// ever leaves this machine.
var registryLabel = netip.MustParseAddr("93.184.215.14")

type fakeResolver map[string][]netip.Addr

func (r fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// selfSigned returns a TLS certificate for host and its PEM, to be trusted
// as its own CA by the repository code.
func selfSigned(t *testing.T, host string) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

var fetchOnce = buildStatic("fetch")

// TestEgressSetupStep: a job with egress registries reaches an allowed
// registry through the proxy during its setup step and nothing else; the
// run step reaches nothing; the credential is gone afterwards and refused
// when replayed.
//
// runc only: on these machines runsc refuses containers with a network
// ("cannot run with network enabled in root network namespace"), so the
// egress step can run end to end only with runc here. Production hosts run
// gVisor with networking, and the same path.
func TestEgressSetupStep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dc := testenv.Docker(t)
	backend := newBackend(t, docker.ModeRuncInsecure)
	// An internal network whose gateway address the host holds: the proxy
	// runs in this test process on the host (HostProxy, development mode).
	netName := hostProxyNetwork(t)
	info, err := dc.NetworkInspect(ctx, netName, network.InspectOptions{})
	if err != nil || !info.Internal || len(info.IPAM.Config) == 0 {
		t.Fatalf("egress network: %+v %v", info, err)
	}
	gateway := info.IPAM.Config[0].Gateway

	// The registry: a local TLS server.
	cert, caPEM := selfSigned(t, "registry.quavon.test")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "package-tarball-v1")
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	// The proxy, on the network's gateway (its only other member here).
	admin := testenv.Valkey(t, testenv.UserControlPlane)
	pool := testenv.Pool(t, admin)
	names, _ := valkeyq.NamesFor(pool)
	dials := 0
	proxy, err := egress.New(egress.Config{
		Grants: valkeyq.NewEgressGrants(admin, names),
		Log:    slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Resolver: fakeResolver{
			"registry.quavon.test": {registryLabel},
			"other.quavon.test":    {netip.MustParseAddr("93.184.215.15")},
		},
		Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			dials++
			if address != netip.AddrPortFrom(registryLabel, 443).String() {
				return nil, errors.New("test dialer: no route")
			}
			var d net.Dialer
			return d.DialContext(ctx, "tcp", srv.Listener.Addr().String())
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(gateway, "0"))
	if err != nil {
		t.Fatal(err)
	}
	pctx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go proxy.Serve(pctx, ln)
	proxyAddr := netip.MustParseAddrPort(ln.Addr().String())

	h := newHarnessWith(t, backend, admin, pool, &runner.EgressConfig{
		Registries: []string{"registry.quavon.test", "other.quavon.test"}, Network: netName, Proxy: proxyAddr, HostProxy: true})

	bin, err := fetchOnce()
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(bin)
	repo := tree(t, map[string]string{"ca.pem": string(caPEM)})
	if err := os.WriteFile(filepath.Join(repo, "fetch"), data, 0o755); err != nil {
		t.Fatal(err)
	}

	// The run step tries the way it was given (none: no proxy variables)
	// and the credential the setup step saved, as hostile code would.
	s := spec("byo:smoke", `./fetch https://registry.quavon.test/pkg ca.pem
env | grep -i proxy || echo no proxy variables
HTTPS_PROXY=$(cat proxy-url.txt) ./fetch https://registry.quavon.test/pkg ca.pem
cat proxy-url.txt`)
	s.SetupCommand = `./fetch https://registry.quavon.test/pkg ca.pem
./fetch https://other.quavon.test/pkg ca.pem
./fetch https://93.184.215.14/pkg ca.pem
./fetch http://registry.quavon.test/pkg ca.pem
./fetch https://registry.quavon.test:8443/pkg ca.pem
nslookup registry.quavon.test >/dev/null 2>&1 && echo DNS OPEN || echo DNS blocked
echo "$HTTPS_PROXY" > proxy-url.txt
true`
	// The instance allows both hosts; the job asks for one: only that one.
	s.Egress = sandbox.Egress{Mode: sandbox.EgressRegistries, Hosts: []string{"registry.quavon.test"}}
	res := h.run(t, s, repo)
	if res.Status != sandbox.StatusCompleted || len(res.Steps) != 2 {
		t.Fatalf("job: %s %q steps %+v\nstdout:\n%s\nstderr:\n%s\nlogs:\n%s", res.Status, res.Error, res.Steps,
			res.Artefacts["stdout.log"], res.Artefacts["stderr.log"], h.logs)
	}
	setup, run, ok := strings.Cut(res.Artefacts["stdout.log"], "== run ==")
	if !ok {
		t.Fatalf("no run section:\n%s", res.Artefacts["stdout.log"])
	}
	for _, want := range []string{
		"FETCH OK https://registry.quavon.test/pkg package-tarball-v1",
		"FETCH FAIL https://other.quavon.test/pkg",   // on the instance list, not the job's
		"FETCH FAIL https://93.184.215.14/pkg",       // IP literal
		"FETCH FAIL http://registry.quavon.test/pkg", // plain HTTP
		"FETCH FAIL https://registry.quavon.test:8443/pkg",
		"DNS blocked",
	} {
		if !strings.Contains(setup, want) {
			t.Errorf("setup step: want %q in\n%s", want, setup)
		}
	}
	if strings.Contains(run, "FETCH OK") || strings.Count(run, "FETCH FAIL https://registry.quavon.test/pkg") != 2 || !strings.Contains(run, "no proxy variables") {
		t.Errorf("run step reached the registry or saw proxy variables:\n%s", run)
	}
	if dials != 1 {
		t.Errorf("the proxy dialled %d times, want once (the allowed registry)", dials)
	}

	// The credential is gone from Valkey...
	scan, err := admin.Do(ctx, admin.B().Scan().Cursor(0).Match(names.Egress("*")).Count(10000).Build()).AsScanEntry()
	if err != nil {
		t.Fatal(err)
	}
	if len(scan.Elements) != 0 {
		t.Errorf("egress credentials left: %v", scan.Elements)
	}
	// ...and replaying it is refused.
	m := regexp.MustCompile(`http://job:([0-9a-f]{64})@`).FindStringSubmatch(run)
	if m == nil {
		t.Fatalf("no proxy URL in the run step's output:\n%s", run)
	}
	conn, err := net.Dial("tcp", proxyAddr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT registry.quavon.test:443 HTTP/1.1\r\nHost: registry.quavon.test:443\r\nProxy-Authorization: Basic %s\r\n\r\n",
		base64.StdEncoding.EncodeToString([]byte("job:"+m[1])))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusProxyAuthRequired {
		t.Fatalf("replayed credential: %v %v", resp, err)
	}
}

// testNetworkName is a fresh network name; each test removes its own.
func testNetworkName() string {
	var b [4]byte
	rand.Read(b[:])
	return "quavon-egress-test-" + hex.EncodeToString(b[:])
}

// hostProxyNetwork creates an internal test network on which the host has
// the gateway address.
func hostProxyNetwork(t *testing.T) string {
	t.Helper()
	dc := testenv.Docker(t)
	name := testNetworkName()
	if _, err := dc.NetworkCreate(context.Background(), name, network.CreateOptions{Driver: "bridge", Internal: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dc.NetworkRemove(context.Background(), name) })
	return name
}

// TestEgressRefusals: registries outside the instance allowlist, a network
// that is not internal or gives the host an address, or no proxy on it:
// the job fails before any container starts.
func TestEgressRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dc := testenv.Docker(t)
	backend := newBackend(t, docker.ModeRuncInsecure)
	sealed := testNetworkName()
	if err := backend.EnsureEgressNetwork(ctx, sealed); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dc.NetworkRemove(context.Background(), sealed) })
	info, err := dc.NetworkInspect(ctx, sealed, network.InspectOptions{})
	if err != nil || !info.Internal || info.Options["com.docker.network.bridge.inhibit_ipv4"] != "true" {
		t.Fatalf("EnsureEgressNetwork made %+v (%v), want internal without a host address", info, err)
	}
	open := hostProxyNetwork(t)
	oinfo, err := dc.NetworkInspect(ctx, open, network.InspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gateway := oinfo.IPAM.Config[0].Gateway + ":3128"
	admin := testenv.Valkey(t, testenv.UserControlPlane)
	cases := []struct {
		name, network, proxy string
		hostProxy            bool
		host, want           string
	}{
		{"not on the instance list", sealed, "10.255.0.1:3128", false, "registry.npmjs.org", "none of the job's registries"},
		{"network not internal", "bridge", "172.17.0.1:3128", false, "registry.quavon.test", "misconfigured"},
		{"network missing", "quavon-no-such-network", "10.255.0.1:3128", false, "registry.quavon.test", "misconfigured"},
		{"no proxy container on the network", sealed, "10.255.0.1:3128", false, "registry.quavon.test", "misconfigured"},
		{"host reachable but not declared", open, gateway, false, "registry.quavon.test", "misconfigured"},
		{"host proxy not at the gateway", open, "10.255.0.1:3128", true, "registry.quavon.test", "misconfigured"},
		{"host proxy on a sealed network", sealed, "10.255.0.1:3128", true, "registry.quavon.test", "misconfigured"},
	}
	for _, c := range cases {
		h := newHarnessWith(t, backend, admin, testenv.Pool(t, admin), &runner.EgressConfig{
			Registries: []string{"registry.quavon.test"}, Network: c.network, Proxy: netip.MustParseAddrPort(c.proxy), HostProxy: c.hostProxy})
		s := spec("byo:smoke", "true")
		s.SetupCommand = "true"
		s.Egress = sandbox.Egress{Mode: sandbox.EgressRegistries, Hosts: []string{c.host}}
		res := h.run(t, s, tree(t, map[string]string{"x": "x"}))
		if res.Status != sandbox.StatusFailed || !strings.Contains(res.Error, c.want) || len(res.Steps) != 0 {
			t.Errorf("%s: %s %q", c.name, res.Status, res.Error)
		}
	}
}
