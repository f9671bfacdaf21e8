package web

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// ResponseTimeout bounds the writing of a whole response of the API or a
// page: a client that stops reading holds its connection no longer.
// Exports, which can be tens of megabytes, are held to a rate instead
// (floorWriter); the live streams, to a deadline per websocket write.
const ResponseTimeout = 30 * time.Second

// The floor under a long response's rate: after ExportGrace, a client
// must have read on average MinExportRate bytes a second since the
// response began, or it is cut off. A deadline re-armed for every chunk
// is not a rate: a reader of a few kilobytes a second meets each chunk's
// deadline and holds its connection for hours.
const (
	MinExportRate = 32 << 10
	ExportGrace   = 10 * time.Second
	exportChunk   = 32 << 10
)

// ErrTooSlow is a reader cut off for reading below MinExportRate.
var ErrTooSlow = errors.New("the client read below the export's minimum rate")

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

// floorWriter writes a long response in chunks, each of which must leave
// by the earlier of two times: timeout after it is handed over (a client
// that stops reading is cut off at once), and the time by which a client
// reading at MinExportRate since the response began, after ExportGrace,
// would have read it (a client that reads, but too slowly, is cut off
// too). What the server holds for the response meanwhile is the caller's
// buffer, whatever the response's size.
type floorWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	start   time.Time
	sent    int64
	now     func() time.Time
}

func newFloorWriter(w http.ResponseWriter, timeout time.Duration) *floorWriter {
	return &floorWriter{w: w, rc: http.NewResponseController(w), timeout: timeout, start: time.Now(), now: time.Now}
}

// due is when a client reading at the floor's rate would have read n
// bytes.
func (d *floorWriter) due(n int64) time.Time {
	return d.start.Add(ExportGrace + time.Duration(float64(n)/MinExportRate*float64(time.Second)))
}

func (d *floorWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		c := p[:min(len(p), exportChunk)]
		now := d.now()
		deadline := now.Add(d.timeout)
		if due := d.due(d.sent + int64(len(c))); due.Before(deadline) {
			deadline = due
		}
		if !deadline.After(now) {
			return n, fmt.Errorf("%w (%d bytes in %s)", ErrTooSlow, d.sent, now.Sub(d.start).Round(time.Second))
		}
		if err := d.rc.SetWriteDeadline(deadline); err != nil {
			return n, err
		}
		m, err := d.w.Write(c)
		n += m
		d.sent += int64(m)
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

var _ io.Writer = (*floorWriter)(nil)
