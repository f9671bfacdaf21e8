package web

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Proxies are the addresses whose forwarding headers are believed: the
// reverse proxies in front of the server (-trusted-proxies). Anyone can
// send X-Forwarded-For; only a proxy we run can be taken at its word.
type Proxies []netip.Prefix

// ParseProxies reads a comma-separated list of addresses and CIDR
// prefixes ("127.0.0.1,10.0.0.0/8,::1").
func ParseProxies(s string) (Proxies, error) {
	var ps Proxies
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !strings.Contains(f, "/") {
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, fmt.Errorf("trusted proxy %q: want an address or a CIDR prefix", f)
			}
			a = a.Unmap()
			ps = append(ps, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: want an address or a CIDR prefix", f)
		}
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		ps = append(ps, p.Masked())
	}
	return ps, nil
}

func (ps Proxies) trusts(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// client is where a request came from, as far as it can be believed: the
// client's address and whether it reached us (or the proxy) over https.
type client struct {
	address string
	https   bool
}

// clientOf reads a request's client. The connection's peer is the client
// unless it is a trusted proxy; then X-Forwarded-For is read from the
// right, past every trusted hop, and the first address not trusted is the
// client (the left of it could be anything the client wrote). Its scheme
// is X-Forwarded-Proto's, from a trusted proxy only.
func (ps Proxies) clientOf(r *http.Request) client {
	c := client{address: peerAddress(r), https: r.TLS != nil}
	peer, err := netip.ParseAddr(c.address)
	if err != nil || !ps.trusts(peer) {
		return c
	}
	if proto := lastField(r.Header.Values("X-Forwarded-Proto")); proto != "" {
		c.https = strings.EqualFold(proto, "https")
	}
	hops := forwardedFor(r.Header.Values("X-Forwarded-For"))
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := hopAddress(hops[i])
		if !ok {
			// Garbage where an address should be: nothing to its left
			// can be believed, and the trusted hop that wrote it stands
			// for the client.
			return c
		}
		c.address = a.String()
		if !ps.trusts(a) {
			return c
		}
	}
	return c
}

type clientKey struct{}

// identify reads the request's client once, before any guard asks.
func (h *handlers) identify(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), clientKey{}, h.TrustedProxies.clientOf(r))))
	})
}

func clientFrom(r *http.Request) client {
	c, _ := r.Context().Value(clientKey{}).(client)
	return c
}

// addressOf is the request's client address: the connection's peer, or
// the client a trusted proxy forwarded.
func addressOf(r *http.Request) string { return clientFrom(r).address }

// overHTTPS says whether the client reached us, or the trusted proxy in
// front of us, over https.
func overHTTPS(r *http.Request) bool { return clientFrom(r).https }

// peerAddress is the address of the connection's other end.
func peerAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Unmap().String()
	}
	return host
}

// forwardedFor splits X-Forwarded-For headers into hops, left to right.
func forwardedFor(values []string) []string {
	var hops []string
	for _, v := range values {
		for _, h := range strings.Split(v, ",") {
			hops = append(hops, strings.TrimSpace(h))
		}
	}
	return hops
}

// hopAddress reads one hop: an address, with or without a port, IPv6 in
// brackets or not.
func hopAddress(h string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(h); err == nil {
		return ap.Addr().Unmap(), true
	}
	if a, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		return a.Unmap(), true
	}
	return netip.Addr{}, false
}

// lastField is the right-most comma-separated value of a header: the one
// the nearest proxy wrote.
func lastField(values []string) string {
	if len(values) == 0 {
		return ""
	}
	fs := strings.Split(values[len(values)-1], ",")
	return strings.TrimSpace(fs[len(fs)-1])
}
