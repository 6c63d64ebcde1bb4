package doctor_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/doctor"
	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/githubfake"
	"github.com/quavon/quavon/internal/llm"
	"github.com/quavon/quavon/internal/llm/llmfake"
	"github.com/quavon/quavon/internal/testenv/testbroker"
	"github.com/quavon/quavon/internal/tokenbroker"
)

func TestWebhookSecrets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := file("good", "0123456789abcdef0123\n", 0o600)
	good2 := file("good2", "fedcba9876543210fedc\n", 0o400)
	for _, tc := range []struct {
		name          string
		review, fixer string
		want          [2]doctor.Status
		detail        string
	}{
		{"both set", good, good2, [2]doctor.Status{doctor.Pass, doctor.Pass}, "is set"},
		{"review unset", "", good2, [2]doctor.Status{doctor.Fail, doctor.Pass}, "is not set"},
		{"fixer unset", good, "", [2]doctor.Status{doctor.Pass, doctor.Warn}, "fix triggers"},
		{"missing file", filepath.Join(dir, "nope"), good2, [2]doctor.Status{doctor.Fail, doctor.Pass}, "no such file"},
		{"empty", file("empty", "\n", 0o600), good2, [2]doctor.Status{doctor.Fail, doctor.Pass}, "want at least 16"},
		{"short", file("short", "0123456789", 0o600), good2, [2]doctor.Status{doctor.Fail, doctor.Pass}, "want at least 16"},
		{"group-writable", good, file("gw", "0123456789abcdef0123", 0o620), [2]doctor.Status{doctor.Pass, doctor.Fail}, "writable by group"},
		{"world-readable", file("wr", "0123456789abcdef0123", 0o644), good2, [2]doctor.Status{doctor.Warn, doctor.Pass}, "readable by group or others"},
		{"a directory", dir, good2, [2]doctor.Status{doctor.Fail, doctor.Pass}, "not a regular file"},
	} {
		rs := doctor.WebhookSecrets(config.API{ReviewWebhookSecretFile: tc.review, FixerWebhookSecretFile: tc.fixer})
		if len(rs) != 2 || rs[0].Status != tc.want[0] || rs[1].Status != tc.want[1] {
			t.Errorf("%s: %+v, want %v", tc.name, rs, tc.want)
			continue
		}
		if !strings.Contains(rs[0].Detail+rs[1].Detail, tc.detail) {
			t.Errorf("%s: %+v, want %q", tc.name, rs, tc.detail)
		}
		for _, r := range rs {
			if r.Status != doctor.Pass && r.Hint == "" && r.Status != doctor.Fail {
				t.Errorf("%s: %+v without a hint", tc.name, r)
			}
			if strings.Contains(r.Detail, "0123456789") {
				t.Errorf("%s: a secret in the detail: %s", tc.name, r.Detail)
			}
		}
	}
}

func TestClockSkew(t *testing.T) {
	t.Parallel()
	srv := func(offset time.Duration, date string) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			d := date
			if d == "" {
				d = time.Now().Add(offset).UTC().Format(http.TimeFormat)
			}
			w.Header().Set("Date", d)
			w.WriteHeader(http.StatusUnauthorized) // no token: any answer has a Date
		}))
		t.Cleanup(s.Close)
		return s.URL + "/"
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for _, tc := range []struct {
		name   string
		url    string
		want   doctor.Status
		detail string
	}{
		{"in step", srv(0, ""), doctor.Pass, "within"},
		{"GitHub 10 s ahead", srv(10*time.Second, ""), doctor.Warn, "behind GitHub's"},
		{"GitHub 45 s behind", srv(-45*time.Second, ""), doctor.Fail, "ahead of GitHub's"},
		{"GitHub an hour ahead", srv(time.Hour, ""), doctor.Fail, "1h0m0s behind"},
		{"no date", srv(0, "yesterday"), doctor.Warn, "without a usable Date"},
		{"unreachable", closed.URL + "/", doctor.Fail, "did not answer"},
	} {
		r := doctor.ClockSkew(context.Background(), tc.url, 5*time.Second)
		if r.Status != tc.want || !strings.Contains(r.Detail, tc.detail) || r.Check != "clock-skew" {
			t.Errorf("%s: %+v, want %s with %q", tc.name, r, tc.want, tc.detail)
		}
	}
}

// The model check probes each feature's model through the real SDKs
// against llmfake, on both API shapes.
func TestModel(t *testing.T) {
	t.Parallel()
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("sk-test-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := llm.Steps(llm.Call("quavon_probe", map[string]string{"word": "ready"}))
	prose := llm.Steps(llm.Answer(`I would call quavon_probe with {"word": "ready"}`))
	load := func(t *testing.T, env ...string) config.LLM {
		t.Helper()
		c, err := config.LoadLLM(append([]string{"QUAVON_ENV=development"}, env...))
		if err != nil {
			t.Fatal(err)
		}
		return c.LLM
	}
	for _, tc := range []struct {
		name, provider, model string
		url                   func(*llmfake.Server) string
	}{
		{"anthropic", "anthropic", "claude-sonnet-5-5", (*llmfake.Server).AnthropicURL},
		{"openai", "openai", "gpt-5", (*llmfake.Server).OpenAIURL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range []struct {
				script llm.Script
				want   doctor.Status
				detail string
			}{
				{good, doctor.Pass, "called the probe tool"},
				{prose, doctor.Fail, "instead of calling the tool"},
			} {
				s := llmfake.New(llmfake.Options{APIKey: "sk-test-0123456789abcdef", Script: c.script, Models: []string{tc.model}})
				defer s.Close()
				cfg := load(t, "QUAVON_LLM_PROVIDER="+tc.provider, "QUAVON_LLM_MODEL="+tc.model, "QUAVON_LLM_BASE_URL="+tc.url(s),
					"QUAVON_LLM_API_KEY_FILE="+keyFile)
				rs := doctor.Model(context.Background(), cfg, 10*time.Second)
				if len(rs) != 3 {
					t.Fatalf("%d results, want one per feature: %+v", len(rs), rs)
				}
				for _, r := range rs {
					if r.Status != c.want || !strings.Contains(r.Detail, c.detail) {
						t.Errorf("%+v, want %s with %q", r, c.want, c.detail)
					}
				}
				if s.Calls() != 1 {
					t.Errorf("%d probes for one model shared by three features", s.Calls())
				}
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		t.Parallel()
		closed := httptest.NewServer(http.NotFoundHandler())
		closed.Close()
		cfg := load(t, "QUAVON_LLM_PROVIDER=openai", "QUAVON_LLM_MODEL=gpt-5", "QUAVON_LLM_BASE_URL="+closed.URL+"/v1/",
			"QUAVON_LLM_API_KEY_FILE="+keyFile, "QUAVON_LLM_MAX_RETRIES=0")
		if rs := doctor.Model(context.Background(), cfg, 5*time.Second); rs[0].Status != doctor.Fail {
			t.Errorf("%+v", rs)
		}
	})
	t.Run("none", func(t *testing.T) {
		t.Parallel()
		rs := doctor.Model(context.Background(), load(t), time.Second)
		if len(rs) != 1 || rs[0].Status != doctor.Warn || !strings.Contains(rs[0].Detail, "no model configured") {
			t.Errorf("%+v", rs)
		}
	})
}

// The apps check reads each installation through the real broker from the
// emulator (GET /app/installations with each app's JWT) and compares it
// with the registered permissions and events.
func TestApps(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		setup  func(s *githubfake.Server, review, fixer *githubfake.App) map[github.AppKind]*githubfake.App
		want   [2]doctor.Status
		detail string
	}{
		{"as registered", func(s *githubfake.Server, review, fixer *githubfake.App) map[github.AppKind]*githubfake.App {
			install(s, review, "acme", github.AppPermissions(github.AppReview), github.AppEvents(github.AppReview))
			install(s, fixer, "acme", github.AppPermissions(github.AppFixer), github.AppEvents(github.AppFixer))
			return map[github.AppKind]*githubfake.App{github.AppReview: review, github.AppFixer: fixer}
		}, [2]doctor.Status{doctor.Pass, doctor.Pass}, "exactly"},
		{"fixer without contents write", func(s *githubfake.Server, review, fixer *githubfake.App) map[github.AppKind]*githubfake.App {
			install(s, review, "acme", github.AppPermissions(github.AppReview), github.AppEvents(github.AppReview))
			p := github.AppPermissions(github.AppFixer)
			p["contents"] = "read"
			install(s, fixer, "acme", p, github.AppEvents(github.AppFixer))
			return map[github.AppKind]*githubfake.App{github.AppReview: review, github.AppFixer: fixer}
		}, [2]doctor.Status{doctor.Pass, doctor.Fail}, "lacks contents: write (has read)"},
		{"review without checks", func(s *githubfake.Server, review, fixer *githubfake.App) map[github.AppKind]*githubfake.App {
			p := github.AppPermissions(github.AppReview)
			delete(p, "checks")
			install(s, review, "acme", p, github.AppEvents(github.AppReview))
			return map[github.AppKind]*githubfake.App{github.AppReview: review}
		}, [2]doctor.Status{doctor.Fail, doctor.Warn}, "lacks checks: write (has none)"},
		{"review not subscribed to pull_request", func(s *githubfake.Server, review, fixer *githubfake.App) map[github.AppKind]*githubfake.App {
			install(s, review, "acme", github.AppPermissions(github.AppReview), []string{"issue_comment", "repository"})
			return map[github.AppKind]*githubfake.App{github.AppReview: review}
		}, [2]doctor.Status{doctor.Fail, doctor.Warn}, "not subscribed to pull_request"},
		{"review with administration", func(s *githubfake.Server, review, fixer *githubfake.App) map[github.AppKind]*githubfake.App {
			p := github.AppPermissions(github.AppReview)
			p["administration"] = "write"
			install(s, review, "acme", p, github.AppEvents(github.AppReview))
			return map[github.AppKind]*githubfake.App{github.AppReview: review}
		}, [2]doctor.Status{doctor.Warn, doctor.Warn}, "more than Quavon needs: administration: write"},
		{"review installed nowhere", func(s *githubfake.Server, review, fixer *githubfake.App) map[github.AppKind]*githubfake.App {
			return map[github.AppKind]*githubfake.App{github.AppReview: review}
		}, [2]doctor.Status{doctor.Warn, doctor.Warn}, "not installed anywhere"},
		{"no review app key", func(s *githubfake.Server, review, fixer *githubfake.App) map[github.AppKind]*githubfake.App {
			install(s, fixer, "acme", github.AppPermissions(github.AppFixer), github.AppEvents(github.AppFixer))
			return map[github.AppKind]*githubfake.App{github.AppFixer: fixer}
		}, [2]doctor.Status{doctor.Fail, doctor.Pass}, "no key of the review app"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := githubfake.New(t)
			s.AddRepo("acme", "app", githubfake.RepoOptions{Private: true, Files: map[string]string{"a": "a\n"}})
			review, fixer := s.RegisterApp("quavon-review"), s.RegisterApp("quavon-fixer")
			b := testbroker.Start(t, s, tc.setup(s, review, fixer), testbroker.Options{})
			cred := filepath.Join(t.TempDir(), "cred")
			if err := os.WriteFile(cred, []byte(b.Credential(tokenbroker.RoleAPI)), 0o600); err != nil {
				t.Fatal(err)
			}
			rs := doctor.Apps(context.Background(), config.BrokerClient{Addr: b.Addr, CredentialFile: cred}, 30*time.Second)
			if len(rs) != 2 || rs[0].Status != tc.want[0] || rs[1].Status != tc.want[1] || !strings.Contains(rs[0].Detail+rs[1].Detail, tc.detail) {
				t.Fatalf("%+v, want %v with %q", rs, tc.want, tc.detail)
			}
		})
	}
	t.Run("unknown credential", func(t *testing.T) {
		t.Parallel()
		s := githubfake.New(t)
		b := testbroker.Start(t, s, map[github.AppKind]*githubfake.App{github.AppReview: s.RegisterApp("quavon-review")}, testbroker.Options{})
		cred := filepath.Join(t.TempDir(), "cred")
		os.WriteFile(cred, []byte("qvb_not-a-credential-the-broker-knows-0000000000"), 0o600)
		rs := doctor.Apps(context.Background(), config.BrokerClient{Addr: b.Addr, CredentialFile: cred}, 30*time.Second)
		if len(rs) != 1 || rs[0].Status != doctor.Fail || !strings.Contains(rs[0].Detail, "unknown credential") {
			t.Fatalf("%+v", rs)
		}
	})
}

func install(s *githubfake.Server, app *githubfake.App, account string, perms github.Permissions, events []string) {
	in := s.Install(app, account, perms, account+"/app")
	s.SetEvents(in, events)
}
