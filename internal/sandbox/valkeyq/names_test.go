package valkeyq

import (
	"testing"

	"github.com/quavon/quavon/internal/sandbox"
)

func TestNamesForPools(t *testing.T) {
	t.Parallel()
	def, err := NamesFor(sandbox.DefaultPool)
	if err != nil {
		t.Fatal(err)
	}
	acme, err := NamesFor("acme")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ got, want string }{
		{def.Jobs(), "quavon-sandbox:jobs"},
		{def.Result("job-1"), "quavon-sandbox:result:job-1"},
		{def.Blob("abc", 3), "quavon-sandbox:blob:abc:3"},
		{def.Seen("job-1"), "quavon-sandbox:seen:job-1"},
		{def.Egress("tok"), "quavon-sandbox:egress:tok"},
		// Another pool never falls under the default pool's ACL pattern
		// quavon-sandbox:*.
		{acme.Jobs(), "quavon-sandbox-acme:jobs"},
		{acme.Blob("abc", 0), "quavon-sandbox-acme:blob:abc:0"},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
	for _, bad := range []string{"", "Default", "a:b", "a*", "-x", "a b", "toolongtoolongtoolongtoolongtoolong"} {
		if _, err := NamesFor(bad); err == nil {
			t.Errorf("NamesFor(%q) accepted", bad)
		}
	}
}
