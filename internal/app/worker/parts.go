package worker

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/fix/fixjob"
	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/gitrepo"
	"github.com/quavon/quavon/internal/intake/handle"
	"github.com/quavon/quavon/internal/llm"
	"github.com/quavon/quavon/internal/llm/provider"
	"github.com/quavon/quavon/internal/postgres"
	reviewjob "github.com/quavon/quavon/internal/review/job"
	"github.com/quavon/quavon/internal/sandbox/valkeyq"
	"github.com/quavon/quavon/internal/secret/leaks"
	"github.com/quavon/quavon/internal/secretfile"
)

// providerModels gives each run the configured model of its feature inside
// a budget of its own and the tenant's daily ceiling.
type providerModels struct {
	review, fix, acceptance llm.Model
	cfg                     config.LLM
	db                      *postgres.DB
	log                     *slog.Logger
}

func (p *providerModels) ReviewModel(_ context.Context, tenant string) (llm.Model, *llm.Budget, error) {
	return p.model(p.review, llm.FeatureReview, tenant)
}

func (p *providerModels) FixModel(_ context.Context, tenant string) (llm.Model, *llm.Budget, error) {
	return p.model(p.fix, llm.FeatureFix, tenant)
}

// AcceptanceModel is the acceptance check's judge, with a budget of its
// own (feature acceptance: its own run and daily ceilings).
func (p *providerModels) AcceptanceModel(_ context.Context, tenant string) (llm.Model, *llm.Budget, error) {
	return p.model(p.acceptance, llm.FeatureAcceptance, tenant)
}

func (p *providerModels) model(m llm.Model, f llm.Feature, tenant string) (llm.Model, *llm.Budget, error) {
	if m == nil {
		return nil, nil, nil
	}
	b, err := provider.RunBudget(p.cfg, f, p.db, postgres.TenantID(tenant), p.log)
	if err != nil {
		return nil, nil, err
	}
	return b.Model(m), b, nil
}

// optionsFromConfig builds the parts review and fix runs share from the
// settings, once: the broker's client (read tokens only), one GitHub
// connection, the git cache and the sandbox client (when a signing key is
// configured); then the review runs' and fix runs' collaborators over
// them, with the models configured for each feature. Without a broker
// credential the worker reads nothing on GitHub and runs neither. close
// releases what it opened.
func optionsFromConfig(ctx context.Context, cfg config.WorkerConfig, db *postgres.DB, log *slog.Logger) (Options, func(), error) {
	none := func() {}
	if cfg.BrokerClient.Addr == "" {
		log.Warn("QUAVON_BROKER_CREDENTIAL_FILE is not set: no review or fix runs, and fix triggers fail (and are retried) until the worker can read GitHub")
		return Options{}, none, nil
	}
	cred, err := secretfile.Read("QUAVON_BROKER_CREDENTIAL_FILE", cfg.BrokerClient.CredentialFile, 32)
	if err != nil {
		return Options{}, none, err
	}
	broker, err := github.NewBrokerClient(cfg.BrokerClient.Addr, bytes.TrimSpace(cred))
	if err != nil {
		return Options{}, none, err
	}
	conn, err := github.NewConn(github.ConnConfig{APIURL: cfg.GitHub.APIURL, GraphQLURL: cfg.GitHub.GraphQLURL, Tokens: broker, Logger: log})
	if err != nil {
		return Options{}, none, err
	}
	rp := cfg.Runs
	cache, err := gitrepo.NewCache(gitrepo.CacheConfig{Dir: rp.GitCacheDir, MaxBytes: rp.GitCacheMaxBytes,
		AllowHTTP: cfg.Env != config.Production && strings.HasPrefix(rp.GitURL, "http://")})
	if err != nil {
		return Options{}, none, err
	}
	gh := &reviewjob.GitHub{Conn: conn, Tokens: broker, Cache: cache,
		GitURL: func(r reviewjob.Repo) string { return rp.GitURL + r.FullName() + ".git" }}
	deps := &reviewjob.Deps{Fetch: gh, PRs: gh, Issues: gh.Issues, BYOScanners: cfg.Worker.BYOScanners, Log: log}
	fixDeps := &fixjob.Deps{GitHub: &fixjob.GitHub{Conn: conn, Tokens: broker, Cache: cache,
		GitURL: func(r fixjob.Repo) string { return rp.GitURL + r.FullName() + ".git" }}, Log: log}
	closers := []func(){}
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	if rp.SandboxKeys.SigningKeyFile != "" {
		client, closeValkey, err := sandboxClient(ctx, rp)
		if err != nil {
			return Options{}, none, err
		}
		closers = append(closers, closeValkey)
		deps.Sandbox, fixDeps.Sandbox = client, client
	}
	if fixDeps.Scanner, err = leaks.NewScanner(); err != nil {
		closeAll()
		return Options{}, none, err
	}
	models := &providerModels{cfg: cfg.LLM, db: db, log: log}
	for _, f := range []struct {
		feature llm.Feature
		dst     *llm.Model
		without string
	}{
		{llm.FeatureReview, &models.review, "review runs without a model: the scanners only"},
		{llm.FeatureFix, &models.fix, "fix runs without a model: admitted fix runs fail with model_unavailable"},
		{llm.FeatureAcceptance, &models.acceptance, "acceptance checks without a model: criteria are listed unclear"},
	} {
		m, err := provider.FromConfig(cfg.LLM, f.feature, log)
		switch {
		case errors.Is(err, provider.ErrNotConfigured):
			log.Warn(f.without)
		case err != nil:
			closeAll()
			return Options{}, none, err
		default:
			*f.dst = m
		}
	}
	if models.review != nil {
		deps.Models = models
	}
	if models.acceptance != nil {
		deps.Acceptance = models
	}
	fixDeps.Models = models
	opt := Options{Review: deps, Fix: fixDeps, Live: handle.ReaderSource(conn)}
	if cfg.ReviewAppSlug != "" {
		opt.Commands, opt.ReviewAppSlug = gh, cfg.ReviewAppSlug
	}
	return opt, closeAll, nil
}

// sandboxClient is the worker's one client of the sandbox pool (Valkey).
func sandboxClient(ctx context.Context, rp config.RunParts) (*valkeyq.Client, func(), error) {
	return valkeyq.Dial(ctx, rp)
}
