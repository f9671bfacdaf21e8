package web

import (
	"crypto/tls"
	"net/http/httptest"
	"testing"
)

func TestOriginOfAForwardedRequest(t *testing.T) {
	proxies, err := ParseProxies("127.0.0.1, 10.0.0.0/8,::1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, peer, xff, proto string
		tls                    bool
		want                   string
		https                  bool
	}{
		{"no proxy", "192.0.2.7:5000", "", "", false, "192.0.2.7", false},
		{"a forged header from an untrusted peer", "192.0.2.7:5000", "198.51.100.1", "https", false, "192.0.2.7", false},
		{"through the proxy", "127.0.0.1:5000", "198.51.100.1", "https", false, "198.51.100.1", true},
		{"a forged hop left of the real client", "127.0.0.1:5000", "6.6.6.6, 198.51.100.1", "https", false, "198.51.100.1", true},
		{"two trusted proxies", "127.0.0.1:5000", "198.51.100.1, 10.1.2.3", "http", false, "198.51.100.1", false},
		{"hops with ports", "127.0.0.1:5000", "198.51.100.1:4711, [2001:db8::1]:80", "", false, "2001:db8::1", false},
		{"IPv4 in IPv6", "[::ffff:127.0.0.1]:5000", "::ffff:198.51.100.1", "", false, "198.51.100.1", false},
		{"garbage where the client should be", "127.0.0.1:5000", "<script>, 10.1.2.3", "", false, "10.1.2.3", false},
		{"every hop trusted", "127.0.0.1:5000", "10.0.0.1, 10.0.0.2", "", false, "10.0.0.1", false},
		{"direct TLS", "192.0.2.7:5000", "", "http", true, "192.0.2.7", true},
		{"a proxy that sends no header", "[::1]:5000", "", "", false, "::1", false},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tc.peer
		if tc.xff != "" {
			r.Header.Set("X-Forwarded-For", tc.xff)
		}
		if tc.proto != "" {
			r.Header.Set("X-Forwarded-Proto", tc.proto)
		}
		if tc.tls {
			r.TLS = &tls.ConnectionState{}
		}
		got := proxies.clientOf(r)
		if got.address != tc.want || got.https != tc.https {
			t.Errorf("%s: client %+v, want %s https=%v", tc.name, got, tc.want, tc.https)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "example.org", "1.2.3"} {
		if _, err := ParseProxies(bad); err == nil {
			t.Errorf("-trusted-proxies %q taken", bad)
		}
	}
}
