package secret

import (
	"strings"
	"testing"
)

// Tokens are assembled at run time so this file does not itself trip secret
// scanners.
func TestFindEachRule(t *testing.T) {
	t.Parallel()
	a := func(n int) string { return strings.Repeat("a", n) }
	A := func(n int) string { return strings.Repeat("A", n) }
	cases := []struct {
		rule, text string
	}{
		{"anthropic-api-key", "key=sk-ant-" + "api03-" + a(40)},
		{"aws-access-key-id", "id AKIA" + A(16) + " end"},
		{"aws-secret-access-key", "aws_secret_access_key = " + A(40)},
		{"gcp-api-key", "AIza" + a(35)},
		{"github-fine-grained-pat", "github_pat_" + a(82)},
		{"github-token", "token ghp_" + a(36)},
		{"github-token", "ghs_" + A(36)},
		{"gitlab-token", "glpat-" + a(20)},
		{"jwt", "eyJ" + a(10) + ".eyJ" + a(10) + "." + a(10)},
		{"npm-token", "npm_" + a(36)},
		{"openai-api-key", "sk-proj-" + a(20) + "T3BlbkFJ" + a(20)},
		{"private-key", "-----BEGIN OPENSSH PRIVATE KEY-----\nabc"},
		{"private-key", "-----BEGIN PRIVATE KEY-----"},
		{"pypi-token", "pypi-AgEIcHlwaS5vcmc" + a(60)},
		{"slack-token", "xoxb-" + strings.Repeat("1", 12) + "-abc"},
		{"slack-webhook", "https://hooks.slack.com/services/" + A(44)},
		{"stripe-key", "sk_live_" + a(24)},
		{"url-credentials", "https://user:hunter22@example.com/x"},
	}
	for _, c := range cases {
		ms := Find(c.text)
		found := false
		for _, m := range ms {
			if m.Rule == c.rule {
				found = true
			}
		}
		if !found {
			t.Errorf("Find(%q) = %v, want rule %s", c.text, ms, c.rule)
		}
		if !Contains(c.text) {
			t.Errorf("Contains(%q) = false", c.text)
		}
		if red := Redact(c.text); Contains(red) || !strings.Contains(red, "[REDACTED:") {
			t.Errorf("Redact(%q) = %q still holds a secret", c.text, red)
		}
	}
}

func TestNoFalsePositivesOnOrdinaryValues(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"", "true", "production", "1", "en_US.UTF-8", "Europe/Berlin",
		"-mod=mod", "--max-old-space-size=4096", "https://example.com/path",
		"ghp_short", "AKIA123", "sk-not-a-key", "eyJhbGciOi",
	} {
		if ms := Find(s); len(ms) != 0 {
			t.Errorf("Find(%q) = %v, want none", s, ms)
		}
	}
}

func TestRedactKeepsSurroundingText(t *testing.T) {
	t.Parallel()
	tok := "ghp_" + strings.Repeat("b", 36)
	got := Redact("before " + tok + " after")
	if got != "before [REDACTED:github-token] after" {
		t.Fatalf("Redact = %q", got)
	}
}

func FuzzFind(f *testing.F) {
	f.Add("ghp_" + strings.Repeat("x", 36))
	f.Add("-----BEGIN RSA PRIVATE KEY-----")
	f.Add("https://a:bcd@e")
	f.Add("AwS_SECRET_access_key = " + strings.Repeat("A", 40))
	f.Add("aw\u017f secret = " + strings.Repeat("A", 40))
	f.Fuzz(func(t *testing.T, s string) {
		for _, m := range Find(s) {
			if m.Start < 0 || m.End > len(s) || m.Start >= m.End {
				t.Fatalf("bad range %+v for len %d", m, len(s))
			}
		}
		_ = Redact(s)
		// the literal hints never hide a match
		var brute []Match
		for _, r := range rules {
			for _, loc := range r.re.FindAllStringIndex(s, -1) {
				brute = append(brute, Match{Rule: r.id, Start: loc[0], End: loc[1]})
			}
		}
		if got := Find(s); len(got) != len(brute) {
			t.Fatalf("Find = %v, the expressions alone find %v", got, brute)
		}
		if Contains(s) != (len(brute) > 0) {
			t.Fatalf("Contains disagrees with the expressions")
		}
	})
}
