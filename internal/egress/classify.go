package egress

import (
	"net/netip"
)

// rule is one row of the address table: an address inside prefix is refused
// with reason. A rule with embedded set is an IPv6 form that carries an IPv4
// address: the address is refused when embedded's IPv4 address is, and
// allowed otherwise.
type rule struct {
	prefix   netip.Prefix
	reason   string
	embedded func(netip.Addr) netip.Addr
}

func p(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// rules is searched in order and the first match wins, so narrower prefixes
// (metadata) come before the wider ones that contain them (link-local,
// private). IANA's special-purpose registries are the source; anything they
// list as not globally reachable is refused.
var rules = []rule{
	// Cloud metadata services: the first thing an attacker tries.
	{prefix: p("169.254.169.254/32"), reason: "metadata"}, // AWS, GCP, Azure, OpenStack
	{prefix: p("fd00:ec2::254/128"), reason: "metadata"},  // AWS over IPv6
	{prefix: p("168.63.129.16/32"), reason: "metadata"},   // Azure wire server (a public address)

	// IPv4.
	{prefix: p("0.0.0.0/32"), reason: "unspecified"},
	{prefix: p("0.0.0.0/8"), reason: "this network"},
	{prefix: p("10.0.0.0/8"), reason: "private"},
	{prefix: p("100.64.0.0/10"), reason: "cgnat"},
	{prefix: p("127.0.0.0/8"), reason: "loopback"},
	{prefix: p("169.254.0.0/16"), reason: "link-local"},
	{prefix: p("172.16.0.0/12"), reason: "private"},
	{prefix: p("192.0.0.0/24"), reason: "ietf protocol assignments"},
	{prefix: p("192.0.2.0/24"), reason: "documentation"},
	{prefix: p("192.88.99.0/24"), reason: "6to4 relay anycast"},
	{prefix: p("192.168.0.0/16"), reason: "private"},
	{prefix: p("198.18.0.0/15"), reason: "benchmarking"},
	{prefix: p("198.51.100.0/24"), reason: "documentation"},
	{prefix: p("203.0.113.0/24"), reason: "documentation"},
	{prefix: p("224.0.0.0/4"), reason: "multicast"},
	{prefix: p("255.255.255.255/32"), reason: "broadcast"},
	{prefix: p("240.0.0.0/4"), reason: "reserved"},

	// IPv6. ::ffff:0:0/96 (IPv4-mapped) never reaches the table: Classify
	// unmaps it first, so it classifies exactly like its IPv4 address.
	{prefix: p("::/128"), reason: "unspecified"},
	{prefix: p("::1/128"), reason: "loopback"},
	// IPv4-compatible (deprecated by RFC 4291): no public name resolves to
	// one, and some stacks route it as the IPv4 address it carries.
	{prefix: p("::/96"), reason: "ipv4-compatible"},
	{prefix: p("64:ff9b::/96"), embedded: last32},            // NAT64, RFC 6052
	{prefix: p("64:ff9b:1::/48"), reason: "nat64 local-use"}, // RFC 8215: the operator picks the embedding
	{prefix: p("100::/64"), reason: "discard"},
	{prefix: p("2001::/32"), reason: "teredo"}, // carries an obfuscated IPv4 address and port
	{prefix: p("2001:2::/48"), reason: "benchmarking"},
	{prefix: p("2001:db8::/32"), reason: "documentation"},
	{prefix: p("2002::/16"), embedded: sixToFour}, // 6to4, RFC 3056
	{prefix: p("3fff::/20"), reason: "documentation"},
	{prefix: p("fc00::/7"), reason: "private"}, // unique local
	{prefix: p("fe80::/10"), reason: "link-local"},
	{prefix: p("fec0::/10"), reason: "site-local"},
	{prefix: p("ff00::/8"), reason: "multicast"},
}

// global6 is the only IPv6 space that holds public unicast addresses.
var global6 = p("2000::/3")

// Classify returns why the proxy must not connect to a, or "" when it may.
// It refuses every address that is not public unicast, including IPv6
// forms that embed such an IPv4 address and any address with a zone.
func Classify(a netip.Addr) (reason string) {
	switch {
	case !a.IsValid():
		return "invalid"
	case a.Zone() != "":
		return "zone"
	case a.Is4In6():
		return Classify(a.Unmap())
	}
	for _, r := range rules {
		if !r.prefix.Contains(a) {
			continue
		}
		if r.embedded != nil {
			if why := Classify(r.embedded(a)); why != "" {
				return r.prefix.String() + " of " + why
			}
			return ""
		}
		return r.reason
	}
	if a.Is6() && !global6.Contains(a) {
		return "reserved" // by IANA: everything outside 2000::/3 that the table does not name
	}
	return ""
}

// last32 is the IPv4 address in the last 32 bits of a /96 NAT64 address.
func last32(a netip.Addr) netip.Addr {
	b := a.As16()
	return netip.AddrFrom4([4]byte(b[12:16]))
}

// sixToFour is the IPv4 address in bits 16..48 of a 6to4 address.
func sixToFour(a netip.Addr) netip.Addr {
	b := a.As16()
	return netip.AddrFrom4([4]byte(b[2:6]))
}
