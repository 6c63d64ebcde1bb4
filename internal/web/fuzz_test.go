package web

import (
	"net/url"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/patch"
)

// The return path after sign-in is attacker-chosen: whatever it is, the
// browser stays on this origin and off the sign-in endpoints.
func FuzzSafeReturn(f *testing.F) {
	for _, s := range []string{"/repos", "//evil.example", "/\\evil", "https://evil.example", "/%2F%2Fevil", "/a/../../b", "/auth/login",
		"/repos?x=1#f", "\x00/", "/ok\r\nLocation: x", "/./auth/../auth/callback"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got := safeReturn(raw)
		if got == "/" {
			return
		}
		u, err := url.Parse(got)
		switch {
		case err != nil:
			t.Fatalf("%q → unparsable %q", raw, got)
		case !strings.HasPrefix(got, "/") || strings.HasPrefix(got, "//") || strings.ContainsAny(got, "\\\r\n\x00"):
			t.Fatalf("%q → %q", raw, got)
		case u.Scheme != "" || u.Host != "" || strings.HasPrefix(u.Path, "//") || strings.HasPrefix(u.Path, "/auth/"):
			t.Fatalf("%q → %q leaves the origin or returns to sign-in", raw, got)
		}
	})
}

// A diff holds repository and model text: every rendering escapes it.
func FuzzRenderDiff(f *testing.F) {
	base := patch.MapBase(map[string]patch.MapFile{"a.go": {Content: "package a\n"}})
	d, _ := patch.RenderDiff([]patch.FixFileChange{{Path: "a.go", Operation: patch.OpModify, BaseBlobSHA: patch.BlobSHA([]byte("package a\n")),
		NewContent: "package a // <b>\n", Mode: patch.ModeFile}}, base)
	f.Add(d, false)
	f.Add("diff --git a/x b/x\n+++ b/\"<img>\"\n@@ -1 +1 @@\n-<script>\n+</td><tr>\n", true)
	f.Fuzz(func(t *testing.T, diff string, plain bool) {
		files, _, _ := renderDiff(diff, nil, plain)
		for _, fl := range files {
			for _, l := range fl.Lines {
				if strings.Contains(string(l.HTML), "<") && !strings.Contains(string(l.HTML), `<span class="c-`) {
					t.Fatalf("unescaped markup: %q", l.HTML)
				}
				stripped := strings.NewReplacer(`<span class="`, "", `">`, "", `</span>`, "").Replace(string(l.HTML))
				if strings.ContainsAny(stripped, "<>") {
					t.Fatalf("unescaped markup: %q", l.HTML)
				}
			}
			rows := strings.NewReplacer(`<tr class="`, "", `<td class="`, "", `<td colspan="4">`, "", `</td>`, "", `</tr>`, "",
				`<span class="`, "", `">`, "", `</span>`, "").Replace(string(fl.Rows))
			if strings.ContainsAny(rows, "<>") {
				t.Fatalf("unescaped markup in rows: %q", fl.Rows)
			}
		}
	})
}
