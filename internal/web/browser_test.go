package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/quavon/quavon/internal/repos"
	"github.com/quavon/quavon/internal/review"
	"github.com/quavon/quavon/internal/testenv"
	"github.com/quavon/quavon/internal/web"
	"github.com/quavon/quavon/internal/web/webtest"
)

// EnvAxeCore names axe-core's axe.min.js (scripts/test installs the pinned
// npm package and sets it).
const EnvAxeCore = "QUAVON_TEST_AXE_CORE"

// chromium finds Debian's chromium: required under scripts/test.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if testenv.Required() {
		t.Fatal("chromium is required (QUAVON_TEST_REQUIRE_SERVICES=1); scripts/test installs it")
	}
	t.Skip("chromium not installed; run scripts/test")
	return ""
}

// browser is one headless Chromium with a fresh profile, recording every
// Content Security Policy violation it reports.
type browser struct {
	t    *testing.T
	ctx  context.Context
	mu   sync.Mutex
	csp  []string
	axe  string
	arts string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	bin := chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin), chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("no-first-run", true), chromedp.Flag("disable-sync", true),
		// The dashboard runs on an httptest TLS server with its own CA.
		chromedp.Flag("ignore-certificate-errors", true),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 8*time.Minute)
	t.Cleanup(func() { cancelT(); cancelC(); cancelA() })
	b := &browser{t: t, ctx: ctx}
	msgs := chromedp.Console(ctx)
	ready := make(chan struct{})
	go func() {
		once := sync.Once{}
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Text == "quavon-listener-ready" {
				once.Do(func() { close(ready) })
			}
			if strings.Contains(m.Text, "Content Security Policy") || strings.Contains(m.Text, "Content-Security-Policy") {
				b.mu.Lock()
				b.csp = append(b.csp, m.Text)
				b.mu.Unlock()
			}
		}
	}()
	for {
		b.eval(`console.log("quavon-listener-ready")`, false)
		select {
		case <-ready:
		case <-time.After(100 * time.Millisecond):
			continue
		}
		break
	}
	if p := os.Getenv(EnvAxeCore); p != "" {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%s: %v", EnvAxeCore, err)
		}
		b.axe = string(src)
	} else if testenv.Required() {
		t.Fatalf("$%s is required (QUAVON_TEST_REQUIRE_SERVICES=1); scripts/test installs axe-core", EnvAxeCore)
	} else {
		t.Logf("$%s not set: no accessibility pass", EnvAxeCore)
	}
	if d := os.Getenv("QUAVON_TEST_ARTIFACTS"); d != "" {
		b.arts = filepath.Join(d, "web")
		if err := os.MkdirAll(b.arts, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func (b *browser) run(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatal(err)
	}
}

func value[T any](b *browser, a chromedp.Action[T]) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, a)
	if err != nil {
		b.t.Fatal(err)
	}
	return v
}

func (b *browser) eval(expr string, await bool) any {
	b.t.Helper()
	var opts []chromedp.EvaluateOption
	if await {
		opts = append(opts, chromedp.EvalAwaitPromise)
	}
	return value(b, chromedp.Evaluate[any](expr, opts...))
}

// waitFor evaluates expr until it gives a non-empty string (navigations
// in between are expected) and returns it.
func (b *browser) waitFor(expr string) string {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		v, err := chromedp.Run(b.ctx, chromedp.Evaluate[any](expr))
		if s, ok := v.(string); err == nil && ok && s != "" {
			return s
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.t.Fatalf("timed out waiting for %s", expr)
	return ""
}

func (b *browser) violations() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.csp...)
}

// check is the pass every page gets: no CSP violation, no horizontal
// scrolling of the page at 375 px, no serious axe-core violation, and a
// screenshot at both widths.
func (b *browser) check(name string) {
	b.t.Helper()
	if v := b.violations(); len(v) > 0 {
		b.t.Errorf("%s: CSP violations: %q", name, v)
	}
	b.shot(name + "-desktop")
	b.run(chromedp.EmulateViewport(375, 800), chromedp.Sleep(50*time.Millisecond))
	if over, _ := b.eval(`document.documentElement.scrollWidth > document.documentElement.clientWidth + 1`, false).(bool); over {
		b.t.Errorf("%s: the page scrolls sideways at 375 px", name)
	}
	b.shot(name + "-375")
	b.run(chromedp.EmulateReset())
	if b.axe == "" {
		return
	}
	b.eval(b.axe+"\n;true", false)
	res, _ := b.eval(`axe.run(document, {resultTypes: ["violations"]}).then(r => JSON.stringify(
		r.violations.filter(v => v.impact === "serious" || v.impact === "critical").map(v => v.id + ": " + v.nodes.map(n => n.target.join(" ")).join(", "))))`, true).(string)
	var serious []string
	if err := json.Unmarshal([]byte(res), &serious); err != nil {
		b.t.Fatalf("%s: axe: %v (%s)", name, err, res)
	}
	if len(serious) > 0 {
		b.t.Errorf("%s: serious accessibility violations: %q", name, serious)
	}
}

func (b *browser) shot(name string) {
	if b.arts == "" {
		return
	}
	png := value(b, chromedp.FullScreenshot(80))
	if err := os.WriteFile(filepath.Join(b.arts, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// The listener catches a CSP violation: a page under the dashboard's
// policy with an inline script and style must be reported.
func TestBrowserCatchesCSPViolations(t *testing.T) {
	b := newBrowser(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Security-Policy", web.ContentSecurityPolicy)
		fmt.Fprint(w, `<!doctype html><title>x</title><style>p{color:red}</style><script>document.title="ran"</script><p>x</p>`)
	}))
	defer srv.Close()
	b.run(chromedp.Navigate(srv.URL), chromedp.Sleep(200*time.Millisecond))
	title := value(b, chromedp.Title())
	if title == "ran" {
		t.Fatal("the inline script ran under the dashboard's CSP")
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(b.violations()) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if len(b.violations()) == 0 {
		t.Fatal("the browser reported no CSP violation for an inline script: the listener does not work")
	}
}

// TestBrowserSignInAndApprove: a maintainer signs in through the emulator,
// opens a fix run, sees the diff (unified and side by side) and the
// executed-path highlight, approves and sees the state change; as an
// instance admin she grants a role on the grants page; a user known in two
// tenants chooses one after sign-in; a user without repo:review sees no
// approve button and a forged POST from the page is refused; every page
// passes the CSP, 375 px and axe-core checks.
func TestBrowserSignInAndApprove(t *testing.T) {
	f := webtest.New(t, webtest.Options{Admins: []string{"alice"}})
	f.AddUser(t, "alice", "write", repos.RoleReview, repos.RoleManage)
	f.AddUser(t, "carol", "write", repos.RoleManage)
	addToTenant(t, f, f.CP.Seed(t, "globex", "site", "private"), "carol", repos.RoleReview)
	dave := f.GH.AddUser("dave")
	// A small patch: every row of the diff is built alike, so axe-core's
	// verdict on 24 lines is its verdict on 300 (it took 7 s a page on 300
	// lines); the page's speed at size is BenchmarkApprovalPage's.
	changes, base := webtest.FixPatch(3, 8, "fixed")
	fr := f.NewFixRun(t, 21, changes, base, time.Now().Add(time.Hour))
	other := f.NewFixRun(t, 22, changes, base, time.Now().Add(time.Hour))
	reviewID := f.NewReviewRun(t, 5, strings.Repeat("3", 40), []review.Finding{
		{Fingerprint: strings.Repeat("c", 32), Source: review.SourceSAST, Tools: []string{"gosec"}, Path: "main.go", StartLine: 3, EndLine: 4, Severity: "high", Title: "SQL built from request data", Body: "Use a parameterised query."},
		{Fingerprint: strings.Repeat("d", 32), Source: review.SourceLLM, Path: "util.go", StartLine: 9, EndLine: 9, Severity: "low", Title: "Unused variable", Body: "x is never read."}})

	b := newBrowser(t)
	f.GH.SignInAs("alice")
	b.run(chromedp.Navigate(f.URL+"/auth/login?return=/fixes/"+fr.ID), chromedp.WaitVisible(chromedp.CSS("#approve")))
	sha := value(b, chromedp.Text(chromedp.CSS("#patch-sha")))
	execCount, _ := b.eval(`document.querySelectorAll("section.file.exec").length`, false).(float64)
	if sha != fr.PatchSHA {
		t.Fatalf("the page shows patch %q, want %q", sha, fr.PatchSHA)
	}
	if execCount != 1 {
		t.Fatalf("executed-path highlights: %v, want 1 (the Makefile)", execCount)
	}
	b.check("fix-run")
	// The side-by-side view, by its plain link.
	b.run(chromedp.Click(chromedp.CSS("#view-split")), chromedp.WaitVisible(chromedp.CSS("table.diff.split")))
	if n, _ := b.eval(`document.querySelectorAll("section.file.exec table.diff.split td.code.add").length`, false).(float64); n == 0 {
		t.Fatal("the side-by-side view shows no added line in the executed file")
	}
	b.check("fix-run-split")
	for name, path := range map[string]string{"repos": "/repos", "policy": "/repos/acme/app/policy", "reviews": "/repos/acme/app/reviews",
		"review": "/reviews/" + reviewID, "fixes": "/repos/acme/app/fixes", "audit": "/audit"} {
		b.run(chromedp.Navigate(f.URL+path), chromedp.WaitVisible(chromedp.CSS("main")))
		b.check(name)
	}

	// The grants page, reached by its link; a role granted with its form.
	b.run(chromedp.Click(chromedp.CSS("#nav-grants")), chromedp.WaitVisible(chromedp.CSS("#grant-form")))
	b.check("grants")
	b.run(chromedp.SendKeys(chromedp.CSS("#g-login"), "dave"), chromedp.SendKeys(chromedp.CSS("#g-id"), fmt.Sprint(dave.ID)),
		chromedp.Click(chromedp.CSS("#grant")))
	if got := b.waitFor(`document.querySelector("p.notice") ? document.querySelector("p.notice").textContent : ""`); got != "The role was granted." {
		t.Fatalf("after granting: %q", got)
	}
	if rows, _ := b.eval(`[...document.querySelectorAll("#grants td.login")].filter(td => td.textContent === "dave").length`, false).(float64); rows != 1 {
		t.Fatalf("the granted role is not listed: %v", rows)
	}
	b.check("grants-granted")

	b.run(chromedp.Navigate(f.URL+"/fixes/"+fr.ID), chromedp.WaitVisible(chromedp.CSS("#approve")),
		chromedp.Click(chromedp.CSS("#approve")))
	// The click posts the form; the answer redirects back to the run.
	st := b.waitFor(`(document.querySelector("#approve") === null && document.querySelector("#run-state")) ? document.querySelector("#run-state").textContent : ""`)
	if !strings.HasPrefix(st, "approved") {
		t.Fatalf("after approving the page shows state %q", st)
	}
	b.check("fix-run-approved")

	// carol (repo:manage, no repo:review): no button; a forged POST from
	// her own session, with her form token, is refused.
	b.run(chromedp.Click(chromedp.CSS(".signout button")))
	b.waitFor(`document.querySelector("a.button[href^='/auth/login']") ? "signed out" : ""`)
	// carol is known in acme and globex: she chooses acme after sign-in.
	f.GH.SignInAs("carol")
	b.run(chromedp.Navigate(f.URL+"/auth/login?return=/fixes/"+other.ID), chromedp.WaitVisible(chromedp.CSS("ul.choices")))
	b.check("tenant-chooser")
	b.eval(fmt.Sprintf(`document.querySelector('input[name=tenant][value=%q]').form.querySelector("button").click(), true`, f.Seed.Tenant), false)
	b.run(chromedp.WaitVisible(chromedp.CSS("#run-state")))
	if name := value(b, chromedp.Text(chromedp.CSS("#tenant-name"))); name != "acme" {
		t.Fatalf("carol's session is in %q, want acme", name)
	}
	buttons, _ := b.eval(`document.querySelectorAll("#approve").length`, false).(float64)
	// The form a forger would post, built in the page (plain HTML forms
	// are allowed by form-action 'self'; the role is what refuses it).
	b.eval(fmt.Sprintf(`(() => { const f = document.createElement("form"); f.method = "post"; f.action = "/fixes/%s/decision";
		const add = (n, v) => { const i = document.createElement("input"); i.type = "hidden"; i.name = n; i.value = v; f.appendChild(i); };
		add("form_token", document.querySelector("input[name=form_token]").value); add("decision", "approve"); add("output_id", %q);
		add("patch_sha256", %q); add("base_sha", %q); add("policy_sha256", %q); document.body.appendChild(f); f.submit(); return true; })()`,
		other.ID, other.OutputID, other.PatchSHA, other.BaseSHA, other.PolicySHA), false)
	refusal := b.waitFor(`document.querySelector("p.error") ? document.querySelector("p.error").textContent : ""`)
	if title := value(b, chromedp.Title()); !strings.HasPrefix(title, http.StatusText(http.StatusForbidden)) {
		t.Errorf("forged approval answered the page %q, want Forbidden (403)", title)
	}
	if buttons != 0 {
		t.Error("a user without repo:review sees the approve button")
	}
	if !strings.Contains(refusal, "needs the repo:review role") {
		t.Errorf("forged approval from the page: %q, want the role refusal", refusal)
	}
	b.check("fix-run-no-role")
}
