package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRefusesToStart: configurations that must never run are refused before
// the runner touches Valkey or Docker (SB11).
func TestRefusesToStart(t *testing.T) {
	t.Parallel()
	key := filepath.Join(t.TempDir(), "key")
	os.WriteFile(key, []byte("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="), 0o600)
	short := filepath.Join(t.TempDir(), "short")
	os.WriteFile(short, []byte("c2hvcnQ="), 0o600)
	cases := []struct {
		env  []string
		want string
	}{
		{[]string{"QUAVON_SANDBOX_BACKEND=docker-runc-insecure", "QUAVON_SANDBOX_ALLOW_INSECURE=true"}, "production"},
		{[]string{"QUAVON_ENV=development", "QUAVON_SANDBOX_BACKEND=docker-runc-insecure"}, "QUAVON_SANDBOX_ALLOW_INSECURE"},
		{[]string{"QUAVON_ENV=development", "QUAVON_EDITION=enterprise", "QUAVON_SANDBOX_BACKEND=docker-runc-insecure", "QUAVON_SANDBOX_ALLOW_INSECURE=true"}, "enterprise"},
		{[]string{"QUAVON_SANDBOX_BACKEND=firecracker", "QUAVON_SANDBOX_KVM_DEVICE=/nonexistent/kvm"}, "no usable KVM device: /nonexistent/kvm does not exist"},
		{[]string{"QUAVON_SANDBOX_BACKEND=firecracker", "QUAVON_SANDBOX_KVM_DEVICE=/dev/null"}, "never a fallback"},
		{[]string{"QUAVON_SANDBOX_BACKEND=kube-gvisor", "QUAVON_SANDBOX_DOCKER_HOST=unix:///nonexistent"}, "QUAVON_SANDBOX_SIGNING_KEY_FILE"},
		{nil, "QUAVON_SANDBOX_SIGNING_KEY_FILE"},
		{[]string{"QUAVON_SANDBOX_SIGNING_KEY_FILE=" + short}, "at least 32"},
		{[]string{"QUAVON_SANDBOX_SIGNING_KEY_FILE=" + key, "QUAVON_SANDBOX_IMAGES_LOCK=/nonexistent"}, "image lockfile"},
		{[]string{"QUAVON_SANDBOX_SIGNING_KEY=abc"}, "_FILE"},
	}
	for _, c := range cases {
		var logs bytes.Buffer
		err := run(context.Background(), c.env, &logs)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run(%q) = %v, want %q", c.env, err, c.want)
		}
	}
	// Insecure mode where allowed starts with a loud warning (and then
	// fails here only because nothing else is configured).
	var logs bytes.Buffer
	run(context.Background(), []string{"QUAVON_ENV=development", "QUAVON_SANDBOX_BACKEND=docker-runc-insecure", "QUAVON_SANDBOX_ALLOW_INSECURE=true"}, &logs)
	if !strings.Contains(logs.String(), "INSECURE SANDBOX") || !strings.Contains(logs.String(), `"level":"WARN"`) {
		t.Fatalf("no warning logged: %s", logs.String())
	}
}
