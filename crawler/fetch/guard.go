package fetch

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
)

// guard refuses connections to internal addresses (FETCH_BLOCK_PRIVATE),
// except to the allowed networks (FETCH_ALLOWED_NETWORKS). It checks the
// address each connection is about to be made to (dialer's Control hook),
// so names that resolve inside, DNS rebinding, redirects and robots.txt
// loads are all covered; and, before any request is sent, hosts written
// as addresses (in any numeric form) or localhost names, which is all it
// can check when a proxy resolves the names.
type guard struct {
	off     bool // AllowPrivate
	allowed []netip.Prefix
}

// newGuard returns the guard for cfg. Allowed networks written as
// IPv4-mapped IPv6 (::ffff:10.0.0.0/104) are taken as the IPv4 networks
// they are.
func newGuard(cfg Config) *guard {
	g := &guard{off: cfg.AllowPrivate}
	for _, p := range cfg.AllowedNetworks {
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		g.allowed = append(g.allowed, p.Masked())
	}
	return g
}

// blockedV4 and blockedV6 are the ranges refused besides those netip names
// (loopback, private, link-local, multicast, unspecified), with the reason
// given.
var (
	blockedV4 = []struct {
		prefix netip.Prefix
		reason string
	}{
		{netip.MustParsePrefix("0.0.0.0/8"), "a this-network address"}, // 0.0.0.0 reaches the local host
		{netip.MustParsePrefix("100.64.0.0/10"), "a shared (CGNAT) address"},
		{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol address"},
		{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
		{netip.MustParsePrefix("255.255.255.255/32"), "the broadcast address"},
		{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
	}
	blockedV6 = []struct {
		prefix netip.Prefix
		reason string
	}{
		{netip.MustParsePrefix("fec0::/10"), "a site-local address"},
		{netip.MustParsePrefix("64:ff9b:1::/48"), "a local NAT64 address"},
		{netip.MustParsePrefix("100::/64"), "a discard-only address"},
	}
	// ipv4Compatible (::a.b.c.d, deprecated) and nat64 (64:ff9b::a.b.c.d)
	// carry an IPv4 address in their last 32 bits.
	ipv4Compatible = netip.MustParsePrefix("::/96")
	nat64          = netip.MustParsePrefix("64:ff9b::/96")
)

// blockedReason says why addr is internal ("a loopback address"), or ""
// when it is not. IPv4-mapped, IPv4-compatible and NAT64 IPv6 addresses
// are judged by the IPv4 address they carry.
func blockedReason(addr netip.Addr) string {
	addr = addr.WithZone("")
	if addr.Is4In6() {
		if r := blockedReason(addr.Unmap()); r != "" {
			return r + " (IPv4-mapped)"
		}
		return ""
	}
	switch {
	case addr.IsUnspecified():
		return "the unspecified address"
	case addr.IsLoopback():
		return "a loopback address"
	case addr.IsPrivate():
		return "a private address"
	case addr.IsLinkLocalUnicast():
		return "a link-local address"
	case addr.IsMulticast():
		return "a multicast address"
	}
	if addr.Is4() {
		for _, b := range blockedV4 {
			if b.prefix.Contains(addr) {
				return b.reason
			}
		}
		return ""
	}
	for _, embedding := range []netip.Prefix{ipv4Compatible, nat64} {
		if embedding.Contains(addr) {
			b := addr.As16()
			if r := blockedReason(netip.AddrFrom4([4]byte(b[12:]))); r != "" {
				return r + " (embedded in " + addr.String() + ")"
			}
			if embedding == ipv4Compatible {
				return "an IPv4-compatible address"
			}
		}
	}
	for _, b := range blockedV6 {
		if b.prefix.Contains(addr) {
			return b.reason
		}
	}
	return ""
}

// checkAddr refuses addr when it is internal and not allowed.
func (g *guard) checkAddr(addr netip.Addr) error {
	if g.off {
		return nil
	}
	reason := blockedReason(addr)
	if reason == "" || g.allows(addr) {
		return nil
	}
	return fmt.Errorf("%w: %s is %s (FETCH_BLOCK_PRIVATE; FETCH_ALLOWED_NETWORKS lets chosen networks through)",
		ErrForbiddenAddress, addr.WithZone(""), reason)
}

// allows reports whether an allowed network holds addr (IPv4-mapped
// addresses count as their IPv4 address).
func (g *guard) allows(addr netip.Addr) bool {
	addr = addr.WithZone("")
	for _, p := range g.allowed {
		if p.Contains(addr) || p.Contains(addr.Unmap()) {
			return true
		}
	}
	return false
}

// checkHost refuses a URL host that is an internal address however it is
// written (127.0.0.1, [::ffff:127.0.0.1], 127.1, 2130706433, 0x7f.1,
// 0177.0.0.1) or a localhost name (localhost, *.localhost), which resolve
// to loopback whatever DNS says. Other names are checked when they are
// dialled.
func (g *guard) checkHost(host string) error {
	if g.off {
		return nil
	}
	if addr, ok := hostAddr(host); ok {
		return g.checkAddr(addr)
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if name != "localhost" && !strings.HasSuffix(name, ".localhost") {
		return nil
	}
	if g.allows(netip.IPv6Loopback()) || g.allows(netip.AddrFrom4([4]byte{127, 0, 0, 1})) {
		return nil // where it resolves to is checked when it is dialled
	}
	return fmt.Errorf("%w: %s is a loopback name (FETCH_BLOCK_PRIVATE; FETCH_ALLOWED_NETWORKS lets chosen networks through)",
		ErrForbiddenAddress, host)
}

// hostAddr reads a URL host (without port or brackets) as an IP address:
// IPv6 (with or without a zone), or IPv4 in any form inet_aton and the URL
// standard accept: 1 to 4 parts, each decimal, octal (leading 0) or hex
// (0x), the last filling the remaining bytes; one trailing dot allowed.
func hostAddr(host string) (netip.Addr, bool) {
	if addr, err := netip.ParseAddr(host); err == nil {
		return addr, true
	}
	parts := strings.Split(strings.TrimSuffix(host, "."), ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var v uint64
	for i, part := range parts {
		n, ok := parseIPv4Part(part)
		if !ok {
			return netip.Addr{}, false
		}
		if i < len(parts)-1 {
			if n > 0xff {
				return netip.Addr{}, false
			}
			v |= n << (8 * (3 - i))
			continue
		}
		if n >= 1<<(8*(4-i)) {
			return netip.Addr{}, false
		}
		v |= n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// parseIPv4Part parses one part of a numeric IPv4 host.
func parseIPv4Part(s string) (uint64, bool) {
	base := 10
	switch {
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		s, base = s[2:], 16
		if s == "" {
			return 0, true // "0x" is 0 in the URL standard
		}
	case len(s) > 1 && s[0] == '0':
		s, base = s[1:], 8
	case s == "":
		return 0, false
	}
	n, err := strconv.ParseUint(s, base, 64)
	if err != nil || strings.ContainsAny(s, "+-_") {
		return 0, false
	}
	return n, n <= 0xffffffff
}

// control is the dialer's Control hook: it refuses to connect to an
// internal address, whatever name led there.
func (g *guard) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot read the address %q being dialled", ErrForbiddenAddress, address)
	}
	return g.checkAddr(ap.Addr())
}

// hop carries one request's proxy decision from fetch to the transport's
// Proxy and DialContext, which see only the request and its context.
type hop struct {
	proxy *url.URL // nil: connect directly
}

type hopKey struct{}

func withHop(ctx context.Context, h *hop) context.Context { return context.WithValue(ctx, hopKey{}, h) }

func hopOf(ctx context.Context) *hop {
	h, _ := ctx.Value(hopKey{}).(*hop)
	return h
}

// proxyAddr is the host:port a transport dials for proxy u.
func proxyAddr(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	port := map[string]string{"http": "80", "https": "443", "socks5": "1080", "socks5h": "1080"}[u.Scheme]
	return net.JoinHostPort(u.Hostname(), port)
}
