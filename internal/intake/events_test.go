package intake

import (
	"slices"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/github"
)

// TestRoutedEventsAreSubscribed: every event intake routes for an app is
// in that app's webhook subscription (github.AppEvents, what `quavon
// github setup` registers and doctor checks), or GitHub would never send
// it; and every subscribed event is routed for the app (a subscription
// nothing handles only widens what the app hears).
func TestRoutedEventsAreSubscribed(t *testing.T) {
	routed := map[github.AppKind]map[string]bool{}
	for key, apps := range routes {
		event, _, _ := strings.Cut(key, ".")
		for kind := range apps {
			if !slices.Contains(github.AppEvents(kind), event) {
				t.Errorf("%s is routed for the %s app, which does not subscribe to %q", key, kind, event)
			}
			if routed[kind] == nil {
				routed[kind] = map[string]bool{}
			}
			routed[kind][event] = true
		}
	}
	for _, kind := range []github.AppKind{github.AppReview, github.AppFixer} {
		for _, event := range github.AppEvents(kind) {
			if event != "repository" && !routed[kind][event] {
				t.Errorf("the %s app subscribes to %q, which intake routes nowhere", kind, event)
			}
		}
	}
}
