package transport

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nri-grpc/nri-grpc/internal/sockets"
	"github.com/nri-grpc/nri-grpc/internal/untrusted"
)

// isNetworkEndpoint reports whether endpoint names a TCP address rather
// than a unix socket.
func isNetworkEndpoint(endpoint string) bool {
	return endpoint != "" && !strings.HasPrefix(endpoint, "unix:") && !strings.HasPrefix(endpoint, "/")
}

// SplitTCPEndpoint returns the host and port of a TCP plugin endpoint:
// "dns:///host:port", "tcp://host:port" or "host:port", the host a name or
// an IP address (IPv6 in brackets), the port a number from 1 to 65535. The
// unspecified addresses (0.0.0.0, ::) are refused: they name no plugin and
// would reach the node itself. A Dialer dials exactly this host and port;
// an Authorizer that restricts TCP hosts should check what this returns.
func SplitTCPEndpoint(endpoint string) (host, port string, err error) {
	bad := func() (string, string, error) {
		return "", "", fmt.Errorf("%s is not \"dns:///host:port\", \"tcp://host:port\" or \"host:port\"", untrusted.Quote(endpoint))
	}
	hostport := endpoint
	for _, prefix := range []string{"dns:///", "tcp://"} {
		if rest, ok := strings.CutPrefix(endpoint, prefix); ok {
			hostport = rest
			break
		}
	}
	host, port, err = net.SplitHostPort(hostport)
	if err != nil || host == "" || strings.Contains(hostport, "/") {
		return bad()
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return "", "", fmt.Errorf("%s: the port %s is not a number from 1 to 65535", untrusted.Quote(endpoint), untrusted.Quote(port))
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Unmap().IsUnspecified() {
			return "", "", fmt.Errorf("%s: %s is the unspecified address, not a plugin's", untrusted.Quote(endpoint), host)
		}
		return host, port, nil
	}
	if !validHostName(host) {
		return "", "", fmt.Errorf("%s: %s is neither an IP address nor a host name", untrusted.Quote(endpoint), untrusted.Quote(host))
	}
	return host, port, nil
}

// validHostName accepts host names: at most 253 bytes of dot-separated
// labels of letters, digits, '-' and '_', each 1 to 63 bytes long.
func validHostName(s string) bool {
	if len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// unixPath applies the endpoint policy to a unix endpoint and returns the
// socket path: "unix://" and an absolute path, inside dir after cleaning,
// short enough for a socket address. It looks at the string only; the
// dialer resolves the path without following symbolic links.
func unixPath(endpoint, dir string) (string, error) {
	if endpoint == "" {
		return "", errors.New("must not be empty for a remote plugin")
	}
	if !strings.HasPrefix(endpoint, "unix://") {
		return "", fmt.Errorf("%q is not a unix:// target; only unix sockets in %s are allowed", endpoint, dir)
	}
	path := strings.TrimPrefix(endpoint, "unix://")
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("%q is not an absolute path", path)
	}
	clean := filepath.Clean(path)
	dir = filepath.Clean(dir)
	if !strings.HasPrefix(clean, dir+string(filepath.Separator)) {
		return "", fmt.Errorf("%q is outside the plugin socket directory %s", clean, dir)
	}
	if len(clean) > sockets.MaxPathLen {
		return "", fmt.Errorf("%q is longer than the %d bytes a unix socket path may have", clean, sockets.MaxPathLen)
	}
	return clean, nil
}
