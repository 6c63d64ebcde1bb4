package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// quavon doctor exits 1 when a check fails and prints JSON with --json.
func TestDoctorCommand(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	env := []string{"QUAVON_SANDBOX_BACKEND=docker-runc-insecure", "QUAVON_SANDBOX_ALLOW_INSECURE=true"}
	err := run(context.Background(), []string{"doctor", "--service", "quavon-sandbox-runner", "--json", "--proc", t.TempDir()}, env, &out, nil)
	var es *exitStatus
	if !errors.As(err, &es) || es.code != 1 {
		t.Fatalf("err = %v, want exit 1", err)
	}
	var got struct {
		OK     bool
		Checks []struct{ Check, Status string }
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if got.OK || len(got.Checks) == 0 {
		t.Fatalf("%+v", got)
	}
	for _, c := range got.Checks {
		if c.Check == "backend" && c.Status != "fail" {
			t.Fatalf("docker-runc-insecure in production: %s", c.Status)
		}
	}
	if err := run(context.Background(), []string{"doctor"}, nil, &out, nil); err == nil || !strings.Contains(err.Error(), "--service") {
		t.Fatalf("without --service: %v", err)
	}
}

// quavon dev needs --work-dir and knows one scenario; quavon dev services stays.
func TestDevUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"dev"}, {"dev", "--work-dir", "x", "--scenario", "nope"}, {"dev", "services"}, {"dev", "nope"}} {
		if err := run(context.Background(), args, nil, nil, nil); !errors.Is(err, errUsage) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

// --approve belongs to the demo scenario.
func TestDevApproveNeedsScenario(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"dev", "--work-dir", t.TempDir(), "--approve"}, nil, &out, &errOut)
	if err == nil || !strings.Contains(err.Error()+errOut.String(), "--approve needs --scenario demo") {
		t.Fatalf("err %v, stderr %s", err, errOut.String())
	}
}

// quavon doctor --canary belongs to the worker; without a signing key the
// job checks fail with the reason and the injection check still runs.
func TestDoctorCanaryCommand(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"doctor", "--service", "quavon-api", "--canary"}, nil, &out, nil); !errors.Is(err, errUsage) {
		t.Fatalf("--canary for the api: %v", err)
	}
	gh := httptest.NewServer(http.NotFoundHandler())
	defer gh.Close()
	env := []string{"QUAVON_DATABASE_URL=postgres://quavon_app@127.0.0.1:1/quavon", "QUAVON_GITHUB_API_URL=" + gh.URL + "/",
		"QUAVON_GITHUB_GRAPHQL_URL=" + gh.URL + "/graphql"}
	err := run(context.Background(), []string{"doctor", "--service", "quavon-worker", "--canary", "--json", "--proc", t.TempDir()}, env, &out, nil)
	var es *exitStatus
	if !errors.As(err, &es) || es.code != 1 {
		t.Fatalf("err = %v, want exit 1", err)
	}
	var got struct {
		Checks []struct{ Check, Status, Detail string }
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	seen := map[string]string{}
	for _, c := range got.Checks {
		seen[c.Check] = c.Status + " " + c.Detail
	}
	for _, c := range []string{"canary-network", "canary-secrets", "canary-escape"} {
		if !strings.HasPrefix(seen[c], "fail ") || !strings.Contains(seen[c], "QUAVON_SANDBOX_SIGNING_KEY_FILE is not set") {
			t.Errorf("%s: %q", c, seen[c])
		}
	}
	if !strings.HasPrefix(seen["canary-injection"], "pass ") {
		t.Errorf("canary-injection: %q", seen["canary-injection"])
	}
}
