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

	"github.com/limitlab/limitlab/internal/engine"
)

// Client reaches a sampler. It is an engine.CgroupSource: the runner opens
// a lane's cgroup files through it.
type Client struct {
	base  *url.URL // http:// or https://host:port
	token string
	http  *http.Client
	// streams counts the goroutines of every stream opened, each of
	// which ends once its lane closes it; Close waits for them.
	streams sync.WaitGroup

	mu     sync.Mutex
	cgroup string // the host's cgroup version, from the last ping
}

// Close waits for the goroutines of the streams opened through c, once
// their lanes have closed them (at most the websocket close handshake's
// 5 s after that).
func (c *Client) Close() error {
	c.streams.Wait()
	return nil
}

// NewClient is the client of the sampler at address (http://host:port, or
// https:// with the CA file that signed its certificate; none: the
// system's). The token is the one the sampler was started with.
func NewClient(address, token, caFile string) (*Client, error) {
	var pem []byte
	if caFile != "" {
		var err error
		if pem, err = readSmall(caFile); err != nil {
			return nil, fmt.Errorf("sampler: ca: %w", err)
		}
	}
	return NewClientTLS(address, token, pem, "")
}

// NewClientTLS is the client of the sampler at address, whose https
// certificate ca (PEM; nil: the system's CAs) signed for serverName (""
// : the address's host). A sampler found by its pod's address has a
// certificate for a fixed name, not for an address that changes with
// every pod.
func NewClientTLS(address, token string, ca []byte, serverName string) (*Client, error) {
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
	if ca != nil || serverName != "" {
		if u.Scheme != "https" {
			return nil, errors.New("sampler: a CA or a server name is for an https:// sampler")
		}
		conf := &tls.Config{ServerName: serverName, MinVersion: tls.VersionTLS12}
		if ca != nil {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(ca) {
				return nil, errors.New("sampler: ca: no PEM certificate")
			}
			conf.RootCAs = pool
		}
		hc.Transport = &http.Transport{TLSClientConfig: conf}
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
	if v := res.Header.Get(cgroupHeader); v == "1" || v == "2" {
		c.mu.Lock()
		c.cgroup = v
		c.mu.Unlock()
	}
	return nil
}

// CgroupVersion is the sampler's host's cgroup version as its last ping
// said ("1", "2"; "" before one, or from a sampler that does not say).
func (c *Client) CgroupVersion() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cgroup
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
func (c *Client) Open(ctx context.Context, id string, pid int) (engine.CgroupFiles, error) {
	return c.open(ctx, url.Values{"id": {id}, "pid": {strconv.Itoa(pid)}})
}

// OpenPod opens a stream of a pod's container's counters, found by the
// pod's uid where kubelet puts its cgroup.
func (c *Client) OpenPod(ctx context.Context, uid, id string) (engine.CgroupFiles, error) {
	return c.open(ctx, url.Values{"id": {id}, "pod": {uid}})
}

func (c *Client) open(ctx context.Context, query url.Values) (engine.CgroupFiles, error) {
	u := c.base.JoinPath("v1", "cgroup")
	u.RawQuery = query.Encode()
	dial := func(ctx context.Context) (*websocket.Conn, error) {
		ws, res, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{
			HTTPClient: c.http, HTTPHeader: http.Header{"Authorization": {"Bearer " + c.token}},
		})
		if err != nil {
			if res != nil {
				return nil, fmt.Errorf("sampler at %s: %s", c.Address(), answer(res))
			}
			return nil, fmt.Errorf("sampler at %s: %w", c.Address(), err)
		}
		ws.SetReadLimit(maxReply)
		return ws, nil
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ws, err := dial(dctx)
	if err != nil {
		return nil, err
	}
	s := newStream(ws, dial, &c.streams)
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
	err = errors.Join(s.readErr, s.lost)
	s.mu.Unlock()
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}
