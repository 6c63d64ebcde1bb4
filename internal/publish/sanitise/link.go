package sanitise

import (
	"net/url"
	"path"
	"strings"
)

// allowedURL decides whether a link destination (already literal: escapes
// and references resolved) stays a link, and returns the form Quavon writes:
// rebuilt from its parts, so that nothing in the original spelling survives
// that a browser or GitHub could read differently from net/url.
//
// Only absolute https URLs on the configured host whose cleaned path is the
// repository itself or beneath it (/<owner>/<repo>/…, compared
// case-insensitively as GitHub does) are allowed. Relative links are refused:
// GitHub resolves them against the page they are shown on, so "../../x"
// under a pull request leaves the repository.
func (s *Sanitiser) allowedURL(dest string) (string, bool) {
	if dest == "" || len(dest) > maxURLBytes {
		return "", false
	}
	for _, r := range dest {
		// Browsers treat a backslash as a slash in special schemes and drop
		// tabs and newlines; net/url does neither.
		if r <= ' ' || r == 0x7f || r == '\\' || Invisible(r) {
			return "", false
		}
	}
	u, err := url.Parse(dest)
	if err != nil || u.Opaque != "" || u.User != nil || !strings.EqualFold(u.Scheme, "https") ||
		!strings.EqualFold(u.Host, s.host) {
		return "", false
	}
	p := u.Path
	if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "\\\x00") {
		return "", false
	}
	clean := path.Clean(p)
	seg := strings.SplitN(clean, "/", 4) // "", owner, repo, rest
	if len(seg) < 3 || !strings.EqualFold(seg[1], s.owner) || !strings.EqualFold(seg[2], s.repo) {
		return "", false
	}
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	out := url.URL{Scheme: "https", Host: s.host, Path: clean, Fragment: u.Fragment}
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			return "", false
		}
		out.RawQuery = q.Encode()
	}
	res := out.String()
	// Parentheses would have to balance inside a Markdown destination, and
	// the rest must never end it or start a title.
	res = strings.NewReplacer("(", "%28", ")", "%29").Replace(res)
	if strings.ContainsAny(res, " <>\"`\\[]") {
		return "", false
	}
	return res, true
}

const maxURLBytes = 2048
