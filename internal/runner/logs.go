package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"time"

	"github.com/limitlab/limitlab/internal/workload/wire"
)

// maxStderr is how much of a lane's stderr is kept, to say why it failed.
const maxStderr = 4096

// followLogs reads the workload's JSON lines from the container's log and
// keeps its latest progress and final summary on the lane, until the
// output ends or ctx does. It returns the start of what the workload wrote
// to stderr, once nothing writes to it any more.
func (x *execution) followLogs(ctx context.Context, l *laneState, id string, parse bool) []byte {
	r := x.r
	var stderr bytes.Buffer
	pr, pw := io.Pipe()
	copied := make(chan struct{})
	// The copier lives until the log stream ends or the pipe is closed
	// below; only it writes stderr.
	go func() {
		defer close(copied)
		pw.CloseWithError(r.env.backend().Logs(ctx, id, pw, &limitedWriter{buf: &stderr, max: maxStderr}))
	}()
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if !parse {
			continue // a facilitator's service: its output is its own
		}
		// A fresh value each line: Unmarshal keeps fields a line lacks.
		var line wire.Line
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			continue
		}
		r.mu.Lock()
		if line.Final {
			l.summary, l.done = &line, line.Done
		} else {
			l.progressed(line.Progress)
		}
		r.mu.Unlock()
	}
	_ = pr.Close() // a copier still writing gets an error and stops
	<-copied
	return bytes.TrimSpace(stderr.Bytes())
}

// progressed keeps a workload's latest progress on its lane, from its log
// or its progress file; r.mu is held.
func (l *laneState) progressed(p wire.Progress) {
	l.rate, l.done, l.reported, l.reportedAt, l.stalledAt = p.Rate, p.Done, true, time.Now(), 0
	l.latency, l.failures, l.liveIOPS, l.gomaxprocs = p.Latency, p.Failures, p.IOPS, p.GOMAXPROCS
}

// limitedWriter keeps the first max bytes written to it.
type limitedWriter struct {
	buf *bytes.Buffer
	max int
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	if room := w.max - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
