package github

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
)

func TestCanTriggerMatrix(t *testing.T) {
	t.Parallel()
	for perm, want := range map[string]bool{
		"admin": true, "write": true,
		"maintain": false, "triage": false, "read": false, "none": false,
		"": false, "Admin": false, "WRITE": false, " write": false, "write ": false, "owner": false, "push": false,
	} {
		if got := CanTrigger(perm); got != want {
			t.Errorf("CanTrigger(%q) = %v, want %v", perm, got, want)
		}
	}
}

// TestCollaboratorPermissionDecidesOnPermissionField serves GitHub's shapes:
// maintain comes back as permission "write" and triage as "read" with the
// role in role_name; the decision follows the permission field only.
func TestCollaboratorPermissionDecidesOnPermissionField(t *testing.T) {
	t.Parallel()
	type answer struct{ permission, role string }
	answers := map[string]answer{
		"ada":     {"admin", "admin"},
		"wes":     {"write", "write"},
		"mae":     {"write", "maintain"}, // GitHub's mapping of maintain
		"tri":     {"read", "triage"},    // GitHub's mapping of triage
		"rea":     {"read", "read"},
		"non":     {"none", "none"},
		"odd":     {"superuser", "admin"}, // unknown permission, role says admin
		"rolewin": {"read", "admin"},      // role_name must not grant
		"custom":  {"write", "security-reviewer"},
	}
	conn, _ := newTestConn(t, map[string]http.HandlerFunc{
		"GET /repos/o/r/collaborators/{user}/permission": func(w http.ResponseWriter, r *http.Request) {
			a, ok := answers[r.PathValue("user")]
			if !ok {
				w.WriteHeader(http.StatusNotFound)
				_, _ = w.Write([]byte(`{"message":"Not Found"}`))
				return
			}
			_ = json.NewEncoder(w).Encode(map[string]any{
				"permission": a.permission, "role_name": a.role,
				"user": map[string]any{"login": r.PathValue("user"), "id": 1},
			})
		},
	})
	rd, err := NewReader(context.Background(), conn, 9, "o/r")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"ada": true, "wes": true, "mae": true, "custom": true,
		"tri": false, "rea": false, "non": false, "odd": false, "rolewin": false}
	for login, allowed := range want {
		perm, err := rd.CollaboratorPermission(context.Background(), login)
		if err != nil {
			t.Fatalf("%s: %v", login, err)
		}
		if perm != answers[login].permission {
			t.Errorf("%s: permission %q, want the permission field %q", login, perm, answers[login].permission)
		}
		if CanTrigger(perm) != allowed {
			t.Errorf("%s (%+v): CanTrigger = %v, want %v", login, answers[login], !allowed, allowed)
		}
	}
	perm, err := rd.CollaboratorPermission(context.Background(), "stranger")
	if !errors.Is(err, ErrNotCollaborator) || CanTrigger(perm) {
		t.Fatalf("404: perm %q err %v, want ErrNotCollaborator", perm, err)
	}
	for _, bad := range []string{"x/../../admin", "bot[bot]", "", "a b"} {
		if _, err := rd.CollaboratorPermission(context.Background(), bad); !errors.Is(err, ErrNotCollaborator) {
			t.Errorf("login %q: err %v", bad, err)
		}
	}
}

func TestPermissionSets(t *testing.T) {
	t.Parallel()
	sets := map[string]Permissions{
		"fixer": FixerPermissions(), "review read": ReviewReadPermissions(),
		"review write": ReviewWritePermissions(), "code scanning": CodeScanningPermissions(),
	}
	for name, p := range sets {
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if p["metadata"] != LevelRead {
			t.Errorf("%s: metadata %q", name, p["metadata"])
		}
	}
	if got := FixerPermissions().String(); got != "contents:write,metadata:read,pull_requests:write" {
		t.Errorf("fixer = %s", got)
	}
	for name, level := range ReviewReadPermissions() {
		if level != LevelRead {
			t.Errorf("review read set has %s:%s", name, level)
		}
	}
	if _, ok := ReviewWritePermissions()["contents"]; ok {
		t.Error("review write set can write contents (FX8)")
	}
	f := FixerPermissions()
	f["administration"] = "write"
	if _, ok := FixerPermissions()["administration"]; ok {
		t.Error("named set shared between callers")
	}
}
