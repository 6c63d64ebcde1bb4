// Package egress is the allowlisting CONNECT proxy that gives a sandbox
// job's setup step, and nothing else, access to package registries (spec §3
// "Egress", threat SB3).
//
// The runner stores a sandbox.EgressGrant for each job (valkeyq.EgressGrants) and
// gives the setup step HTTPS_PROXY=http://job:<token>@<proxy>:<port>; it
// deletes the grant when the setup step ends. The proxy allows exactly
// this, and refuses everything else at once with a one-line text body, so
// package managers fail fast instead of hanging:
//
//	method other than CONNECT (plain HTTP proxying too)          405
//	no Basic credentials for user "job", unknown token, expired  407
//	target not host:443, an IP literal, or a host not granted     403
//	every resolved address refused by Classify                    403
//	name does not resolve, or no allowed address answers          502
//	the grant store (Valkey) cannot be asked                      503
//
// The proxy resolves the name itself, checks every address with Classify
// and connects to an address it checked, never to the name, so DNS cannot
// answer differently the second time. An established tunnel is re-checked
// every second and closed when its grant is gone or changed, at the grant's
// NotAfter, and after a minute without traffic.
//
// Every decision is logged once (job id, host, allow or deny, reason);
// the token and the Proxy-Authorization header never are. The proxy needs
// only GET on quavon-sandbox:egress:*, the Valkey ACL user egress.
package egress
