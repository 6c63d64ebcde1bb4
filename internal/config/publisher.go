package config

import (
	"regexp"
	"time"
)

// Publisher is how quavon-publisher runs.
type Publisher struct {
	// ReviewAppSlug is the review app's slug: its bot is "<slug>[bot]".
	ReviewAppSlug string
	// FixerAppSlug is the Fixer app's slug; empty: fix outputs are not
	// published (they wait).
	FixerAppSlug string
	// Concurrency is the publish jobs run at once.
	Concurrency int
	// WriteSpacing is the minimum interval between writes of one
	// installation.
	WriteSpacing  time.Duration
	ShutdownGrace time.Duration
}

// BrokerClient is how a service reaches the token broker.
type BrokerClient struct {
	// Addr is unix:/path or host:port.
	Addr           string
	CredentialFile string
}

// PublisherConfig is quavon-publisher's view.
type PublisherConfig struct {
	Core
	DB        Database
	GitHub    GitHub
	Broker    BrokerClient
	Publisher Publisher
	// MetricsListen is where /metrics is served; empty: off.
	MetricsListen string
}

var slugRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,33}$`)

// LoadPublisher reads quavon-publisher's settings.
func LoadPublisher(environ []string) (PublisherConfig, error) {
	r, err := newReader(ServicePublisher, environ)
	if err != nil {
		return PublisherConfig{}, err
	}
	c := PublisherConfig{Core: r.core(), DB: r.database(), GitHub: r.github(), Broker: r.brokerClient(), Publisher: r.publisher(),
		MetricsListen: r.optionalListen("QUAVON_PUBLISHER_METRICS_LISTEN")}
	c.Warnings = r.warnings
	return c, r.err()
}

func (r *reader) brokerClient() BrokerClient {
	b := BrokerClient{Addr: r.vals["QUAVON_BROKER_ADDR"], CredentialFile: r.vals["QUAVON_BROKER_CREDENTIAL_FILE"]}
	if b.CredentialFile == "" {
		r.fail("QUAVON_BROKER_CREDENTIAL_FILE is not set: the broker grants nothing without a credential")
	}
	if b.Addr == "" {
		r.fail("QUAVON_BROKER_ADDR is empty")
	}
	return b
}

func (r *reader) publisher() Publisher {
	p := Publisher{ReviewAppSlug: r.vals["QUAVON_GITHUB_REVIEW_APP_SLUG"], Concurrency: r.intRange("QUAVON_PUBLISHER_CONCURRENCY", 1, 256)}
	if !slugRE.MatchString(p.ReviewAppSlug) {
		r.fail("QUAVON_GITHUB_REVIEW_APP_SLUG %q: want the review app's slug (lowercase letters, digits, '-')", p.ReviewAppSlug)
	}
	p.FixerAppSlug = r.vals["QUAVON_GITHUB_FIXER_APP_SLUG"]
	if p.FixerAppSlug != "" && !slugRE.MatchString(p.FixerAppSlug) {
		r.fail("QUAVON_GITHUB_FIXER_APP_SLUG %q: want the Fixer app's slug (lowercase letters, digits, '-')", p.FixerAppSlug)
	}
	p.WriteSpacing = parseDuration(r.vals, "QUAVON_PUBLISHER_WRITE_SPACING", 0, time.Minute, &r.errs)
	p.ShutdownGrace = parseDuration(r.vals, "QUAVON_PUBLISHER_SHUTDOWN_GRACE", 0, 10*time.Minute, &r.errs)
	if p.WriteSpacing < time.Second {
		r.warn("QUAVON_PUBLISHER_WRITE_SPACING=%s: below GitHub's one second between content-creating requests", p.WriteSpacing)
	}
	return p
}
