package web

import (
	"net"
	"net/netip"
	"sync"

	"golang.org/x/net/netutil"
)

// SendBuffer is the kernel send buffer of each connection the server
// accepts (the kernel doubles it). It bounds the memory a viewer that
// stops reading can hold on the server, and makes such a viewer's writes
// block, and time out, within seconds rather than after megabytes of
// samples: 200 viewers at the kernel's default autotuning could pin up to
// 4 MiB each.
const SendBuffer = 64 << 10

// MaxConns is how many connections the server holds at once unless told
// otherwise: a room of 200 viewers and their pages, with room to spare. A
// client past it waits in the kernel's accept queue until one closes.
const MaxConns = 1024

// DefaultConnsPerAddress is how many of them one client address (an IPv6
// /64 as one) may hold unless told otherwise: a room of about fifty
// browsers behind one NAT, each with its page's connections and its live
// stream. A connection past it is closed as soon as it is accepted.
const DefaultConnsPerAddress = 256

// ListenOptions bound the connections a Listener holds.
type ListenOptions struct {
	// MaxConns in all (MaxConns if zero); PerAddress from one client
	// address (DefaultConnsPerAddress if zero; negative: no cap but
	// MaxConns).
	MaxConns, PerAddress int
	// TrustedProxies are held to MaxConns only: their connections carry
	// many clients, each counted by the handlers as they are today.
	TrustedProxies Proxies
}

// Listener wraps l so that every TCP connection it accepts gets a
// SendBuffer-sized send buffer, at most o.MaxConns are open at once, and
// at most o.PerAddress from one address.
func Listener(l net.Listener, o ListenOptions) net.Listener {
	if o.MaxConns <= 0 {
		o.MaxConns = MaxConns
	}
	if o.PerAddress == 0 {
		o.PerAddress = DefaultConnsPerAddress
	}
	b := &boundedListener{Listener: l, perAddress: o.PerAddress, trusted: o.TrustedProxies, open: map[string]int{}}
	return netutil.LimitListener(b, o.MaxConns)
}

type boundedListener struct {
	net.Listener
	perAddress int
	trusted    Proxies

	mu   sync.Mutex
	open map[string]int // by guardKey of the peer
}

// Accept returns the next connection whose address is under its cap; one
// over it is closed at once, and the next one waited for.
func (l *boundedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return c, err
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetWriteBuffer(SendBuffer)
		}
		key, counted := l.key(c)
		if !counted {
			return c, nil
		}
		l.mu.Lock()
		if l.open[key] >= l.perAddress {
			l.mu.Unlock()
			_ = c.Close()
			continue
		}
		l.open[key]++
		l.mu.Unlock()
		return &countedConn{Conn: c, release: func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.open[key]--; l.open[key] <= 0 {
				delete(l.open, key)
			}
		}}, nil
	}
}

// key is the address a connection counts against; counted is false for
// a trusted proxy's, or with no cap.
func (l *boundedListener) key(c net.Conn) (string, bool) {
	if l.perAddress < 0 {
		return "", false
	}
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String(), true
	}
	if l.trusted.trusts(ap.Addr()) {
		return "", false
	}
	return guardKey(ap.Addr().String()), true
}

// countedConn gives its place back once, when it closes.
type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
