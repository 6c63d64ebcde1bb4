package github

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Permissions is a GitHub App permission set: permission name (for example
// "contents") to access level ("read", "write" or "admin"). It is the exact
// shape of the "permissions" object GitHub accepts when minting an
// installation token and returns in the response.
type Permissions map[string]string

// Permission levels GitHub uses for App permissions.
const (
	LevelRead  = "read"
	LevelWrite = "write"
	LevelAdmin = "admin"
)

// The named sets are functions, not package variables, so that no caller can
// widen a shared set by mutating a map.

// FixerPermissions is the Fixer app's set (spec FX8, §7.3): contents and pull
// requests write, metadata read, nothing else.
func FixerPermissions() Permissions {
	return Permissions{"contents": LevelWrite, "pull_requests": LevelWrite, "metadata": LevelRead}
}

// ReviewReadPermissions is the review app's read set used by the worker and
// by the API's permission checks: code, pull requests and issues readable,
// nothing writable.
func ReviewReadPermissions() Permissions {
	return Permissions{"contents": LevelRead, "pull_requests": LevelRead, "issues": LevelRead, "metadata": LevelRead}
}

// ReviewWritePermissions is the review app's publishing set: pull request
// reviews and review comments (pull_requests), check runs (checks) and issue
// or pull request conversation comments (issues). It has no contents
// permission: the review app never writes code (FX8).
func ReviewWritePermissions() Permissions {
	return Permissions{"pull_requests": LevelWrite, "checks": LevelWrite, "issues": LevelWrite, "metadata": LevelRead}
}

// CodeScanningPermissions is the review app's set for SARIF uploads only.
func CodeScanningPermissions() Permissions {
	return Permissions{"security_events": LevelWrite, "metadata": LevelRead}
}

var permissionName = regexp.MustCompile(`^[a-z][a-z_]{0,63}$`)

// Validate refuses empty sets, malformed names and unknown levels.
func (p Permissions) Validate() error {
	if len(p) == 0 {
		return fmt.Errorf("permissions: empty set (GitHub would grant everything the installation has)")
	}
	for name, level := range p {
		if !permissionName.MatchString(name) {
			return fmt.Errorf("permissions: invalid name %q", name)
		}
		switch level {
		case LevelRead, LevelWrite, LevelAdmin:
		default:
			return fmt.Errorf("permissions: %s: invalid level %q", name, level)
		}
	}
	return nil
}

// Equal reports whether p and q grant exactly the same permissions.
func (p Permissions) Equal(q Permissions) bool { return maps.Equal(p, q) }

// Clone returns a copy that shares nothing with p.
func (p Permissions) Clone() Permissions { return maps.Clone(p) }

// String is the canonical form "name:level,..." sorted by name; it is also
// the token cache key component.
func (p Permissions) String() string {
	names := slices.Sorted(maps.Keys(p))
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(n)
		b.WriteByte(':')
		b.WriteString(p[n])
	}
	return b.String()
}

// Repository permission values returned in the "permission" field of
// GET /repos/{owner}/{repo}/collaborators/{username}/permission. GitHub maps
// custom and intermediate roles onto these: maintain is reported as "write"
// and triage as "read" (the role itself is only in "role_name").
const (
	PermissionAdmin = "admin"
	PermissionWrite = "write"
	PermissionRead  = "read"
	PermissionNone  = "none"
)

// CanTrigger is the CH5 decision: a user may trigger a fix or request one
// only when the collaborator permission field is exactly "admin" or "write".
// It is decided on the "permission" field alone, never on "role_name";
// every other value, including the empty string, is refused.
func CanTrigger(permission string) bool {
	return permission == PermissionAdmin || permission == PermissionWrite
}
