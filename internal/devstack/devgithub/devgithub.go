// Package devgithub is the GitHub emulator of `quavon dev` as a server of
// its own (cmd/quavon-dev-github): internal/githubfake with the demo
// organisation, repository and both apps, the state file the other
// processes read, and the control endpoints the demo scenario drives.
package devgithub

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/quavon/quavon/internal/devstack"
	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/githubfake"
	"github.com/quavon/quavon/internal/llm/llmfake"
)

// demoFiles is the demo repository's default branch: a small Go module
// with a test, and the issue the fix agent is asked to fix.
var demoFiles = map[string]string{
	"go.mod":    "module example.com/demo\n\ngo 1.22\n",
	"README.md": "# demo-app\n\nA tiny service Quavon's demo reviews and fixes.\n",
	"calc/calc.go": `// Package calc adds things up.
package calc

// Sum returns the sum of xs.
func Sum(xs []int) int {
	total := 0
	for i := 1; i < len(xs); i++ { // bug: skips the first element
		total += xs[i]
	}
	return total
}
`,
	"calc/calc_test.go": `package calc

import "testing"

func TestSum(t *testing.T) {
	if got := Sum([]int{1, 2, 3}); got != 6 {
		t.Fatalf("Sum = %d, want 6", got)
	}
}
`,
}

// plantedFiles are the demo pull request's changes: problems the
// deterministic scanners find (a hard-coded credential, a shell command
// built from input, SQL built by concatenation).
var plantedFiles = map[string]string{
	"server/server.go": `package server

import (
	"database/sql"
	"net/http"
	"os/exec"
)

const awsSecretAccessKey = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY1"

// Handler looks a user up and runs the report tool for them.
func Handler(db *sql.DB) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("name")
		rows, err := db.Query("SELECT id FROM users WHERE name = '" + name + "'")
		if err == nil {
			rows.Close()
		}
		out, _ := exec.Command("sh", "-c", "report --user "+name).Output()
		w.Write(out)
	}
}
`,
}

// Seeded is the emulator's demo world.
type Seeded struct {
	Server     *githubfake.Server
	Repo       *githubfake.Repo
	Admin      *githubfake.Account
	Review     *githubfake.App
	Fixer      *githubfake.App
	ReviewInst *githubfake.Installation
	FixerInst  *githubfake.Installation
	// ModelURL is the emulated model's Anthropic API root (Serve).
	ModelURL  string
	modelKey  string
	mu        sync.Mutex
	installed bool
}

// Seed creates the organisation, its admin (the demo's maintainer, signed
// in at the emulator's OAuth page), the demo repository and both apps
// installed on it with exactly the permissions and events Quavon registers
// them with (github.AppPermissions, github.AppEvents: the one definition
// `quavon github setup` and `quavon doctor` use), their webhooks going to
// webhookBase+"/review" and "/fixer" and the review app's OAuth callback
// below dashboardURL.
func Seed(s *githubfake.Server, webhookBase, dashboardURL string) *Seeded {
	s.AddOrg(devstack.DemoOrg)
	admin := s.AddUser(devstack.DemoAdmin)
	repo := s.AddRepo(devstack.DemoOrg, devstack.DemoRepo, githubfake.RepoOptions{Private: true, Files: demoFiles, Description: "Quavon's demo repository"})
	s.SetPermission(devstack.DemoOrg, devstack.DemoRepo, devstack.DemoAdmin, "admin")
	review := s.RegisterApp(devstack.ReviewAppSlug)
	fixer := s.RegisterApp(devstack.FixerAppSlug)
	full := devstack.DemoOrg + "/" + devstack.DemoRepo
	ri := s.Install(review, devstack.DemoOrg, github.AppPermissions(github.AppReview), full)
	fi := s.Install(fixer, devstack.DemoOrg, github.AppPermissions(github.AppFixer), full)
	s.SetEvents(ri, github.AppEvents(github.AppReview))
	s.SetEvents(fi, github.AppEvents(github.AppFixer))
	s.SetWebhookURL(review, webhookBase+"/review")
	s.SetWebhookURL(fixer, webhookBase+"/fixer")
	if dashboardURL != "" {
		s.SetCallbackURL(review, strings.TrimSuffix(dashboardURL, "/")+"/auth/callback")
	}
	s.SignInAs(devstack.DemoAdmin)
	return &Seeded{Server: s, Repo: repo, Admin: admin, Review: review, Fixer: fixer, ReviewInst: ri, FixerInst: fi}
}

// WriteState writes the apps' secrets and state.json into dir (0700).
func (d *Seeded) WriteState(dir, controlURL, controlToken string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, f := range []struct{ kind, what, v string }{
		{"review", "key.pem", string(d.Review.PrivateKeyPEM)}, {"review", "webhook-secret", d.Review.WebhookSecret},
		{"review", "client-secret", d.Review.ClientSecret},
		{"fixer", "key.pem", string(d.Fixer.PrivateKeyPEM)}, {"fixer", "webhook-secret", d.Fixer.WebhookSecret},
		{"model", "api-key", d.modelKey + "\n"},
	} {
		if err := os.WriteFile(devstack.SecretFile(dir, f.kind, f.what), []byte(f.v), 0o600); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, devstack.ControlTokenFile), []byte(controlToken), 0o600); err != nil {
		return err
	}
	st := devstack.GitHubState{URL: d.Server.URL, ControlURL: controlURL, Repo: devstack.DemoOrg + "/" + devstack.DemoRepo, AdminID: d.Admin.ID,
		Review:   devstack.AppState{ID: d.Review.ID, Slug: devstack.ReviewAppSlug, ClientID: d.Review.ClientID, InstallationID: d.ReviewInst.ID},
		Fixer:    devstack.AppState{ID: d.Fixer.ID, Slug: devstack.FixerAppSlug, ClientID: d.Fixer.ClientID, InstallationID: d.FixerInst.ID},
		ModelURL: d.ModelURL, Model: DevModel}
	b, _ := json.MarshalIndent(st, "", "  ")
	tmp := filepath.Join(dir, devstack.StateFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, devstack.StateFile))
}

// Install delivers both installations' created events (the api records
// the tenant and repository from them) and turns on the emulator's
// automatic webhooks; once only.
func (d *Seeded) Install() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.installed {
		return nil
	}
	for _, x := range []struct {
		app  *githubfake.App
		inst *githubfake.Installation
	}{{d.Review, d.ReviewInst}, {d.Fixer, d.FixerInst}} {
		del, err := d.Server.Deliver(x.app, "installation", d.Server.InstallationEvent("created", x.inst, devstack.DemoAdmin))
		if err != nil {
			return err
		}
		if del.StatusCode/100 != 2 {
			return fmt.Errorf("installation of %s: the api answered %d %s", x.app.Slug, del.StatusCode, del.Response)
		}
		d.Server.AutoDeliver(x.app)
	}
	d.installed = true
	return nil
}

// OpenDemoPR pushes the planted problems to a branch and opens a pull
// request from it; it returns the number.
func (d *Seeded) OpenDemoPR() int {
	branch := "add-report-endpoint-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
	d.Repo.Commit(branch, plantedFiles, "Add the report endpoint")
	return d.Repo.AddPullRequest(githubfake.PullRequestOptions{Title: "Add the report endpoint", Author: devstack.DemoAdmin, Head: branch,
		Body: "Adds /report, which looks the user up and runs the report tool.\n\n- [ ] the endpoint answers with the report"})
}

// OpenDemoIssue opens an issue and then labels it with devstack.FixLabel (a
// labeled event from an admin); it returns the number.
func (d *Seeded) OpenDemoIssue() int {
	n := d.Repo.AddIssue(githubfake.IssueOptions{Title: "Sum skips the first element", Author: devstack.DemoAdmin,
		Body: "`calc.Sum([]int{1, 2, 3})` returns 5, not 6; `go test ./...` fails.", Labels: []string{devstack.FixLabel}})
	return n
}

// ControlHandler serves the scenario endpoints quavon dev calls, each with
// "Authorization: Bearer <token>": POST /install, /pr, /issue (the answers
// are JSON), and GET /reviews?pr=N and /pulls (what Quavon posted).
func (d *Seeded) ControlHandler(token string) http.Handler {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("POST /install", func(w http.ResponseWriter, r *http.Request) {
		if err := d.Install(); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		reply(w, map[string]any{"ok": true})
	})
	mux.HandleFunc("POST /pr", func(w http.ResponseWriter, r *http.Request) { reply(w, map[string]any{"number": d.OpenDemoPR()}) })
	mux.HandleFunc("POST /issue", func(w http.ResponseWriter, r *http.Request) { reply(w, map[string]any{"number": d.OpenDemoIssue()}) })
	mux.HandleFunc("GET /reviews", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.URL.Query().Get("pr"))
		if err != nil {
			http.Error(w, "pr: a number", http.StatusBadRequest)
			return
		}
		reply(w, map[string]any{"reviews": d.Repo.Reviews(n), "check_runs": d.Repo.CheckRuns()})
	})
	mux.HandleFunc("GET /pulls", func(w http.ResponseWriter, r *http.Request) {
		pulls, err := d.Pulls()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		reply(w, map[string]any{"pulls": pulls})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		want := "Bearer " + token
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte(want)) != 1 {
			http.Error(w, "unauthorised", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// Pulls lists the repository's pull requests with the files each head
// changes against its base branch (devstack.Pull).
func (d *Seeded) Pulls() ([]devstack.Pull, error) {
	out := []devstack.Pull{}
	for _, in := range d.Repo.Issues() {
		pr := in.PullRequest
		if pr == nil {
			continue
		}
		p := devstack.Pull{Number: in.Number, Title: in.Title, Body: in.Body, Author: in.Author, State: in.State, Draft: pr.Draft,
			Head: pr.Head, Base: pr.Base, HeadSHA: pr.HeadSHA, Files: map[string]*string{}}
		head, err := d.Repo.Files(pr.HeadSHA)
		if err != nil {
			return nil, err
		}
		base, err := d.Repo.Files(pr.Base)
		if err != nil {
			return nil, err
		}
		for path, c := range head {
			if b, ok := base[path]; !ok || b != c {
				p.Files[path] = &c
			}
		}
		for path := range base {
			if _, ok := head[path]; !ok {
				p.Files[path] = nil
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// Serve runs the emulator with the demo world until ctx ends:
// webhooks to webhookBase, dashboard sign-ins back to dashboardURL, state and secrets in stateDir, the control
// endpoints on controlAddr (127.0.0.1:0 picks a port).
func Serve(ctx context.Context, log *slog.Logger, stateDir, webhookBase, dashboardURL, controlAddr string) error {
	s, closeSrv := githubfake.NewStandalone(log)
	defer closeSrv()
	d := Seed(s, webhookBase, dashboardURL)
	// The model the worker's review and fix runs talk to, on the
	// Anthropic API with a key of its own.
	modelKey := "sk-ant-dev-" + randomToken()
	model := llmfake.New(llmfake.Options{APIKey: modelKey, Script: ModelScript()})
	defer model.Close()
	d.ModelURL, d.modelKey = model.AnthropicURL(), modelKey
	ln, err := net.Listen("tcp", controlAddr)
	if err != nil {
		return fmt.Errorf("control listener: %w", err)
	}
	token := randomToken()
	hs := &http.Server{Handler: d.ControlHandler(token), ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	defer hs.Close()
	if err := d.WriteState(stateDir, "http://"+ln.Addr().String(), token); err != nil {
		return err
	}
	log.Info("GitHub emulator serving", "url", s.URL, "repository", devstack.DemoOrg+"/"+devstack.DemoRepo)
	<-ctx.Done()
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil
	}
	return ctx.Err()
}

func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}
