package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/githubfake"
	"github.com/quavon/quavon/internal/testenv"
	"github.com/quavon/quavon/internal/tokenbroker"
)

func write(t *testing.T, dir, name, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// The binary's wiring: configuration, the key files, the callers file, the
// socket; a worker's credential gets the read set and nothing else.
func TestServes(t *testing.T) {
	t.Parallel()
	srv := githubfake.New(t)
	srv.AddRepo("acme", "app", githubfake.RepoOptions{Private: true, Files: map[string]string{"a": "a"}})
	ra := srv.RegisterApp("quavon-review")
	in := srv.Install(ra, "acme", map[string]string{"contents": "read", "pull_requests": "write", "issues": "write", "checks": "write"})
	dir := t.TempDir()
	cred, line, err := tokenbroker.NewCredential(tokenbroker.RoleWorker, nil)
	if err != nil {
		t.Fatal(err)
	}
	sockDir, _ := os.MkdirTemp("", "qbr")
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	addr := "unix:" + filepath.Join(sockDir, "b.sock")
	env := []string{
		"QUAVON_ENV=test",
		"QUAVON_BROKER_LISTEN=" + addr,
		"QUAVON_BROKER_CALLERS_FILE=" + write(t, dir, "callers", "# test\n"+line+"\n", 0o644),
		"QUAVON_GITHUB_REVIEW_APP_ID=" + strconv.FormatInt(ra.ID, 10),
		"QUAVON_GITHUB_REVIEW_PRIVATE_KEY_FILE=" + write(t, dir, "review.pem", string(ra.PrivateKeyPEM), 0o600),
		"QUAVON_GITHUB_API_URL=" + srv.URL + "/",
		"QUAVON_GITHUB_GRAPHQL_URL=" + srv.URL + "/graphql",
	}
	ctx, stop := context.WithCancel(context.Background())
	logs := &testenv.LogBuffer{}
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, env, logs, ready) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("broker did not start: %v\n%s", err, logs)
	}
	c, err := github.NewBrokerClient(addr, []byte(cred))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := c.Token(ctx, github.TokenRequest{InstallationID: in.ID, Repo: "acme/app", Set: github.SetReviewRead})
	if err != nil || !tok.Permissions.Equal(github.ReviewReadPermissions()) {
		t.Fatalf("token %v: %v", tok, err)
	}
	if _, err := c.Token(ctx, github.TokenRequest{InstallationID: in.ID, Repo: "acme/app", Set: github.SetReviewWrite}); err == nil {
		t.Fatal("a worker credential got the write set")
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), tok.Secret()) || strings.Contains(logs.String(), cred) {
		t.Fatalf("a secret is in the log:\n%s", logs)
	}
}

func TestRefusesToStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, line, _ := tokenbroker.NewCredential(tokenbroker.RoleWorker, nil)
	callers := write(t, dir, "callers", line+"\n", 0o600)
	key := write(t, dir, "key.pem", "not a key", 0o600)
	good := write(t, dir, "good.pem", string(githubfake.New(t).RegisterApp("quavon-review").PrivateKeyPEM), 0o600)
	base := []string{"QUAVON_BROKER_LISTEN=unix:" + filepath.Join(dir, "s.sock"), "QUAVON_GITHUB_REVIEW_APP_ID=1"}
	for _, c := range []struct {
		env  []string
		want string
	}{
		{base, "QUAVON_BROKER_CALLERS_FILE is not set"},
		{append(base, "QUAVON_BROKER_CALLERS_FILE="+write(t, dir, "open", line+"\n", 0o666), "QUAVON_GITHUB_REVIEW_PRIVATE_KEY_FILE="+key), "writable by group or others"},
		{append(base, "QUAVON_BROKER_CALLERS_FILE="+write(t, dir, "bad", "worker fixer "+strings.Repeat("0", 64)+"\n", 0o600), "QUAVON_GITHUB_REVIEW_PRIVATE_KEY_FILE="+key), "may not have the set fixer"},
		{append(base, "QUAVON_BROKER_CALLERS_FILE="+callers, "QUAVON_GITHUB_REVIEW_PRIVATE_KEY_FILE="+key), "private key"},
		{append(base, "QUAVON_BROKER_CALLERS_FILE="+callers, "QUAVON_GITHUB_REVIEW_PRIVATE_KEY_FILE="+key, "QUAVON_DATABASE_URL=postgres://db/q"), "not of quavon-token-broker"},
		{[]string{"QUAVON_BROKER_LISTEN=0.0.0.0:9000", "QUAVON_BROKER_CALLERS_FILE=" + callers, "QUAVON_GITHUB_REVIEW_APP_ID=1", "QUAVON_GITHUB_REVIEW_PRIVATE_KEY_FILE=" + good}, "wildcard"},
		{[]string{"QUAVON_BROKER_LISTEN=8.8.8.8:9000", "QUAVON_BROKER_CALLERS_FILE=" + callers, "QUAVON_GITHUB_REVIEW_APP_ID=1", "QUAVON_GITHUB_REVIEW_PRIVATE_KEY_FILE=" + good}, "only loopback or private"},
	} {
		err := run(context.Background(), c.env, &testenv.LogBuffer{}, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run(%q) = %v, want %q", c.env, err, c.want)
		}
	}
}
