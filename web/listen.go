package web

import (
	"net"

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

// Listener wraps l so that every TCP connection it accepts gets a
// SendBuffer-sized send buffer, and at most maxConns (MaxConns if zero)
// are open at once.
func Listener(l net.Listener, maxConns int) net.Listener {
	if maxConns <= 0 {
		maxConns = MaxConns
	}
	return netutil.LimitListener(boundedListener{l}, maxConns)
}

type boundedListener struct{ net.Listener }

func (l boundedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok && err == nil {
		_ = tc.SetWriteBuffer(SendBuffer)
	}
	return c, err
}
