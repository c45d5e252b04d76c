package policy

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// tcpHosts is a compiled tcp_hosts list: the hosts a TCP plugin endpoint
// may name. An IP address matches the prefixes (an address is a prefix of
// its full length); a host name matches the names, literally and without
// regard to case, and is never resolved to be checked against the
// prefixes: what a name resolves to is decided by whoever runs its DNS, at
// dial time, so only an operator who lists the name trusts that.
type tcpHosts struct {
	prefixes []netip.Prefix
	names    []string // lower case
}

// add adds the hosts of o.
func (h *tcpHosts) add(o tcpHosts) {
	h.prefixes = append(h.prefixes, o.prefixes...)
	h.names = append(h.names, o.names...)
}

// allows reports whether host, as transport.SplitTCPEndpoint returns it, is
// in the list. An IPv4-mapped IPv6 address is its IPv4 address (which is
// what it dials); an address with a zone matches no prefix.
func (h tcpHosts) allows(host string) bool {
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap()
		return slices.ContainsFunc(h.prefixes, func(p netip.Prefix) bool { return p.Contains(ip) })
	}
	return slices.Contains(h.names, strings.ToLower(host))
}

// compileTCPHosts compiles r's tcp_hosts into out. A rule that grants the
// "tcp" endpoint form must list its hosts, and a rule that lists hosts
// must grant "tcp": either mistake is a configuration error rather than a
// rule that silently allows every host or none.
func compileTCPHosts(out *rule, r Rule, key func(string) string) error {
	tcp := out.grants&GrantTCP != 0
	switch {
	case tcp && len(r.TCPHosts) == 0:
		return &RuleError{Key: key("tcp_hosts"), Err: fmt.Errorf(
			"endpoints has \"tcp\" but tcp_hosts is empty: list the hosts the plugins' TCP endpoints may be at: " +
				"IP addresses, CIDRs (\"10.0.0.0/8\", \"fd00::/8\") or host names (\"plugins.example.com\")")}
	case !tcp && len(r.TCPHosts) > 0:
		return &RuleError{Key: key("tcp_hosts"), Err: fmt.Errorf("is set but endpoints lacks \"tcp\"")}
	}
	for i, e := range r.TCPHosts {
		if err := out.tcpHosts.parse(e); err != nil {
			return &RuleError{Key: key(fmt.Sprintf("tcp_hosts[%d]", i)), Err: err}
		}
	}
	return nil
}

// parse adds one tcp_hosts entry: an IP address, a CIDR or a host name.
func (h *tcpHosts) parse(e string) error {
	switch {
	case strings.Contains(e, "/"):
		p, err := netip.ParsePrefix(e)
		if err != nil {
			return fmt.Errorf("%q is not a CIDR (\"10.0.0.0/8\", \"fd00::/8\")", e)
		}
		if p.Addr().Is4In6() {
			return fmt.Errorf("%q: write IPv4 prefixes in IPv4 form", e)
		}
		if p != p.Masked() {
			return fmt.Errorf("%q has bits set past the prefix length; write %q", e, p.Masked().String())
		}
		h.prefixes = append(h.prefixes, p)
		return nil
	case strings.Contains(e, "*"):
		return fmt.Errorf("%q: wildcards are not supported; list each host name, or a CIDR for addresses", e)
	}
	if ip, err := netip.ParseAddr(e); err == nil {
		switch {
		case ip.Zone() != "":
			return fmt.Errorf("%q: addresses with a zone are not supported", e)
		case ip.Is4In6():
			return fmt.Errorf("%q: write IPv4 addresses in IPv4 form (%s)", e, ip.Unmap())
		case ip.IsUnspecified():
			return fmt.Errorf("%q is the unspecified address, not a host", e)
		}
		h.prefixes = append(h.prefixes, netip.PrefixFrom(ip, ip.BitLen()))
		return nil
	}
	if err := checkHostName(e); err != nil {
		return err
	}
	h.names = append(h.names, strings.ToLower(e))
	return nil
}

// checkHostName accepts host names: dot-separated labels of letters,
// digits, '-' and '_' (1 to 63 bytes each, 253 in all), the last one not
// all digits (which would read as a partial IPv4 address to some
// resolvers).
func checkHostName(s string) error {
	if s == "" || len(s) > 253 {
		return fmt.Errorf("%q is not an IP address, a CIDR or a host name", s)
	}
	labels := strings.Split(s, ".")
	for _, label := range labels {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("%q is not an IP address, a CIDR or a host name (write names without a trailing dot)", s)
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return fmt.Errorf("%q is not an IP address, a CIDR or a host name: it contains %q", s, r)
			}
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return fmt.Errorf("%q is not an IP address, and a host name does not end in a number", s)
	}
	return nil
}
