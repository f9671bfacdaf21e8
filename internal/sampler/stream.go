package sampler

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/limitlab/limitlab/internal/engine"
)

// stream is one container's cgroup files, read by the sampler. Its readings
// are pipelined: each Read returns the reading the previous one asked for
// and asks for the next, so that a tick never waits on the network. A
// reading is thus one interval old when it is taken up; its time is the
// sampler's, moved onto this host's clock by the offset the first reading
// showed. A stream lost (the sampler restarted, the network dropped) is
// dialled again every second until it is back or closed: the counters are
// cumulative, so the sample after the gap covers it.
type stream struct {
	dial   func(context.Context) (*websocket.Conn, error)
	wg     *sync.WaitGroup // its goroutines
	ctx    context.Context
	cancel context.CancelFunc
	first  chan struct{} // closed at the first reading, or the first loss

	mu      sync.Mutex
	ws      *websocket.Conn // nil while the stream is lost
	lost    error           // why, until it is back
	closing bool
	seq     uint64
	asking  bool // a read is on its way
	fresh   bool // latest is not yet taken
	latest  engine.Counters
	readErr error
	offset  time.Duration // this host's clock less the sampler's
	shifted bool          // offset is known
	files   map[uint64]chan reply
}

// newStream starts the stream's receiver; wg counts it, and the close
// handshake Close starts, so that the stream's owner can wait for both.
func newStream(ws *websocket.Conn, dial func(context.Context) (*websocket.Conn, error), wg *sync.WaitGroup) *stream {
	s := &stream{ws: ws, dial: dial, files: map[uint64]chan reply{}, first: make(chan struct{}), wg: wg}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	// Lives until Close.
	wg.Go(s.receive)
	return s
}

// errNotYet says the reading asked for at the last tick has not come: the
// tick goes without a sample of the lane, and the next covers both.
var errNotYet = errors.New("sampler: no reading yet")

func (s *stream) receive() {
	s.mu.Lock()
	ws := s.ws
	s.mu.Unlock()
	for {
		var rep reply
		if err := wsjson.Read(s.ctx, ws, &rep); err != nil {
			s.mu.Lock()
			closing := s.closing
			s.mu.Unlock()
			if closing {
				return
			}
			s.lose(err)
			if ws = s.redial(); ws == nil {
				return // closed
			}
			continue
		}
		s.mu.Lock()
		if rep.Seq != 0 { // a file's answer; reads carry none
			if c, ok := s.files[rep.Seq]; ok { // not given up on
				delete(s.files, rep.Seq)
				c <- rep
			}
			s.mu.Unlock()
			continue
		}
		s.asking = false
		switch {
		case rep.Error != "":
			s.readErr = errors.New("sampler: " + rep.Error)
		case rep.Counters != nil:
			now := time.Now()
			if !s.shifted {
				s.offset, s.shifted = now.Sub(rep.Counters.At), true
			}
			s.latest, s.fresh, s.readErr = fromWire(*rep.Counters), true, nil
			s.latest.At = s.latest.At.Add(s.offset)
		}
		s.mu.Unlock()
		s.closeFirst()
	}
}

// lose marks the stream lost: reads and file requests fail until it is
// back.
func (s *stream) lose(err error) {
	s.mu.Lock()
	if s.ws != nil {
		_ = s.ws.CloseNow()
	}
	s.ws, s.lost, s.asking = nil, fmt.Errorf("sampler: stream lost: %w", err), false
	for seq, c := range s.files {
		close(c)
		delete(s.files, seq)
	}
	s.mu.Unlock()
	s.closeFirst()
}

// redial dials the stream again every second; nil once it is closed.
func (s *stream) redial() *websocket.Conn {
	for {
		select {
		case <-s.ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
		ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
		ws, err := s.dial(ctx)
		cancel()
		if err != nil {
			continue
		}
		s.mu.Lock()
		if s.ctx.Err() != nil {
			s.mu.Unlock()
			_ = ws.CloseNow()
			return nil
		}
		s.ws, s.lost = ws, nil
		s.mu.Unlock()
		return ws
	}
}

func (s *stream) closeFirst() {
	select {
	case <-s.first:
	default:
		close(s.first)
	}
}

// ask sends a request; a read is marked on its way.
func (s *stream) ask(req request) error {
	s.mu.Lock()
	ws, lost := s.ws, s.lost
	if ws != nil && req.Op == opRead {
		s.asking = true
	}
	s.mu.Unlock()
	if ws == nil {
		return lost
	}
	ctx, cancel := context.WithTimeout(s.ctx, 2*time.Second)
	defer cancel()
	return wsjson.Write(ctx, ws, req)
}

// Read returns the latest reading not yet taken and asks for the next.
func (s *stream) Read() (engine.Counters, error) {
	s.mu.Lock()
	if s.lost != nil {
		defer s.mu.Unlock()
		return engine.Counters{}, s.lost
	}
	got, fresh, rerr, asking := s.latest, s.fresh, s.readErr, s.asking
	s.fresh, s.readErr = false, nil
	s.mu.Unlock()
	if !asking {
		if err := s.ask(request{Op: opRead}); err != nil {
			return engine.Counters{}, err
		}
	}
	switch {
	case rerr != nil:
		return engine.Counters{}, rerr
	case !fresh:
		return engine.Counters{}, errNotYet
	}
	return got, nil
}

// File reads one of the container's cgroup files, waiting up to 5 s.
func (s *stream) File(controller, name string) ([]byte, error) {
	c := make(chan reply, 1)
	s.mu.Lock()
	if s.lost != nil {
		defer s.mu.Unlock()
		return nil, s.lost
	}
	s.seq++
	seq := s.seq
	s.files[seq] = c
	s.mu.Unlock()
	if err := s.ask(request{Op: opFile, Seq: seq, Controller: controller, Name: name}); err != nil {
		return nil, err
	}
	select {
	case rep, ok := <-c:
		switch {
		case !ok:
			return nil, fmt.Errorf("sampler: %s: the stream was lost", name)
		case rep.Missing:
			return nil, fmt.Errorf("sampler: %s: %w", rep.Error, fs.ErrNotExist)
		case rep.Error != "":
			return nil, errors.New("sampler: " + rep.Error)
		}
		return []byte(rep.Data), nil
	case <-time.After(5 * time.Second):
		s.mu.Lock()
		delete(s.files, seq)
		s.mu.Unlock()
		return nil, fmt.Errorf("sampler: %s: no answer within 5 s", name)
	}
}

// Refresh has the sampler's next reading take every file.
func (s *stream) Refresh() { _ = s.ask(request{Op: opRefresh}) }

// Close ends the stream. It does not wait for the sampler's goodbye: it is
// called as a lane ends, under the run's lock.
func (s *stream) Close() error {
	s.mu.Lock()
	ws := s.ws
	s.closing = true
	s.mu.Unlock()
	// Lives for the close handshake, at most the library's 5 s.
	s.wg.Go(func() {
		if ws != nil {
			_ = ws.Close(websocket.StatusNormalClosure, "lane ended")
		}
		s.cancel()
	})
	return nil
}
