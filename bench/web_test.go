package bench

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/repos"
	"github.com/quavon/quavon/internal/web"
	"github.com/quavon/quavon/internal/web/webtest"
)

// BenchmarkApprovalPage: the fix run's approval page for a 300-line,
// 10-file patch (a Makefile and nine Go files, 30 changed lines each),
// rendered server-side (the handler with its database reads, in process)
// with the diff syntax-highlighted (chroma, the page's default) against the
// same page with the diff as plain preformatted text (?view=plain),
// interleaved in one run. Highlighted is measured twice: as served (the
// dashboard keeps a patch's highlighted rendering, keyed by the diff's
// SHA-256, so only the first view of a patch highlights it) and cold (a
// dashboard without that cache: every view highlights), and side by side
// (?view=split, from the same cached rendering). Goal: p95 highlighted
// (either view) ≤ 3× p95 plain and ≤ 50 ms.
func BenchmarkApprovalPage(b *testing.B) {
	f := webtest.New(b, webtest.Options{})
	f.AddUser(b, "alice", "write", repos.RoleReview)
	c := f.Client(b)
	resp := f.SignIn(b, c, "alice", "/repos")
	resp.Body.Close()
	u, _ := url.Parse(f.URL)
	var cookie *http.Cookie
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == "__Host-quavon-session" {
			cookie = ck
		}
	}
	if cookie == nil {
		b.Fatal("no session")
	}
	changes, base := webtest.FixPatch(10, 30, "fixed")
	fr := f.NewFixRun(b, 1, changes, base, time.Now().Add(time.Hour))
	h, cold := f.Web.Handler(), f.NewServer(b, web.WithoutDiffCache()).Handler()
	render := func(query string) time.Duration {
		return serve(b, h, fr.ID, query, cookie)
	}
	renderCold := func() time.Duration { return serve(b, cold, fr.ID, "", cookie) }
	var hi, plain, coldHi, split []time.Duration
	for range 10 { // warm up
		render("")
		render("?view=plain")
		render("?view=split")
		renderCold()
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		hi = append(hi, render(""))
		plain = append(plain, render("?view=plain"))
		split = append(split, render("?view=split"))
		coldHi = append(coldHi, renderCold())
	}
	b.StopTimer()
	p95 := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[(len(s)*95)/100]
	}
	ph, pp, pc, ps := p95(hi), p95(plain), p95(coldHi), p95(split)
	b.ReportMetric(float64(ph.Microseconds())/1000, "p95-highlighted-ms")
	b.ReportMetric(float64(pc.Microseconds())/1000, "p95-cold-ms")
	b.ReportMetric(float64(pp.Microseconds())/1000, "p95-plain-ms")
	b.ReportMetric(float64(ph)/float64(pp), "ratio")
	b.ReportMetric(float64(pc)/float64(pp), "cold-ratio")
	b.ReportMetric(float64(ps.Microseconds())/1000, "p95-split-ms")
	b.ReportMetric(float64(ps)/float64(pp), "split-ratio")
	b.Logf("approval page, 10 files / 300 changed lines, n=%d: p95 highlighted %s (cold %s, side by side %s), plain %s; ratio %.2f× (cold %.2f×, side by side %.2f×); goal ≤ 3× and ≤ 50 ms",
		b.N, ph, pc, ps, pp, float64(ph)/float64(pp), float64(pc)/float64(pp), float64(ps)/float64(pp))
}

func serve(b *testing.B, h http.Handler, id, query string, cookie *http.Cookie) time.Duration {
	req := httptest.NewRequest(http.MethodGet, "https://quavon.test/fixes/"+id+query, nil)
	req.AddCookie(cookie)
	rec := httptest.NewRecorder()
	start := time.Now()
	h.ServeHTTP(rec, req)
	d := time.Since(start)
	if rec.Code != http.StatusOK {
		b.Fatalf("%s: %d", query, rec.Code)
	}
	return d
}
