package web

import (
	"net"
)

// SendBuffer is the kernel send buffer of each connection the server
// accepts (the kernel doubles it). It bounds the memory a viewer that
// stops reading can hold on the server, and makes such a viewer's writes
// block, and time out, within seconds rather than after megabytes of
// samples: 200 viewers at the kernel's default autotuning could pin up to
// 4 MiB each.
const SendBuffer = 64 << 10

// Listener wraps l so that every TCP connection it accepts gets a
// SendBuffer-sized send buffer.
func Listener(l net.Listener) net.Listener { return boundedListener{l} }

type boundedListener struct{ net.Listener }

func (l boundedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok && err == nil {
		_ = tc.SetWriteBuffer(SendBuffer)
	}
	return c, err
}
