package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
