package config

import (
	"strings"
	"testing"
)

func TestMetricsListen(t *testing.T) {
	t.Parallel()
	load := map[string]func([]string) (string, error){
		"QUAVON_API_METRICS_LISTEN": func(e []string) (string, error) { c, err := LoadAPI(e); return c.MetricsListen, err },
		"QUAVON_WORKER_METRICS_LISTEN": func(e []string) (string, error) {
			c, err := LoadWorker(e)
			return c.MetricsListen, err
		},
		"QUAVON_PUBLISHER_METRICS_LISTEN": func(e []string) (string, error) {
			c, err := LoadPublisher(e)
			return c.MetricsListen, err
		},
		"QUAVON_SANDBOX_METRICS_LISTEN": func(e []string) (string, error) {
			c, err := LoadRunner(append(e, "QUAVON_SANDBOX_SIGNING_KEY_FILE=/run/secrets/k"))
			return c.MetricsListen, err
		},
	}
	defaults := map[string]string{"QUAVON_API_METRICS_LISTEN": ":9090", "QUAVON_WORKER_METRICS_LISTEN": ":9090",
		"QUAVON_PUBLISHER_METRICS_LISTEN": ":9090",
		"QUAVON_SANDBOX_METRICS_LISTEN":   ""} // the runner listens on no port unless told
	for name, f := range load {
		if got, err := f(nil); got != defaults[name] || (err != nil && strings.Contains(err.Error(), name)) {
			t.Errorf("%s default: %q %v", name, got, err)
		}
		if got, err := f([]string{name + "="}); got != "" || (err != nil && strings.Contains(err.Error(), name)) {
			t.Errorf("%s empty (off): %q %v", name, got, err)
		}
		if got, err := f([]string{name + "=10.0.0.5:9100"}); got != "10.0.0.5:9100" || (err != nil && strings.Contains(err.Error(), name)) {
			t.Errorf("%s set: %q %v", name, got, err)
		}
		for _, bad := range []string{"9090", ":65536", "host:x", ":09"} {
			if _, err := f([]string{name + "=" + bad}); err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("%s=%s accepted: %v", name, bad, err)
			}
		}
	}
}
