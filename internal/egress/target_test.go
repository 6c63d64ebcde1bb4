package egress

import (
	"github.com/quavon/quavon/internal/hostname"

	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
)

var targetCases = []struct {
	target string
	host   string // when accepted
	err    error  // when refused
}{
	{"registry.npmjs.org:443", "registry.npmjs.org", nil},
	{"proxy.golang.org:443", "proxy.golang.org", nil},
	{"files.pythonhosted.org:443", "files.pythonhosted.org", nil},
	{"Registry.NPMJS.Org:443", "registry.npmjs.org", nil},
	{"REGISTRY.NPMJS.ORG:443", "registry.npmjs.org", nil},
	{"a-b.c0.example:443", "a-b.c0.example", nil},
	{"0x7f.example:443", "0x7f.example", nil}, // a name: its last label is not a number
	{"127.0.0.1.nip.io:443", "127.0.0.1.nip.io", nil},

	// IP literals, every way a resolver or URL parser reads one.
	{"127.0.0.1:443", "", ErrIPLiteral},
	{"127.0.0.1:80", "", ErrIPLiteral},
	{"169.254.169.254:443", "", ErrIPLiteral},
	{"2130706433:443", "", ErrIPLiteral},   // decimal
	{"0177.0.0.1:443", "", ErrIPLiteral},   // octal
	{"017700000001:443", "", ErrIPLiteral}, // octal, one part
	{"0x7f.1:443", "", ErrIPLiteral},       // hex and short
	{"0x7f.0x1:443", "", ErrIPLiteral},
	{"0X7F.0X0.0X0.0X1:443", "", ErrIPLiteral},
	{"0x7f000001:443", "", ErrIPLiteral},
	{"127.1:443", "", ErrIPLiteral},
	{"127.0.1:443", "", ErrIPLiteral},
	{"10.1:443", "", ErrIPLiteral},
	{"1.2.3.0x4:443", "", ErrIPLiteral},
	{"example.0x:443", "", ErrIPLiteral},
	{"registry.npmjs.org.1:443", "", ErrIPLiteral},
	{"[::1]:443", "", ErrIPLiteral},
	{"[::1]", "", ErrIPLiteral},
	{"[::ffff:127.0.0.1]:443", "", ErrIPLiteral},
	{"[::ffff:7f00:1]:443", "", ErrIPLiteral},
	{"[64:ff9b::7f00:1]:443", "", ErrIPLiteral},
	{"[fe80::1%25eth0]:443", "", ErrIPLiteral},
	{"[fe80::1%eth0]:443", "", ErrIPLiteral},
	{"[fd00:ec2::254]:443", "", ErrIPLiteral},
	{"::1:443", "", ErrIPLiteral},
	{"fe80::1%eth0:443", "", ErrIPLiteral},
	{"::ffff:127.0.0.1:443", "", ErrIPLiteral},

	// Ports.
	{"registry.npmjs.org:80", "", ErrPortNotAllowed},
	{"registry.npmjs.org:8443", "", ErrPortNotAllowed},
	{"registry.npmjs.org:0443", "", ErrPortNotAllowed},
	{"registry.npmjs.org:4430", "", ErrPortNotAllowed},
	{"registry.npmjs.org:22", "", ErrPortNotAllowed},
	{"registry.npmjs.org:99999", "", ErrPortNotAllowed},
	{"registry.npmjs.org", "", ErrMalformedTarget},
	{"registry.npmjs.org:", "", ErrMalformedTarget},
	{"registry.npmjs.org:https", "", ErrMalformedTarget},
	{"registry.npmjs.org:+443", "", ErrMalformedTarget},
	{"registry.npmjs.org:443 ", "", ErrMalformedTarget},
	{"registry.npmjs.org:443443", "", ErrMalformedTarget},
	{"registry.npmjs.org:443:443", "", ErrMalformedTarget},

	// Everything else that is not a plain name.
	{"registry.npmjs.org.:443", "", ErrMalformedTarget}, // trailing dot
	{"registry.npmjs.org..:443", "", ErrMalformedTarget},
	{"job:0123@registry.npmjs.org:443", "", ErrMalformedTarget}, // userinfo
	{"registry.npmjs.org@evil.example:443", "", ErrMalformedTarget},
	{"http://registry.npmjs.org:443", "", ErrMalformedTarget},
	{"registry.npmjs.org/:443", "", ErrMalformedTarget},
	{"/rpc", "", ErrMalformedTarget},
	{"registry%2enpmjs.org:443", "", ErrMalformedTarget},
	{"registry_npmjs.org:443", "", ErrMalformedTarget},
	{"localhost:443", "", ErrMalformedTarget},
	{"metadata:443", "", ErrMalformedTarget},
	{"-registry.npmjs.org:443", "", ErrMalformedTarget},
	{"registry..npmjs.org:443", "", ErrMalformedTarget},
	{".registry.npmjs.org:443", "", ErrMalformedTarget},
	{"\u212Aey.example:443", "", ErrMalformedTarget},      // Kelvin sign lowers to k
	{"regi\u017Ftry.example:443", "", ErrMalformedTarget}, // long s uppers to S
	{"xn--bcher-kva.example:443", "xn--bcher-kva.example", nil},
	{"registry.npmjs.org\x00.evil:443", "", ErrMalformedTarget},
	{"registry.npmjs.org\r\n:443", "", ErrMalformedTarget},
	{"", "", ErrMalformedTarget},
	{":443", "", ErrMalformedTarget},
	{strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 61) + ":443", strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 61), nil},
	{strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 62) + ":443", "", ErrMalformedTarget},
	{strings.Repeat("a.", 200) + "example:443", "", ErrMalformedTarget},
	{strings.Repeat("a", 64) + ".example:443", "", ErrMalformedTarget},
}

func TestParseTarget(t *testing.T) {
	t.Parallel()
	for _, c := range targetCases {
		host, err := ParseTarget(c.target)
		switch {
		case c.err == nil && (err != nil || host != c.host):
			t.Errorf("ParseTarget(%q) = %q, %v; want %q", c.target, host, err, c.host)
		case c.err != nil && !errors.Is(err, c.err):
			t.Errorf("ParseTarget(%q) = %q, %v; want %v", c.target, host, err, c.err)
		case c.err != nil && host != "":
			t.Errorf("ParseTarget(%q) returned host %q with an error", c.target, host)
		}
	}
}

// inetAton is an independent oracle: whether glibc's inet_aton (and so
// getaddrinfo, curl, wget) reads s as an IPv4 address: 1-4 parts, each
// decimal, octal (leading 0) or hex (0x), the last filling the rest.
func inetAton(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return false
	}
	for i, p := range parts {
		var v uint64
		var err error
		switch {
		case strings.HasPrefix(p, "0x") || strings.HasPrefix(p, "0X"):
			if len(p) == 2 {
				v = 0
			} else {
				v, err = strconv.ParseUint(p[2:], 16, 64)
			}
		case len(p) > 1 && p[0] == '0':
			v, err = strconv.ParseUint(p[1:], 8, 64)
		default:
			v, err = strconv.ParseUint(p, 10, 64)
		}
		if err != nil {
			return false
		}
		max := uint64(255)
		if i == len(parts)-1 {
			max = 1<<(8*(5-len(parts))) - 1
		}
		if v > max {
			return false
		}
	}
	return true
}

func TestInetAtonOracle(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"127.0.0.1": true, "2130706433": true, "0177.0.0.1": true, "0x7f.1": true, "127.1": true,
		"0x7f.0x0.0x0.0x1": true, "registry.npmjs.org": false, "0x7f.example": false, "1.2.3.4.5": false, "1.256": true, "256.1": false, "256.0.0.1": false,
	} {
		if got := inetAton(s); got != want {
			t.Errorf("inetAton(%q) = %v, want %v", s, got, want)
		}
	}
}

// FuzzParseTarget: whatever the input, an accepted host is a lowercase
// name hostname.Validate accepts, no resolver reads it as an address,
// and it came from exactly "host:443".
func FuzzParseTarget(f *testing.F) {
	for _, c := range targetCases {
		f.Add(c.target)
	}
	f.Fuzz(func(t *testing.T, target string) {
		host, err := ParseTarget(target)
		if err != nil {
			if host != "" {
				t.Fatalf("ParseTarget(%q) = %q with error %v", target, host, err)
			}
			if !errors.Is(err, ErrMalformedTarget) && !errors.Is(err, ErrPortNotAllowed) && !errors.Is(err, ErrIPLiteral) {
				t.Fatalf("ParseTarget(%q): unclassified error %v", target, err)
			}
			return
		}
		if err := hostname.Validate(host); err != nil {
			t.Fatalf("ParseTarget(%q) = %q, which hostname.Validate refuses: %v", target, host, err)
		}
		if asciiLower(target) != host+":443" || strings.ToLower(host) != host {
			t.Fatalf("ParseTarget(%q) = %q", target, host)
		}
		if _, err := netip.ParseAddr(host); err == nil || net.ParseIP(host) != nil || inetAton(host) || endsInNumber(host) {
			t.Fatalf("ParseTarget(%q) accepted an address %q", target, host)
		}
	})
}
