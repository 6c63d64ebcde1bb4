// SPDX-License-Identifier: Apache-2.0

// Package rules holds Quavon's scanner configuration: the Quavon ast-grep
// rule pack, the gitleaks, bandit and ESLint configurations the scanners
// image copies to /opt/quavon/. It has no Go code; its tests check the rule
// pack's shape and run the rule tests with the ast-grep of the scanners
// image (see README.md).
package rules
