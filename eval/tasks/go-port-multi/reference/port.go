package netcfg

// ValidPort says whether p is a TCP port number.
func ValidPort(p int) bool { return p > 0 && p <= 65535 }
