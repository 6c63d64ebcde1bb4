package sast

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// gitleaksDefaultConfig is the default config of the gitleaks module in
// go.mod, the version the scanners image builds.
func gitleaksDefaultConfig(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/zricethezav/gitleaks/v8").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "config", "gitleaks.toml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// The names of the copies gitleaks scans escape every path of its global
// allowlist, and keep what every rule's path condition looks for.
func TestGitleaksNamesEscapeTheAllowlist(t *testing.T) {
	t.Parallel()
	cfg := gitleaksDefaultConfig(t)
	block := regexp.MustCompile(`(?s)\[allowlist\].*?paths = \[(.*?)\n\]`).FindStringSubmatch(cfg)
	if block == nil {
		t.Fatal("no global allowlist paths in gitleaks' default config")
	}
	var allow []*regexp.Regexp
	for _, m := range regexp.MustCompile(`'''(.*?)'''`).FindAllStringSubmatch(block[1], -1) {
		allow = append(allow, regexp.MustCompile(m[1]))
	}
	if len(allow) < 10 {
		t.Fatalf("%d allowlist paths", len(allow))
	}
	names := []string{"package-lock.json", "go.sum", "go.mod", "yarn.lock", "logo.png", "font.woff2", "doc.pdf",
		"gitleaks.toml", "x.gitleaks.toml.py", "gradlew", "mvnw", "poetry.lock", "jquery-3.7.min.js", "x.gem",
		"verification-metadata.xml", "Database.refactorlog", ".git", "a.js", "secrets.yml", "main.tf", "nuget.config",
		"cert.p12", "index.php", "lib.dll", "x.exe"}
	for i, n := range names {
		copyName := filepath.ToSlash(filepath.Join(strings.Repeat("9", i+1), gitleaksName(NeutralExt(n))))
		for _, re := range allow {
			if re.MatchString(copyName) {
				t.Errorf("%s → %s matches the allowlist path %s", n, copyName, re)
			}
		}
	}
	// Every rule path condition still matches the copy of a file it matches.
	rulePaths := regexp.MustCompile(`(?m)^path = '''(.*?)'''`).FindAllStringSubmatch(cfg, -1)
	if len(rulePaths) == 0 {
		t.Fatal("no rule path conditions found")
	}
	samples := []string{"index.php", "main.tf", "vars.hcl", "a.yaml", "b.yml", "NuGet.Config", "cert.p12", "cert.pfx"}
	for _, m := range rulePaths {
		re := regexp.MustCompile(m[1])
		hit := false
		for _, s := range samples {
			if re.MatchString(s) {
				hit = true
				if !re.MatchString("7/" + gitleaksName(NeutralExt(s))) {
					t.Errorf("rule path %s matches %s but not its copy %s", re, s, gitleaksName(NeutralExt(s)))
				}
			}
		}
		if !hit {
			t.Errorf("rule path %s: no sample; gitleaksKeptExts may miss its files", re)
		}
	}
}

func TestGitleaksSkipped(t *testing.T) {
	t.Parallel()
	log := "\x1b[90m9:20AM\x1b[0m DBG using stdlib regex engine\n" +
		"9:20AM DBG skipping file: global allowlist path=2/f\n" +
		"9:20AM DBG skipping binary file mime_type=application/zip path=0/f\n" +
		"9:20AM DBG skipping binary file mime_type=application/zip path=0/f\n" +
		"9:20AM ERR could not read file error=\"x\" path=11/f.yml\n" +
		"9:20AM DBG skipping binary file path=../etc\n" +
		"9:20AM INF scanned ~0 bytes (0) in 4.49ms\n"
	got := GitleaksSkipped([]byte(log), 10)
	if len(got) != 3 || got[0].File != 2 || got[1].File != 0 || got[2].File != 11 ||
		!strings.Contains(got[1].Reason, "skipping binary file mime_type=application/zip") {
		t.Fatalf("%+v", got)
	}
	if got := GitleaksSkipped([]byte(log), 1); len(got) != 1 {
		t.Fatalf("cap: %+v", got)
	}
}
