package sandbox

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidToken(t *testing.T) {
	t.Parallel()
	good := strings.Repeat("0123456789abcdef", 4)
	for s, want := range map[string]bool{
		good:                                 true,
		strings.ToUpper(good):                false,
		good[:63]:                            false,
		good + "0":                           false,
		good[:63] + "g":                      false,
		"":                                   false,
		good[:32] + "\n" + good[33:]:         false,
		"quavon-sandbox:egress:" + good[:42]: false,
	} {
		if got := ValidEgressToken(s); got != want {
			t.Errorf("ValidEgressToken(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestGrantValidate(t *testing.T) {
	t.Parallel()
	ok := func() EgressGrant {
		return EgressGrant{JobID: "job_0123-abc", Hosts: []string{"registry.npmjs.org", "files.pythonhosted.org"}, NotAfter: time.Now().Add(time.Minute)}
	}
	if err := ok().Validate(); err != nil {
		t.Fatalf("valid grant: %v", err)
	}
	many := make([]string, MaxEgressHosts+1)
	for i := range many {
		many[i] = "h" + strings.Repeat("x", i) + ".example"
	}
	cases := []struct {
		name   string
		mutate func(*EgressGrant)
		want   string
	}{
		{"short job id", func(g *EgressGrant) { g.JobID = "abc" }, "jobId"},
		{"job id charset", func(g *EgressGrant) { g.JobID = "job id with spaces" }, "jobId"},
		{"long job id", func(g *EgressGrant) { g.JobID = strings.Repeat("a", 65) }, "jobId"},
		{"no hosts", func(g *EgressGrant) { g.Hosts = nil }, "hosts: want 1-16"},
		{"too many hosts", func(g *EgressGrant) { g.Hosts = many }, "hosts: want 1-16"},
		{"upper case host", func(g *EgressGrant) { g.Hosts = []string{"Registry.npmjs.org"} }, "hosts[0]"},
		{"trailing dot", func(g *EgressGrant) { g.Hosts = []string{"registry.npmjs.org."} }, "hosts[0]"},
		{"ip literal", func(g *EgressGrant) { g.Hosts = []string{"127.0.0.1"} }, "hosts[0]"},
		{"hex ip literal", func(g *EgressGrant) { g.Hosts = []string{"0x7f.0x1"} }, "hosts[0]"},
		{"wildcard", func(g *EgressGrant) { g.Hosts = []string{"*.npmjs.org"} }, "hosts[0]"},
		{"duplicate", func(g *EgressGrant) { g.Hosts = []string{"a.example", "a.example"} }, "duplicate"},
		{"no notAfter", func(g *EgressGrant) { g.NotAfter = time.Time{} }, "notAfter"},
	}
	for _, c := range cases {
		g := ok()
		c.mutate(&g)
		if err := g.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func TestDecodeGrant(t *testing.T) {
	t.Parallel()
	g, err := DecodeEgressGrant([]byte(`{"jobId":"job-00000001","hosts":["registry.npmjs.org"],"notAfter":"2026-11-30T12:00:00Z"}`))
	if err != nil {
		t.Fatal(err)
	}
	if g.JobID != "job-00000001" || !g.Allows("registry.npmjs.org") || g.Allows("Registry.npmjs.org") || g.Allows("npmjs.org") ||
		!g.NotAfter.Equal(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)) {
		t.Fatalf("decoded %+v", g)
	}
	for _, bad := range []string{
		``, `null`, `[]`, `{}`,
		`{"jobId":"job-00000001","hosts":["registry.npmjs.org"]}`,
		`{"jobId":"job-00000001","hosts":["registry.npmjs.org"],"notAfter":"tomorrow"}`,
		`{"jobId":"job-00000001","hosts":["registry.npmjs.org"],"notAfter":"2026-11-30T12:00:00Z","ports":[80]}`,
		`{"jobId":"job-00000001","hosts":["registry.npmjs.org"],"notAfter":"2026-11-30T12:00:00Z"} {}`,
		`{"jobId":"job-00000001","hosts":"registry.npmjs.org","notAfter":"2026-11-30T12:00:00Z"}`,
		`{"jobId":"job-00000001","hosts":["registry.npmjs.org"],"notAfter":"2026-11-30T12:00:00Z","x":"` + strings.Repeat("a", maxEgressGrantBytes) + `"}`,
	} {
		if _, err := DecodeEgressGrant([]byte(bad)); !errors.Is(err, ErrInvalidEgressGrant) {
			t.Errorf("DecodeEgressGrant(%.80q) = %v, want ErrInvalidEgressGrant", bad, err)
		}
	}
}
