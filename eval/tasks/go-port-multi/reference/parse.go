package netcfg

import (
	"fmt"
	"strconv"
	"strings"
)

// ParsePort parses a port number as written in a config file.
func ParsePort(s string) (int, error) {
	p, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || !ValidPort(p) {
		return 0, fmt.Errorf("bad port %q", s)
	}
	return p, nil
}
