package valkey_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/quavon/quavon/internal/testenv"
	qvalkey "github.com/quavon/quavon/internal/valkey"
)

// These tests run against the server scripts/test starts with
// deploy/valkey/users.acl.tmpl; they check the deployed ACL, not a copy.

func denied(t *testing.T, c valkey.Client, what string, cmd valkey.Completed) {
	t.Helper()
	err := c.Do(context.Background(), cmd).Error()
	if err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Errorf("%s: %v, want NOPERM", what, err)
	}
}

func allowed(t *testing.T, c valkey.Client, what string, cmd valkey.Completed) {
	t.Helper()
	if err := c.Do(context.Background(), cmd).Error(); err != nil && !valkey.IsValkeyNil(err) {
		t.Errorf("%s: %v, want allowed", what, err)
	}
}

func TestSandboxUserACL(t *testing.T) {
	t.Parallel()
	admin := testenv.Valkey(t, testenv.UserControlPlane)
	ctx := context.Background()
	if err := admin.Do(ctx, admin.B().Set().Key("quavon:acl-test:secret").Value("tenant data").ExSeconds(60).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	s := testenv.Valkey(t, testenv.UserSandbox)
	b := s.B()

	denied(t, s, "GET of a non-sandbox key", b.Get().Key("quavon:acl-test:secret").Build())
	denied(t, s, "GET of another pool's blob", b.Get().Key("quavon-sandbox-acme:blob:x:0").Build())
	denied(t, s, "KEYS", b.Keys().Pattern("*").Build())
	denied(t, s, "SCAN", b.Scan().Cursor(0).Build())
	denied(t, s, "XADD (forging a job)", b.Xadd().Key("quavon-sandbox:jobs").Id("*").FieldValue().FieldValue("job", "x").Build())
	denied(t, s, "XCLAIM", b.Xclaim().Key("quavon-sandbox:jobs").Group("runners").Consumer("me").MinIdleTime("0").Id("0-1").Build())
	denied(t, s, "XAUTOCLAIM", b.Xautoclaim().Key("quavon-sandbox:jobs").Group("runners").Consumer("me").MinIdleTime("0").Start("0").Build())
	denied(t, s, "SET of a blob chunk", b.Set().Key("quavon-sandbox:blob:x:0").Value("x").Build())
	denied(t, s, "GET of a result", b.Get().Key("quavon-sandbox:result:x").Build())
	denied(t, s, "FLUSHALL", b.Flushall().Build())
	denied(t, s, "CONFIG GET", b.ConfigGet().Parameter("*").Build())
	denied(t, s, "EVAL", b.Eval().Script("return 1").Numkeys(0).Build())
	denied(t, s, "PUBLISH", b.Publish().Channel("quavon:events").Message("x").Build())

	allowed(t, s, "GET of a blob chunk", b.Get().Key("quavon-sandbox:blob:acl-test:0").Build())
	allowed(t, s, "DEL of a blob chunk", b.Del().Key("quavon-sandbox:blob:acl-test:0").Build())
	allowed(t, s, "SET NX of a replay guard", b.Set().Key("quavon-sandbox:seen:acl-test").Value("1").Nx().Px(time.Second).Build())
	allowed(t, s, "SET of an egress credential", b.Set().Key("quavon-sandbox:egress:acl-test").Value("{}").Px(time.Second).Build())
	allowed(t, s, "DEL of an egress credential", b.Del().Key("quavon-sandbox:egress:acl-test").Build())
	denied(t, s, "GET of an egress credential", b.Get().Key("quavon-sandbox:egress:acl-test").Build())
}

func TestEgressUserACL(t *testing.T) {
	t.Parallel()
	e := testenv.Valkey(t, testenv.UserEgress)
	b := e.B()
	allowed(t, e, "GET of an egress token", b.Get().Key("quavon-sandbox:egress:acl-test").Build())
	denied(t, e, "SET of an egress token", b.Set().Key("quavon-sandbox:egress:acl-test").Value("{}").Build())
	denied(t, e, "DEL of an egress token", b.Del().Key("quavon-sandbox:egress:acl-test").Build())
	denied(t, e, "GET of a blob", b.Get().Key("quavon-sandbox:blob:x:0").Build())
	denied(t, e, "XREADGROUP", b.Xreadgroup().Group("runners", "x").Count(1).Streams().Key("quavon-sandbox:jobs").Id(">").Build())
}

func TestDefaultUserIsOff(t *testing.T) {
	t.Parallel()
	cfg := testenv.ValkeyConfig(t, testenv.UserControlPlane)
	cfg.Username, cfg.PasswordFile = "default", ""
	if c, err := qvalkey.Open(context.Background(), cfg); err == nil {
		c.Close()
		t.Fatal("the default user can connect")
	}
	cfg = testenv.ValkeyConfig(t, testenv.UserSandbox)
	cfg.Username = testenv.UserEgress // sandbox's password for egress
	if c, err := qvalkey.Open(context.Background(), cfg); err == nil {
		c.Close()
		t.Fatal("a wrong password is accepted")
	}
}
