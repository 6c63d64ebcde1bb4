package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/quavon/quavon/internal/sandbox"
)

// GrantStore puts and revokes per-job proxy credentials where the egress
// proxy looks them up (valkeyq.EgressGrants in production).
type GrantStore interface {
	Put(ctx context.Context, token string, grant sandbox.EgressGrant) error
	Revoke(ctx context.Context, token string) error
}

// egressPass is one job's setup-step egress: the credential in Valkey and
// the container's place on the egress network. revoke ends both.
type egressPass struct {
	jobID   string
	token   string
	env     []string
	grants  GrantStore
	backend Backend
	log     *slog.Logger

	mu      sync.Mutex
	revoked bool
}

// revoke deletes the credential and cuts the container off the network.
// It is safe to call more than once; it retries until it has succeeded.
func (p *egressPass) revoke(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.revoked {
		return nil
	}
	if err := p.grants.Revoke(ctx, p.token); err != nil {
		return fmt.Errorf("revoking the egress credential: %w", err)
	}
	// The credential is gone, so the proxy refuses the run step whatever
	// happens next; cutting the network as well leaves it nothing to try.
	if err := p.backend.Isolate(ctx, p.jobID); err != nil {
		p.log.Warn("sandbox container not cut off the egress network", slog.String("job_id", p.jobID), slog.String("error", err.Error()))
	}
	p.revoked = true
	p.log.Info("sandbox egress revoked", slog.String("job_id", p.jobID))
	return nil
}

// openEgress issues the setup step's egress for job, or says why not. The
// hosts are the job's registries that the instance allowlist also names.
func (e *Executor) openEgress(ctx context.Context, job *sandbox.SandboxJob, limits sandbox.Limits) (*egressPass, string) {
	if e.egress == nil {
		return nil, "egress registries is not enabled on this runner (QUAVON_SANDBOX_REGISTRIES)"
	}
	var hosts []string
	for _, h := range job.Egress.Hosts {
		if slices.Contains(e.egress.Registries, h) {
			hosts = append(hosts, h)
		}
	}
	if len(hosts) == 0 {
		return nil, "none of the job's registries is on this instance's allowlist"
	}
	if err := e.backend.CheckEgress(ctx, e.egress.Network, e.egress.Proxy, e.egress.HostProxy); err != nil {
		e.log.Error("sandbox egress misconfigured", slog.String("job_id", job.ID), slog.String("error", err.Error()))
		return nil, "the egress network is misconfigured: jobs with egress registries are refused"
	}
	var b [32]byte
	rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	grant := sandbox.EgressGrant{JobID: job.ID, Hosts: hosts,
		NotAfter: time.Now().UTC().Add(time.Duration(limits.SetupSeconds)*time.Second + setupGrace).Truncate(time.Second)}
	if err := e.egress.Grants.Put(ctx, token, grant); err != nil {
		e.log.Error("sandbox egress credential not stored", slog.String("job_id", job.ID), slog.String("error", err.Error()))
		return nil, "the egress credential could not be issued"
	}
	url := "http://job:" + token + "@" + e.egress.Proxy.String()
	env := []string{"HTTPS_PROXY=" + url, "https_proxy=" + url, "HTTP_PROXY=" + url, "http_proxy=" + url,
		"npm_config_https_proxy=" + url, "npm_config_proxy=" + url, "NO_PROXY=", "no_proxy="}
	e.log.Info("sandbox egress granted", slog.String("job_id", job.ID), slog.Any("hosts", hosts))
	return &egressPass{jobID: job.ID, token: token, env: env, grants: e.egress.Grants, backend: e.backend, log: e.log}, ""
}
