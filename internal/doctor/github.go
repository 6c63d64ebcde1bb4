package doctor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/llm"
	"github.com/quavon/quavon/internal/llm/provider"
	"github.com/quavon/quavon/internal/secretfile"
)

// WebhookSecrets checks quavon-api's two webhook secrets: the review app's
// must be set, the Fixer app's should be (without it the Fixer's webhooks,
// fix triggers among them, are refused); each a file secretfile.Read
// accepts (regular, not writable by group or others, at least
// github.MinWebhookSecret bytes) and readable by its owner only.
func WebhookSecrets(api config.API) []Result {
	var out []Result
	for _, s := range []struct {
		app, setting, path string
		required           bool
	}{
		{"review", "QUAVON_GITHUB_REVIEW_WEBHOOK_SECRET_FILE", api.ReviewWebhookSecretFile, true},
		{"fixer", "QUAVON_GITHUB_FIXER_WEBHOOK_SECRET_FILE", api.FixerWebhookSecretFile, false},
	} {
		r := Result{Check: "webhook-secret"}
		switch {
		case s.path == "" && s.required:
			r.Status, r.Detail = Fail, fmt.Sprintf("%s is not set: every webhook of the %s app is refused", s.setting, s.app)
			r.Hint = "write the app's webhook secret (quavon github setup wrote it) to a 0600 file and name it in " + s.setting
		case s.path == "":
			r.Status, r.Detail = Warn, fmt.Sprintf("%s is not set: the %s app's webhooks (fix triggers) are refused", s.setting, s.app)
			r.Hint = "set it when the Fixer app is installed"
		default:
			if _, err := secretfile.Read(s.setting, s.path, github.MinWebhookSecret); err != nil {
				r.Status, r.Detail = Fail, err.Error()
				r.Hint = fmt.Sprintf("a regular file, mode 0600 or 0400, holding the %s app's webhook secret (at least %d characters)", s.app, github.MinWebhookSecret)
				break
			}
			fi, err := os.Stat(s.path)
			switch {
			case err != nil:
				r.Status, r.Detail = Fail, err.Error()
			case fi.Mode().Perm()&0o044 != 0:
				r.Status, r.Detail = Warn, fmt.Sprintf("%s: %s is readable by group or others (mode %#o)", s.setting, s.path, fi.Mode().Perm())
				r.Hint = "chmod 0600 " + s.path
			default:
				r.Status, r.Detail = Pass, fmt.Sprintf("the %s app's webhook secret is set (%s, mode %#o)", s.app, s.path, fi.Mode().Perm())
			}
		}
		out = append(out, r)
	}
	return out
}

// Clock skew against GitHub (the Date header of its API's answer):
// installation tokens and app JWTs are dated by GitHub's clock (the
// broker's JWTs are backdated appauth.JWTClockSkew, 60 s), and signed
// sandbox jobs tolerate 30 s between worker and runner, each measured
// against the same reference here.
const (
	SkewWarn = 5 * time.Second
	SkewFail = 30 * time.Second
)

// ClockSkew compares this host's clock with the Date header of GitHub's
// API root (any answer carries one; no token is sent). The header has a
// resolution of a second, so a skew within a second plus half the round
// trip passes as none.
func ClockSkew(ctx context.Context, apiURL string, timeout time.Duration) Result {
	r := Result{Check: "clock-skew"}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, apiURL, nil)
	if err != nil {
		r.Status, r.Detail = Fail, err.Error()
		return r
	}
	sent := time.Now()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		r.Status, r.Detail, r.Hint = Fail, "GitHub's API did not answer: "+err.Error(), "check QUAVON_GITHUB_API_URL and the network path to it"
		return r
	}
	got := time.Now()
	res.Body.Close()
	date, err := http.ParseTime(res.Header.Get("Date"))
	if err != nil {
		r.Status, r.Detail = Warn, fmt.Sprintf("%s answered without a usable Date header (%q)", apiURL, res.Header.Get("Date"))
		return r
	}
	rtt := got.Sub(sent)
	mid := sent.Add(rtt / 2)
	skew := mid.Sub(date.Add(500 * time.Millisecond)) // the header truncates to the second
	abs := skew.Abs() - 500*time.Millisecond - rtt/2
	if abs < 0 {
		abs = 0
	}
	dir := "ahead of"
	if skew < 0 {
		dir = "behind"
	}
	switch {
	case abs >= SkewFail:
		r.Status, r.Detail = Fail, fmt.Sprintf("this host's clock is %s %s GitHub's (%s)", skew.Abs().Round(time.Second), dir, apiURL)
		r.Hint = "synchronise the clock (chrony or systemd-timesyncd); app JWTs and signed sandbox jobs are refused beyond 30-60 s"
	case abs >= SkewWarn:
		r.Status, r.Detail = Warn, fmt.Sprintf("this host's clock is %s %s GitHub's (%s)", skew.Abs().Round(time.Second), dir, apiURL)
		r.Hint = "synchronise the clock (chrony or systemd-timesyncd)"
	default:
		r.Status, r.Detail = Pass, fmt.Sprintf("within %s of GitHub's clock (round trip %s)", SkewWarn, rtt.Round(time.Millisecond))
	}
	return r
}

// Model probes each configured feature's model once (llm.Probe: one tiny
// request offering one tool, within llm.ProbeCeiling); features sharing a
// provider, model and endpoint share the probe. No model configured is a
// warning: the model features are off.
func Model(ctx context.Context, cfg config.LLM, timeout time.Duration) []Result {
	type key struct{ provider, model, base string }
	probed := map[key]Result{}
	var out []Result
	var off []string
	for _, f := range []llm.Feature{llm.FeatureReview, llm.FeatureAcceptance, llm.FeatureFix} {
		fc, err := cfg.Feature(string(f))
		if err != nil {
			out = append(out, Result{Check: "model", Status: Fail, Detail: err.Error()})
			continue
		}
		if fc.Provider == "" {
			off = append(off, string(f))
			continue
		}
		k := key{fc.Provider, fc.Model, fc.BaseURL}
		if r, ok := probed[k]; ok {
			r.Detail = string(f) + ": " + strings.SplitN(r.Detail, ": ", 2)[1]
			out = append(out, r)
			continue
		}
		r := Result{Check: "model"}
		m, err := provider.FromConfig(cfg, f, slog.New(slog.DiscardHandler))
		if err != nil {
			r.Status, r.Detail, r.Hint = Fail, fmt.Sprintf("%s: %v", f, err), "fix the QUAVON_LLM_* settings (quavon llm probe --feature "+string(f)+")"
		} else {
			pctx, cancel := context.WithTimeout(ctx, timeout)
			res, err := llm.Probe(pctx, m)
			cancel()
			var be *llm.BudgetExceededError
			switch {
			case errors.As(err, &be):
				r.Status, r.Detail = Fail, fmt.Sprintf("%s: %s/%s: the probe alone would cost more than %s: %v", f, fc.Provider, fc.Model, llm.ProbeCeiling.Cost, err)
				r.Hint = "check the model's price (QUAVON_LLM_PRICES)"
			case err != nil:
				r.Status, r.Detail = Fail, fmt.Sprintf("%s: %s/%s: %v", f, fc.Provider, fc.Model, err)
				r.Hint = "the model must answer and call tools: check the endpoint, key and model name, or choose a model with tool calling"
			default:
				r.Status, r.Detail = Pass, fmt.Sprintf("%s: %s called the probe tool in %s (%d tokens, %s)", f, res.Model,
					res.Latency.Round(time.Millisecond), res.Usage.Total(), res.Cost)
			}
		}
		probed[k] = r
		out = append(out, r)
	}
	if len(off) == 3 {
		return []Result{{Check: "model", Status: Warn, Detail: "no model configured: reviews by model, acceptance checks and fixes are off",
			Hint: "set QUAVON_LLM_PROVIDER, QUAVON_LLM_MODEL and QUAVON_LLM_API_KEY_FILE (README: Plugging in a model)"}}
	}
	return out
}

// Apps asks the token broker (the only holder of the apps' keys) for each
// app's installations as GitHub reports them and compares each with what
// Quavon registers the app with (github.AppPermissions, github.AppEvents,
// the definitions `quavon github setup` uses): a permission missing or
// below its level, or an event not subscribed to, fails; more than needed
// warns (least privilege); no review app fails, no Fixer app or no
// installation warns.
func Apps(ctx context.Context, cfg config.BrokerClient, timeout time.Duration) []Result {
	cred, err := secretfile.Read("QUAVON_BROKER_CREDENTIAL_FILE", cfg.CredentialFile, 32)
	if err != nil {
		return []Result{{Check: "github-app", Status: Fail, Detail: err.Error(), Hint: "quavon broker credential writes one"}}
	}
	c, err := github.NewBrokerClient(cfg.Addr, cred)
	if err != nil {
		return []Result{{Check: "github-app", Status: Fail, Detail: err.Error()}}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	apps, err := c.Apps(ctx)
	if err != nil {
		return []Result{{Check: "github-app", Status: Fail, Detail: err.Error(), Hint: "start quavon-token-broker (a version that serves GET /v1/apps) or fix QUAVON_BROKER_ADDR"}}
	}
	byKind := map[github.AppKind]github.BrokerApp{}
	for _, a := range apps {
		byKind[a.Kind] = a
	}
	var out []Result
	for _, kind := range []github.AppKind{github.AppReview, github.AppFixer} {
		out = append(out, appResult(kind, byKind[kind], byKind[kind].Kind == kind))
	}
	return out
}

var levelRank = map[string]int{github.LevelRead: 1, github.LevelWrite: 2, github.LevelAdmin: 3}

func appResult(kind github.AppKind, a github.BrokerApp, held bool) Result {
	r := Result{Check: "github-app"}
	name := string(kind) + " app"
	need, events := github.AppPermissions(kind), github.AppEvents(kind)
	switch {
	case !held && kind == github.AppReview:
		r.Status, r.Detail, r.Hint = Fail, "the broker holds no key of the review app", "set QUAVON_GITHUB_REVIEW_APP_ID and …_PRIVATE_KEY_FILE for quavon-token-broker"
		return r
	case !held:
		r.Status, r.Detail, r.Hint = Warn, "the broker holds no key of the Fixer app: fixes are never published", "register it with quavon github setup and give the broker its key"
		return r
	case a.Error != "":
		r.Status, r.Detail, r.Hint = Fail, name+": GitHub did not list its installations: "+a.Error, "check the app id and private key the broker holds"
		return r
	case len(a.Installations) == 0:
		r.Status, r.Detail, r.Hint = Warn, name+": not installed anywhere", "install it on the repositories Quavon should work on"
		return r
	}
	var fails, warns []string
	for _, in := range a.Installations {
		where := fmt.Sprintf("installation %d (%s)", in.ID, in.Account)
		var missing, extra, noEvent []string
		for p, lvl := range need {
			if levelRank[in.Permissions[p]] < levelRank[lvl] {
				got := in.Permissions[p]
				if got == "" {
					got = "none"
				}
				missing = append(missing, fmt.Sprintf("%s: %s (has %s)", p, lvl, got))
			}
		}
		for p, lvl := range in.Permissions {
			if levelRank[lvl] > levelRank[need[p]] {
				extra = append(extra, p+": "+lvl)
			}
		}
		for _, e := range events {
			if !slices.Contains(in.Events, e) {
				noEvent = append(noEvent, e)
			}
		}
		slices.Sort(missing)
		slices.Sort(extra)
		if len(missing) > 0 {
			fails = append(fails, where+" lacks "+strings.Join(missing, ", "))
		}
		if len(noEvent) > 0 {
			fails = append(fails, where+" is not subscribed to "+strings.Join(noEvent, ", "))
		}
		if len(extra) > 0 {
			warns = append(warns, where+" holds more than Quavon needs: "+strings.Join(extra, ", "))
		}
		if in.Suspended {
			warns = append(warns, where+" is suspended")
		}
	}
	switch {
	case len(fails) > 0:
		r.Status, r.Detail = Fail, name+": "+strings.Join(append(fails, warns...), "; ")
		r.Hint = fmt.Sprintf("in the app's settings grant %s and subscribe to %s, then accept the new permissions on each installation",
			need, strings.Join(events, ", "))
	case len(warns) > 0:
		r.Status, r.Detail = Warn, name+": "+strings.Join(warns, "; ")
		r.Hint = "reduce the app's permissions to " + need.String()
	default:
		r.Status, r.Detail = Pass, fmt.Sprintf("%s: %d installation(s) with exactly %s and events %s", name, len(a.Installations), need, strings.Join(events, ", "))
	}
	return r
}
