package firecracker_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/sandbox/frame"
	"github.com/quavon/quavon/internal/sandbox/runner"
	"github.com/quavon/quavon/internal/sandbox/runner/firecracker"
	"github.com/quavon/quavon/internal/sandbox/runner/firecracker/fctest"
)

// TestFailsClosedWithoutKVM: no usable KVM device, no backend (SB11); the
// probe itself refuses a missing path, a regular file and a character
// device that is not KVM.
func TestFailsClosedWithoutKVM(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "kvm")
	os.WriteFile(file, nil, 0o600)
	for path, want := range map[string]string{
		"/nonexistent/kvm": "does not exist",
		file:               "not a character device",
		"/dev/null":        "does not answer KVM_GET_API_VERSION",
	} {
		err := firecracker.ProbeKVM(path)
		if !errors.Is(err, firecracker.ErrNoKVM) || !strings.Contains(err.Error(), want) {
			t.Errorf("ProbeKVM(%s) = %v, want %q", path, err, want)
		}
		_, err = firecracker.New(context.Background(), firecracker.Config{Lock: &firecracker.Lock{}, Images: &runner.Lockfile{},
			KVMDevice: path, Log: slog.New(slog.DiscardHandler)})
		if !errors.Is(err, firecracker.ErrNoKVM) || !strings.Contains(err.Error(), "no fallback") {
			t.Errorf("New with %s = %v, want a refusal", path, err)
		}
	}
	if _, err := os.Stat("/dev/kvm"); err == nil {
		t.Logf("/dev/kvm on this host: %v", firecracker.ProbeKVM("/dev/kvm"))
	}
}

// TestJobInMicroVM runs jobs through the jailer, the API and vsock into
// the real entry program (as the fake's guest): the verdict, the output
// and the environment arrive; the jailer ran each VM as a uid of its own
// in a chroot with exactly the expected files, with the cgroup limits and
// rlimits of the job; Firecracker's API saw the documented requests in
// order; the seeds differ per VM; and nothing is left afterwards.
func TestJobInMicroVM(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fctest.Config{}, nil)
	o := e.run(t, job{behaviour: fctest.GuestEntry, setup: "echo set up >&2", run: `cat README; echo "CI=$CI HOME=$HOME"; id -u; exit 3`})
	if o.err != nil || o.perr != nil || o.out.Exit == nil || o.out.Exit.Error != "" {
		t.Fatalf("job: %v %v %+v\n%s", o.err, o.perr, o.out.Exit, e.logs)
	}
	if r := o.out.Result(frame.StepRun); r == nil || r.ExitCode != 3 {
		t.Fatalf("run step: %+v", r)
	}
	if got := o.out.Files[frame.StdoutName]; !strings.Contains(got, "hello") || !strings.Contains(got, "CI=true HOME=/work/.home") {
		t.Fatalf("stdout: %q", got)
	}
	if got := o.out.Files[frame.StderrName]; !strings.Contains(got, "set up") {
		t.Fatalf("stderr: %q", got)
	}
	o2 := e.run(t, job{behaviour: fctest.GuestEntry, run: "true"})
	if o2.err != nil || o2.out.Exit == nil {
		t.Fatalf("second job: %v %v", o2.err, o2.perr)
	}
	logs := e.logEntries(t)
	if len(logs) != 2 {
		t.Fatalf("%d VMs logged, want 2", len(logs))
	}
	uids, seeds := map[float64]bool{}, map[string]bool{}
	for id, lines := range logs {
		j := entriesOf(lines, "jailer")[0].(map[string]any)
		uids[j["uid"].(float64)] = true
		if j["uid"] != j["gid"] || j["newPidNS"] != true || j["daemonize"] != false {
			t.Errorf("%s: jailer %v", id, j)
		}
		args := strings.Join(toStrings(j["args"]), " ")
		for _, want := range []string{"--cgroup-version 2", "--parent-cgroup quavon-sandbox", "--cgroup cpu.max=150000 100000",
			"--cgroup memory.max=" + itoa(256<<20+64<<20), "--cgroup pids.max=64", "--resource-limit fsize=" + itoa(32<<20),
			"--resource-limit no-file=256", "--new-pid-ns", "-- --api-sock /run/firecracker.socket"} {
			if !strings.Contains(args, want) {
				t.Errorf("%s: jailer args %q lack %q", id, args, want)
			}
		}
		if strings.Contains(args, "seccomp") || strings.Contains(args, "--netns") {
			t.Errorf("%s: jailer args %q", id, args)
		}
		fcl := entriesOf(lines, "firecracker")[0].(map[string]any)
		if fcl["uid"] != j["uid"] || fcl["gid"] != j["gid"] {
			t.Errorf("%s: Firecracker ran as %v:%v", id, fcl["uid"], fcl["gid"])
		}
		chroot := toStrings(entriesOf(lines, "chroot")[0])
		want := []string{"dev d---------", "dev/kvm ----------", "dev/net d---------", "dev/net/tun ----------", "firecracker ----------",
			"firecracker.pid ----------", "rootfs.ext4 ----------", "run d---------", "run/firecracker.socket S---------",
			"scratch.ext4 ----------", "v.sock S---------", "v.sock_1024 S---------", "vmlinux ----------"}
		slices.Sort(chroot)
		if !slices.Equal(chroot, want) {
			t.Errorf("%s: chroot holds\n%q\nwant\n%q", id, chroot, want)
		}
		var reqs []string
		for _, r := range entriesOf(lines, "request") {
			m := r.(map[string]any)
			reqs = append(reqs, m["method"].(string)+" "+m["path"].(string)+" "+itoa(int(m["status"].(float64))))
		}
		wantReqs := []string{"GET /version 200", "PUT /boot-source 204", "PUT /drives/rootfs 204", "PUT /drives/work 204",
			"PUT /machine-config 204", "PUT /vsock 204", "PUT /entropy 204", "PUT /actions 204"}
		if !slices.Equal(reqs, wantReqs) {
			t.Errorf("%s: API requests %q, want %q", id, reqs, wantReqs)
		}
		m := entriesOf(lines, "machine")[0].(map[string]any)
		if m["vcpu_count"] != "2" && m["vcpu_count"] != 2.0 || m["mem_size_mib"] != 256.0 && m["mem_size_mib"] != "256" {
			t.Logf("%s: machine %v", id, m)
		}
		seed := entriesOf(lines, "seed")
		if len(seed) != 1 || len(seed[0].(string)) != 2*frame.SeedSize {
			t.Fatalf("%s: seed %v", id, seed)
		}
		seeds[seed[0].(string)] = true
		b := entriesOf(lines, "boot")[0].(map[string]any)
		if b["pids"] != 128.0 || b["noFile"] != 256.0 || b["tmpBytes"] != float64(16<<20) {
			t.Errorf("%s: boot %v", id, b)
		}
	}
	if len(uids) != 2 {
		t.Errorf("uids %v: want one per VM", uids)
	}
	if len(seeds) != 2 {
		t.Errorf("the two VMs got the same reseed bytes")
	}
	if left := e.leftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func itoa(n int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + fmtInt(n)) }

func fmtInt(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

// TestHostileGuests: whatever the guest does, the host parses only
// authenticated frames within the caps, ends the VM and removes
// everything; no hostile guest gets a verdict.
func TestHostileGuests(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fctest.Config{}, nil)
	short := limits()
	short.WallClockSeconds = 3
	// The outside guest answers with a complete, authenticated verdict,
	// but only after the VM was killed at the wall clock.
	late := fctest.Script{{WaitKill: true},
		{Frame: &fctest.Frame{Type: frame.TypeStart, Payload: []byte(frame.StepRun)}},
		{Frame: &fctest.Frame{Type: frame.TypeStdout, Payload: []byte("late answer"), Repeat: 1}},
		{Frame: &fctest.Frame{Type: frame.TypeResult, Payload: []byte(`{"step":"run","ran":true,"exitCode":0,"durationMillis":1}`)}},
		{Frame: &fctest.Frame{Type: frame.TypeExit, Payload: []byte(`{}`)}}}
	cases := []struct {
		behaviour string
		limits    bool
		check     func(t *testing.T, o outcome)
	}{
		{fctest.GuestGarbage, false, func(t *testing.T, o outcome) {
			if !errors.Is(o.perr, frame.ErrTampered) || o.out.Exit != nil || o.res.ExitCode != 137 || o.res.TimedOut {
				t.Errorf("garbage: %v %+v %+v", o.perr, o.out.Exit, o.res)
			}
		}},
		{fctest.GuestHuge, false, func(t *testing.T, o outcome) {
			if !errors.Is(o.perr, runner.ErrOutputOverflow) || o.out.Exit != nil || o.res.ExitCode != 137 {
				t.Errorf("huge: %v %+v %+v", o.perr, o.out.Exit, o.res)
			}
		}},
		{fctest.GuestMute, true, func(t *testing.T, o outcome) {
			if !o.res.TimedOut || o.out.Exit != nil {
				t.Errorf("mute: %+v %+v", o.res, o.out.Exit)
			}
		}},
		{fctest.GuestCrash, false, func(t *testing.T, o outcome) {
			if o.err != nil || o.out.Exit != nil || o.res.TimedOut {
				t.Errorf("crash: %v %+v %+v", o.err, o.res, o.out.Exit)
			}
		}},
		{fctest.GuestNoConnect, false, func(t *testing.T, o outcome) {
			if o.err == nil || !strings.Contains(o.err.Error(), "did not connect") {
				t.Errorf("noconnect: %v", o.err)
			}
		}},
		{fctest.GuestTwoConn, false, func(t *testing.T, o outcome) {
			if o.err != nil || o.out.Exit == nil {
				t.Errorf("twoconn: %v %v", o.err, o.perr)
			}
		}},
		{fctest.GuestOutside, true, func(t *testing.T, o outcome) {
			// Nothing of the late answer counts: no verdict, no result, no
			// output; the job timed out.
			if o.err != nil || !o.res.TimedOut || o.out.Exit != nil || len(o.out.Results) != 0 || len(o.out.Started) != 0 ||
				strings.Contains(o.out.Files[frame.StdoutName], "late") {
				t.Errorf("outside: %v %+v exit %+v results %v started %v stdout %q", o.err, o.res, o.out.Exit, o.out.Results, o.out.Started, o.out.Files[frame.StdoutName])
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.behaviour, func(t *testing.T) {
			j := job{behaviour: c.behaviour, run: "echo ok"}
			if c.limits {
				j.limits = short
			}
			var outside func() map[string]any
			if c.behaviour == fctest.GuestOutside {
				outside = e.outside(t, late)
			}
			c.check(t, e.run(t, j))
			if outside != nil {
				// The outside guest got the boot preamble and the hello,
				// waited for the kill and then answered: it did reach the
				// point of answering late.
				if got := outside(); got["played"] != true {
					t.Errorf("the outside guest did not answer: %v", got)
				}
			}
		})
	}
	for id, lines := range e.logEntries(t) {
		for _, s := range entriesOf(lines, "second-connection") {
			if s.(map[string]any)["refused"] != true {
				t.Errorf("%s: a second vsock connection reached the host", id)
			}
		}
	}
	if left := e.leftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestResultNamesRuntime: a job's result names the pinned Firecracker and
// jailer versions ("firecracker X (jailer Y)"), through the executor as
// the runner assembles it.
func TestResultNamesRuntime(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fctest.Config{JailerVersion: "1.12.0"}, nil)
	const want = "firecracker " + fakeVersion + " (jailer 1.12.0)"
	if got := e.backend.Runtime(); got != want {
		t.Fatalf("Runtime() = %q, want %q", got, want)
	}
	res := e.execute(t, fctest.GuestEntry, "echo ok")
	if res.Status != sandbox.StatusCompleted || res.Runtime != want {
		t.Fatalf("result %+v: runtime %q, want %q", res, res.Runtime, want)
	}
	if left := e.leftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestRefusesVMWithoutSeccomp: a Firecracker that runs without its
// seccomp filters (as --no-seccomp would make it) never gets a job.
func TestRefusesVMWithoutSeccomp(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fctest.Config{NoSeccomp: true}, nil)
	o := e.run(t, job{behaviour: fctest.GuestEntry, run: "true"})
	if o.err == nil || !strings.Contains(o.err.Error(), "no seccomp filter") {
		t.Fatalf("err %v", o.err)
	}
	if left := e.leftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestRefusesTamperedArtefacts: a kernel or rootfs that does not match its
// digest refuses the start, and so does one replaced after the start.
func TestRefusesTamperedArtefacts(t *testing.T) {
	t.Parallel()
	var kernel string
	e := newEnv(t, fctest.Config{}, func(c *firecracker.Config) { kernel = c.Lock.Kernel.Path })
	os.Remove(kernel)
	os.WriteFile(kernel, []byte("another kernel"), 0o444)
	o := e.run(t, job{behaviour: fctest.GuestEntry, run: "true"})
	if !errors.Is(o.err, firecracker.ErrDigest) {
		t.Fatalf("err %v", o.err)
	}
	if left := e.leftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	_, err := firecracker.New(context.Background(), firecracker.Config{})
	if err == nil {
		t.Fatal("New without a lock")
	}
}

// TestEgressPath: a setup step with egress gets a tap device in a
// namespace of its own whose rules forward only TCP to the proxy; Isolate
// cuts it (drop-all, devices deleted) and the namespace goes with the VM.
func TestEgressPath(t *testing.T) {
	t.Parallel()
	proxy := netip.MustParseAddrPort("10.200.0.5:3128")
	e := newEnv(t, fctest.Config{}, func(c *firecracker.Config) { c.EgressProxy = proxy })
	if err := e.backend.CheckEgress(context.Background(), "x", netip.MustParseAddrPort("127.0.0.1:3128"), false); err == nil {
		t.Error("a loopback proxy accepted")
	}
	if err := e.backend.CheckEgress(context.Background(), "x", proxy, true); err == nil {
		t.Error("the host proxy accepted")
	}
	done := make(chan []string)
	go func() {
		for i := 0; i < 500; i++ {
			if slices.ContainsFunc(e.cmds.list(), func(c string) bool { return strings.Contains(c, "route add default") }) {
				break
			}
			sleep()
		}
		// As the executor does at the end of the setup step.
		if err := e.backend.Isolate(context.Background(), "egress-job-1"); err != nil {
			t.Error(err)
		}
		done <- e.cmds.list()
	}()
	o := e.run(t, job{id: "egress-job-1", behaviour: fctest.GuestEntry, run: "sleep 1", network: "quavon-sandbox-egress", setup: "true"})
	cut := strings.Join(<-done, "\n")
	for _, want := range []string{"flush ruleset\ntable inet quavon {\n\tchain input { type filter hook input priority 0; policy drop; }\n\tchain output { type filter hook output priority 0; policy drop; }\n\tchain forward { type filter hook forward priority 0; policy drop; }", "ip link del qfc", "link del tap0"} {
		if !strings.Contains(cut, want) {
			t.Errorf("Isolate did not cut the path (%q):\n%s", want, cut)
		}
	}
	if strings.Contains(cut, "netns del") {
		t.Errorf("the namespace went before the VM")
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	cmds := strings.Join(e.cmds.list(), "\n")
	for _, want := range []string{"ip netns add quavon-", "tuntap add dev tap0 mode tap user", "policy drop",
		`ip daddr 10.200.0.5 tcp dport 3128 ct state new,established accept`, "masquerade", "ip netns del quavon-"} {
		if !strings.Contains(cmds, want) {
			t.Errorf("commands lack %q:\n%s", want, cmds)
		}
	}
	// The rules go in before any device exists.
	if strings.Index(cmds, "nft -f -") > strings.Index(cmds, "tuntap add") {
		t.Errorf("devices before the rules:\n%s", cmds)
	}
	logs := e.logEntries(t)
	for _, lines := range logs {
		args := strings.Join(toStrings(entriesOf(lines, "jailer")[0].(map[string]any)["args"]), " ")
		if !strings.Contains(args, "--netns /var/run/netns/quavon-") {
			t.Errorf("jailer args %q", args)
		}
		var ifaces int
		for _, r := range entriesOf(lines, "request") {
			if strings.HasPrefix(r.(map[string]any)["path"].(string), "/network-interfaces/") {
				ifaces++
			}
		}
		if ifaces != 1 {
			t.Errorf("%d network interfaces configured", ifaces)
		}
	}
	// Without egress: no namespace, no interface.
	before := len(e.cmds.list())
	if o := e.run(t, job{behaviour: fctest.GuestEntry, run: "true"}); o.err != nil {
		t.Fatal(o.err)
	}
	if len(e.cmds.list()) != before {
		t.Errorf("a job without egress ran network commands")
	}
	if bytes.Contains([]byte(cmds), []byte("dropAll")) {
		t.Fatal("unreachable")
	}
}
