package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/limitlab/limitlab"
	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/kube"
	"github.com/limitlab/limitlab/internal/labfiles"
	"github.com/limitlab/limitlab/internal/metrics"
	"github.com/limitlab/limitlab/internal/sampler"
	"github.com/limitlab/limitlab/internal/store"
	"github.com/limitlab/limitlab/internal/workshop"
	"github.com/limitlab/limitlab/web"
	"github.com/moby/moby/client"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// run is the dashboard, in its steps: read the flags; open the store and
// the lab files; make the engines ready (one Docker engine, a pool, or a
// Kubernetes cluster); make the manager; serve until ctx ends; shut down.
func run(ctx context.Context, args []string) error {
	cfg, err := parseFlags(args)
	if err != nil {
		return err
	}
	s := &server{cfg: cfg, log: newLogger(cfg.verbose, cfg.logFormat)}
	defer s.close()
	if err := s.open(ctx); err != nil {
		return err
	}
	opts, one, err := s.engines(ctx)
	if err != nil {
		return err
	}
	// The manager marks runs the last instance left unfinished as
	// interrupted; their containers went with the reaping in prepare.
	return s.serve(ctx, workshop.NewManager(one, opts))
}

// server is what the dashboard's steps share: its configuration, its log,
// its store and identity, and what to close when it ends (last opened,
// first closed).
type server struct {
	cfg      config
	log      *slog.Logger
	bin      string // the workload binary, made an image on each engine
	st       *store.Store
	instance string
	secret   []byte
	closers  []func()
}

func newLogger(verbose bool, format string) *slog.Logger {
	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	opts := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}

func (s *server) onClose(f func()) { s.closers = append(s.closers, f) }

func (s *server) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
}

// open finds the workload binary, loads the lab files (reloaded until ctx
// ends), and opens the store, the server's instance id and its secret.
func (s *server) open(ctx context.Context) error {
	s.bin = s.cfg.workloadBin
	if s.bin == "" {
		bin, err := os.Executable()
		if err != nil {
			return err
		}
		s.bin = bin
	}
	if s.cfg.labsDir != "" {
		lctx, stop := context.WithCancel(ctx)
		labsDone, err := labfiles.Watch(lctx, s.cfg.labsDir, s.log)
		if err != nil {
			stop()
			return fmt.Errorf("-labs: %w", err)
		}
		s.onClose(func() { stop(); <-labsDone })
	}
	st, err := store.Open(s.cfg.dataDir, s.log)
	if err != nil {
		return err
	}
	s.st = st
	s.onClose(func() { _ = st.Close() })
	if s.instance, err = store.Instance(s.cfg.dataDir); err != nil {
		return err
	}
	if s.secret, err = store.Secret(s.cfg.dataDir); err != nil {
		return err
	}
	if s.cfg.joinCodeMade {
		s.log.Info("join code made for this workshop: give it to the room", slog.String("join_code", s.cfg.joinCode))
	}
	s.log.Info("store", slog.String("file", filepath.Join(s.cfg.dataDir, store.FileName)))
	return nil
}

// engines makes the manager's options and its engines: a Kubernetes
// cluster (-kubeconfig), the one Docker engine of the environment, or the
// pool of -engines. one is the engine without a pool; with a pool, the
// manager takes opts.Pool.
func (s *server) engines(ctx context.Context) (opts workshop.Options, one engine.Engine, err error) {
	cfg := s.cfg
	opts = workshop.Options{Instance: s.instance, Interval: cfg.interval, Log: s.log,
		Store: s.st, MaxRunning: cfg.maxRunning, MaxQueue: cfg.maxQueue, AddressRuns: cfg.addressRuns, MaxWait: cfg.queueWait, Quotas: &cfg.quotas, Keep: cfg.keep, DefaultMemory: cfg.defaultMem}
	switch {
	case cfg.kubernetes:
		pes, err := s.cluster(ctx, "kubernetes", engine.KubernetesAddress{Kubeconfig: cfg.kubeconfig, Context: cfg.kubeContext, Namespace: cfg.namespace})
		if err != nil {
			return opts, nil, fmt.Errorf("-kubernetes: %w", err)
		}
		opts.Pool = pes
		return opts, nil, nil
	case cfg.enginesFile == "":
		eng, err := engine.NewClient()
		if err != nil {
			return opts, nil, fmt.Errorf("docker client: %w", err)
		}
		s.onClose(func() { _ = eng.Close() })
		if _, err := eng.Ping(ctx, client.PingOptions{}); err != nil {
			return opts, nil, fmt.Errorf("no Docker engine answers at %s: %w", eng.DaemonHost(), err)
		}
		smp, err := s.samplerFor(&cfg.sampler)
		if err != nil {
			return opts, nil, fmt.Errorf("-sampler: %w", err)
		}
		if opts.Host, opts.Image, err = s.prepare(eng, smp, s.log)(ctx); err != nil {
			return opts, nil, err
		}
		return opts, eng, nil
	}
	opts.Pool, err = s.pool(ctx)
	return opts, nil, err
}

// pool makes the engines of the -engines file ready to be made ready:
// Docker engines dialled, clusters connected.
func (s *server) pool(ctx context.Context) ([]workshop.PoolEngine, error) {
	b, err := os.ReadFile(s.cfg.enginesFile)
	if err != nil {
		return nil, fmt.Errorf("-engines: %w", err)
	}
	addrs, err := engine.ParseEngines(b)
	if err != nil {
		return nil, fmt.Errorf("-engines %s: %w", s.cfg.enginesFile, err)
	}
	var out []workshop.PoolEngine
	for _, a := range addrs {
		if a.Kubernetes != nil {
			pes, err := s.cluster(ctx, a.Name, *a.Kubernetes)
			if err != nil {
				return nil, fmt.Errorf("-engines: engine %q: %w", a.Name, err)
			}
			out = append(out, pes...)
			continue
		}
		c, err := engine.Dial(a)
		if err != nil {
			return nil, fmt.Errorf("-engines: %w", err)
		}
		s.onClose(func() { _ = c.Close() })
		smp, err := s.samplerFor(a.Sampler)
		if err != nil {
			return nil, fmt.Errorf("-engines: engine %q: %w", a.Name, err)
		}
		out = append(out, workshop.PoolEngine{Name: a.Name, Address: a.Host, Engine: c, Prepare: s.prepare(c, smp, s.log.With(slog.String("engine", a.Name)))})
	}
	s.log.Info("pool", slog.Int("engines", len(addrs)), slog.String("file", s.cfg.enginesFile))
	return out, nil
}

// samplerFor is the client of an engine's sampler, closed once the runs, and
// so their streams, have ended; nil if it has none.
func (s *server) samplerFor(a *engine.SamplerAddress) (*sampler.Client, error) {
	smp, err := samplerClient(a)
	if smp != nil {
		s.onClose(func() { _ = smp.Close() })
	}
	return smp, err
}

// prepare makes a Docker engine ready for runs, when its pool says.
func (s *server) prepare(eng engine.Engine, smp *sampler.Client, log *slog.Logger) func(context.Context) (engine.HostInfo, string, error) {
	return func(ctx context.Context) (engine.HostInfo, string, error) {
		return prepareEngine(ctx, eng, smp, s.cfg.cgroupRoot, s.bin, s.cfg.images, s.st, s.cfg.dataDir, s.instance, log)
	}
}

// cluster is a Kubernetes cluster as engines of the pool: one, or one a
// node when it has several.
func (s *server) cluster(ctx context.Context, name string, a engine.KubernetesAddress) ([]workshop.PoolEngine, error) {
	// The CPU manager probe runs the workload image.
	image, err := engine.OCIImageRef(s.bin)
	if err != nil {
		return nil, err
	}
	image = cmp.Or(s.cfg.kubeImage, image)
	cl, err := kube.Connect(kube.Config{Kubeconfig: a.Kubeconfig, Context: a.Context, Namespace: a.Namespace, Instance: s.instance, CgroupRoot: s.cfg.cgroupRoot, Image: image, Tolerate: s.cfg.kubeTolerate})
	if err != nil {
		return nil, err
	}
	nodes, err := cl.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	s.log.Info("kubernetes", slog.String("engine", name), slog.String("server", cl.Server()), slog.String("namespace", cl.Namespace()), slog.Any("nodes", nodes))
	return clusterEngines(name, cl, nodes, func(e *kube.Engine, name string) func(context.Context) (engine.HostInfo, string, error) {
		return func(ctx context.Context) (engine.HostInfo, string, error) {
			return prepareCluster(ctx, e, image, s.st, s.instance, s.log.With(slog.String("engine", name)))
		}
	}), nil
}

// serve serves the dashboard until ctx ends or the listener fails, then
// stops the runs and the server.
func (s *server) serve(ctx context.Context, mgr *workshop.Manager) error {
	cfg := s.cfg
	hosts := splitList(cfg.allowHosts)
	if h, _, err := net.SplitHostPort(cfg.addr); err == nil && isLoopback(h) {
		hosts = append(hosts, web.LoopbackHosts...)
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		_ = mgr.Shutdown(context.Background())
		return err
	}
	// The metrics: the server's process and Go runtime, its own figures,
	// and each running lane's under cAdvisor's names.
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		metrics.New(mgr, mgr.Pool(), s.st.Size))
	srv := &http.Server{
		Addr: cfg.addr,
		Handler: web.NewRouter(web.Deps{
			Runs: mgr, Pool: mgr.Pool(), Changes: mgr.Changes(), History: mgr.Archive(), Featured: mgr.Featured(), Finder: mgr.Finder(), Static: limitlab.Static(), Log: s.log,
			AllowedHosts: hosts, AllowedOrigins: splitList(cfg.allowOrigins), EmbedOrigins: cfg.embedOrigins, PresenterToken: cfg.presenter, JoinCode: cfg.joinCode,
			TrustedProxies: cfg.proxies, MaxViewersPerRun: cfg.viewersRun, MaxViewersPerAddress: cfg.viewersAddr, Secret: s.secret,
			Ready:   func() error { return ready(s.st, mgr.Pool().Engines()) },
			Metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), MetricsToken: cfg.metricsToken, MetricsRegistry: reg,
		}),
		ReadHeaderTimeout: 10 * time.Second,
		// Keep-alive connections idle this long are closed; bodies have
		// their own deadline (web.Deps.BodyTimeout).
		IdleTimeout: 2 * time.Minute,
	}
	if h, _, err := net.SplitHostPort(cfg.addr); err == nil && !isLoopback(h) && cfg.tlsCert == "" && len(cfg.proxies) == 0 {
		s.log.Warn("the dashboard listens beyond this machine over plain http: the join code and the presenter token cross the network in clear. " +
			"Serve it over https (-tls-cert, -tls-key), or behind a TLS proxy (-trusted-proxies), or on loopback only (docs/workshops.md)")
	}
	lo := web.ListenOptions{MaxConns: cfg.maxConns, PerAddress: cfg.addressConns, TrustedProxies: cfg.proxies}
	errc := make(chan error, 1)
	// The listener lives until Shutdown.
	go func() {
		if cfg.tlsCert != "" {
			s.log.Info("listening", slog.String("url", "https://"+cfg.addr))
			errc <- srv.ServeTLS(web.Listener(ln, lo), cfg.tlsCert, cfg.tlsKey)
			return
		}
		s.log.Info("listening", slog.String("url", "http://"+cfg.addr))
		errc <- srv.Serve(web.Listener(ln, lo))
	}()
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			_ = mgr.Shutdown(context.Background())
			return err
		}
	case <-ctx.Done():
	}
	s.log.Info("shutting down: stopping runs and removing their containers")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Stop the runs first: their end closes the live streams, which
	// http.Server.Shutdown does not wait for.
	mgrErr := mgr.Shutdown(sctx)
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	return mgrErr
}

// ready says why the server cannot take runs, if it cannot: its store
// refuses writes, or no engine is up yet.
func ready(st *store.Store, engines []workshop.EngineView) error {
	if err := st.Health(workshop.DefaultStoreMinFree); err != nil {
		return err
	}
	for _, e := range engines {
		if e.Up {
			return nil
		}
	}
	return fmt.Errorf("none of the %d engines is up yet", len(engines))
}
