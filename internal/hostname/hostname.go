// Package hostname is the one definition of a host name Quavon accepts where
// a name, never an address, is meant: registry allowlists (instance and
// repository policy), sandbox jobs' egress hosts, egress grants and the
// proxy's CONNECT targets all use Validate, so they cannot disagree.
package hostname

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

var labelRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Validate accepts a lowercase, fully qualified DNS host name: no IP literal
// in any form a resolver reads as one (see EndsInNumber), no port, wildcard,
// trailing dot or IDN in Unicode form.
func Validate(h string) error {
	if len(h) == 0 || len(h) > 253 {
		return errors.New("host: want 1-253 bytes")
	}
	labels := strings.Split(h, ".")
	if len(labels) < 2 {
		return fmt.Errorf("host %q: want a fully qualified name", clip(h))
	}
	for _, l := range labels {
		if !labelRE.MatchString(l) {
			return fmt.Errorf("host %q: want lowercase letters, digits and inner hyphens per label", clip(h))
		}
	}
	if EndsInNumber(h) {
		return fmt.Errorf("host %q: IP literals are not host names", clip(h))
	}
	return nil
}

// EndsInNumber reports whether h's last label is a number in any base
// inet_aton and the WHATWG URL parser accept (decimal, octal with a leading
// 0, hex with 0x): such a host is an IPv4 address to them, never a name.
func EndsInNumber(h string) bool {
	last := h[strings.LastIndexByte(h, '.')+1:]
	if rest, ok := strings.CutPrefix(last, "0x"); ok {
		return strings.Trim(rest, "0123456789abcdef") == ""
	}
	return last != "" && strings.Trim(last, "0123456789") == ""
}

// clip keeps error messages short (a host may be attacker-chosen) without
// cutting a rune in half.
func clip(s string) string {
	const n = 40
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
