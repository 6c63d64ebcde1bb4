package egress

import (
	"github.com/quavon/quavon/internal/hostname"

	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// Port is the only port the proxy connects to.
const Port = 443

// Outcomes of ParseTarget; each is a 403.
var (
	ErrMalformedTarget = errors.New("malformed target")
	ErrPortNotAllowed  = errors.New("port not allowed")
	ErrIPLiteral       = errors.New("ip literal")
)

// maxTarget bounds the request target: a 253-byte name, ":" and a port.
const maxTarget = 253 + 1 + 5

// ParseTarget parses the authority-form target of a CONNECT request
// ("host:443") and returns the host in lower case. It accepts only a
// fully qualified DNS name that hostname.Validate accepts, with no
// trailing dot, and port 443 written as "443". It refuses, with
// ErrIPLiteral, every spelling of an IP address a resolver might honour:
// bracketed IPv6 (with or without a zone), dotted quads, and the inet_aton
// forms whose last label is a number (2130706433, 0177.0.0.1, 0x7f.1,
// 127.1).
func ParseTarget(target string) (host string, err error) {
	if len(target) == 0 || len(target) > maxTarget {
		return "", fmt.Errorf("%w: want host:443", ErrMalformedTarget)
	}
	if strings.HasPrefix(target, "[") {
		return "", fmt.Errorf("%w: bracketed address", ErrIPLiteral)
	}
	i := strings.LastIndexByte(target, ':')
	if i < 0 {
		return "", fmt.Errorf("%w: missing port", ErrMalformedTarget)
	}
	host, port := target[:i], target[i+1:]
	if _, err := netip.ParseAddr(host); err == nil {
		return "", fmt.Errorf("%w: address", ErrIPLiteral)
	}
	for j := 0; j < len(host); j++ {
		if c := host[j]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-') {
			// Also refuses userinfo, percent-encoding, paths and
			// non-ASCII, which Unicode case folding could turn into
			// ASCII (K, U+212A, lowers to k).
			return "", fmt.Errorf("%w: character %q in host", ErrMalformedTarget, c)
		}
	}
	if port == "" || strings.Trim(port, "0123456789") != "" || len(port) > 5 {
		return "", fmt.Errorf("%w: port", ErrMalformedTarget)
	}
	if port != "443" {
		return "", fmt.Errorf("%w: want 443", ErrPortNotAllowed)
	}
	host = asciiLower(host)
	if strings.HasSuffix(host, ".") {
		return "", fmt.Errorf("%w: trailing dot", ErrMalformedTarget)
	}
	if endsInNumber(host) {
		return "", fmt.Errorf("%w: numeric host", ErrIPLiteral)
	}
	if hostname.Validate(host) != nil {
		// Not its message: that quotes the host, which the log must not
		// hold in part (a client may send its token as the target).
		return "", fmt.Errorf("%w: want a fully qualified host name", ErrMalformedTarget)
	}
	return host, nil
}

// endsInNumber reports whether h's last label is a number in any base
// inet_aton and the WHATWG URL parser accept (decimal, octal with a leading
// 0, hex with 0x): such a host is an IPv4 address to them, never a name.
func endsInNumber(h string) bool {
	last := h[strings.LastIndexByte(h, '.')+1:]
	if rest, ok := strings.CutPrefix(last, "0x"); ok {
		return strings.Trim(rest, "0123456789abcdef") == ""
	}
	return last != "" && strings.Trim(last, "0123456789") == ""
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
