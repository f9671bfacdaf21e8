// Package workshop is the Manager that users and pages talk to: it queues
// runs fairly across participants, checks quotas, keeps the history in the
// store, features a run for the room, and exports and imports runs. Each
// run's life on the engine is the runner's.
package workshop

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/store"
)

// ErrNoRun: no run has that id, here or in the store.
var ErrNoRun = errors.New("no such run")

// ErrShuttingDown: the server is stopping and takes no new runs.
var ErrShuttingDown = errors.New("workshop: shutting down")

// Options configure a Manager.
type Options struct {
	Image    string        // the workload image reference
	Instance string        // the server's id, labelling its containers
	Interval time.Duration // sampling interval; runner.DefaultInterval if zero
	Host     engine.HostInfo
	Log      *slog.Logger
	// Store keeps runs beyond the server's life; nil keeps them in
	// memory only.
	Store *store.Store
	// MaxRunning is how many runs may run at once (1 if zero): the others
	// wait in the queue, for at most MaxWait (10 minutes if zero).
	MaxRunning int
	MaxWait    time.Duration
	// Quotas are checked when a run is submitted; DefaultQuotas if nil.
	Quotas *Quotas
	// MaxQueue is how many runs may wait at once (DefaultMaxQueue if
	// zero); AddressRuns how many queued or running runs one client
	// address may have, whatever participants it claims to be
	// (DefaultAddressRuns if zero; negative: no limit).
	MaxQueue    int
	AddressRuns int
	// StoreMinFree is the free disk the store must have for a run, or an
	// import, to be taken (DefaultStoreMinFree if zero).
	StoreMinFree int64
	// DefaultMemory is the --memory of a lane that sets none (none if
	// zero): a service under load may otherwise take what it likes of the
	// host, and on Kubernetes its pod would be BestEffort.
	DefaultMemory int64
	// Keep bounds the ended runs the store keeps (Runs: DefaultKeepRuns
	// if zero, none if negative).
	Keep Retention
	// CacheBytes bounds the ended runs' streams kept in memory for their
	// viewers (DefaultCacheBytes if zero).
	CacheBytes int64
	// QuotaRetry is how often a search submits again a probe that a
	// quota refused (DefaultQuotaRetry if zero).
	QuotaRetry time.Duration
	// SearchDeadline bounds a whole limit search, its probes' waits in
	// the queue included (DefaultSearchDeadline if zero).
	SearchDeadline time.Duration
	// Pool, when set, are the engines runs are placed on, one run per
	// engine at a time; the engine NewManager is given is then unused, and
	// Image and Host are only the defaults of a pool none of whose
	// engines is up yet.
	Pool []PoolEngine
	// ProbeEvery is how often a pool's engines are probed (ProbeEvery,
	// 30 s, if zero).
	ProbeEvery time.Duration
	// ProbeTimeout is how long a probe may take before the engine counts
	// as not answering (ProbeTimeout, 10 s, if zero).
	ProbeTimeout time.Duration
}

// DefaultStoreMinFree is enough for a long twelve-lane run's samples.
const DefaultStoreMinFree = 256 << 20

// ErrStore: the store cannot record a new run now.
var ErrStore = errors.New("workshop: the store cannot take a run")

// The defaults of Options.MaxQueue and Options.AddressRuns: a room of 50
// with a run or two each, and a few people behind one address (a NAT).
const (
	DefaultMaxQueue    = 100
	DefaultAddressRuns = 6
)

// entry is a run in the manager's memory, with what the workshop keeps of
// it: what it asks of the host and the timer that refuses it if it waits
// too long.
type entry struct {
	run     *runner.Run
	spec    specs.Spec // what the run was made from, validated anew for each engine
	address string     // the client's address, "" if not known
	ask     ask
	expiry  *time.Timer // nil for a series' later run until it is queued
	// rest are the later runs of its series: each joins the queue when
	// the one before it ends.
	rest []*entry
	// follows: a series' later run not queued yet; the quotas count a
	// series once, by its run that is queued or running.
	follows bool
	// engine is the engine it runs on, once placed; fits caches whether
	// its spec validates on each engine of a pool (nil without a pool).
	engine *poolEngine
	fits   map[string]fit
	// round is its index in its series (0 alone): its plan is the
	// series' plan of that round (models.RoundPlan).
	round int
}

// Manager queues, runs and remembers experiments. It holds its
// collaborators, each with its own state: its engines are its Pool's, its
// history its Archive's, live changes its Changes'.
type Manager struct {
	pool    *Pool
	changes *Changes
	env     *runner.Env // what a run is made with; placing it gives it its engine's
	opts    Options
	log     *slog.Logger

	ctx    context.Context // cancelled by Shutdown
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	runs    map[string]*entry // in memory: queued, running, and ended without a store
	order   []*entry
	queue   *fairQueue[*entry]
	running map[*entry]bool

	archive  *Archive
	finder   *Finder
	featured *Featured
}

// NewManager returns a manager for runs on eng, or on opts.Pool's engines
// if it is set (eng is then unused and may be nil). It marks the runs the
// store says were queued or running as interrupted, and follows the
// engine's events until Shutdown.
func NewManager(eng engine.Engine, opts Options) *Manager {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.MaxRunning <= 0 {
		opts.MaxRunning = 1
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = 10 * time.Minute
	}
	if opts.Quotas == nil {
		opts.Quotas = &DefaultQuotas
	}
	if opts.StoreMinFree == 0 {
		opts.StoreMinFree = DefaultStoreMinFree
	}
	if opts.MaxQueue <= 0 {
		opts.MaxQueue = DefaultMaxQueue
	}
	if opts.AddressRuns == 0 {
		opts.AddressRuns = DefaultAddressRuns
	}
	if opts.Keep.Runs == 0 {
		opts.Keep.Runs = DefaultKeepRuns
	}
	env := &runner.Env{Engine: eng, Image: opts.Image, Instance: opts.Instance, Interval: opts.Interval, Host: opts.Host, DefaultMemory: opts.DefaultMemory, Log: opts.Log}
	if opts.Store != nil {
		env.Recorder = recorder{opts.Store}
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{env: env, opts: opts, log: opts.Log, ctx: ctx, cancel: cancel, runs: map[string]*entry{},
		queue: newFairQueue[*entry](), running: map[*entry]bool{}}
	m.finder, m.changes = newFinder(m), &Changes{m: m}
	m.archive = &Archive{st: opts.Store, log: opts.Log, cache: newStreamCache(opts.CacheBytes), live: func(id string) (*runner.Run, bool) {
		e, ok := m.live(id)
		if !ok {
			return nil, false
		}
		return e.run, true
	}, inMemory: m.Runs, minFree: opts.StoreMinFree, keep: opts.Keep}
	m.featured = newFeatured(opts.Store, func(id string) bool { _, ok := m.archive.View(id); return ok })
	m.archive.recover(m.featured)
	m.archive.prune()
	// An engine event is marked on the lane of the run in memory it
	// belongs to.
	onEvent := func(ev engine.Event) {
		if e, ok := m.live(ev.Run); ok {
			e.run.AddEvent(ev)
		}
	}
	m.pool = newPool(ctx, eng, env, opts, onEvent, m.schedule)
	return m
}

// Pool is the engines runs are placed on: the one engine, or a pool's.
func (m *Manager) Pool() *Pool { return m.pool }

// Changes are the live changes to running runs' limits.
func (m *Manager) Changes() *Changes { return m.changes }

// Archive is the history: export, import and CSV of any run.
func (m *Manager) Archive() *Archive { return m.archive }

// Finder runs the limit searches, whose probes are this manager's runs.
func (m *Manager) Finder() *Finder { return m.finder }

// Featured is the run the presenter features for the room.
func (m *Manager) Featured() *Featured { return m.featured }

// Reaper removes what a server left on an engine: a run's containers or
// pods, or everything an instance of the server made.
type Reaper interface {
	ReapRun(ctx context.Context, runID string, log *slog.Logger) error
	ReapInstance(ctx context.Context, instance string, log *slog.Logger) error
}

// ReapLeftovers removes what an earlier life of this server left on the
// engine: the containers or pods labelled with its instance, and those of
// the runs its store says were queued or running (older servers labelled
// no instance). Another server's on the same engine stay.
func ReapLeftovers(ctx context.Context, eng Reaper, st *store.Store, instance string, log *slog.Logger) error {
	if err := eng.ReapInstance(ctx, instance, log); err != nil {
		return err
	}
	rows, err := st.List(store.Filter{States: []string{string(runner.StateQueued), string(runner.StateRunning)}, Limit: 1 << 20})
	if err != nil {
		return err
	}
	for _, row := range rows {
		if err := eng.ReapRun(ctx, row.ID, log); err != nil {
			return err
		}
	}
	return nil
}

// live returns the run in memory with that id.
func (m *Manager) live(id string) (*entry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.runs[id]
	return e, ok
}

// Runs are the runs in memory, oldest first: queued, running, and ended
// ones the store does not have whole yet (all of them without a store).
func (m *Manager) Runs() []*runner.Run {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*runner.Run, len(m.order))
	for i, e := range m.order {
		out[i] = e.run
	}
	return out
}

// Owner is the participant who submitted a run in memory.
func (m *Manager) Owner(id string) (string, bool) {
	e, ok := m.live(id)
	if !ok {
		return "", false
	}
	return e.run.Participant(), true
}

func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Shutdown ends queued runs, stops running ones, waits for them to clean
// up (or for ctx), then removes any container of its runs still on the
// engine.
func (m *Manager) Shutdown(ctx context.Context) error {
	m.cancel()
	m.ClearQueue("", "the server shut down before this run started")
	waited := make(chan struct{})
	go func() { m.wg.Wait(); m.pool.wait(); m.finder.wait(); close(waited) }()
	select {
	case <-waited:
	case <-ctx.Done():
	}
	// Only this manager's runs: another instance on the same engine (a
	// test, a second dashboard) keeps its containers.
	m.mu.Lock()
	runs := append([]*entry(nil), m.order...)
	m.mu.Unlock()
	var errs []error
	for _, e := range runs {
		m.mu.Lock()
		pe := e.engine
		m.mu.Unlock()
		if pe == nil {
			continue // never placed: it made no container
		}
		if err := pe.driver().ReapRun(context.WithoutCancel(ctx), e.run.ID(), m.log); err != nil {
			errs = append(errs, err)
		}
	}
	if m.opts.Store != nil {
		if err := m.opts.Store.Sync(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
