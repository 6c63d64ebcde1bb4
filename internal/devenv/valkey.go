package devenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ValkeyUsers are the ACL users of deploy/valkey/users.acl.tmpl.
var ValkeyUsers = []string{"quavon", "sandbox", "egress"}

// Valkey is a redis-server (Valkey's protocol) on 127.0.0.1 with Quavon's
// ACL users, each with a fresh password in a 0600 file under SecretsDir.
type Valkey struct {
	Addr       string
	SecretsDir string
	cmd        *exec.Cmd
	exited     chan struct{}
}

var placeholderRE = regexp.MustCompile(`@[A-Z0-9_]+@`)

// RenderACL replaces each @USER_PASSWORD_SHA256@ of the template with the
// SHA-256 of that user's password and drops comment and blank lines (Redis
// 7.0 refuses comments in an ACL file). A placeholder left over, or a
// template without "user default off", is an error.
func RenderACL(template string, passwords map[string]string) (string, error) {
	var b strings.Builder
	for _, line := range strings.Split(template, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	out := b.String()
	for u, pw := range passwords {
		sum := sha256.Sum256([]byte(pw))
		out = strings.ReplaceAll(out, "@"+strings.ToUpper(u)+"_PASSWORD_SHA256@", hex.EncodeToString(sum[:]))
	}
	if left := placeholderRE.FindAllString(out, -1); len(left) > 0 {
		return "", fmt.Errorf("ACL template: unknown placeholders %v", left)
	}
	if !regexp.MustCompile(`(?m)^\s*user\s+default(\s.*)?\soff(\s|$)`).MatchString(out) {
		return "", fmt.Errorf("ACL template: no 'user default off' line")
	}
	return out, nil
}

// StartValkey renders aclTemplate with fresh passwords and starts
// redis-server under dir (no persistence).
func StartValkey(ctx context.Context, dir, aclTemplate string) (*Valkey, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("valkey: redis-server is not on PATH (apt-get install redis-server)")
	}
	tmpl, err := os.ReadFile(aclTemplate)
	if err != nil {
		return nil, fmt.Errorf("valkey: %w", err)
	}
	v := &Valkey{SecretsDir: filepath.Join(dir, "secrets")}
	if err := os.MkdirAll(v.SecretsDir, 0o700); err != nil {
		return nil, err
	}
	passwords := map[string]string{}
	for _, u := range ValkeyUsers {
		passwords[u] = RandomPassword()
		if err := os.WriteFile(filepath.Join(v.SecretsDir, u), []byte(passwords[u]), 0o600); err != nil {
			return nil, err
		}
	}
	acl, err := RenderACL(string(tmpl), passwords)
	if err != nil {
		return nil, err
	}
	aclFile := filepath.Join(dir, "users.acl")
	if err := os.WriteFile(aclFile, []byte(acl), 0o600); err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	v.Addr = "127.0.0.1:" + strconv.Itoa(port)
	log := filepath.Join(dir, "redis.log")
	v.cmd = exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no",
		"--daemonize", "no", "--protected-mode", "yes", "--dir", dir, "--logfile", log, "--aclfile", aclFile)
	v.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := v.cmd.Start(); err != nil {
		return nil, err
	}
	v.exited = make(chan struct{})
	go func() { v.cmd.Wait(); close(v.exited) }()
	alive := func() bool {
		select {
		case <-v.exited:
			return false
		default:
			return true
		}
	}
	if err := waitFor(ctx, "redis-server", Deadline, alive, func() bool {
		out, err := v.cli(ctx, "quavon", passwords["quavon"], "PING")
		return err == nil && out == "PONG"
	}); err != nil {
		v.Stop()
		return nil, fmt.Errorf("%w\n%s", err, tail(log, 20))
	}
	// The default (password-less) user must be off.
	if out, _ := v.cli(ctx, "", "", "PING"); !strings.HasPrefix(out, "NOAUTH") {
		v.Stop()
		return nil, fmt.Errorf("valkey: an unauthenticated client got %q instead of NOAUTH", out)
	}
	return v, nil
}

// cli runs redis-cli as user (password through the environment, never the
// command line).
func (v *Valkey) cli(ctx context.Context, user, password string, args ...string) (string, error) {
	host, port, _ := strings.Cut(v.Addr, ":")
	argv := []string{"-h", host, "-p", port}
	if user != "" {
		argv = append(argv, "--user", user)
	}
	cmd := exec.CommandContext(ctx, "redis-cli", append(argv, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if password != "" {
		cmd.Env = append(cmd.Env, "REDISCLI_AUTH="+password)
	}
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// Stop terminates the server, waiting up to 20 s.
func (v *Valkey) Stop() error {
	if v.cmd == nil || v.cmd.Process == nil {
		return nil
	}
	v.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-v.exited:
	case <-time.After(20 * time.Second):
		v.cmd.Process.Kill()
		<-v.exited
	}
	return nil
}
