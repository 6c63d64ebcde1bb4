package valkey_test

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/quavon/quavon/internal/testenv"
	qvalkey "github.com/quavon/quavon/internal/valkey"
)

// The embedded server answers on its socket, refuses a client without the
// password, and leaves nothing behind.
func TestEmbedded(t *testing.T) {
	testenv.Program(t, "redis-server")
	ctx := context.Background()
	e, err := qvalkey.StartEmbedded(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := e.Client
	if err := c.Do(ctx, c.B().Set().Key("k").Value("v").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Do(ctx, c.B().Get().Key("k").Build()).ToString(); err != nil || v != "v" {
		t.Fatalf("get = %q, %v", v, err)
	}
	sock := e.Socket()
	out, err := exec.Command("redis-cli", "-s", sock, "get", "k").CombinedOutput()
	if err == nil && string(out) == "v\n" {
		t.Fatalf("a client without the password read the key: %s", out)
	}
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Fatalf("socket %v mode %v", err, fi)
	}
	e.Close()
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket still there after Close: %v", err)
	}
}
