package egress

import (
	"net/netip"
	"strings"
	"testing"
)

// embeddings are the IPv6 spellings of an IPv4 address an attacker could
// have a name resolve to.
func embeddings(v4 netip.Addr) map[string]netip.Addr {
	b := v4.As4()
	return map[string]netip.Addr{
		"mapped": netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff, 12: b[0], 13: b[1], 14: b[2], 15: b[3]}),
		"compat": netip.AddrFrom16([16]byte{12: b[0], 13: b[1], 14: b[2], 15: b[3]}),
		"nat64":  netip.AddrFrom16([16]byte{0: 0x00, 1: 0x64, 2: 0xff, 3: 0x9b, 12: b[0], 13: b[1], 14: b[2], 15: b[3]}),
		"6to4":   netip.AddrFrom16([16]byte{0: 0x20, 1: 0x02, 2: b[0], 3: b[1], 4: b[2], 5: b[3], 15: 1}),
	}
}

func TestClassifyIPv4AndEmbeddings(t *testing.T) {
	t.Parallel()
	cases := []struct{ addr, want string }{
		{"169.254.169.254", "metadata"},
		{"168.63.129.16", "metadata"},
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "this network"},
		{"10.0.0.1", "private"},
		{"10.255.255.255", "private"},
		{"100.64.0.1", "cgnat"},
		{"100.100.100.200", "cgnat"}, // Alibaba's metadata service
		{"100.127.255.255", "cgnat"},
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"169.254.0.1", "link-local"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.0.0.192", "ietf protocol assignments"}, // Oracle Cloud's metadata service
		{"192.0.2.1", "documentation"},
		{"192.88.99.1", "6to4 relay anycast"},
		{"192.168.1.1", "private"},
		{"198.18.0.1", "benchmarking"},
		{"198.19.255.255", "benchmarking"},
		{"198.51.100.1", "documentation"},
		{"203.0.113.1", "documentation"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"240.0.0.1", "reserved"},
		{"255.255.255.254", "reserved"},
		{"255.255.255.255", "broadcast"},
		// Allowed: public unicast, including the neighbours of refused ranges.
		{"93.184.215.14", ""},
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"9.255.255.255", ""},
		{"11.0.0.0", ""},
		{"100.63.255.255", ""},
		{"100.128.0.0", ""},
		{"126.255.255.255", ""},
		{"128.0.0.0", ""},
		{"172.15.255.255", ""},
		{"172.32.0.0", ""},
		{"192.167.255.255", ""},
		{"192.169.0.0", ""},
		{"198.17.255.255", ""},
		{"198.20.0.0", ""},
		{"223.255.255.255", ""},
	}
	for _, c := range cases {
		v4 := netip.MustParseAddr(c.addr)
		if got := Classify(v4); got != c.want {
			t.Errorf("Classify(%s) = %q, want %q", c.addr, got, c.want)
		}
		for form, a := range embeddings(v4) {
			got := Classify(a)
			switch {
			case form == "mapped":
				if got != c.want {
					t.Errorf("Classify(%s, %s of %s) = %q, want %q as for the IPv4 address", a, form, c.addr, got, c.want)
				}
			case form == "compat":
				if got == "" { // ipv4-compatible; :: and ::1 keep their own reasons
					t.Errorf("Classify(%s, %s of %s) allowed", a, form, c.addr)
				}
			case c.want == "":
				if got != "" {
					t.Errorf("Classify(%s, %s of %s) = %q, want allowed", a, form, c.addr, got)
				}
			case !strings.HasSuffix(got, " of "+c.want):
				t.Errorf("Classify(%s, %s of %s) = %q, want ... of %s", a, form, c.addr, got, c.want)
			}
		}
	}
}

// TestClassifyIPv6 spells addresses the ways a resolver or an attacker
// might.
func TestClassifyIPv6(t *testing.T) {
	t.Parallel()
	cases := []struct{ addr, want string }{
		{"::", "unspecified"},
		{"0:0:0:0:0:0:0:0", "unspecified"},
		{"::1", "loopback"},
		{"0:0:0:0:0:0:0:0001", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:7f00:1", "loopback"},
		{"0:0:0:0:0:ffff:7f00:0001", "loopback"},
		{"::FFFF:169.254.169.254", "metadata"},
		{"::ffff:a9fe:a9fe", "metadata"},
		{"::ffff:10.0.0.1", "private"},
		{"::ffff:0.0.0.0", "unspecified"},
		{"::127.0.0.1", "ipv4-compatible"},
		{"::7f00:1", "ipv4-compatible"},
		{"::8.8.8.8", "ipv4-compatible"},
		{"::ffff:0:7f00:1", "reserved"}, // SIIT IPv4-translated
		{"64:ff9b::127.0.0.1", "64:ff9b::/96 of loopback"},
		{"64:ff9b::7f00:1", "64:ff9b::/96 of loopback"},
		{"64:ff9b::a9fe:a9fe", "64:ff9b::/96 of metadata"},
		{"64:ff9b::10.1.2.3", "64:ff9b::/96 of private"},
		{"64:ff9b::8.8.8.8", ""},
		{"64:ff9b:1::a00:1", "nat64 local-use"},
		{"64:ff9b:1:ffff::8.8.8.8", "nat64 local-use"},
		{"2002:7f00:1::", "2002::/16 of loopback"},
		{"2002:a9fe:a9fe::1", "2002::/16 of metadata"},
		{"2002:0a00:0001:ffff::", "2002::/16 of private"},
		{"2002:808:808::1", ""},
		{"2001::1", "teredo"},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "teredo"},
		{"2001:0:ffff:ffff:ffff:ffff:ffff:ffff", "teredo"},
		{"2001:2::1", "benchmarking"},
		{"2001:db8::1", "documentation"},
		{"2001:DB8:ffff::1", "documentation"},
		{"3fff::1", "documentation"},
		{"100::1", "discard"},
		{"100::ffff:ffff:ffff:ffff", "discard"},
		{"fc00::1", "private"},
		{"fd12:3456::1", "private"},
		{"fd00:ec2::254", "metadata"},
		{"fd00:ec2::253", "private"},
		{"fe80::1", "link-local"},
		{"febf::1", "link-local"},
		{"fec0::1", "site-local"},
		{"ff02::1", "multicast"},
		{"ff0e::1", "multicast"},
		{"4000::1", "reserved"},
		{"1::1", "reserved"},
		{"e000::1", "reserved"},
		// Zones: refused, whatever the address.
		{"fe80::1%eth0", "zone"},
		{"fe80::1%25eth0", "zone"},
		{"2606:4700::1111%1", "zone"},
		{"::ffff:8.8.8.8%eth0", "zone"},
		// Allowed: global unicast.
		{"2606:4700::1111", ""},
		{"2a00:1450:4001::200e", ""},
		{"2001:4860:4860::8888", ""},
		{"2001:1::1", ""},
		{"::ffff:8.8.8.8", ""},
	}
	for _, c := range cases {
		if got := Classify(netip.MustParseAddr(c.addr)); got != c.want {
			t.Errorf("Classify(%s) = %q, want %q", c.addr, got, c.want)
		}
	}
	if got := Classify(netip.Addr{}); got != "invalid" {
		t.Errorf("Classify(zero Addr) = %q, want invalid", got)
	}
}

// TestEveryRuleMatches: the first or the last address of each prefix
// classifies with that rule's reason, so no row is shadowed entirely by an
// earlier one.
func TestEveryRuleMatches(t *testing.T) {
	t.Parallel()
	for _, r := range rules {
		if r.embedded != nil {
			continue
		}
		b := r.prefix.Addr().AsSlice()
		for i := r.prefix.Bits(); i < len(b)*8; i++ {
			b[i/8] |= 0x80 >> (i % 8)
		}
		last, _ := netip.AddrFromSlice(b)
		first, got := r.prefix.Addr(), Classify(last)
		if got != r.reason && Classify(first) != r.reason {
			t.Errorf("Classify(%s), last of %s, = %q and Classify(%s) = %q, want %q", last, r.prefix, got, first, Classify(first), r.reason)
		}
	}
}

// FuzzClassify: an IPv4-mapped address classifies exactly like its IPv4
// address; NAT64 and 6to4 spellings of a refused IPv4 address are refused;
// a zone is always refused.
func FuzzClassify(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "169.254.169.254", "10.0.0.1", "8.8.8.8", "0.0.0.0", "255.255.255.255", "100.64.0.1"} {
		a := netip.MustParseAddr(s).As4()
		f.Add(a[:], "")
	}
	for _, s := range []string{"::1", "fe80::1", "2002:7f00:1::", "64:ff9b::7f00:1", "2001::1", "2606:4700::1111", "::ffff:7f00:1", "fd00:ec2::254"} {
		a := netip.MustParseAddr(s).As16()
		f.Add(a[:], "eth0")
	}
	f.Fuzz(func(t *testing.T, raw []byte, zone string) {
		a, ok := netip.AddrFromSlice(raw)
		if !ok {
			return
		}
		why := Classify(a)
		if a.Is4() {
			v4 := why
			for form, e := range embeddings(a) {
				got := Classify(e)
				switch {
				case form == "mapped" && got != v4:
					t.Fatalf("mapped %s: %q, IPv4 %s: %q", e, got, a, v4)
				case form == "compat" && got == "":
					t.Fatalf("compat %s allowed", e)
				case (form == "nat64" || form == "6to4") && (got == "") != (v4 == ""):
					t.Fatalf("%s %s: %q, IPv4 %s: %q", form, e, got, a, v4)
				}
			}
			return
		}
		if zone != "" {
			if z := a.WithZone(zone); Classify(z) != "zone" {
				t.Fatalf("Classify(%s) = %q, want zone", z, Classify(z))
			}
		}
		if why == "" && !global6.Contains(a) && !a.Is4In6() && !netip.MustParsePrefix("64:ff9b::/96").Contains(a) {
			t.Fatalf("Classify(%s) allowed outside 2000::/3", a)
		}
	})
}
