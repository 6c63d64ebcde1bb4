package patch

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/quavon/quavon/internal/gitrepo"
	"github.com/quavon/quavon/internal/secret/leaks"

	"github.com/quavon/quavon/internal/testenv"
)

var validateBase = map[string]MapFile{
	"README.md":                 {Content: "# r\n"},
	"src/a.go":                  {Content: "package a\n\nfunc A() {}\n"},
	"src/b.go":                  {Content: "package a\n"},
	"Docs/guide.md":             {Content: "g\n"},
	"link":                      {Mode: ModeSymlink, Content: "src"},
	"vendor/mod":                {Mode: ModeGitlink},
	"run.sh":                    {Mode: ModeExecutable, Content: "#!/bin/sh\n"},
	"bin.dat":                   {Content: "\x00\x01\x02"},
	norm.NFD.String("café.txt"): {Content: "c\n"},
}

func modify(path, old, new string) FixFileChange {
	return FixFileChange{Path: path, Operation: OpModify, BaseBlobSHA: BlobSHA([]byte(old)), NewContent: new, Mode: ModeFile}
}

func create(path, content string) FixFileChange {
	return FixFileChange{Path: path, Operation: OpCreate, NewContent: content, Mode: ModeFile}
}

func del(path, old string) FixFileChange {
	return FixFileChange{Path: path, Operation: OpDelete, BaseBlobSHA: BlobSHA([]byte(old)), Mode: ModeFile}
}

func TestValidatePatchAccepts(t *testing.T) {
	t.Parallel()
	base := MapBase(validateBase)
	changes := []FixFileChange{
		modify("src/a.go", "package a\n\nfunc A() {}\n", "package a\n\nfunc A() { println() }\n"),
		create("src/c.go", "package a\n"),
		del("src/b.go", "package a\n"),
		create("Docs/other.md", "\ufeffo\n"),
	}
	if err := ValidatePatch(changes, base, PathPolicy{}, Limits{}, testScanner(t)); err != nil {
		t.Fatal(err)
	}
}

// Each rejection ValidatePatch owes, one patch per rule, each checked for
// the file and the rule it names.
func TestValidatePatchRejections(t *testing.T) {
	t.Parallel()
	token := "ghp_" + testenv.RandomString(t, alnum, 36)
	apiKey := gitleaksKey(t)
	cases := []struct {
		name    string
		changes []FixFileChange
		limits  Limits
		policy  PathPolicy
		path    string
		rule    Rule
	}{
		{"denied path", []FixFileChange{create(".github/workflows/x.yml", "on: push\n")}, Limits{}, PathPolicy{}, ".github/workflows/x.yml", RuleDeniedGitHub},
		{".git segment", []FixFileChange{create("src/.git/config", "x\n")}, Limits{}, PathPolicy{}, "src/.git/config", RuleDeniedGit},
		{"policy denied", []FixFileChange{create("src/gen.go", "x\n")}, Limits{}, PathPolicy{DeniedPaths: []string{"src/gen.go"}}, "src/gen.go", RulePolicyDenied},
		{"policy not allowed", []FixFileChange{create("x.go", "x\n")}, Limits{}, PathPolicy{AllowedPaths: []string{"src/**"}}, "x.go", RulePolicyNotAllowed},
		{"lockfile", []FixFileChange{create("web/yarn.lock", "x\n")}, Limits{}, PathPolicy{}, "web/yarn.lock", RuleLockfile},
		{"not canonical", []FixFileChange{create("./src/x.go", "x\n")}, Limits{}, PathPolicy{}, "./src/x.go", RuleInvalidPath},
		{"invalid", []FixFileChange{create("../x.go", "x\n")}, Limits{}, PathPolicy{}, "../x.go", RuleInvalidPath},
		{"duplicate", []FixFileChange{create("n.go", "x\n"), create("n.go", "y\n")}, Limits{}, PathPolicy{}, "n.go", RuleDuplicatePath},
		{"unknown op", []FixFileChange{{Path: "n.go", Operation: "rename", Mode: ModeFile}}, Limits{}, PathPolicy{}, "n.go", RuleOperation},
		{"create with base sha", []FixFileChange{{Path: "n.go", Operation: OpCreate, BaseBlobSHA: EmptyBlobSHA, NewContent: "x", Mode: ModeFile}}, Limits{}, PathPolicy{}, "n.go", RuleOperation},
		{"delete with content", []FixFileChange{{Path: "src/b.go", Operation: OpDelete, BaseBlobSHA: BlobSHA([]byte("package a\n")), NewContent: "x", Mode: ModeFile}}, Limits{}, PathPolicy{}, "src/b.go", RuleOperation},
		{"no change", []FixFileChange{modify("src/b.go", "package a\n", "package a\n")}, Limits{}, PathPolicy{}, "src/b.go", RuleNoChange},
		{"new file mode", []FixFileChange{{Path: "n.sh", Operation: OpCreate, NewContent: "x\n", Mode: ModeExecutable}}, Limits{}, PathPolicy{}, "n.sh", RuleMode},
		{"new symlink", []FixFileChange{{Path: "n", Operation: OpCreate, NewContent: "/etc/passwd", Mode: ModeSymlink}}, Limits{}, PathPolicy{}, "n", RuleMode},
		{"modify executable", []FixFileChange{modify("run.sh", "#!/bin/sh\n", "#!/bin/bash\n")}, Limits{}, PathPolicy{}, "run.sh", RuleMode},
		{"modify symlink", []FixFileChange{modify("link", "src", "etc")}, Limits{}, PathPolicy{}, "link", RuleLink},
		{"delete gitlink", []FixFileChange{{Path: "vendor/mod", Operation: OpDelete, Mode: ModeFile}}, Limits{}, PathPolicy{}, "vendor/mod", RuleLink},
		{"create over symlink", []FixFileChange{create("link", "x\n")}, Limits{}, PathPolicy{}, "link", RuleLink},
		{"beneath symlink", []FixFileChange{create("link/x.go", "x\n")}, Limits{}, PathPolicy{}, "link/x.go", RuleLink},
		{"beneath gitlink", []FixFileChange{create("vendor/mod/x.go", "x\n")}, Limits{}, PathPolicy{}, "vendor/mod/x.go", RuleLink},
		{"beneath a file", []FixFileChange{create("README.md/x", "x\n")}, Limits{}, PathPolicy{}, "README.md/x", RulePathConflict},
		{"over a directory", []FixFileChange{create("src", "x\n")}, Limits{}, PathPolicy{}, "src", RulePathConflict},
		{"case collision", []FixFileChange{create("readme.md", "x\n")}, Limits{}, PathPolicy{}, "readme.md", RuleCaseCollision},
		{"case collision of a directory", []FixFileChange{create("docs/new.md", "x\n")}, Limits{}, PathPolicy{}, "docs/new.md", RuleCaseCollision},
		{"NFC vs NFD collision", []FixFileChange{create("café.txt", "x\n")}, Limits{}, PathPolicy{}, "café.txt", RuleCaseCollision},
		{"collision inside the patch", []FixFileChange{create("N.go", "x\n"), create("n.go", "x\n")}, Limits{}, PathPolicy{}, "n.go", RuleCaseCollision},
		{"file and directory in the patch", []FixFileChange{create("q", "x\n"), create("q/r", "x\n")}, Limits{}, PathPolicy{}, "q", RulePathConflict},
		{"create existing", []FixFileChange{create("src/a.go", "x\n")}, Limits{}, PathPolicy{}, "src/a.go", RuleBaseExists},
		{"modify missing", []FixFileChange{modify("src/z.go", "a", "b")}, Limits{}, PathPolicy{}, "src/z.go", RuleBaseMissing},
		{"moved base", []FixFileChange{modify("src/b.go", "package b\n", "package c\n")}, Limits{}, PathPolicy{}, "src/b.go", RuleBaseMoved},
		{"moved base on delete", []FixFileChange{del("src/b.go", "older\n")}, Limits{}, PathPolicy{}, "src/b.go", RuleBaseMoved},
		{"NUL", []FixFileChange{create("n.go", "a\x00")}, Limits{}, PathPolicy{}, "n.go", RuleBinary},
		{"invalid UTF-8", []FixFileChange{modify("src/b.go", "package a\n", "package \xc3\x28\n")}, Limits{}, PathPolicy{}, "src/b.go", RuleNotUTF8},
		{"binary base", []FixFileChange{del("bin.dat", "\x00\x01\x02")}, Limits{}, PathPolicy{}, "bin.dat", RuleBinary},
		{"bidi", []FixFileChange{modify("src/b.go", "package a\n", "package a\n// \u2067x\u2069\n")}, Limits{}, PathPolicy{}, "src/b.go", RuleBidi},
		{"zero width", []FixFileChange{create("n.go", "var a\u200d = 1\n")}, Limits{}, PathPolicy{}, "n.go", RuleZeroWidth},
		{"secret (own pattern)", []FixFileChange{create("n.go", "package a\nconst t = \""+token+"\"\n")}, Limits{}, PathPolicy{}, "n.go", RuleSecret},
		{"secret (gitleaks)", []FixFileChange{modify("src/b.go", "package a\n", "package a\n\nconst apiKey = \""+apiKey+"\"\n")}, Limits{}, PathPolicy{}, "src/b.go", RuleSecret},
		{"file size", []FixFileChange{create("n.go", strings.Repeat("x", 11))}, Limits{MaxFileBytes: 10}, PathPolicy{}, "n.go", RuleLimitFileSize},
		{"files", []FixFileChange{create("n1", "x\n"), create("n2", "x\n")}, Limits{MaxFiles: 1}, PathPolicy{}, "", RuleLimitFiles},
		{"changed lines", []FixFileChange{create("n1", "1\n2\n"), modify("src/b.go", "package a\n", "package b\n")}, Limits{MaxChangedLines: 3}, PathPolicy{}, "", RuleLimitChangedLines},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := ValidatePatch(c.changes, MapBase(validateBase), c.policy, c.limits, testScanner(t))
			var rej *RejectedError
			if !errors.As(err, &rej) {
				t.Fatalf("ValidatePatch = %v, want a rejection", err)
			}
			if !rej.Has(c.path, c.rule) {
				t.Fatalf("violations %+v lack %s for %q", rej.Violations, c.rule, c.path)
			}
			for _, v := range rej.Violations {
				if v.Message == "" {
					t.Errorf("violation without message: %+v", v)
				}
				if strings.Contains(v.Message, token) || strings.Contains(v.Message, apiKey) || strings.Contains(err.Error(), apiKey) {
					t.Errorf("violation quotes the secret: %+v", v)
				}
			}
		})
	}
}

// gitleaksKey is a random key that gitleaks' generic rule flags in
// `const apiKey = "<key>"`: about 1.5% of random strings contain one of its
// stopwords and are (by gitleaks' design) let through, which would make the
// test flaky.
func gitleaksKey(t testing.TB) string {
	t.Helper()
	for range 100 {
		k := testenv.RandomString(t, alnum, 32)
		for _, m := range testScanner(t).Scan("const apiKey = \"" + k + "\"\n") {
			if strings.HasPrefix(m.Rule, leaks.GitleaksRulePrefix) {
				return k
			}
		}
	}
	t.Fatal("gitleaks flags no random key")
	return ""
}

func TestValidatePatchSecretIgnoresRemovedLines(t *testing.T) {
	t.Parallel()
	old := "package a\nconst t = \"ghp_" + testenv.RandomString(t, alnum, 36) + "\"\n"
	base := MapBase(map[string]MapFile{"a.go": {Content: old}})
	// removing a committed secret is fine
	if err := ValidatePatch([]FixFileChange{modify("a.go", old, "package a\n")}, base, PathPolicy{}, Limits{}, testScanner(t)); err != nil {
		t.Fatal(err)
	}
}

func TestValidatePatchReadsVerifiedBase(t *testing.T) {
	t.Parallel()
	// a reader that lies about the content is caught by the blob SHA
	l := NewListing(map[string]Entry{"a.go": {Mode: ModeFile, BlobSHA: BlobSHA([]byte("a\n")), Size: 2}},
		func(string, Entry) ([]byte, error) { return []byte("evil\n"), nil })
	err := ValidatePatch([]FixFileChange{modify("a.go", "a\n", "b\n")}, l, PathPolicy{}, Limits{}, testScanner(t))
	if err == nil || errors.As(err, new(*RejectedError)) {
		t.Fatalf("ValidatePatch = %v, want a read error", err)
	}
	if err := ValidatePatch(nil, nil, PathPolicy{}, Limits{}, testScanner(t)); err == nil {
		t.Fatal("nil listing accepted")
	}
	if err := ValidatePatch(nil, l, PathPolicy{}, Limits{}, nil); err == nil {
		t.Fatal("nil scanner accepted")
	}
}

// A fixed vector: changing the canonical form breaks stored hashes.
func TestPatchSHA256Vector(t *testing.T) {
	t.Parallel()
	changes := []FixFileChange{
		{Path: "b.txt", Operation: OpDelete, BaseBlobSHA: BlobSHA([]byte("b\n")), Mode: ModeFile},
		{Path: "a.txt", Operation: OpModify, BaseBlobSHA: BlobSHA([]byte("a\n")), NewContent: "A\n", Mode: ModeFile},
	}
	// computed independently from the documented form (Python hashlib)
	const want = "bbd1cf04ce51de8121067546f9c4eb3d9dd90a2ca48c064a877822d5eae6dfc8"
	got := PatchSHA256(changes)
	if got != want {
		t.Fatalf("PatchSHA256 = %s, want %s", got, want)
	}
	// order-independent, content-sensitive, field-boundary-sensitive
	if PatchSHA256([]FixFileChange{changes[1], changes[0]}) != got {
		t.Error("order changed the hash")
	}
	c := changes[1]
	c.NewContent = "A\n "
	if PatchSHA256([]FixFileChange{changes[0], c}) == got {
		t.Error("content change kept the hash")
	}
	x := FixFileChange{Path: "ab", Operation: OpCreate, NewContent: "c"}
	y := FixFileChange{Path: "a", Operation: OpCreate, NewContent: "bc"}
	if PatchSHA256([]FixFileChange{x}) == PatchSHA256([]FixFileChange{y}) {
		t.Error("field boundaries are ambiguous")
	}
}

func TestFixFileChangeJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(create("a", "b"))
	if err != nil || string(b) != `{"path":"a","operation":"create","newContent":"b","mode":"100644"}` {
		t.Fatalf("json = %s, %v", b, err)
	}
	var c FixFileChange
	if err := json.Unmarshal(b, &c); err != nil || c.Mode != ModeFile {
		t.Fatalf("round trip: %+v %v", c, err)
	}
}

func TestExecutedPaths(t *testing.T) {
	t.Parallel()
	executed := []string{"package.json", "web/package.json", "Makefile", "build/rules.mk", "Dockerfile", "api/Dockerfile.dev",
		"Containerfile", "docker-compose.yml", "docker-compose.ci.yaml", "compose.yaml", "scripts/release", "x/y.sh",
		"setup.py", "setup.cfg", "pyproject.toml", "tests/conftest.py", "tox.ini", "noxfile.py", "pkg/a_test.go",
		"test/x.txt", "src/tests/y.py", "src/__tests__/a.js", "spec/a_spec.rb", "a.test.ts", "b.spec.js",
		"jest.config.js", "vitest.config.ts", "build.gradle", "pom.xml", "Rakefile", "Gemfile", "build.rs",
		"go.mod", "test_x.py", "requirements-dev.txt", ".envrc", "CMakeLists.txt"}
	var changes []FixFileChange
	for _, p := range executed {
		changes = append(changes, create(p, "x\n"))
	}
	changes = append(changes, create("src/gen.go", "package a\n//go:generate stringer -type=T\n"),
		create("src/main.go", "package main\n"), create("README.md", "x\n"), create("docs/testing.md", "x\n"))
	got := ExecutedPaths(changes)
	marked := map[string]string{}
	for _, e := range got {
		if e.Reason == "" {
			t.Errorf("%s: no reason", e.Path)
		}
		marked[e.Path] = e.Reason
	}
	for _, p := range append(executed, "src/gen.go") {
		if _, ok := marked[p]; !ok {
			t.Errorf("%s is not marked as executed", p)
		}
	}
	for _, p := range []string{"src/main.go", "README.md", "docs/testing.md"} {
		if r, ok := marked[p]; ok {
			t.Errorf("%s marked as executed: %s", p, r)
		}
	}
}

// A listing of a real commit through gitrepo: entries and checked reads.
func TestFromTree(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t, map[string]MapFile{"a.txt": {Content: "a\n"}, "l": {Mode: ModeSymlink, Content: "a.txt"}})
	ctx := context.Background()
	r, err := gitrepo.OpenLocal(ctx, dir, gitrepo.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := r.ResolveCommit(ctx, "HEAD")
	tree, err := r.Tree(ctx, head)
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := r.Blobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	l := FromTree(tree, blobs)
	if b, err := l.Read("a.txt"); err != nil || string(b) != "a\n" {
		t.Fatalf("read %q %v", b, err)
	}
	if _, err := l.Read("l"); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("a symlink read as a file: %v", err)
	}
	if err := ValidatePatch([]FixFileChange{{Path: "a.txt", Operation: OpModify, BaseBlobSHA: BlobSHA([]byte("a\n")), NewContent: "b\n", Mode: ModeFile}},
		l, PathPolicy{}, Limits{}, testScanner(t)); err != nil {
		t.Fatal(err)
	}
}
