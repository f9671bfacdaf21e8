package sampler

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/limitlab/limitlab/internal/engine"
)

// Server serves the cgroup files of the containers on its host. Every
// request must carry Token; a stream is opened only for a container whose
// cgroup is found under Root.
type Server struct {
	Token string
	Root  string // the host's cgroup filesystem, normally /sys/fs/cgroup
	Log   *slog.Logger
	// MaxStreams bounds the streams open at once (one per running lane);
	// DefaultMaxStreams if zero.
	MaxStreams int

	slots chan struct{}
}

// cgroupHeader carries the host's cgroup version ("1", "2") on a ping.
const cgroupHeader = "X-Limitlab-Cgroup"

// DefaultMaxStreams is a dozen pools' worth of twelve-lane runs.
const DefaultMaxStreams = 256

// idle is how long a stream waits for the dashboard's next request: the
// longest sampling interval is 5 s.
const idle = time.Minute

// Handler is the sampler's HTTP handler.
func (s *Server) Handler() http.Handler {
	n := s.MaxStreams
	if n <= 0 {
		n = DefaultMaxStreams
	}
	s.slots = make(chan struct{}, n)
	mux := http.NewServeMux()
	// The ping says which cgroup hierarchy the host runs, for the kernel
	// view's file names.
	version := "1"
	if _, err := os.Stat(filepath.Join(s.Root, "cgroup.controllers")); err == nil {
		version = "2"
	}
	mux.HandleFunc("GET /v1/ping", s.authed(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(cgroupHeader, version)
		w.WriteHeader(http.StatusNoContent)
	}))
	mux.HandleFunc("GET /v1/cgroup", s.authed(s.stream))
	// kubelet's probes, which carry no token: it answers and tells
	// nothing.
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

// authed refuses a request without the token, in constant time.
func (s *Server) authed(h http.HandlerFunc) http.HandlerFunc {
	want := []byte("Bearer " + s.Token)
	return func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="limitlab sampler"`)
			http.Error(w, "sampler: wrong or missing token (Authorization: Bearer)", http.StatusUnauthorized)
			return
		}
		h(w, r)
	}
}

// stream opens a container's cgroup files and answers the dashboard's
// requests on them until it closes the stream, or is idle for a minute.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	id, pidText, pod := q.Get("id"), q.Get("pid"), q.Get("pod")
	if !engine.ContainerID.MatchString(id) {
		http.Error(w, "sampler: id: want a container's full id, 64 hex digits", http.StatusBadRequest)
		return
	}
	// A container is found by its process (Docker) or by its pod's uid
	// (kubelet's layout, no host pid namespace needed).
	pid, ok := parsePid(pidText)
	switch {
	case pod != "" && (pidText != "" || !engine.PodUID.MatchString(pod)):
		http.Error(w, "sampler: pod: want a pod's uid (8-4-4-4-12 hex digits), and no pid with it", http.StatusBadRequest)
		return
	case pod == "" && !ok:
		http.Error(w, fmt.Sprintf("sampler: pid: want a process id from 1 to %d, got %.20q", maxPid, pidText), http.StatusBadRequest)
		return
	}
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	default:
		http.Error(w, fmt.Sprintf("sampler: %d streams open, no more", cap(s.slots)), http.StatusServiceUnavailable)
		return
	}
	var cg *engine.CgroupReader
	var err error
	if pod != "" {
		cg, err = engine.FindPodCgroup(s.Root, pod, id)
	} else {
		cg, err = engine.FindCgroup(s.Root, id, pid)
	}
	if err != nil {
		http.Error(w, "sampler: "+err.Error(), http.StatusNotFound)
		return
	}
	defer cg.Close()
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept has answered
	}
	defer c.CloseNow()
	c.SetReadLimit(maxRequest)
	log := s.Log.With(slog.String("id", id[:12]))
	log.Debug("stream opened", slog.String("from", r.RemoteAddr))
	err = s.answer(r.Context(), c, cg)
	switch {
	case websocket.CloseStatus(err) == websocket.StatusNormalClosure, errors.Is(err, context.Canceled):
		c.Close(websocket.StatusNormalClosure, "")
	default:
		log.Info("stream ended", slog.Any("err", err))
		c.Close(websocket.StatusPolicyViolation, "bad request")
	}
}

// answer serves one stream's requests in order.
func (s *Server) answer(ctx context.Context, c *websocket.Conn, cg *engine.CgroupReader) error {
	for {
		var req request
		rctx, cancel := context.WithTimeout(ctx, idle)
		err := wsjson.Read(rctx, c, &req)
		cancel()
		if err != nil {
			return err
		}
		rep := reply{Seq: req.Seq}
		switch req.Op {
		case opRead:
			counters, err := cg.Read()
			if err != nil {
				rep.Error = err.Error()
			} else {
				w := toWire(counters)
				rep.Counters = &w
			}
		case opFile:
			// No controller names v2's one directory, as the kernel view
			// asks there.
			if !fileName.MatchString(req.Name) || len(req.Name) > 64 || !(req.Controller == "" || controllers[req.Controller]) {
				rep.Error = fmt.Sprintf("file: %.16q of %.16q is not a cgroup file", req.Name, req.Controller)
				break
			}
			b, err := cg.File(req.Controller, req.Name)
			if err != nil {
				rep.Error, rep.Missing = err.Error(), errors.Is(err, fs.ErrNotExist)
			} else {
				rep.Data = string(b[:min(len(b), maxFile)])
			}
		case opRefresh:
			cg.Refresh()
			continue
		default:
			return fmt.Errorf("op: %.16q is not read, file or refresh", req.Op)
		}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = wsjson.Write(wctx, c, rep)
		cancel()
		if err != nil {
			return err
		}
	}
}
