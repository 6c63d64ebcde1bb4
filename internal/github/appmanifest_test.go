package github

import (
	"slices"
	"testing"
)

// Every token set the broker mints for an app is within what the app is
// registered with (GitHub refuses more), and every event an app subscribes
// to is one ParseWebhook parses.
func TestAppManifestCoversTokenSets(t *testing.T) {
	for kind, sets := range map[AppKind][]Permissions{
		AppReview: {ReviewReadPermissions(), ReviewWritePermissions(), CodeScanningPermissions()},
		AppFixer:  {FixerPermissions()},
	} {
		app := AppPermissions(kind)
		if err := app.Validate(); err != nil {
			t.Fatal(err)
		}
		rank := map[string]int{LevelRead: 1, LevelWrite: 2, LevelAdmin: 3}
		for _, set := range sets {
			for name, level := range set {
				if rank[app[name]] < rank[level] {
					t.Errorf("%s app: %s=%s registered, a token set needs %s", kind, name, app[name], level)
				}
			}
		}
		for _, e := range AppEvents(kind) {
			if !slices.Contains(WebhookEvents(), e) {
				t.Errorf("%s app subscribes to %s, which quavon-api does not parse", kind, e)
			}
		}
	}
	if got := AppPermissions(AppFixer); got["contents"] != LevelWrite || got["issues"] != LevelRead || len(got) != 4 {
		t.Errorf("fixer app permissions %v", got)
	}
	if got := AppPermissions(AppReview); got["contents"] != LevelRead || got["pull_requests"] != LevelWrite || got["security_events"] != LevelWrite || len(got) != 6 {
		t.Errorf("review app permissions %v", got)
	}
}
