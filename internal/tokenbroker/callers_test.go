package tokenbroker

import (
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/github"
)

func digest(s string) string { d := sha256.Sum256([]byte(s)); return hex.EncodeToString(d[:]) }

func TestParseCallers(t *testing.T) {
	t.Parallel()
	file := "# role sets digest\n\napi review-read " + digest("a") + "\n" +
		"worker review-read " + digest("w") + "\n" +
		"publisher review-write,code-scanning,fixer " + digest("p") + "\n"
	cs, err := ParseCallers(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 3 || cs[2].Role != RolePublisher || !slices.Equal(cs[2].Sets, []github.TokenSet{github.SetReviewWrite, github.SetCodeScanning, github.SetFixer}) {
		t.Fatalf("callers %+v", cs)
	}
	if cs[1].Allows(github.SetFixer) || !cs[1].Allows(github.SetReviewRead) {
		t.Fatal("worker allows")
	}
	for name, bad := range map[string]string{
		"worker with a write set": "worker review-read,fixer " + digest("w"),
		"api with review-write":   "api review-write " + digest("a"),
		"unknown role":            "admin review-read " + digest("x"),
		"unknown set":             "publisher everything " + digest("x"),
		"set twice":               "publisher fixer,fixer " + digest("x"),
		"short digest":            "worker review-read abc",
		"upper-case digest":       "worker review-read " + strings.ToUpper(digest("x")),
		"raw credential":          "worker review-read qvb_credential-in-the-clear-000000000000000000000000",
		"same credential twice":   "worker review-read " + digest("x") + "\napi review-read " + digest("x"),
		"missing field":           "worker " + digest("x"),
		"empty":                   "# nothing\n",
	} {
		if _, err := ParseCallers(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestNewCredential(t *testing.T) {
	t.Parallel()
	cred, line, err := NewCredential(RoleWorker, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := ParseCallers(strings.NewReader(line))
	if err != nil || len(cs) != 1 || hex.EncodeToString(cs[0].Digest[:]) != digest(cred) || strings.Contains(line, cred) {
		t.Fatalf("line %q: %v", line, err)
	}
	if _, _, err := NewCredential(RoleAPI, []github.TokenSet{github.SetFixer}); err == nil {
		t.Fatal("api credential with the fixer set")
	}
	other, _, _ := NewCredential(RoleWorker, nil)
	if other == cred || len(cred) < 40 {
		t.Fatalf("credentials %q %q", cred, other)
	}
}

func TestListenAddresses(t *testing.T) {
	t.Parallel()
	for _, a := range []string{"0.0.0.0", "::", "8.8.8.8", "169.254.1.1", "2001:db8::1"} {
		if checkListenAddr(netip.MustParseAddr(a)) == nil {
			t.Errorf("%s accepted", a)
		}
	}
	for _, a := range []string{"127.0.0.1", "::1", "10.1.2.3", "192.168.0.9", "172.16.0.1", "fd00::1"} {
		if err := checkListenAddr(netip.MustParseAddr(a)); err != nil {
			t.Errorf("%s: %v", a, err)
		}
	}
	for _, a := range []string{"localhost:80", ":8080", "unix:", "unix:relative.sock", "broker"} {
		if ln, err := Listen(a); err == nil {
			ln.Close()
			t.Errorf("Listen(%q) accepted", a)
		}
	}
}
