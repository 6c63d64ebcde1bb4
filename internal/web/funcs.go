package web

import (
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

var funcs = template.FuncMap{
	"short": func(s string) string {
		if len(s) > 12 {
			return s[:12]
		}
		return s
	},
	"time": func(t any) string {
		switch v := t.(type) {
		case time.Time:
			return v.UTC().Format("2006-01-02 15:04 UTC")
		case *time.Time:
			if v == nil {
				return "—"
			}
			return v.UTC().Format("2006-01-02 15:04 UTC")
		}
		return ""
	},
	"join": strings.Join,
	"inc":  func(n int) int { return n + 1 },
	"dec":  func(n int) int { return n - 1 },
	"dollar": func(micros int64) string {
		return "$" + strings.TrimRight(strings.TrimRight(formatMicros(micros), "0"), ".")
	},
	"deref": func(p *int) string {
		if p == nil {
			return "—"
		}
		return itoa(*p)
	},
	"ms": func(p *int64) string {
		if p == nil {
			return "—"
		}
		return itoa(int(*p)) + " ms"
	},
}

func itoa(n int) string { return strconv.Itoa(n) }

func intString(n int) string { return strconv.Itoa(n) }

func formatMicros(m int64) string {
	whole, frac := m/1_000_000, m%1_000_000
	s := intString(int(frac))
	for len(s) < 6 {
		s = "0" + s
	}
	return intString(int(whole)) + "." + s
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (s *Server) serveHighlightCSS(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	_, _ = w.Write(highlightCSS())
}
