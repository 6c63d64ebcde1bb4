package leaks

import (
	"encoding/base64"
	"github.com/quavon/quavon/internal/secret"
	"strings"
	"sync"
	"testing"

	"github.com/quavon/quavon/internal/testenv"
)

// randKey is testenv.RandomString(alnum) shaped so gitleaks' generic rule must flag
// it: with a digit (letters-only values are allowlisted) and without any of
// its stopwords (a random 32-character string holds one of its ~1,500
// common words about 1.5% of the time). Either would make tests flaky.
func randKey(t testing.TB, s *Scanner, n int) string {
	t.Helper()
	var stop []string
	for _, a := range s.all.Config.Allowlists {
		stop = append(stop, a.StopWords...)
	}
	for _, r := range s.all.Config.Rules {
		for _, a := range r.Allowlists {
			stop = append(stop, a.StopWords...)
		}
	}
	if len(stop) == 0 {
		t.Fatal("gitleaks config has no stopwords: the test's premise changed")
	}
	for range 1000 {
		k := testenv.RandomString(t, alnum, n)
		low := strings.ToLower(k)
		ok := strings.ContainsAny(k, "0123456789")
		for _, w := range stop {
			if strings.Contains(low, w) {
				ok = false
				break
			}
		}
		if ok {
			return k
		}
	}
	t.Fatal("no stopword-free key in 1000 tries")
	return ""
}

const (
	alnum   = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	lowerHx = "0123456789abcdef"
)

func newTestScanner(t testing.TB) *Scanner {
	t.Helper()
	s, err := NewScanner()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func hasRule(ms []secret.Match, rule string) bool {
	for _, m := range ms {
		if m.Rule == rule {
			return true
		}
	}
	return false
}

func hasGitleaks(ms []secret.Match) bool {
	for _, m := range ms {
		if strings.HasPrefix(m.Rule, GitleaksRulePrefix) {
			return true
		}
	}
	return false
}

// TestScannerGitleaksRules checks secrets that only gitleaks' rules know (no
// Quavon pattern covers them), so a scanner that silently lost gitleaks
// would fail here.
func TestScannerGitleaksRules(t *testing.T) {
	t.Parallel()
	s := newTestScanner(t)
	cases := []struct {
		name, text, rule string
	}{
		{"generic api key", `const apiKey = "` + randKey(t, s, 32) + `"`, "gitleaks:generic-api-key"},
		{"generic secret in yaml", "client_secret: " + randKey(t, s, 40), "gitleaks:generic-api-key"},
		{"sendgrid", `SENDGRID = "SG.` + testenv.RandomString(t, alnum, 22) + "." + testenv.RandomString(t, alnum, 43) + `"`, "gitleaks:sendgrid-api-token"},
		{"heroku", `heroku_api_key = "` + testenv.RandomString(t, lowerHx, 8) + "-" + testenv.RandomString(t, lowerHx, 4) + "-" + testenv.RandomString(t, lowerHx, 4) + "-" + testenv.RandomString(t, lowerHx, 4) + "-" + testenv.RandomString(t, lowerHx, 12) + `"`, "gitleaks:heroku-api-key"},
	}
	for _, c := range cases {
		ms := s.Scan("package x\n\n" + c.text + "\n")
		if !hasRule(ms, c.rule) {
			t.Errorf("%s: Scan = %v, want %s", c.name, ms, c.rule)
		}
		for _, m := range ms {
			if m.Start < 0 || m.End > len(c.text)+12 || m.Start >= m.End {
				t.Errorf("%s: bad range %+v", c.name, m)
			}
		}
	}
}

func TestScannerIncludesOwnPatterns(t *testing.T) {
	t.Parallel()
	s := newTestScanner(t)
	text := "token := \"ghp_" + testenv.RandomString(t, alnum, 36) + "\"\n"
	if ms := s.Scan(text); !hasRule(ms, "github-token") {
		t.Fatalf("Scan = %v, want github-token", ms)
	}
}

// A hostile patch must not be able to exempt itself with gitleaks' inline
// allow marker.
func TestScannerIgnoresGitleaksAllow(t *testing.T) {
	t.Parallel()
	s := newTestScanner(t)
	text := `const apiKey = "` + randKey(t, s, 32) + `" // gitleaks:allow` + "\n"
	if ms := s.Scan(text); !hasGitleaks(ms) {
		t.Fatalf("Scan = %v: gitleaks:allow suppressed the finding", ms)
	}
}

// gitleaks skips vendor/ and node_modules/ paths; ScanFile must not.
func TestScannerPathAllowlistDoesNotExempt(t *testing.T) {
	t.Parallel()
	s := newTestScanner(t)
	text := `const apiKey = "` + randKey(t, s, 32) + `"` + "\n"
	for _, p := range []string{"node_modules/x/index.js", "vendor/modules.txt", "go.mod", "logo.svg"} {
		if ms := s.ScanFile(p, text); !hasGitleaks(ms) {
			t.Errorf("ScanFile(%q) = %v, want a gitleaks finding", p, ms)
		}
	}
}

func TestScannerPathScopedRules(t *testing.T) {
	t.Parallel()
	s := newTestScanner(t)
	text := "<configuration><packageSourceCredentials><src><add key=\"ClearTextPassword\" value=\"" +
		randKey(t, s, 24) + "\" /></src></packageSourceCredentials></configuration>\n"
	// the second path is on gitleaks' global path allowlist
	for _, p := range []string{"NuGet.Config", "node_modules/pkg/nuget.config"} {
		if ms := s.ScanFile(p, text); !hasRule(ms, "gitleaks:nuget-config-password") {
			t.Errorf("ScanFile(%q) = %v, want nuget-config-password", p, ms)
		}
	}
}

func TestScannerBase64Encoded(t *testing.T) {
	t.Parallel()
	s := newTestScanner(t)
	// "-----BEGIN PRIVATE KEY-----..." base64-encoded: only the decoding pass
	// can see it.
	raw := "-----BEGIN PRIVATE KEY-----\n" + testenv.RandomString(t, alnum, 64) + "\n-----END PRIVATE KEY-----"
	enc := base64Std(raw)
	ms := s.Scan("blob = \"" + enc + "\"\n")
	if !hasGitleaks(ms) {
		t.Fatalf("Scan of base64 private key = %v, want a gitleaks finding", ms)
	}
}

func TestScannerNoFindingsOnOrdinaryCode(t *testing.T) {
	t.Parallel()
	s := newTestScanner(t)
	code := `package main

import "fmt"

// apiKeyHeader is the name of the header, not a key.
const apiKeyHeader = "X-Api-Key"

func main() {
	token := os.Getenv("TOKEN")
	fmt.Println("hello", token)
}
`
	if ms := s.Scan(code); len(ms) != 0 {
		t.Fatalf("Scan = %v, want none", ms)
	}
	if ms := s.Scan(""); len(ms) != 0 {
		t.Fatalf("Scan(\"\") = %v", ms)
	}
}

func TestScannerConcurrent(t *testing.T) {
	t.Parallel()
	s := newTestScanner(t)
	text := `const apiKey = "` + randKey(t, s, 32) + `"` + "\n"
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if ms := s.Scan(text); !hasGitleaks(ms) {
					t.Error("missed finding under concurrency")
					return
				}
			}
		})
	}
	wg.Wait()
}

func FuzzScan(f *testing.F) {
	s := newTestScanner(f)
	f.Add("api_key = \"abcd1234efgh5678ijkl9012mnop3456\"")
	f.Add("\n\n\n")
	f.Add("ghp_" + strings.Repeat("x", 36))
	f.Fuzz(func(t *testing.T, text string) {
		for _, m := range s.Scan(text) {
			if m.Start < 0 || m.End > len(text) || m.Start >= m.End {
				t.Fatalf("bad range %+v for len %d", m, len(text))
			}
		}
	})
}

func base64Std(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
