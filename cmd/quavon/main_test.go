package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/llm"
	"github.com/quavon/quavon/internal/llm/llmfake"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/testenv"
)

func TestKeysGenerateThenID(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"keys", "generate"}, nil, &out, nil); err != nil {
		t.Fatal(err)
	}
	k, err := sandbox.ParseKey(out.String())
	if err != nil {
		t.Fatalf("generated key does not parse: %v", err)
	}
	file := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(file, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	var ids bytes.Buffer
	env := []string{"QUAVON_SANDBOX_SIGNING_KEY_FILE=" + file}
	if err := run(context.Background(), []string{"keys", "id"}, env, &ids, nil); err != nil {
		t.Fatal(err)
	}
	if ids.String() != k.ID()+"\tcurrent\n" {
		t.Fatalf("keys id printed %q", ids.String())
	}
	if strings.Contains(ids.String(), strings.TrimSpace(out.String())) {
		t.Fatal("keys id printed the key")
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{nil, {"nope"}, {"keys"}, {"keys", "rotate"}} {
		if err := run(context.Background(), args, nil, &bytes.Buffer{}, nil); !errors.Is(err, errUsage) {
			t.Errorf("run(%q) = %v, want usage", args, err)
		}
	}
	if err := run(context.Background(), []string{"keys", "id"}, []string{"QUAVON_SANDBOX_SIGNING_KEY=x"}, &bytes.Buffer{}, nil); err == nil {
		t.Fatal("a key in the environment is accepted")
	}
}

func TestMigrateCommand(t *testing.T) {
	db := testenv.NewDatabase(t)
	u, err := url.Parse(db.AdminURL)
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	u.User = url.User(u.User.Username())
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte(pw+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"QUAVON_DATABASE_URL=" + u.String(), "QUAVON_DATABASE_PASSWORD_FILE=" + pwFile}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"migrate"}, env, &out, nil); err != nil {
		t.Fatal(err)
	}
	ms, err := postgres.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	latest := len(ms)
	if !strings.Contains(out.String(), "applied 0001_control_plane") ||
		!strings.Contains(out.String(), fmt.Sprintf("schema at version %d (was 0)", latest)) {
		t.Fatalf("first run: %s", out.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"migrate"}, env, &out, nil); err != nil {
		t.Fatal(err)
	}
	if out.String() != fmt.Sprintf("schema at version %d (was %d); River's migrations applied\n", latest, latest) {
		t.Fatalf("second run: %q", out.String())
	}
}

// quavon llm probe against the provider emulator: a model that calls the
// tool passes, one that answers in prose fails with the reason.
func TestLLMProbe(t *testing.T) {
	t.Parallel()
	s := llmfake.New(llmfake.Options{APIKey: "sk-ant-test-key-000000000000000000", Models: []string{"claude-sonnet-5-5"},
		Script: llm.Steps(llm.Call("quavon_probe", map[string]string{"word": "ready"}), llm.Answer("I would call it"))})
	defer s.Close()
	key := filepath.Join(t.TempDir(), "key")
	os.WriteFile(key, []byte("sk-ant-test-key-000000000000000000\n"), 0o600)
	env := []string{"QUAVON_LLM_PROVIDER=anthropic", "QUAVON_LLM_MODEL=claude-sonnet-5-5", "QUAVON_LLM_API_KEY_FILE=" + key,
		"QUAVON_LLM_BASE_URL=" + s.AnthropicURL()}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"llm", "probe"}, env, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "ok: claude-sonnet-5-5 called the tool") {
		t.Fatalf("output %q", out.String())
	}
	err := run(context.Background(), []string{"llm", "probe", "--feature", "fix"}, env, &out, &bytes.Buffer{})
	if !errors.Is(err, llm.ErrProbeNoToolCall) {
		t.Fatalf("a model answering in prose: %v", err)
	}
	if err := run(context.Background(), []string{"llm", "probe"}, nil, &out, &bytes.Buffer{}); err == nil {
		t.Fatal("no model configured: accepted")
	}
}
