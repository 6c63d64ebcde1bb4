package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/gitrepo"
	"github.com/quavon/quavon/internal/llm"
	"github.com/quavon/quavon/internal/llm/provider"
	"github.com/quavon/quavon/internal/postgres"
	reviewjob "github.com/quavon/quavon/internal/review/job"
	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/sandbox/valkeyq"
	"github.com/quavon/quavon/internal/snapshot"
	qvalkey "github.com/quavon/quavon/internal/valkey"
)

// providerModels gives each review run the configured review model inside
// a budget of its own and the tenant's daily ceiling.
type providerModels struct {
	model llm.Model
	cfg   config.LLM
	db    *postgres.DB
	log   *slog.Logger
}

func (p *providerModels) ReviewModel(_ context.Context, tenant string) (llm.Model, *llm.Budget, error) {
	b, err := provider.RunBudget(p.cfg, llm.FeatureReview, p.db, postgres.TenantID(tenant), p.log)
	if err != nil {
		return nil, nil, err
	}
	return b.Model(p.model), b, nil
}

// acceptanceModels gives each acceptance check the configured acceptance
// model inside a budget of its own (feature acceptance: its own run and
// daily ceilings).
type acceptanceModels struct {
	model llm.Model
	cfg   config.LLM
	db    *postgres.DB
	log   *slog.Logger
}

func (p *acceptanceModels) AcceptanceModel(_ context.Context, tenant string) (llm.Model, *llm.Budget, error) {
	b, err := provider.RunBudget(p.cfg, llm.FeatureAcceptance, p.db, postgres.TenantID(tenant), p.log)
	if err != nil {
		return nil, nil, err
	}
	return b.Model(p.model), b, nil
}

// reviewOptions builds the review runs' collaborators from the settings:
// the broker's client (read tokens only), the git cache, the sandbox
// client (when a pool key is configured) and the review model (when one
// is configured). close releases what it opened.
func reviewOptions(ctx context.Context, cfg config.WorkerConfig, db *postgres.DB, log *slog.Logger) (Options, func(), error) {
	rc := cfg.Reviews
	none := func() {}
	if !rc.Enabled {
		return Options{}, none, nil
	}
	cred, err := os.ReadFile(rc.BrokerCredentialFile)
	if err != nil {
		return Options{}, none, fmt.Errorf("QUAVON_BROKER_CREDENTIAL_FILE: %w", err)
	}
	broker, err := github.NewBrokerClient(rc.BrokerAddr, []byte(strings.TrimSpace(string(cred))))
	if err != nil {
		return Options{}, none, err
	}
	conn, err := github.NewConn(github.ConnConfig{APIURL: rc.GitHub.APIURL, GraphQLURL: rc.GitHub.GraphQLURL, Tokens: broker, Logger: log})
	if err != nil {
		return Options{}, none, err
	}
	cache, err := gitrepo.NewCache(gitrepo.CacheConfig{Dir: rc.GitCacheDir, MaxBytes: rc.GitCacheMaxBytes,
		AllowHTTP: cfg.Env != config.Production && strings.HasPrefix(rc.GitURL, "http://")})
	if err != nil {
		return Options{}, none, err
	}
	gh := &reviewjob.GitHub{Conn: conn, Tokens: broker, Cache: cache,
		GitURL: func(r reviewjob.Repo) string { return rc.GitURL + r.FullName() + ".git" }}
	deps := &reviewjob.Deps{Fetch: gh, PRs: gh, Issues: gh.Issues, Log: log}
	closers := []func(){}
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	if rc.SandboxKeys.SigningKeyFile != "" {
		keys, err := sandbox.LoadKeyRing(rc.SandboxKeys.SigningKeyFile, rc.SandboxKeys.PreviousKeysFile)
		if err != nil {
			return Options{}, none, err
		}
		vk, err := qvalkey.Open(ctx, qvalkey.Config{Addr: rc.Valkey.Addr, Username: rc.Valkey.User, PasswordFile: rc.Valkey.PasswordFile})
		if err != nil {
			return Options{}, none, err
		}
		closers = append(closers, vk.Close)
		names, err := valkeyq.NamesFor(rc.Pool)
		if err != nil {
			closeAll()
			return Options{}, none, err
		}
		blobs, err := valkeyq.NewBlobStore(vk, valkeyq.BlobConfig{Names: names, Keys: keys, MaxBytes: rc.Snapshots.MaxBytes})
		if err != nil {
			closeAll()
			return Options{}, none, err
		}
		if deps.Sandbox, err = valkeyq.NewClient(rc.Pool, valkeyq.NewQueue(vk, names, keys), blobs,
			snapshot.Limits{MaxBytes: rc.Snapshots.MaxBytes, MaxEntries: rc.Snapshots.MaxEntries}); err != nil {
			closeAll()
			return Options{}, none, err
		}
	}
	m, err := provider.FromConfig(cfg.LLM, llm.FeatureReview, log)
	switch {
	case errors.Is(err, provider.ErrNotConfigured):
		log.Warn("review runs without a model: the scanners only")
	case err != nil:
		closeAll()
		return Options{}, none, err
	default:
		deps.Models = &providerModels{model: m, cfg: cfg.LLM, db: db, log: log}
	}
	am, err := provider.FromConfig(cfg.LLM, llm.FeatureAcceptance, log)
	switch {
	case errors.Is(err, provider.ErrNotConfigured):
		log.Warn("acceptance checks without a model: criteria are listed unclear")
	case err != nil:
		closeAll()
		return Options{}, none, err
	default:
		deps.Acceptance = &acceptanceModels{model: am, cfg: cfg.LLM, db: db, log: log}
	}
	opt := Options{Review: deps}
	if rc.ReviewAppSlug != "" {
		opt.Commands, opt.ReviewAppSlug = gh, rc.ReviewAppSlug
	}
	return opt, closeAll, nil
}
