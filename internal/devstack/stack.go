package devstack

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/devenv"
	"github.com/quavon/quavon/internal/doctor"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/tokenbroker"
)

// Options configure Start.
type Options struct {
	WorkDir     string // data, secrets and logs (kept after Stop for reading the logs)
	BinDir      string // the built binaries: quavon-api, quavon-worker, ... and quavon-dev-github
	ACLTemplate string // deploy/valkey/users.acl.tmpl
	// Sandbox runs the runner and the egress proxy (Docker with runsc and
	// an images lockfile needed); false leaves them out, said in Status.
	Sandbox       bool
	ImagesLock    string
	Runsc         string
	RunscPlatform string
	StateDir      string // devenv's Docker locks
	Progress      func(format string, args ...any)
}

// Stack is a running system.
type Stack struct {
	DashboardURL string
	GitHub       GitHubState
	GitHubDir    string
	DatabaseURL  string // superuser (for quavon doctor and migrations)
	ValkeyAddr   string
	Procs        []*Proc
	opt          Options
	stops        []func() error
	exited       chan *Proc
}

// Proc is one started process.
type Proc struct {
	Name string
	Log  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start brings the whole system up; on error everything started is
// stopped again.
func Start(ctx context.Context, opt Options) (st *Stack, err error) {
	if opt.Progress == nil {
		opt.Progress = func(string, ...any) {}
	}
	st = &Stack{opt: opt, exited: make(chan *Proc, 16)}
	defer func() {
		if err != nil {
			st.Stop()
			st = nil
		}
	}()
	for _, d := range []string{"secrets", "logs"} {
		if err := os.MkdirAll(filepath.Join(opt.WorkDir, d), 0o700); err != nil {
			return st, err
		}
	}
	if opt.Sandbox {
		d, err := devenv.EnsureDockerd(ctx, devenv.DockerOptions{StateDir: opt.StateDir, Runsc: opt.Runsc, Platform: opt.RunscPlatform,
			WorkDir: filepath.Join(opt.WorkDir, "docker")})
		if err != nil {
			return st, err
		}
		st.stops = append(st.stops, d.Release)
		opt.RunscPlatform = d.Platform
		opt.Progress("Docker Engine with runsc (%s); %s", d.Platform, d.HugePages)
	}
	pg, err := devenv.StartPostgres(ctx, filepath.Join(opt.WorkDir, "pg"))
	if err != nil {
		return st, err
	}
	st.stops = append(st.stops, pg.Stop)
	st.DatabaseURL = pg.URL
	opt.Progress("PostgreSQL on 127.0.0.1:%d", pg.Port)
	roles, err := st.migrate(ctx, pg.URL, "api", "worker", "publisher")
	if err != nil {
		return st, err
	}
	vk, err := devenv.StartValkey(ctx, filepath.Join(opt.WorkDir, "valkey"), opt.ACLTemplate)
	if err != nil {
		return st, err
	}
	st.stops = append(st.stops, vk.Stop)
	st.ValkeyAddr = vk.Addr
	opt.Progress("Valkey on %s with the ACL users %s", vk.Addr, strings.Join(devenv.ValkeyUsers, ", "))

	apiPort, err := devenv.FreePort()
	if err != nil {
		return st, err
	}
	apiBase := "http://127.0.0.1:" + strconv.Itoa(apiPort)
	st.DashboardURL = apiBase + "/"
	// The emulator.
	st.GitHubDir = filepath.Join(opt.WorkDir, "github")
	if _, err := st.spawn(ctx, "quavon-dev-github", []string{"--state-dir", st.GitHubDir, "--webhook-base", apiBase + "/webhooks/github",
		"--dashboard-url", apiBase}, nil,
		func() bool { _, err := ReadState(st.GitHubDir); return err == nil }); err != nil {
		return st, err
	}
	if st.GitHub, err = ReadState(st.GitHubDir); err != nil {
		return st, err
	}
	gh := st.GitHub
	ghEnv := []string{"QUAVON_GITHUB_API_URL=" + gh.URL + "/", "QUAVON_GITHUB_GRAPHQL_URL=" + gh.URL + "/graphql"}
	opt.Progress("GitHub emulator at %s (%s, apps %s and %s)", gh.URL, gh.Repo, gh.Review.Slug, gh.Fixer.Slug)

	// The broker and one credential per caller.
	secrets := filepath.Join(opt.WorkDir, "secrets")
	var callers []string
	creds := map[string]string{}
	for _, role := range []tokenbroker.Role{tokenbroker.RoleAPI, tokenbroker.RoleWorker, tokenbroker.RolePublisher} {
		cred, line, err := tokenbroker.NewCredential(role, nil)
		if err != nil {
			return st, err
		}
		creds[string(role)], err = writeSecret(secrets, "broker-"+string(role), cred)
		if err != nil {
			return st, err
		}
		callers = append(callers, line)
	}
	callersFile, err := writeSecret(secrets, "broker-callers", strings.Join(callers, "\n")+"\n")
	if err != nil {
		return st, err
	}
	sock := filepath.Join(opt.WorkDir, "broker.sock")
	base := []string{"QUAVON_ENV=development"}
	if _, err := st.spawn(ctx, "quavon-token-broker", nil, concat(base, ghEnv, []string{
		"QUAVON_BROKER_LISTEN=unix:" + sock, "QUAVON_BROKER_CALLERS_FILE=" + callersFile,
		"QUAVON_GITHUB_REVIEW_APP_ID=" + strconv.FormatInt(gh.Review.ID, 10),
		"QUAVON_GITHUB_REVIEW_PRIVATE_KEY_FILE=" + SecretFile(st.GitHubDir, "review", "key.pem"),
		"QUAVON_GITHUB_FIXER_APP_ID=" + strconv.FormatInt(gh.Fixer.ID, 10),
		"QUAVON_GITHUB_FIXER_PRIVATE_KEY_FILE=" + SecretFile(st.GitHubDir, "fixer", "key.pem"),
	}), func() bool { _, err := os.Stat(sock); return err == nil }); err != nil {
		return st, err
	}
	broker := func(role string) []string {
		return []string{"QUAVON_BROKER_ADDR=unix:" + sock, "QUAVON_BROKER_CREDENTIAL_FILE=" + creds[role]}
	}
	db := func(role string) []string { return roles[role] }

	// api, worker, publisher.
	if _, err := st.spawn(ctx, "quavon-api", nil, concat(base, ghEnv, db("api"), broker("api"), []string{
		"QUAVON_API_LISTEN=127.0.0.1:" + strconv.Itoa(apiPort),
		// No metrics listener: :9090 on all addresses may be taken, and
		// quavon dev serves nobody's Prometheus.
		"QUAVON_API_METRICS_LISTEN=",
		"QUAVON_GITHUB_REVIEW_WEBHOOK_SECRET_FILE=" + SecretFile(st.GitHubDir, "review", "webhook-secret"),
		"QUAVON_GITHUB_FIXER_WEBHOOK_SECRET_FILE=" + SecretFile(st.GitHubDir, "fixer", "webhook-secret"),
		"QUAVON_GITHUB_FIXER_APP_SLUG=" + gh.Fixer.Slug,
		"QUAVON_WEB_PUBLIC_URL=" + apiBase, "QUAVON_GITHUB_WEB_URL=" + gh.URL,
		"QUAVON_GITHUB_REVIEW_CLIENT_ID=" + gh.Review.ClientID,
		"QUAVON_GITHUB_REVIEW_CLIENT_SECRET_FILE=" + SecretFile(st.GitHubDir, "review", "client-secret"),
		"QUAVON_WEB_INSECURE_COOKIES=true",
		// The demo's maintainer is the instance admin too: the grants page
		// (/admin/grants) is part of what the demo shows. The dashboard
		// names identities of the emulator github.com (web.DefaultHost).
		"QUAVON_WEB_ADMINS=github.com/" + strconv.FormatInt(gh.AdminID, 10) + ":" + DemoAdmin,
	}), func() bool { return httpOK(apiBase + "/healthz") }); err != nil {
		return st, err
	}
	// The worker: review and fix runs clone from the emulator into its own
	// git cache, ask the emulated model, and (with the sandbox) reach the
	// runner through Valkey as user quavon with the pool's signing key.
	key := make([]byte, 32)
	rand.Read(key)
	keyFile, err := writeSecret(secrets, "sandbox-pool-key", base64.StdEncoding.EncodeToString(key)+"\n")
	if err != nil {
		return st, err
	}
	valkey := func(user string) []string {
		return []string{"QUAVON_VALKEY_ADDR=" + vk.Addr, "QUAVON_VALKEY_USER=" + user,
			"QUAVON_VALKEY_PASSWORD_FILE=" + filepath.Join(vk.SecretsDir, user)}
	}
	workerEnv := concat(base, ghEnv, db("worker"), broker("worker"), []string{
		"QUAVON_GITHUB_GIT_URL=" + gh.URL + "/", "QUAVON_GIT_CACHE_DIR=" + filepath.Join(opt.WorkDir, "git"),
		"QUAVON_GITHUB_REVIEW_APP_SLUG=" + gh.Review.Slug,
		"QUAVON_LLM_PROVIDER=anthropic", "QUAVON_LLM_MODEL=" + gh.Model, "QUAVON_LLM_BASE_URL=" + gh.ModelURL,
		"QUAVON_LLM_API_KEY_FILE=" + SecretFile(st.GitHubDir, "model", "api-key"),
		"QUAVON_WORKER_METRICS_LISTEN=",
	})
	if opt.Sandbox {
		workerEnv = concat(workerEnv, valkey("quavon"), []string{"QUAVON_SANDBOX_SIGNING_KEY_FILE=" + keyFile})
	}
	if _, err := st.spawn(ctx, "quavon-worker", nil, workerEnv, nil); err != nil {
		return st, err
	}
	if _, err := st.spawn(ctx, "quavon-publisher", nil, concat(base, ghEnv, db("publisher"), broker("publisher"), []string{
		"QUAVON_GITHUB_REVIEW_APP_SLUG=" + gh.Review.Slug, "QUAVON_GITHUB_FIXER_APP_SLUG=" + gh.Fixer.Slug,
		"QUAVON_PUBLISHER_METRICS_LISTEN="}), nil); err != nil {
		return st, err
	}
	if opt.Sandbox {
		egressPort, err := devenv.FreePort()
		if err != nil {
			return st, err
		}
		if _, err := st.spawn(ctx, "quavon-sandbox-egress", nil, concat(base, valkey("egress"),
			[]string{"QUAVON_EGRESS_LISTEN=127.0.0.1:" + strconv.Itoa(egressPort)}),
			func() bool { return dialOK("127.0.0.1:" + strconv.Itoa(egressPort)) }); err != nil {
			return st, err
		}
		if _, err := st.spawn(ctx, "quavon-sandbox-runner", nil, concat(base, valkey("sandbox"), []string{
			"QUAVON_SANDBOX_BACKEND=docker-runsc", "QUAVON_SANDBOX_RUNSC_PLATFORM=" + opt.RunscPlatform,
			"QUAVON_SANDBOX_SIGNING_KEY_FILE=" + keyFile, "QUAVON_SANDBOX_IMAGES_LOCK=" + opt.ImagesLock,
			"QUAVON_SANDBOX_RUNNER_ID=dev-runner"}), nil); err != nil {
			return st, err
		}
	}
	// The emulator tells the api about both installations now that it
	// listens.
	if err := st.Control(ctx, "POST", "/install", nil); err != nil {
		return st, fmt.Errorf("installing the apps: %w", err)
	}
	opt.Progress("both apps installed on %s (installation events delivered to the api)", gh.Repo)
	return st, nil
}

// migrate applies the migrations as the superuser and creates one login
// role per service, each only a member of quavon_app; it returns each
// service's database settings.
func (st *Stack) migrate(ctx context.Context, adminURL string, services ...string) (map[string][]string, error) {
	pool, err := pgxpool.New(ctx, adminURL)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	if _, err := postgres.Migrate(ctx, pool); err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	out := map[string][]string{}
	for _, svc := range services {
		role, pw := "quavon_"+svc, devenv.RandomPassword()
		if _, err := pool.Exec(ctx, fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s' IN ROLE quavon_app", pgx.Identifier{role}.Sanitize(), pw)); err != nil {
			return nil, fmt.Errorf("role %s: %w", role, err)
		}
		file, err := writeSecret(filepath.Join(st.opt.WorkDir, "secrets"), "db-"+svc, pw)
		if err != nil {
			return nil, err
		}
		u, err := urlWithUser(adminURL, role)
		if err != nil {
			return nil, err
		}
		out[svc] = []string{"QUAVON_DATABASE_URL=" + u, "QUAVON_DATABASE_PASSWORD_FILE=" + file}
	}
	st.opt.Progress("migrations applied; database roles %s (members of quavon_app only)", strings.Join(services, ", "))
	return out, nil
}

// spawn starts BinDir/name with exactly env (plus PATH), its output in
// logs/<name>.log, and waits until ready (nil: alive for a second).
func (st *Stack) spawn(ctx context.Context, name string, args, env []string, ready func() bool) (*Proc, error) {
	bin := filepath.Join(st.opt.BinDir, name)
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s is not built (%s): %w", name, bin, err)
	}
	p := &Proc{Name: name, Log: filepath.Join(st.opt.WorkDir, "logs", name+".log"), done: make(chan struct{})}
	logf, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		logf.Close()
		close(p.done)
		st.exited <- p
	}()
	st.Procs = append(st.Procs, p)
	alive := func() bool {
		select {
		case <-p.done:
			return false
		default:
			return true
		}
	}
	if ready == nil {
		t := time.NewTimer(time.Second)
		defer t.Stop()
		select {
		case <-p.done:
		case <-t.C:
		case <-ctx.Done():
			return p, ctx.Err()
		}
	} else {
		end := time.Now().Add(devenv.Deadline)
		for !ready() && alive() {
			if time.Now().After(end) {
				return p, fmt.Errorf("%s did not become ready within %s:\n%s", name, devenv.Deadline, Tail(p.Log, 20))
			}
			select {
			case <-ctx.Done():
				return p, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	if !alive() {
		return p, fmt.Errorf("%s exited during start-up (%v):\n%s", name, p.err, Tail(p.Log, 20))
	}
	st.opt.Progress("%s running (pid %d, log %s)", name, p.cmd.Process.Pid, p.Log)
	return p, nil
}

// Wait returns when ctx ends (nil) or a process exits (an error naming it
// with the tail of its log).
func (st *Stack) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case p := <-st.exited:
		return fmt.Errorf("%s exited (%v):\n%s", p.Name, p.err, Tail(p.Log, 20))
	}
}

// Stop ends the processes in reverse start order (SIGTERM, SIGKILL after
// 15 s) and then the services.
func (st *Stack) Stop() error {
	var errs []error
	for i := len(st.Procs) - 1; i >= 0; i-- {
		p := st.Procs[i]
		select {
		case <-p.done:
			continue
		default:
		}
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
			errs = append(errs, fmt.Errorf("%s did not stop within 15 s of SIGTERM (killed)", p.Name))
		}
	}
	st.Procs = nil
	for i := len(st.stops) - 1; i >= 0; i-- {
		if err := st.stops[i](); err != nil {
			errs = append(errs, err)
		}
	}
	st.stops = nil
	return errors.Join(errs...)
}

// Control calls one of the emulator's scenario endpoints; out, when not
// nil, receives the JSON answer.
func (st *Stack) Control(ctx context.Context, method, path string, out io.Writer) error {
	token, err := os.ReadFile(filepath.Join(st.GitHubDir, ControlTokenFile))
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, st.GitHub.ControlURL+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+string(token))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, strings.TrimSpace(string(b)))
	}
	if out != nil {
		out.Write(b)
	}
	return nil
}

func concat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func writeSecret(dir, name, v string) (string, error) {
	f := filepath.Join(dir, name)
	return f, os.WriteFile(f, []byte(v), 0o600)
}

func httpOK(u string) bool {
	c := http.Client{Timeout: time.Second}
	res, err := c.Get(u)
	if err != nil {
		return false
	}
	res.Body.Close()
	return res.StatusCode/100 == 2
}

func dialOK(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// Tail is the last n lines of the file at path.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// urlWithUser replaces the user and drops the password of a database URL
// (the password goes in a file).
func urlWithUser(raw, user string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	u.User = url.User(user)
	return u.String(), nil
}

// FixRunState waits up to wait for the newest fix run of issue n of the
// demo repository to leave queued and running, and describes it.
func (st *Stack) FixRunState(ctx context.Context, n int, wait time.Duration) (string, error) {
	conn, err := pgx.Connect(ctx, st.DatabaseURL)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	deadline := time.Now().Add(wait)
	last := ""
	for {
		var status string
		var reason *string
		err := conn.QueryRow(ctx, `SELECT f.status, f.reason::text FROM fix_runs f JOIN repositories r ON r.tenant_id = f.tenant_id AND r.id = f.repository_id
			WHERE r.owner = $1 AND r.name = $2 AND f.subject = 'issue' AND f.number = $3 ORDER BY f.created_at DESC LIMIT 1`,
			DemoOrg, DemoRepo, n).Scan(&status, &reason)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			last = "no fix run recorded for the issue"
		case err != nil:
			return "", err
		default:
			last = status
			if reason != nil {
				last += " (" + *reason + ")"
			}
			if status != "queued" && status != "running" {
				return last, nil
			}
		}
		if time.Now().After(deadline) {
			if strings.HasPrefix(last, "queued") || strings.HasPrefix(last, "running") {
				last += ": not finished within " + wait.String() + " (see the worker's log)"
			}
			return last, nil
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Doctor runs quavon doctor's checks for every Quavon service of the stack
// with that process's own environment, in start order; the worker's with
// --canary (a probe job through its sandbox client to the stack's runner,
// and the injection through the fix path).
func (st *Stack) Doctor(ctx context.Context) ([]ServiceDoctor, error) {
	var out []ServiceDoctor
	for _, p := range st.Procs {
		if p.Name == "quavon-dev-github" {
			continue
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(p.Pid()) + "/environ")
		if err != nil {
			return nil, err
		}
		env := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		out = append(out, ServiceDoctor{Service: p.Name, Results: doctor.Run(ctx, doctor.Options{Service: config.Service(p.Name), Environ: env,
			Canary: p.Name == string(config.ServiceWorker)})})
	}
	// The operator's view checks the migrations.
	u, err := url.Parse(st.DatabaseURL)
	if err != nil {
		return nil, err
	}
	pw, _ := u.User.Password()
	u.User = url.User(u.User.Username())
	pwFile, err := writeSecret(filepath.Join(st.opt.WorkDir, "secrets"), "db-operator", pw)
	if err != nil {
		return nil, err
	}
	out = append(out, ServiceDoctor{Service: string(config.ServiceMigrate), Results: doctor.Run(ctx, doctor.Options{Service: config.ServiceMigrate,
		Environ: []string{"QUAVON_ENV=development", "QUAVON_DATABASE_URL=" + u.String(), "QUAVON_DATABASE_PASSWORD_FILE=" + pwFile}})})
	return out, nil
}

// ServiceDoctor is one service's doctor results.
type ServiceDoctor struct {
	Service string
	Results []doctor.Result
}
