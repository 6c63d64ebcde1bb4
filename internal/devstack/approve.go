package devstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/net/html"
)

// MaxPage bounds a dashboard page ApproveFix reads.
const MaxPage = 4 << 20

// Approval is what ApproveFix decided.
type Approval struct {
	FixRunID    string
	PatchSHA256 string
	BaseSHA     string
	Status      string // the fix run's status after the decision
	// Grants is the HTTP status of the grants page (/admin/grants) for
	// DemoAdmin, the stack's instance admin.
	Grants int
}

// ApproveFix approves the patch of the newest fix run of issue n of the
// demo repository the way a maintainer does in the dashboard, through the
// dashboard itself: DemoAdmin signs in with the review app's OAuth flow on
// the emulator, the fix run page is read, and its decision form is posted
// back with the hashes it shows (the patch's SHA-256, the base commit, the
// policy's verdicts), so the api checks the role, DemoAdmin's live write
// permission on the emulator and every bound hash, and audits the approval
// as that identity. The form must show the patch stored for the run.
func (st *Stack) ApproveFix(ctx context.Context, n int) (Approval, error) {
	var a Approval
	conn, err := pgx.Connect(ctx, st.DatabaseURL)
	if err != nil {
		return a, err
	}
	defer conn.Close(ctx)
	err = conn.QueryRow(ctx, `SELECT f.id::text, coalesce(f.patch_sha256, ''), coalesce(f.base_sha, '') FROM fix_runs f
		JOIN repositories r ON r.tenant_id = f.tenant_id AND r.id = f.repository_id
		WHERE r.owner = $1 AND r.name = $2 AND f.subject = 'issue' AND f.number = $3 AND f.status = 'awaiting_approval'
		ORDER BY f.created_at DESC LIMIT 1`, DemoOrg, DemoRepo, n).Scan(&a.FixRunID, &a.PatchSHA256, &a.BaseSHA)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, fmt.Errorf("approve: issue #%d has no fix run awaiting approval", n)
	}
	if err != nil {
		return a, fmt.Errorf("approve: %w", err)
	}
	base, err := url.Parse(st.DashboardURL)
	if err != nil {
		return a, err
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	page := "/fixes/" + a.FixRunID
	// Sign in: the dashboard sends the browser to the emulator's
	// authorize page, which signs DemoAdmin in and returns to the page.
	body, res, err := fetch(ctx, c, http.MethodGet, base.JoinPath("auth", "login").String()+"?return="+url.QueryEscape(page), nil, "")
	if err != nil {
		return a, fmt.Errorf("approve: sign-in: %w", err)
	}
	if res.StatusCode != http.StatusOK || res.Request.URL.Path != page {
		return a, fmt.Errorf("approve: sign-in as %s ended at %s with %d: %s", DemoAdmin, res.Request.URL.Path, res.StatusCode, pageMessage(body))
	}
	if _, gres, err := fetch(ctx, c, http.MethodGet, base.JoinPath("admin", "grants").String(), nil, ""); err == nil {
		a.Grants = gres.StatusCode
	}
	form, problems, err := decisionForm(body)
	if err != nil {
		return a, fmt.Errorf("approve: %s: %w", page, err)
	}
	if form == nil {
		return a, fmt.Errorf("approve: the dashboard offers no decision for fix run %s: %s", a.FixRunID, strings.Join(problems, " "))
	}
	if form.Get("patch_sha256") != a.PatchSHA256 || form.Get("base_sha") != a.BaseSHA {
		return a, fmt.Errorf("approve: the page shows patch %s on %s, the run stores %s on %s", form.Get("patch_sha256"),
			form.Get("base_sha"), a.PatchSHA256, a.BaseSHA)
	}
	form.Set("decision", "approve")
	form.Set("note", "approved by quavon dev --approve as "+DemoAdmin)
	body, res, err = fetch(ctx, c, http.MethodPost, base.JoinPath("fixes", a.FixRunID, "decision").String(),
		strings.NewReader(form.Encode()), base.Scheme+"://"+base.Host)
	if err != nil {
		return a, fmt.Errorf("approve: decision: %w", err)
	}
	if res.StatusCode != http.StatusOK || res.Request.URL.Path != page {
		return a, fmt.Errorf("approve: the dashboard refused the approval (%d): %s", res.StatusCode, pageMessage(body))
	}
	if err := conn.QueryRow(ctx, `SELECT status FROM fix_runs WHERE id = $1`, a.FixRunID).Scan(&a.Status); err != nil {
		return a, fmt.Errorf("approve: %w", err)
	}
	if a.Status == "awaiting_approval" {
		return a, fmt.Errorf("approve: the dashboard answered, but fix run %s still awaits approval", a.FixRunID)
	}
	return a, nil
}

// fetch sends one request and reads the answer (capped).
func fetch(ctx context.Context, c *http.Client, method, u string, form io.Reader, origin string) ([]byte, *http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, form)
	if err != nil {
		return nil, nil, err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", origin)
	}
	res, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, MaxPage))
	return b, res, err
}

// decisionForm reads the hidden fields of the fix run page's decision form
// (form.decision), or, when the page shows none, the problems it lists
// instead (ul.problems).
func decisionForm(page []byte) (url.Values, []string, error) {
	doc, err := html.Parse(strings.NewReader(string(page)))
	if err != nil {
		return nil, nil, err
	}
	var form url.Values
	var problems []string
	var walk func(n *html.Node, inForm, inProblems bool)
	walk = func(n *html.Node, inForm, inProblems bool) {
		if n.Type == html.ElementNode {
			switch {
			case n.Data == "form" && hasClass(n, "decision"):
				inForm, form = true, url.Values{}
			case n.Data == "ul" && hasClass(n, "problems"):
				inProblems = true
			case n.Data == "input" && inForm && attr(n, "type") == "hidden":
				form.Set(attr(n, "name"), attr(n, "value"))
			case n.Data == "li" && inProblems:
				problems = append(problems, strings.TrimSpace(text(n)))
			}
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			walk(ch, inForm, inProblems)
		}
	}
	walk(doc, false, false)
	if form != nil && form.Get("form_token") == "" {
		return nil, nil, errors.New("the decision form has no form token")
	}
	return form, problems, nil
}

// pageMessage is the error a dashboard page shows (p.error), or its text.
func pageMessage(page []byte) string {
	doc, err := html.Parse(strings.NewReader(string(page)))
	if err != nil {
		return ""
	}
	var msg string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "p" && hasClass(n, "error") && msg == "" {
			msg = strings.TrimSpace(text(n))
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			walk(ch)
		}
	}
	walk(doc)
	if msg == "" {
		msg = strings.Join(strings.Fields(text(doc)), " ")
		if len(msg) > 300 {
			msg = msg[:300] + "…"
		}
	}
	return msg
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, class string) bool {
	for _, c := range strings.Fields(attr(n, "class")) {
		if c == class {
			return true
		}
	}
	return false
}

func text(n *html.Node) string {
	if n.Type == html.TextNode {
		return n.Data
	}
	var b strings.Builder
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		if ch.Type == html.ElementNode && (ch.Data == "script" || ch.Data == "style") {
			continue
		}
		b.WriteString(text(ch))
	}
	return b.String()
}

// WaitFixPR waits up to wait for the Fixer's draft pull request of issue n
// (head branch quavon/fix-<n>-…) to appear on the emulator; it fails at
// once when the fix run fails instead.
func (st *Stack) WaitFixPR(ctx context.Context, n int, runID string, wait time.Duration) (Pull, error) {
	conn, err := pgx.Connect(ctx, st.DatabaseURL)
	if err != nil {
		return Pull{}, err
	}
	defer conn.Close(ctx)
	prefix := fmt.Sprintf("quavon/fix-%d-", n)
	deadline := time.Now().Add(wait)
	for {
		var got struct{ Pulls []Pull }
		var sb strings.Builder
		if err := st.Control(ctx, http.MethodGet, "/pulls", &sb); err != nil {
			return Pull{}, err
		}
		if err := json.Unmarshal([]byte(sb.String()), &got); err != nil {
			return Pull{}, fmt.Errorf("GET /pulls: %w", err)
		}
		for _, p := range got.Pulls {
			if strings.HasPrefix(p.Head, prefix) {
				return p, nil
			}
		}
		var status string
		var reason *string
		if err := conn.QueryRow(ctx, `SELECT status, reason::text FROM fix_runs WHERE id = $1`, runID).Scan(&status, &reason); err != nil {
			return Pull{}, err
		}
		if status == "failed" || status == "rejected" || status == "expired" {
			why := ""
			if reason != nil {
				why = " (" + *reason + ")"
			}
			return Pull{}, fmt.Errorf("the fix run is %s%s: no pull request (see the publisher's log)", status, why)
		}
		if time.Now().After(deadline) {
			return Pull{}, fmt.Errorf("no draft pull request for issue #%d within %s; the fix run is %s (see the publisher's log)", n, wait, status)
		}
		select {
		case <-ctx.Done():
			return Pull{}, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
