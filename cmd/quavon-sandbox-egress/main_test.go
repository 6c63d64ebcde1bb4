package main

import (
	"github.com/quavon/quavon/internal/sandbox/valkeyq"

	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/testenv"
)

// TestRefusesToStart: nonsense configuration stops the proxy before it
// listens.
func TestRefusesToStart(t *testing.T) {
	t.Parallel()
	cases := []struct {
		env  []string
		want string
	}{
		{[]string{"QUAVON_EGRESS_LISTEN=3128"}, "QUAVON_EGRESS_LISTEN"},
		{[]string{"QUAVON_EGRESS_LISTEN=:0"}, "QUAVON_EGRESS_LISTEN"},
		{[]string{"QUAVON_EGRESS_LISTENING=:3128"}, "unknown setting"},
		{[]string{"QUAVON_SANDBOX_POOL=Bad_Pool"}, "QUAVON_SANDBOX_POOL"},
		{[]string{"QUAVON_VALKEY_PASSWORD=x"}, "_FILE"},
		{[]string{"QUAVON_VALKEY_ADDR=127.0.0.1:1"}, "valkey.Open 127.0.0.1:1 as egress"},
	}
	for _, c := range cases {
		var logs testenv.LogBuffer
		err := run(context.Background(), c.env, &logs)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run(%q) = %v, want %q", c.env, err, c.want)
		}
	}
	var logs testenv.LogBuffer
	run(context.Background(), []string{"QUAVON_VALKEY_ADDR=127.0.0.1:1", "QUAVON_VALKEY_USER=quavon"}, &logs)
	if !strings.Contains(logs.String(), `"level":"WARN"`) || !strings.Contains(logs.String(), `"valkey_user":"quavon"`) {
		t.Fatalf("no warning for a user other than egress: %s", logs.String())
	}
}

// TestRunServes: the real wiring, as the ACL user egress, answers on
// QUAVON_EGRESS_LISTEN and reads the runner's grants. No request here
// reaches name resolution, so nothing leaves loopback.
func TestRunServes(t *testing.T) {
	t.Parallel()
	admin := testenv.Valkey(t, testenv.UserControlPlane)
	vcfg := testenv.ValkeyConfig(t, testenv.UserEgress)
	names, _ := valkeyq.NamesFor(sandbox.DefaultPool)
	var b [32]byte
	rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	g, _ := json.Marshal(sandbox.EgressGrant{JobID: "job-main-test", Hosts: []string{"registry.quavon.test"}, NotAfter: time.Now().Add(time.Minute).UTC()})
	ctx := context.Background()
	if err := admin.Do(ctx, admin.B().Set().Key(names.Egress(token)).Value(string(g)).ExSeconds(60).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Do(context.Background(), admin.B().Del().Key(names.Egress(token)).Build()) })

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	rctx, cancel := context.WithCancel(ctx)
	var logs testenv.LogBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(rctx, []string{
			"QUAVON_EGRESS_LISTEN=" + addr, "QUAVON_VALKEY_ADDR=" + vcfg.Addr,
			"QUAVON_VALKEY_PASSWORD_FILE=" + vcfg.PasswordFile, "QUAVON_TEST_IGNORED=1",
		}, &logs)
	}()
	t.Cleanup(cancel)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "egress proxy started") {
		select {
		case err := <-done:
			t.Fatalf("run: %v\n%s", err, logs.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("not started:\n%s", logs.String())
		}
	}
	if !regexp.MustCompile(`"valkey_user":"egress"`).MatchString(logs.String()) {
		t.Fatalf("not running as egress:\n%s", logs.String())
	}

	connect := func(target, tok string) (int, string) {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		auth := base64.StdEncoding.EncodeToString([]byte("job:" + tok))
		io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\nProxy-Authorization: Basic "+auth+"\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	// 403, not 407 or 503: the egress user read the grant.
	if status, body := connect("other.quavon.test:443", token); status != http.StatusForbidden || !strings.Contains(body, "host not granted") {
		t.Fatalf("granted token, other host: %d %q", status, body)
	}
	if status, body := connect("registry.quavon.test:443", strings.Repeat("0", 64)); status != http.StatusProxyAuthRequired {
		t.Fatalf("unknown token: %d %q", status, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
	if strings.Contains(logs.String(), token) {
		t.Fatalf("the log holds the token:\n%s", logs.String())
	}
}
