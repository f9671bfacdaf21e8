// Package web serves Limit Lab's pages, its JSON API and the live stream of
// a run. It renders and routes; the experiments and runner packages decide.
package web

import (
	"context"
	"crypto/rand"
	"io"
	"io/fs"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/hub"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workshop"
	"github.com/prometheus/client_golang/prometheus"
)

// Runs is what the handlers need of the workshop's manager: runs queued,
// running and ended.
type Runs interface {
	// SubmitFrom queues a run for a participant at a client address; a
	// refusal by a quota is a *workshop.QuotaError.
	SubmitFrom(spec specs.Spec, plan specs.Plan, participant, address string) (*runner.Run, error)
	Stop(id string) error
	// Owner is the participant of a queued or running run.
	Owner(id string) (string, bool)
	// ClearQueue ends the queued runs of a participant, or all if it is "".
	ClearQueue(participant, why string) int
}

// Pool is what the handlers need of the manager's engines.
type Pool interface {
	Host() engine.HostInfo
	// Validate checks a spec against the engine, or against a pool's: it
	// is valid where some engine can run it.
	Validate(spec specs.Spec) (specs.Plan, specs.Errors)
	// Engines are the engines runs are placed on, as probed.
	Engines() []workshop.EngineView
}

// Changes are what the handlers need of the live changes.
type Changes interface {
	// UpdateLimits changes a running lane's limits.
	UpdateLimits(ctx context.Context, runID string, lane int, change specs.Limits) (runner.ChangeRecord, error)
}

// History is what the handlers need of the archive: runs as files.
type History interface {
	// View is a run as it is now, or as it ended.
	View(id string) (runner.RunView, bool)
	// List is the history, newest first, at most limit runs; lab, if
	// set, keeps that lab's.
	List(lab string, limit int) []runner.RunView
	// Feed is a run's live stream: its history, then each new message.
	Feed(id string) (*hub.Hub, bool)
	// Series is a spec's repeats, by its first run's id.
	Series(id string) (workshop.SeriesView, bool)
	// Export is a run as a file, whole in memory; WriteExport writes it
	// as it reads it.
	Export(id string) (workshop.Export, error)
	WriteExport(w io.Writer, id string) error
	// Import reads a file of at most size bytes and records its run.
	Import(r io.Reader, size int64) (string, error)
	WriteCSV(w io.Writer, id string) error
}

// Spotlight is the run the presenter features.
type Spotlight interface {
	Feature(id string) error
	Current() (string, bool)
	Feed() *hub.Hub
}

// Deps are the router's collaborators and settings.
type Deps struct {
	Runs     Runs
	Pool     Pool
	Changes  Changes
	History  History
	Featured Spotlight
	Static   fs.FS // the static/ tree: CSS, JS, vendor/uPlot
	Log      *slog.Logger
	// AllowedHosts are the Host header names accepted (any port). Empty
	// accepts any host: the server then listens on a network for a
	// workshop. On loopback it guards against DNS rebinding.
	AllowedHosts []string
	// AllowedOrigins are origin host patterns (as coder/websocket matches
	// them) allowed besides the page's own origin.
	AllowedOrigins []string
	// WriteTimeout bounds each websocket write, and each chunk of an
	// export (5 s if zero).
	WriteTimeout time.Duration
	// BodyTimeout bounds the reading of a request's body (15 s if zero):
	// a client that announces a megabyte and sends ten bytes is cut off.
	BodyTimeout time.Duration
	// PresenterToken authenticates the presenter's calls (Authorization:
	// Bearer); empty disables them.
	PresenterToken string
	// MaxViewersPerRun and MaxViewersPerAddress cap the live streams open
	// on one run and from one client address (the Default... if zero).
	MaxViewersPerRun     int
	MaxViewersPerAddress int
	// JoinCode, if set, must be entered once (POST /api/join) before a
	// participant may run, stop, change or import anything; without it a
	// browser can watch.
	JoinCode string
	// TrustedProxies are the reverse proxies in front of the server: only
	// from them are X-Forwarded-For and X-Forwarded-Proto believed.
	TrustedProxies Proxies
	// Room is who is in the workshop (a new one if nil).
	Room *workshop.Room
	// Finder runs limit searches (none if nil).
	Finder Finder
	// EmbedOrigins are the sites (scheme://host[:port]) whose pages may
	// frame /embed/runs/{id} and /embed/labs/{id}; no other site may frame
	// any page.
	EmbedOrigins []string
	// Secret is the server's own, kept in its data directory: the
	// participant ids it issues and their join proofs are signed with it
	// (a random one if nil, as a test's server has).
	Secret []byte
	// Ready says why the server cannot take runs yet, if it cannot: GET
	// /readyz answers 503 with it (always ready if nil).
	Ready func() error
	// Metrics serves GET /metrics (none if nil), behind MetricsToken if
	// set; the router registers its own figures (its live viewers) in
	// MetricsRegistry, if given.
	Metrics         http.Handler
	MetricsToken    string
	MetricsRegistry prometheus.Registerer
}

// withDefaults is d with every bound it leaves zero set to the default.
func (d Deps) withDefaults() Deps {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.WriteTimeout == 0 {
		d.WriteTimeout = 5 * time.Second
	}
	if d.MaxViewersPerRun == 0 {
		d.MaxViewersPerRun = DefaultMaxViewersPerRun
	}
	if d.MaxViewersPerAddress == 0 {
		d.MaxViewersPerAddress = DefaultMaxViewersPerAddress
	}
	if d.Room == nil {
		d.Room = workshop.NewRoom()
	}
	if d.BodyTimeout == 0 {
		d.BodyTimeout = 15 * time.Second
	}
	if len(d.Secret) == 0 {
		d.Secret = make([]byte, 32)
		_, _ = rand.Read(d.Secret)
	}
	return d
}

// NewRouter builds the whole HTTP surface; tests serve it with httptest.
func NewRouter(d Deps) http.Handler {
	d = d.withDefaults()
	h := &handlers{Deps: d, sign: signer{key: d.Secret}, publisher: NewPublisher(d.Static),
		publishSlots: make(chan struct{}, publishSlots),
		joinWrong:    newThrottle(JoinWrongEvery, JoinWrongBurst), joinNew: newThrottle(JoinEvery, JoinBurst),
		presenterWrong: newThrottle(PresenterWrongEvery, PresenterWrongBurst),
		newcomers:      newThrottle(NewParticipantsEvery, NewParticipantsBurst), imports: newThrottle(ImportsEvery, ImportsBurst)}
	a, pr, p, ls := api{h}, presenter{h}, pages{h}, streams{h}
	r := chi.NewRouter()
	r.Use(middleware.Recoverer)
	r.Use(secureHeaders)
	r.Use(h.identify)
	r.Use(h.checkHost)
	r.Use(h.checkOrigin)
	r.Use(h.participant)

	// The live streams sit outside the timeout group: they last the run,
	// or the workshop.
	r.Get("/api/runs/{id}/live", ls.live)
	r.Get("/api/featured/live", ls.featuredLive)
	r.Get("/api/presenter/room/live", ls.roomLive)

	r.Group(func(r chi.Router) {
		r.Use(middleware.Timeout(30 * time.Second))
		r.Use(h.bodyDeadline)
		r.Use(writeDeadline)
		r.Get("/", p.home)
		r.Get("/labs/{id}", p.labPage)
		r.Get("/runs/{id}", p.runPage)
		r.Get("/runs/{id}/results", p.resultsFragment)
		r.With(h.embeddable).Get("/embed/runs/{id}", p.embedRun)
		r.With(h.embeddable).Get("/embed/labs/{id}", p.embedLab)
		r.Get("/series/{id}", p.seriesPage)
		r.Get("/runs", p.historyPage)
		r.Get("/compare", p.comparePage)
		r.Get("/engines", p.poolPage)
		r.Get("/live", p.livePage)
		r.Get("/presenter", p.presenterPage)
		r.Get("/find", p.findFormPage)
		r.Get("/find/{id}", p.findPage)
		r.Get("/find/{id}/live", p.findFragment)
		r.Handle("/static/*", http.StripPrefix("/static/", http.FileServerFS(d.Static)))

		r.Route("/api", func(r chi.Router) {
			r.Get("/host", a.apiHost)
			r.Get("/engines", a.apiEngines)
			r.Get("/labs", a.apiLabs)
			r.Get("/runs", a.apiListRuns)
			r.With(h.mustJoin).Post("/runs", a.apiCreateRun)
			r.Get("/runs/{id}", a.apiGetRun)
			r.Get("/series/{id}", a.apiSeries)
			r.With(h.mustJoin).Post("/runs/{id}/stop", a.apiStopRun)
			r.With(h.mustJoin).Post("/runs/{id}/lanes/{lane}/limits", a.apiUpdateLimits)
			r.Get("/runs/{id}/export", a.apiExport)
			r.With(h.mustJoin).Post("/runs/import", a.apiImport)
			r.Post("/join", a.apiJoin)
			r.With(h.mustJoin).Post("/find", a.apiStartFind)
			r.Get("/find/{id}", a.apiGetFind)
			r.With(h.mustJoin).Post("/find/{id}/stop", a.apiStopFind)
			r.Get("/featured", a.apiFeatured)
			r.With(h.presenterOnly).Post("/runs/{id}/feature", pr.apiFeature)
			r.With(h.presenterOnly).Post("/queue/clear", pr.apiClearQueue)
			r.With(h.presenterOnly).Get("/presenter/check", pr.apiPresenterCheck)
			r.With(h.presenterOnly).Get("/presenter/room", pr.apiRoom)
			r.With(h.presenterOnly).Get("/presenter/room.csv", pr.apiRoomCSV)
			r.With(h.presenterOnly).Post("/presenter/room/{ref}/remove", pr.apiRemoveMember)
			r.With(h.presenterOnly).Post("/presenter/room/close", pr.apiCloseRoom)
			r.With(h.presenterOnly).Post("/presenter/room/open", pr.apiOpenRoom)
			r.NotFound(func(w http.ResponseWriter, r *http.Request) {
				writeError(w, http.StatusNotFound, "path", "no such API call: "+r.URL.Path)
			})
			r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
				writeError(w, http.StatusMethodNotAllowed, "method", r.Method+" is not a method of "+r.URL.Path)
			})
		})
	})
	if d.MetricsRegistry != nil {
		d.MetricsRegistry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "limitlab_viewers", Help: "Live streams open: run pages, the projector and the room view.",
		}, func() float64 { return float64(h.viewers.total()) }))
	}
	return health(r, d.Ready, d.Metrics, d.MetricsToken)
}

// handlers are the router's shared state and its guards (the host, the
// origin, the participant, the join code, the presenter); the handlers
// proper are api's (the JSON API), pages' (the HTML pages) and streams'
// (the websockets), each over the same state.
type handlers struct {
	Deps
	sign signer
	// The throttles (throttle.go): wrong join codes, new identities
	// joining and wrong presenter tokens per address; new participants
	// per address; imports per participant.
	joinWrong      *throttle
	joinNew        *throttle
	presenterWrong *throttle
	newcomers      *throttle
	imports        *throttle
	viewers        viewerCount
	publisher      *Publisher
	publishSlots   chan struct{}
	publishedPages pageCache
	exports        exportSlots
	// roomEnded are the room view's rows of ended runs, by run id.
	roomMu    sync.Mutex
	roomEnded map[string]RoomRow
}

// The handlers by whom they serve: the API of participants and
// viewers, the presenter's (behind the presenter's token), the pages,
// and the live streams.
type (
	api       struct{ *handlers }
	presenter struct{ *handlers }
	pages     struct{ *handlers }
	streams   struct{ *handlers }
)

// LoopbackHosts are the Host names a loopback listener answers to.
var LoopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// checkHost refuses requests whose Host header is not an allowed name, so
// that a web page on another name cannot reach a loopback dashboard through
// DNS rebinding.
func (h *handlers) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(h.AllowedHosts) > 0 && !slices.Contains(h.AllowedHosts, hostName(r.Host)) {
			if strings.HasPrefix(r.URL.Path, "/api/") {
				writeError(w, http.StatusMisdirectedRequest, "host", "host not allowed: "+r.Host)
			} else {
				http.Error(w, "host not allowed: "+r.Host, http.StatusMisdirectedRequest)
			}
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkOrigin refuses state-changing requests from other origins: the
// server holds the Docker socket, so a page elsewhere must not start or
// stop runs through the user's browser. A request without an Origin must
// be one no other site's form can send: JSON, a bearer token, or what the
// browser itself marks as same-origin.
func (h *handlers) checkOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			origin := r.Header.Get("Origin")
			switch {
			case origin != "" && !h.originAllowed(origin, r):
				writeError(w, http.StatusForbidden, "origin", "cross-origin request refused: "+origin)
				return
			case origin == "" && !formProof(r):
				writeError(w, http.StatusForbidden, "content_type", "a request without an Origin must send Content-Type: application/json")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// formProof says whether a request without an Origin header is one that a
// cross-site HTML form cannot make.
func formProof(r *http.Request) bool {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err == nil && mt == "application/json" {
		return true
	}
	if r.Header.Get("Authorization") != "" {
		return true
	}
	s := r.Header.Get("Sec-Fetch-Site")
	return s == "same-origin" || s == "none"
}

func (h *handlers) originAllowed(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	// An opaque origin ("null": a sandboxed frame, a file, a redirect
	// across sites) is nobody's: no pattern, not even *, admits it.
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	scheme := "http"
	if overHTTPS(r) {
		scheme = "https"
	}
	if strings.EqualFold(u.Host, r.Host) && u.Scheme == scheme {
		return true
	}
	for _, p := range h.AllowedOrigins {
		if ok, _ := path.Match(strings.ToLower(p), strings.ToLower(u.Host)); ok {
			return true
		}
	}
	return false
}

func hostName(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return strings.Trim(h, "[]")
	}
	return strings.Trim(hostport, "[]")
}

// AppCSP is the app pages' policy: scripts only from the server's own
// files (the pages have no inline script; their JSON data blocks are not
// scripts), no plugins, no <base>, forms only to the server, and no other
// site's frame. A published page carries its own, stricter one.
const AppCSP = "default-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; " +
	"img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; connect-src 'self' blob:; frame-ancestors 'self'"

// secureHeaders keeps the pages out of other sites' frames, lets them run
// only the server's own scripts, and stops browsers guessing content
// types.
func secureHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", AppCSP)
		hd.Set("X-Frame-Options", "SAMEORIGIN")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// bodyDeadline gives a request BodyTimeout to arrive whole. The live
// streams are outside its group: they last the run.
func (h *handlers) bodyDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(h.BodyTimeout))
		next.ServeHTTP(w, r)
	})
}
