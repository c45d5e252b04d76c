package policy

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nri-grpc/nri-grpc/server"
)

// TestTCPHostAllowList: a TCP endpoint's host must be in the tcp_hosts of
// a rule that grants "tcp" to the identity for that plugin: an address
// inside one of the addresses or CIDRs, a host name listed literally
// (without regard to case). A refusal is PERMISSION_DENIED on the field
// "endpoint" and names the rules.
func TestTCPHostAllowList(t *testing.T) {
	p := mustNew(t, []Rule{
		{Identity: "cert:remote", Plugins: []string{"remote"}, Endpoints: []string{"tcp"},
			TCPHosts: []string{"10.0.0.0/8", "192.0.2.7", "fd00::/8", "Plugins.Example.com"}},
		// Another rule for the same identity and plugin adds its hosts.
		{Identity: "cert:remote", Plugins: []string{"remote"}, Endpoints: []string{"unix", "tcp"}, TCPHosts: []string{"198.51.100.0/24"}},
		// A rule for another plugin lends none of its hosts.
		{Identity: "cert:remote", Plugins: []string{"other"}, Endpoints: []string{"tcp"}, TCPHosts: []string{"203.0.113.0/24"}},
		// A rule that grants "unix" only lends no hosts either.
		{Identity: "cert:remote", Plugins: []string{"remote"}},
	})
	ctx := context.Background()
	id := server.Identity{Name: "cert:remote"}
	for ep, ok := range map[string]bool{
		"tcp://10.1.2.3:443":               true,
		"dns:///10.255.255.255:443":        true,
		"10.0.0.1:443":                     true,
		"tcp://192.0.2.7:443":              true,
		"tcp://[fd12:3456::1]:443":         true,
		"tcp://[::ffff:10.1.2.3]:443":      true, // IPv4-mapped: the IPv4 address
		"tcp://198.51.100.9:443":           true, // through the second rule
		"dns:///plugins.example.com:443":   true,
		"dns:///PLUGINS.example.COM:8443":  true,
		"tcp://11.0.0.1:443":               false, // outside the CIDR
		"tcp://192.0.2.8:443":              false, // next to the address
		"tcp://127.0.0.1:443":              false, // loopback is not in the lists
		"tcp://[::1]:443":                  false,
		"tcp://[fe80::1]:443":              false,
		"tcp://[fd00::1%25eth0]:443":       false, // a zone matches no prefix
		"tcp://[::ffff:127.0.0.1]:443":     false,
		"tcp://203.0.113.1:443":            false, // the other plugin's host
		"dns:///other.example.com:443":     false, // a name not listed
		"dns:///x.plugins.example.com:443": false, // names are literal
		"dns:///localhost:443":             false,
	} {
		err := p.AuthorizeRegistration(ctx, id, reg("10", "remote", ep))
		if ok {
			if err != nil {
				t.Errorf("%s: %v", ep, err)
			}
			continue
		}
		msg := status.Convert(err).Message()
		if status.Code(err) != codes.PermissionDenied || reason(err) != "REGISTRATION_REFUSAL_INVALID_ENDPOINT" ||
			!strings.HasPrefix(msg, "endpoint: ") || !strings.Contains(msg, "policy[0].tcp_hosts, policy[1].tcp_hosts") ||
			strings.Contains(msg, "policy[2]") || !strings.Contains(msg, "is not allowed") {
			t.Errorf("%s: got %v (%s)", ep, err, reason(err))
		}
	}
	// The other plugin gets its own rule's hosts only.
	if err := p.AuthorizeRegistration(ctx, id, reg("10", "other", "tcp://203.0.113.1:443")); err != nil {
		t.Errorf("other plugin, its host: %v", err)
	}
	if err := p.AuthorizeRegistration(ctx, id, reg("10", "other", "tcp://10.1.2.3:443")); status.Code(err) != codes.PermissionDenied ||
		!strings.Contains(err.Error(), "policy[2].tcp_hosts") {
		t.Errorf("other plugin, the first plugin's host: %v", err)
	}
	// Malformed TCP endpoints are INVALID_ARGUMENT.
	for _, ep := range []string{"tcp://10.1.2.3", "tcp://10.1.2.3:0", "tcp://0.0.0.0:443", "dns://1.1.1.1/10.1.2.3:443", "tcp://a b:443"} {
		err := p.AuthorizeRegistration(ctx, id, reg("10", "remote", ep))
		if status.Code(err) != codes.InvalidArgument || reason(err) != "REGISTRATION_REFUSAL_INVALID_ENDPOINT" {
			t.Errorf("%s: got %v", ep, err)
		}
	}
	// The owner may name any host.
	if err := p.AuthorizeRegistration(ctx, unixID(0), reg("10", "remote", "tcp://127.0.0.1:443")); err != nil {
		t.Errorf("owner: %v", err)
	}
	// A launched plugin that no rule names gets every plugin grant for its
	// slot, but no TCP host.
	launched := server.Identity{Name: "launch:10-foo", UID: 0, Unix: true}
	err := mustNew(t, nil).AuthorizeRegistration(ctx, launched, reg("10", "foo", "tcp://10.1.2.3:443"))
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "no [[policy]] entry lists hosts") {
		t.Errorf("launched plugin over TCP: %v", err)
	}
}

func TestTCPHostsRuleErrors(t *testing.T) {
	tcp := func(hosts ...string) []Rule {
		return []Rule{{Identity: "cert:x", Plugins: []string{"x"}, Endpoints: []string{"tcp"}, TCPHosts: hosts}}
	}
	for _, c := range []struct {
		rules []Rule
		key   string
		msg   string
	}{
		{tcp(), "policy[0].tcp_hosts", `endpoints has "tcp" but tcp_hosts is empty`},
		{[]Rule{{Identity: "cert:x", Plugins: []string{"x"}, TCPHosts: []string{"10.0.0.1"}}}, "policy[0].tcp_hosts", `endpoints lacks "tcp"`},
		{tcp("10.0.0.0/8", "10.1.2.3/8"), "policy[0].tcp_hosts[1]", `write "10.0.0.0/8"`},
		{tcp("10.0.0.0/33"), "policy[0].tcp_hosts[0]", "not a CIDR"},
		{tcp("::ffff:10.0.0.0/104"), "policy[0].tcp_hosts[0]", "IPv4 form"},
		{tcp("::ffff:10.0.0.1"), "policy[0].tcp_hosts[0]", "IPv4 form"},
		{tcp("0.0.0.0"), "policy[0].tcp_hosts[0]", "unspecified"},
		{tcp("::"), "policy[0].tcp_hosts[0]", "unspecified"},
		{tcp("fe80::1%eth0"), "policy[0].tcp_hosts[0]", "zone"},
		{tcp("*.example.com"), "policy[0].tcp_hosts[0]", "wildcards"},
		{tcp("plugins.example.com."), "policy[0].tcp_hosts[0]", "trailing dot"},
		{tcp("host name"), "policy[0].tcp_hosts[0]", "contains"},
		{tcp("127.1"), "policy[0].tcp_hosts[0]", "does not end in a number"},
		{tcp(""), "policy[0].tcp_hosts[0]", "not an IP address"},
	} {
		_, err := New(c.rules, Options{})
		var re *RuleError
		if !errors.As(err, &re) || re.Key != c.key || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%+v: got %v, want %s: ...%s...", c.rules[0].TCPHosts, err, c.key, c.msg)
		}
	}
	// What compiles.
	mustNew(t, tcp("10.0.0.0/8", "192.0.2.1", "fd00::/8", "2001:db8::1", "0.0.0.0/0", "::/0", "plugins.example.com", "node-1", "svc_a.internal"))
}
