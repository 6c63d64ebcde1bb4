// Package devstack runs the whole of Quavon on one machine for `quavon
// dev`: the services of internal/devenv (a throwaway PostgreSQL cluster,
// Valkey with the ACL users, Docker with runsc), the GitHub emulator as a
// process of its own (quavon-dev-github over internal/githubfake, with a
// seeded organisation, both apps installed and a demo repository), and
// every Quavon service as a separate process with its own credentials:
//
//	quavon-token-broker    the apps' keys (from the emulator's state dir)
//	quavon-api             database role of its own, broker credential (api)
//	quavon-worker          database role of its own, broker credential (worker)
//	quavon-publisher       database role of its own, broker credential (publisher)
//	quavon-sandbox-runner  Valkey user sandbox, the pool key, docker-runsc
//	quavon-sandbox-egress  Valkey user egress
//
// Each process gets only its own settings (no inherited environment but
// PATH), its secrets as 0600 files under the work directory, and a log
// file; Stop signals them in reverse start order (SIGTERM, then SIGKILL
// after a grace) and stops the services.
//
// Process states: starting → ready (its readiness check passed) →
// stopping → exited; an unexpected exit of any process ends the stack
// (Wait returns which one and the tail of its log).
package devstack
