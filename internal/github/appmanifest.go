package github

// AppPermissions is what each GitHub App is registered with (its manifest's
// default_permissions, `quavon github setup`): the union of the token sets
// the broker mints for it, plus what its webhook events need (the Fixer app
// hears issues and issue comments, so it reads issues; no token set of it
// carries that permission).
func AppPermissions(kind AppKind) Permissions {
	switch kind {
	case AppReview:
		p := Permissions{}
		for _, set := range []Permissions{ReviewReadPermissions(), ReviewWritePermissions(), CodeScanningPermissions()} {
			for name, level := range set {
				if level == LevelWrite || p[name] == "" {
					p[name] = level
				}
			}
		}
		return p
	case AppFixer:
		p := FixerPermissions()
		p["issues"] = LevelRead
		return p
	}
	return nil
}

// AppEvents is each app's webhook subscription (default_events): the events
// quavon-api routes to it (internal/intake). installation and
// installation_repositories reach every app without a subscription.
func AppEvents(kind AppKind) []string {
	switch kind {
	case AppReview:
		// issues: the acceptance check keeps its issues table in step
		// from the review app's issues events too (intake routes them).
		return []string{"pull_request", "issue_comment", "issues", "repository"}
	case AppFixer:
		return []string{"issues", "issue_comment", "repository"}
	}
	return nil
}
