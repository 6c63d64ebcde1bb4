package tokenbroker

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"strings"
)

// Listen opens the broker's listener: "unix:/path" (a stale socket there is
// replaced; the socket is made 0660, so only its owner and group connect),
// or "ip:port" where ip is a loopback or private (RFC 1918, ULA) address.
// A wildcard, public or link-local address, or a host name, is refused: the
// broker must not be reachable from outside the deployment's own networks.
func Listen(addr string) (net.Listener, error) {
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		if path == "" || !strings.HasPrefix(path, "/") {
			return nil, fmt.Errorf("broker listen address %q: want an absolute socket path", addr)
		}
		if fi, err := os.Lstat(path); err == nil {
			if fi.Mode().Type() != fs.ModeSocket {
				return nil, fmt.Errorf("broker listen address %q: exists and is not a socket", addr)
			}
			if err := os.Remove(path); err != nil {
				return nil, err
			}
		}
		ln, err := net.Listen("unix", path)
		if err != nil {
			return nil, err
		}
		if err := os.Chmod(path, 0o660); err != nil {
			ln.Close()
			return nil, err
		}
		return ln, nil
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, fmt.Errorf("broker listen address %q: want unix:/path or ip:port", addr)
	}
	if err := checkListenAddr(ap.Addr()); err != nil {
		return nil, fmt.Errorf("broker listen address %q: %w", addr, err)
	}
	return net.Listen("tcp", ap.String())
}

func checkListenAddr(a netip.Addr) error {
	a = a.Unmap()
	switch {
	case a.IsUnspecified():
		return errors.New("a wildcard address listens on every interface")
	case a.IsLoopback(), a.IsPrivate():
		return nil
	}
	return errors.New("only loopback or private addresses")
}
