// Package netguard keeps Proctor from being used to reach internal networks
// (SSRF): agent endpoint URLs are checked when saved, and every connection made
// through a Guard's dialer is checked again against the address actually dialled,
// so a DNS answer that changes between the check and the connection (DNS
// rebinding) is caught too. Hosts an admin lists in PROCTOR_AGENT_ALLOW_HOSTS
// bypass both checks.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"proctor/models"
)

// Field is the form field every refusal is attached to.
const Field = "endpoint_url"

// allowHint ends every refusal, telling the user how to get a host accepted.
const allowHint = "ask an admin to allow-list it with PROCTOR_AGENT_ALLOW_HOSTS"

// lookupTimeout bounds one DNS resolution made by a check.
const lookupTimeout = 5 * time.Second

// errUnresolved is the cause of a refusal because the host name does not
// resolve (Unresolved): unlike the other refusals, it may pass later.
var errUnresolved = errors.New("the host name does not resolve")

// Unresolved reports whether err is the guard's refusal of a host name that
// does not resolve (to any address), rather than of an address it resolves
// to. Callers word it as unreachable, not as refused.
func Unresolved(err error) bool { return errors.Is(err, errUnresolved) }

// unresolved builds the refusal of a host name that does not resolve.
func unresolved(format string, args ...any) *models.Error {
	e := models.FieldError(Field, format, args...)
	e.Err = errUnresolved
	return e
}

// Guard checks URLs and dials connections, refusing non-public addresses.
type Guard struct {
	allow  map[string]bool
	ranges []blockedRange
	// LookupIP resolves a host name to its addresses. New sets it to the given
	// resolver's LookupIP; tests replace it to simulate DNS answers.
	LookupIP func(ctx context.Context, host string) ([]net.IP, error)
	// DialTimeout bounds establishing one TCP connection.
	DialTimeout time.Duration
}

// blockedRange is an address range that is refused, with the reason shown.
type blockedRange struct {
	prefix netip.Prefix
	reason string
}

// New returns a Guard that lets allowHosts (host names or IP addresses, matched
// case-insensitively and exactly) through and refuses every other host that
// resolves to a non-public address. A nil resolver means net.DefaultResolver.
func New(allowHosts []string, resolver *net.Resolver) *Guard {
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	g := &Guard{
		allow:       map[string]bool{},
		ranges:      blockedRanges(),
		DialTimeout: 10 * time.Second,
		LookupIP: func(ctx context.Context, host string) ([]net.IP, error) {
			return resolver.LookupIP(ctx, "ip", host)
		},
	}
	for _, h := range allowHosts {
		if h = canonicalHost(h); h != "" {
			g.allow[h] = true
		}
	}
	return g
}

// blockedRanges lists the ranges refused beyond what netip.Addr's predicates
// (loopback, private, link-local, multicast, unspecified) already recognise.
func blockedRanges() []blockedRange {
	list := []struct{ cidr, reason string }{
		{"0.0.0.0/8", `"this network" address`},
		{"100.64.0.0/10", "carrier-grade NAT address"},
		{"192.0.0.0/24", "reserved (IETF protocol assignment) address"},
		{"198.18.0.0/15", "reserved (benchmarking) address"},
		{"240.0.0.0/4", "reserved address"},
		{"fec0::/10", "private (site-local) address"},
	}
	out := make([]blockedRange, len(list))
	for i, r := range list {
		out[i] = blockedRange{prefix: netip.MustParsePrefix(r.cidr), reason: r.reason}
	}
	return out
}

// metadataHosts are cloud metadata service names refused whatever they resolve to.
func isMetadataHost(host string) bool {
	switch host {
	case "metadata", "metadata.google.internal", "metadata.goog",
		"instance-data", "instance-data.ec2.internal", "metadata.azure.internal":
		return true
	}
	return false
}

// canonicalHost lower-cases a host, drops a trailing dot and brackets, and
// writes IP addresses in their canonical form, so that allow-list entries and
// URL hosts compare equal however they are spelled.
func canonicalHost(h string) string {
	h = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if ip, err := netip.ParseAddr(h); err == nil {
		return ip.Unmap().String()
	}
	return h
}

// Allowed reports whether host is on the admin allow-list.
func (g *Guard) Allowed(host string) bool { return g.allow[canonicalHost(host)] }

// CheckURL validates an agent endpoint URL: http or https, a host, no
// credentials, and — unless the host is allow-listed — every address the host
// resolves to must be public. Refusals are EINVALID errors on the endpoint_url
// field saying what was refused and why.
func (g *Guard) CheckURL(ctx context.Context, raw string) error {
	u, err := models.ParseHTTPURL(raw, "endpoint URL")
	if err != nil {
		return models.FieldError(Field, "%s", models.ErrorMessage(err))
	}
	host := u.Hostname()
	if port := u.Port(); port != "" {
		if _, err := netip.ParseAddrPort("127.0.0.1:" + port); err != nil {
			return models.FieldError(Field, "%q has an invalid port %q", raw, port)
		}
	}
	if g.Allowed(host) {
		return nil
	}
	_, err = g.checkedAddrs(ctx, host)
	return err
}

// checkedAddrs resolves host and returns its addresses, or a refusal when the
// host is a metadata name, a non-canonical numeric form, unresolvable, or when
// any of its addresses is not public.
func (g *Guard) checkedAddrs(ctx context.Context, host string) ([]netip.Addr, error) {
	if err := refusedName(host); err != nil {
		return nil, err
	}
	addrs, err := g.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	for _, ip := range addrs {
		if reason := g.Refused(ip); reason != "" {
			return nil, refusal(host, ip, reason)
		}
	}
	return addrs, nil
}

// refusedName refuses, before any lookup, IPv6 literals with a zone, cloud
// metadata names and numeric hosts that are not canonical IP addresses
// (2130706433, 0x7f.1, 127.1, 0177.0.0.1), because resolvers disagree on what
// those mean.
func refusedName(rawHost string) error {
	host := strings.TrimSuffix(strings.ToLower(rawHost), ".")
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return models.FieldError(Field, "host %q has an IPv6 zone, which only makes sense for link-local addresses; %s", rawHost, allowHint)
		}
		return nil
	}
	if isMetadataHost(host) {
		return models.FieldError(Field, "host %q is a cloud metadata service; %s", rawHost, allowHint)
	}
	if numericLooking(host) {
		return models.FieldError(Field, "host %q looks numeric but is not a canonical IP address; write the address as a.b.c.d", rawHost)
	}
	return nil
}

// resolve turns host into addresses: IP literals as they are, names through
// LookupIP.
func (g *Guard) resolve(ctx context.Context, rawHost string) ([]netip.Addr, error) {
	host := strings.TrimSuffix(strings.ToLower(rawHost), ".")
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip.WithZone("")}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	ips, err := g.LookupIP(ctx, host)
	if err != nil {
		return nil, unresolved("host %q could not be resolved: %s", rawHost, lookupReason(err))
	}
	if len(ips) == 0 {
		return nil, unresolved("host %q resolves to no address", rawHost)
	}
	out := make([]netip.Addr, 0, len(ips))
	for _, ip := range ips {
		a, ok := netip.AddrFromSlice(ip)
		if !ok {
			return nil, models.FieldError(Field, "host %q resolves to a malformed address", rawHost)
		}
		out = append(out, a.Unmap()) // net.IP holds IPv4 in 16 bytes
	}
	return out, nil
}

// lookupReason is the client-safe part of a DNS error.
func lookupReason(err error) string {
	var dnsErr *net.DNSError
	errors.As(err, &dnsErr)
	switch {
	case dnsErr != nil && dnsErr.IsNotFound:
		return "no such host"
	case dnsErr != nil && dnsErr.IsTimeout:
		return "the DNS lookup timed out"
	}
	return "the DNS lookup failed"
}

// numericLooking reports whether host is made only of numeric labels (decimal,
// octal or 0x-hex), or ends in an all-digit label, which no real top-level
// domain does.
func numericLooking(host string) bool {
	labels := strings.Split(host, ".")
	last := labels[len(labels)-1]
	if last != "" && strings.Trim(last, "0123456789") == "" {
		return true
	}
	for _, l := range labels {
		hex, isHex := strings.CutPrefix(l, "0x")
		switch {
		case l == "":
			return false
		case isHex && strings.Trim(hex, "0123456789abcdef") == "":
		case strings.Trim(l, "0123456789") == "":
		default:
			return false
		}
	}
	return true
}

// Refused returns why ip may not be connected to ("loopback address", …), or ""
// when it is a public address. IPv4 addresses embedded in IPv6 (mapped,
// compatible, NAT64, 6to4) are judged by their IPv4 part.
func (g *Guard) Refused(ip netip.Addr) string {
	ip = ip.WithZone("").Unmap()
	switch {
	case g.allow[ip.String()]:
		return "" // an address on the allow-list, whatever name led to it
	case ip.IsUnspecified():
		return "unspecified address"
	case ip.IsLoopback():
		return "loopback address"
	case ip.IsPrivate():
		return "private address"
	case ip.IsLinkLocalUnicast():
		return "link-local address (where cloud metadata services live)"
	case ip.IsMulticast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast():
		return "multicast address"
	case ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "broadcast address"
	}
	for _, r := range g.ranges {
		if r.prefix.Contains(ip) {
			return r.reason
		}
	}
	if v4, ok := embeddedIPv4(ip); ok {
		if reason := g.Refused(v4); reason != "" {
			return reason + " (embedded in IPv6)"
		}
	}
	return ""
}

// embeddedIPv4 extracts the IPv4 address carried by IPv4-compatible (::/96),
// NAT64 (64:ff9b::/96) and 6to4 (2002::/16) IPv6 addresses.
func embeddedIPv4(ip netip.Addr) (netip.Addr, bool) {
	if !ip.Is6() {
		return netip.Addr{}, false
	}
	b := ip.As16()
	switch {
	case netip.MustParsePrefix("::/96").Contains(ip), netip.MustParsePrefix("64:ff9b::/96").Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case netip.MustParsePrefix("2002::/16").Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

// refusal is the error for a host that resolves to a refused address.
func refusal(host string, ip netip.Addr, reason string) error {
	article := "a"
	if strings.ContainsAny(reason[:1], "aeiou") {
		article = "an"
	}
	return models.FieldError(Field, "host %q resolves to %s %s (%s); %s", host, article, reason, ip.Unmap(), allowHint)
}

// errorf formats an internal dial error.
func errorf(format string, args ...any) error { return fmt.Errorf("netguard: "+format, args...) }
