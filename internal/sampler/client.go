package sampler

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/limitlab/limitlab/internal/engine"
)

// Client reaches a sampler. It is an engine.CgroupSource: the runner opens
// a lane's cgroup files through it.
type Client struct {
	base  *url.URL // http:// or https://host:port
	token string
	http  *http.Client
}

// NewClient is the client of the sampler at address (http://host:port, or
// https:// with the CA file that signed its certificate; none: the
// system's). The token is the one the sampler was started with.
func NewClient(address, token, caFile string) (*Client, error) {
	u, err := url.Parse(address)
	if err != nil {
		return nil, fmt.Errorf("sampler: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return nil, fmt.Errorf("sampler: want http://host:port or https://host:port, got %q", address)
	}
	if len(token) < MinToken {
		return nil, fmt.Errorf("sampler: the token has %d characters: give at least %d (e.g. openssl rand -hex 16)", len(token), MinToken)
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	if caFile != "" {
		if u.Scheme != "https" {
			return nil, errors.New("sampler: a CA file is for an https:// sampler")
		}
		pem, err := readSmall(caFile)
		if err != nil {
			return nil, fmt.Errorf("sampler: ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("sampler: ca: no PEM certificate in %s", caFile)
		}
		hc.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	}
	u.Path = ""
	return &Client{base: u, token: token, http: hc}, nil
}

// ReadToken reads a token file, as the sampler and the dashboard both
// take their token: from a file, since argv is visible to every user of
// the host.
func ReadToken(path string) (string, error) {
	b, err := readSmall(path)
	if err != nil {
		return "", err
	}
	t := strings.TrimSpace(string(b))
	if len(t) < MinToken {
		return "", fmt.Errorf("%s: the token has %d characters: give at least %d (e.g. openssl rand -hex 16)", path, len(t), MinToken)
	}
	return t, nil
}

func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	return b, err
}

// Address is the sampler's URL.
func (c *Client) Address() string { return c.base.String() }

// Ping checks that the sampler answers and takes the token.
func (c *Client) Ping(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base.JoinPath("v1", "ping").String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	res, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("sampler at %s: %w", c.Address(), err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusNoContent {
		return fmt.Errorf("sampler at %s: %s", c.Address(), answer(res))
	}
	return nil
}

// answer is an HTTP error response in a few words: its status and what
// the sampler said.
func answer(res *http.Response) string {
	b, _ := io.ReadAll(io.LimitReader(res.Body, 512))
	return strings.TrimSpace(res.Status + ": " + strings.TrimSpace(string(b)))
}

// Open opens a stream of a container's counters. It takes the first
// reading before it returns, so that a container the sampler cannot see
// is an error here, not an empty chart.
func (c *Client) Open(ctx context.Context, id string, pid int, every time.Duration) (engine.CgroupFiles, error) {
	u := c.base.JoinPath("v1", "cgroup")
	u.RawQuery = url.Values{"id": {id}, "pid": {strconv.Itoa(pid)}}.Encode()
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ws, res, err := websocket.Dial(dctx, u.String(), &websocket.DialOptions{
		HTTPClient: c.http, HTTPHeader: http.Header{"Authorization": {"Bearer " + c.token}},
	})
	if err != nil {
		if res != nil {
			return nil, fmt.Errorf("sampler at %s: %s", c.Address(), answer(res))
		}
		return nil, fmt.Errorf("sampler at %s: %w", c.Address(), err)
	}
	ws.SetReadLimit(maxReply)
	s := &stream{ws: ws, files: map[uint64]chan reply{}, first: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	// Lives until the stream is closed, by Close or by the sampler.
	go s.receive()
	if err := s.ask(request{Op: opRead}); err != nil {
		s.Close()
		return nil, err
	}
	select {
	case <-s.first:
	case <-time.After(5 * time.Second):
		s.Close()
		return nil, fmt.Errorf("sampler at %s: no first reading within 5 s", c.Address())
	}
	s.mu.Lock()
	err = s.readErr
	s.mu.Unlock()
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// stream is one container's cgroup files, read by the sampler. Its readings
// are pipelined: each Read returns the reading the previous one asked for
// and asks for the next, so that a tick never waits on the network. A
// reading is thus one interval old when it is taken up; its time is the
// sampler's, moved onto this host's clock by the offset the first reading
// showed.
type stream struct {
	ws     *websocket.Conn
	ctx    context.Context
	cancel context.CancelFunc
	first  chan struct{} // closed at the first reading

	mu      sync.Mutex
	seq     uint64
	asking  bool // a read is on its way
	fresh   bool // latest is not yet taken
	latest  engine.Counters
	readErr error
	offset  time.Duration // this host's clock less the sampler's
	shifted bool          // offset is known
	files   map[uint64]chan reply
	err     error // the stream ended
}

// errNotYet says the reading asked for at the last tick has not come: the
// tick goes without a sample of the lane, and the next covers both.
var errNotYet = errors.New("sampler: no reading yet")

func (s *stream) receive() {
	for {
		var rep reply
		err := wsjson.Read(s.ctx, s.ws, &rep)
		s.mu.Lock()
		if err != nil {
			s.err = fmt.Errorf("sampler: stream ended: %w", err)
			for seq, c := range s.files {
				close(c)
				delete(s.files, seq)
			}
			s.mu.Unlock()
			s.closeFirst()
			return
		}
		if c, ok := s.files[rep.Seq]; ok {
			delete(s.files, rep.Seq)
			c <- rep
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
			s.latest, s.fresh, s.readErr = *rep.Counters, true, nil
			s.latest.At = s.latest.At.Add(s.offset)
		}
		s.mu.Unlock()
		s.closeFirst()
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
	if s.err != nil {
		s.mu.Unlock()
		return s.err
	}
	if req.Op == opRead {
		s.asking = true
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(s.ctx, 2*time.Second)
	defer cancel()
	return wsjson.Write(ctx, s.ws, req)
}

// Read returns the latest reading not yet taken and asks for the next.
func (s *stream) Read() (engine.Counters, error) {
	s.mu.Lock()
	if s.err != nil {
		defer s.mu.Unlock()
		return engine.Counters{}, s.err
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
	if s.err != nil {
		defer s.mu.Unlock()
		return nil, s.err
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
			s.mu.Lock()
			defer s.mu.Unlock()
			return nil, s.err
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
	// Lives for the close handshake, at most the library's 5 s.
	go func() {
		_ = s.ws.Close(websocket.StatusNormalClosure, "lane ended")
		s.cancel()
	}()
	return nil
}
