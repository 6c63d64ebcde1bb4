package firecracker

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
)

// A setup step with egress gets one network path: the guest's eth0 → a tap
// device in a network namespace of the VM's own → nftables there, which
// forward only new and established TCP to the proxy's address and port and
// masquerade it onto a veth pair → the host, which routes it to the proxy.
// Everything else (other addresses and ports, UDP and DNS, the namespace's
// own addresses, IPv6) is dropped. Cutting the path (Isolate, before the
// run step's go-ahead) replaces the rules with drop-all and deletes the
// veth pair and the tap device; the namespace goes with the VM.

// Addresses of the guest side; every VM has its own namespace, so all use
// the same.
const (
	tapName    = "tap0"
	nsVethName = "qv0"
	tapAddr    = "172.31.0.1"
	guestAddr  = "172.31.0.2"
	guestMAC   = "06:00:ac:1f:00:02"
	netmask30  = "255.255.255.252"
	// hostBlocks: /30s of 169.254.128.0/17 for the veth pairs.
	hostBlocks = 8192
)

// netPlan is one VM's egress path.
type netPlan struct {
	NS        string // network namespace name (ip netns)
	HostVeth  string
	HostAddr  netip.Addr
	NSAddr    netip.Addr
	Proxy     netip.AddrPort
	UID       int
	NetnsPath string
}

// newNetPlan lays out the path of the VM with index idx (its uid's offset
// in the range) and id.
func newNetPlan(id string, idx, uid int, proxy netip.AddrPort) (*netPlan, error) {
	if idx < 0 || idx >= hostBlocks {
		return nil, fmt.Errorf("firecracker egress: uid offset %d beyond the %d veth addresses", idx, hostBlocks)
	}
	block := idx * 4
	host := netip.AddrFrom4([4]byte{169, 254, byte(128 + block/256), byte(block%256 + 1)})
	ns := "quavon-" + id
	return &netPlan{NS: ns, HostVeth: fmt.Sprintf("qfc%x", idx), HostAddr: host, NSAddr: host.Next(), Proxy: proxy, UID: uid,
		NetnsPath: "/var/run/netns/" + ns}, nil
}

// bootArg is the kernel's static IP configuration for the guest (ip=).
func (p *netPlan) bootArg() string {
	return "ip=" + guestAddr + "::" + tapAddr + ":" + netmask30 + "::eth0:off"
}

// rules is the namespace's nftables ruleset while the setup step runs.
func (p *netPlan) rules() string {
	a, port := p.Proxy.Addr().String(), p.Proxy.Port()
	return fmt.Sprintf(`flush ruleset
table inet quavon {
	chain input { type filter hook input priority 0; policy drop; }
	chain output { type filter hook output priority 0; policy drop; }
	chain forward {
		type filter hook forward priority 0; policy drop;
		iifname "%[1]s" oifname "%[2]s" meta nfproto ipv4 ip daddr %[3]s tcp dport %[4]d ct state new,established accept
		iifname "%[2]s" oifname "%[1]s" meta nfproto ipv4 ip saddr %[3]s tcp sport %[4]d ct state established accept
	}
}
table ip quavon_nat {
	chain postrouting { type nat hook postrouting priority 100; oifname "%[2]s" masquerade; }
}
`, tapName, nsVethName, a, port)
}

// dropAll is the ruleset that cuts the path.
const dropAll = `flush ruleset
table inet quavon {
	chain input { type filter hook input priority 0; policy drop; }
	chain output { type filter hook output priority 0; policy drop; }
	chain forward { type filter hook forward priority 0; policy drop; }
}
`

// Cmd is one command of a plan: the program, its arguments and its input.
type Cmd struct {
	name  string
	args  []string
	stdin string
}

func (c Cmd) String() string { return c.name + " " + strings.Join(c.args, " ") }

func (p *netPlan) nsExec(name string, args ...string) Cmd {
	return Cmd{name: "ip", args: append([]string{"netns", "exec", p.NS, name}, args...)}
}

// upCmds build the path, rules first: nothing is forwarded before they
// are in place.
func (p *netPlan) upCmds() []Cmd {
	ns := []string{"-n", p.NS}
	return []Cmd{
		{name: "ip", args: []string{"netns", "add", p.NS}},
		{name: "ip", args: []string{"netns", "exec", p.NS, "nft", "-f", "-"}, stdin: p.rules()},
		p.nsExec("sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv4.ip_forward=1"),
		{name: "ip", args: append(ns, "link", "set", "lo", "up")},
		{name: "ip", args: append(ns, "tuntap", "add", "dev", tapName, "mode", "tap", "user", fmt.Sprint(p.UID), "group", fmt.Sprint(p.UID))},
		{name: "ip", args: append(ns, "addr", "add", tapAddr+"/30", "dev", tapName)},
		{name: "ip", args: append(ns, "link", "set", tapName, "up")},
		{name: "ip", args: []string{"link", "add", p.HostVeth, "type", "veth", "peer", "name", nsVethName, "netns", p.NS}},
		{name: "ip", args: []string{"addr", "add", p.HostAddr.String() + "/30", "dev", p.HostVeth}},
		{name: "ip", args: []string{"link", "set", p.HostVeth, "up"}},
		{name: "ip", args: append(ns, "addr", "add", p.NSAddr.String()+"/30", "dev", nsVethName)},
		{name: "ip", args: append(ns, "link", "set", nsVethName, "up")},
		{name: "ip", args: append(ns, "route", "add", "default", "via", p.HostAddr.String())},
	}
}

// cutCmds end the path: drop-all first, then the devices.
func (p *netPlan) cutCmds() []Cmd {
	return []Cmd{
		{name: "ip", args: []string{"netns", "exec", p.NS, "nft", "-f", "-"}, stdin: dropAll},
		{name: "ip", args: []string{"link", "del", p.HostVeth}},
		{name: "ip", args: []string{"-n", p.NS, "link", "del", tapName}},
	}
}

// downCmds remove the namespace (after the VM is gone).
func (p *netPlan) downCmds() []Cmd {
	return []Cmd{{name: "ip", args: []string{"netns", "del", p.NS}}}
}

// Commander runs host commands (ip, nft); tests record them.
type Commander func(ctx context.Context, c Cmd) error

// execCommander runs c with an empty environment.
func execCommander(ctx context.Context, c Cmd) error {
	x := exec.CommandContext(ctx, c.name, c.args...)
	x.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	if c.stdin != "" {
		x.Stdin = strings.NewReader(c.stdin)
	}
	if out, err := x.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w: %s", c, err, strings.TrimSpace(string(out[:min(len(out), 300)])))
	}
	return nil
}

// run runs every command; stopAtFirst makes the first error final (for
// building a path), otherwise every command runs and the errors are
// joined (for tearing one down).
func runCmds(ctx context.Context, do Commander, cmds []Cmd, stopAtFirst bool) error {
	var errs []error
	for _, c := range cmds {
		if err := do(ctx, c); err != nil {
			if stopAtFirst {
				return err
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Stdin is what the command reads (an nft ruleset).
func (c Cmd) Stdin() string { return c.stdin }
