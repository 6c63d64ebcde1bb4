package config

import (
	"strings"
	"testing"
	"time"
)

func TestPublisherSettings(t *testing.T) {
	t.Parallel()
	base := []string{"QUAVON_GITHUB_REVIEW_APP_SLUG=quavon-review", "QUAVON_BROKER_CREDENTIAL_FILE=/run/secrets/broker"}
	c, err := LoadPublisher(base)
	if err != nil {
		t.Fatal(err)
	}
	if c.Publisher != (Publisher{ReviewAppSlug: "quavon-review", Concurrency: 4, WriteSpacing: time.Second, ShutdownGrace: 30 * time.Second}) ||
		c.Broker != (BrokerClient{Addr: "unix:/run/quavon/broker.sock", CredentialFile: "/run/secrets/broker"}) || len(c.Warnings) != 0 {
		t.Fatalf("defaults %+v %+v %v", c.Publisher, c.Broker, c.Warnings)
	}
	c, err = LoadPublisher(append(base, "QUAVON_PUBLISHER_WRITE_SPACING=0s"))
	if err != nil || len(c.Warnings) != 1 {
		t.Fatalf("no spacing is a loosening: %v %v", c.Warnings, err)
	}
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"QUAVON_BROKER_CREDENTIAL_FILE=/x"}, "QUAVON_GITHUB_REVIEW_APP_SLUG"},
		{[]string{"QUAVON_GITHUB_REVIEW_APP_SLUG=Quavon Review", "QUAVON_BROKER_CREDENTIAL_FILE=/x"}, "QUAVON_GITHUB_REVIEW_APP_SLUG"},
		{[]string{"QUAVON_GITHUB_REVIEW_APP_SLUG=quavon"}, "QUAVON_BROKER_CREDENTIAL_FILE"},
		{append(base, "QUAVON_PUBLISHER_CONCURRENCY=0"), "QUAVON_PUBLISHER_CONCURRENCY"},
		{append(base, "QUAVON_PUBLISHER_WRITE_SPACING=2m"), "QUAVON_PUBLISHER_WRITE_SPACING"},
		{append(base, "QUAVON_BROKER_CREDENTIAL=abc"), "secrets are read only from files"},
		// What the publisher must never hold: model keys, the sandbox key, Valkey, app keys.
		{append(base, "QUAVON_LLM_API_KEY_FILE=/k"), "not of quavon-publisher"},
		{append(base, "QUAVON_SANDBOX_SIGNING_KEY_FILE=/k"), "not of quavon-publisher"},
		{append(base, "QUAVON_VALKEY_ADDR=127.0.0.1:6379"), "not of quavon-publisher"},
		{append(base, "QUAVON_GITHUB_REVIEW_PRIVATE_KEY_FILE=/k"), "not of quavon-publisher"},
	} {
		if _, err := LoadPublisher(tc.env); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.env, err, tc.want)
		}
	}
}
