package web

import (
	"io"
	"net/http"
	"time"
)

// ResponseTimeout bounds the writing of a whole response of the API or a
// page: a client that stops reading holds its connection no longer.
// Exports, which can be tens of megabytes, have a deadline per write
// instead (deadlineWriter); the live streams, one per websocket write.
const ResponseTimeout = 30 * time.Second

// exportChunk is how much of an export one write sends before its
// deadline is moved on.
const exportChunk = 32 << 10

// writeDeadline gives a response ResponseTimeout to be written whole. The
// deadline is lifted once the response is written: net/http does not
// reset it for the connection's next request (the server has no
// WriteTimeout, which would cut the live streams off), and that request
// may be a live stream.
func writeDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_ = rc.SetWriteDeadline(time.Now().Add(ResponseTimeout))
		defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
		next.ServeHTTP(w, r)
	})
}

// deadlineWriter writes a long response in chunks, each of which must
// leave within timeout: a client that reads steadily gets the whole of a
// large export, one that stops reading is cut off after timeout, however
// large the export.
type deadlineWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func newDeadlineWriter(w http.ResponseWriter, timeout time.Duration) *deadlineWriter {
	return &deadlineWriter{w: w, rc: http.NewResponseController(w), timeout: timeout}
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		c := p[:min(len(p), exportChunk)]
		if err := d.rc.SetWriteDeadline(time.Now().Add(d.timeout)); err != nil {
			return n, err
		}
		m, err := d.w.Write(c)
		n += m
		if err != nil {
			return n, err
		}
		// What the response writer buffers must leave now, under this
		// chunk's deadline.
		if err := d.rc.Flush(); err != nil {
			return n, err
		}
		p = p[len(c):]
	}
	return n, nil
}

var _ io.Writer = (*deadlineWriter)(nil)
