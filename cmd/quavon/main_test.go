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
