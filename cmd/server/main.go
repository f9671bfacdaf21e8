// Command server runs the Limit Lab dashboard. The same binary is the
// workload program inside the experiment containers (`server workload
// ...`), and the sampler beside a remote engine (`server sampler ...`).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/limitlab/limitlab"
	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/kube"
	"github.com/limitlab/limitlab/internal/labfiles"
	"github.com/limitlab/limitlab/internal/sampler"
	"github.com/limitlab/limitlab/internal/store"
	"github.com/limitlab/limitlab/internal/workload"
	"github.com/limitlab/limitlab/internal/workshop"
	"github.com/limitlab/limitlab/web"
	"github.com/moby/moby/client"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "workload" {
		os.Exit(workload.Main(os.Args[2:], os.Stdout, os.Stderr))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	run := run
	args := os.Args[1:]
	if len(args) > 0 {
		switch args[0] {
		case "sampler":
			run, args = samplerMain, args[1:]
		case "image":
			run, args = imageMain, args[1:]
		case "pause":
			// A pod's sandbox in the test cluster: it holds the pod's
			// namespaces until it is asked to stop.
			<-ctx.Done()
			return
		}
	}
	if err := run(ctx, args); err != nil {
		fmt.Fprintln(os.Stderr, "limitlab:", err)
		os.Exit(1)
	}
}

// samplerClient is the client of an engine's sampler; nil if it has none.
func samplerClient(a *engine.SamplerAddress) (*sampler.Client, error) {
	if a == nil || a.URL == "" {
		return nil, nil
	}
	token, err := sampler.ReadToken(a.TokenFile)
	if err != nil {
		return nil, err
	}
	return sampler.NewClient(a.URL, token, a.CA)
}

// prepareEngine makes an engine ready for runs: it probes its host, builds
// the workload image there, probes its block IO control with a container,
// and removes what an earlier life of this server left on it.
func prepareEngine(ctx context.Context, eng engine.Engine, smp *sampler.Client, cgroupRoot, bin string, images []string, st *store.Store, instance string, log *slog.Logger) (engine.HostInfo, string, error) {
	host, err := engine.ProbeHost(ctx, eng, cgroupRoot)
	if err != nil {
		return host, "", err
	}
	if smp != nil {
		if err := smp.Ping(ctx); err != nil {
			return host, "", err
		}
	}
	log.Info("engine", slog.String("version", host.EngineVersion), slog.String("api", host.APIVersion),
		slog.String("cgroup", host.CgroupVersion), slog.Int("cpus", host.NCPU), slog.String("stats", host.StatsSource))
	image, err := engine.EnsureImage(ctx, eng, bin, log)
	if err != nil {
		return host, "", err
	}
	// A facilitator's images are looked for, never pulled.
	engine.ProbeImages(ctx, eng, &host, images, log)
	// Block IO control is decided by what a probe container is given.
	engine.ProbeIO(ctx, eng, &host, image, log)
	w, th := host.IOWeight(), host.IOThrottle()
	log.Info("block IO", slog.Bool("weights", w.Supported), slog.String("weights_why", w.Reason),
		slog.Bool("throttles", th.Supported), slog.String("throttles_why", th.Reason))
	if smp != nil {
		// After the IO probe, which reads its container's files here when
		// it can see them (and the workloads' progress files with them).
		host.UseSampler(smp)
		log.Info("stats", slog.String("source", host.StatsSource), slog.String("sampler", smp.Address()))
	}
	// Only this server's leftovers: another on the same engine keeps its
	// containers.
	if err := workshop.ReapLeftovers(ctx, engine.Docker{Engine: eng}, st, instance, log); err != nil {
		return host, "", err
	}
	return host, image, nil
}

func run(ctx context.Context, args []string) error {
	cfg, err := parseFlags(args)
	if err != nil {
		return err
	}
	level := slog.LevelInfo
	if cfg.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	bin := cfg.workloadBin
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return err
		}
	}
	var pool []engine.EngineAddress
	if cfg.enginesFile != "" {
		b, err := os.ReadFile(cfg.enginesFile)
		if err != nil {
			return fmt.Errorf("-engines: %w", err)
		}
		if pool, err = engine.ParseEngines(b); err != nil {
			return fmt.Errorf("-engines %s: %w", cfg.enginesFile, err)
		}
	}
	if cfg.labsDir != "" {
		// Loaded before anything is served; reloaded until ctx ends.
		lctx, stop := context.WithCancel(ctx)
		labsDone, err := labfiles.Watch(lctx, cfg.labsDir, log)
		if err != nil {
			stop()
			return fmt.Errorf("-labs: %w", err)
		}
		defer func() { stop(); <-labsDone }()
	}
	st, err := store.Open(cfg.dataDir, log)
	if err != nil {
		return err
	}
	defer st.Close()
	instance, err := store.Instance(cfg.dataDir)
	if err != nil {
		return err
	}
	secret, err := store.Secret(cfg.dataDir)
	if err != nil {
		return err
	}
	if cfg.joinCodeMade {
		log.Info("join code made for this workshop: give it to the room", slog.String("join_code", cfg.joinCode))
	}
	log.Info("store", slog.String("file", filepath.Join(cfg.dataDir, store.FileName)))
	prepare := func(eng engine.Engine, smp *sampler.Client, log *slog.Logger) func(context.Context) (engine.HostInfo, string, error) {
		return func(ctx context.Context) (engine.HostInfo, string, error) {
			return prepareEngine(ctx, eng, smp, cfg.cgroupRoot, bin, cfg.images, st, instance, log)
		}
	}
	opts := workshop.Options{Instance: instance, Interval: cfg.interval, Log: log,
		Store: st, MaxRunning: cfg.maxRunning, MaxQueue: cfg.maxQueue, AddressRuns: cfg.addressRuns, MaxWait: cfg.queueWait, Quotas: &cfg.quotas, Keep: cfg.keep, DefaultMemory: cfg.defaultMem}
	// cluster is a Kubernetes cluster as engines of the pool: one, or one
	// a node when it has several.
	cluster := func(name string, a engine.KubernetesAddress) ([]workshop.PoolEngine, error) {
		// The CPU manager probe runs the workload image.
		image, err := engine.OCIImageRef(bin)
		if err != nil {
			return nil, err
		}
		cl, err := kube.Connect(kube.Config{Kubeconfig: a.Kubeconfig, Namespace: a.Namespace, Instance: instance, CgroupRoot: cfg.cgroupRoot, Image: image})
		if err != nil {
			return nil, err
		}
		nodes, err := cl.Nodes(ctx)
		if err != nil {
			return nil, err
		}
		log.Info("kubernetes", slog.String("engine", name), slog.String("server", cl.Server()), slog.String("namespace", cl.Namespace()), slog.Any("nodes", nodes))
		return clusterEngines(name, cl, nodes, func(e *kube.Engine, name string) func(context.Context) (engine.HostInfo, string, error) {
			return func(ctx context.Context) (engine.HostInfo, string, error) {
				return prepareCluster(ctx, e, image, st, instance, log.With(slog.String("engine", name)))
			}
		}), nil
	}
	var one engine.Engine // the engine without a pool; with one, NewManager takes opts.Pool
	switch {
	case cfg.kubeconfig != "":
		pes, err := cluster("kubernetes", engine.KubernetesAddress{Kubeconfig: cfg.kubeconfig, Namespace: cfg.namespace})
		if err != nil {
			return fmt.Errorf("-kubeconfig: %w", err)
		}
		opts.Pool = pes
	case pool == nil:
		eng, err := engine.NewClient()
		if err != nil {
			return fmt.Errorf("docker client: %w", err)
		}
		defer eng.Close()
		if _, err := eng.Ping(ctx, client.PingOptions{}); err != nil {
			return fmt.Errorf("no Docker engine answers at %s: %w", eng.DaemonHost(), err)
		}
		smp, err := samplerClient(&cfg.sampler)
		if err != nil {
			return fmt.Errorf("-sampler: %w", err)
		}
		if smp != nil {
			defer smp.Close() // once the runs, and so their streams, have ended
		}
		if opts.Host, opts.Image, err = prepare(eng, smp, log)(ctx); err != nil {
			return err
		}
		one = eng
	default:
		for _, a := range pool {
			if a.Kubernetes != nil {
				pes, err := cluster(a.Name, *a.Kubernetes)
				if err != nil {
					return fmt.Errorf("-engines: engine %q: %w", a.Name, err)
				}
				opts.Pool = append(opts.Pool, pes...)
				continue
			}
			c, err := engine.Dial(a)
			if err != nil {
				return fmt.Errorf("-engines: %w", err)
			}
			defer c.Close()
			smp, err := samplerClient(a.Sampler)
			if err != nil {
				return fmt.Errorf("-engines: engine %q: %w", a.Name, err)
			}
			if smp != nil {
				defer smp.Close() // once the runs, and so their streams, have ended
			}
			opts.Pool = append(opts.Pool, workshop.PoolEngine{Name: a.Name, Address: a.Host, Engine: c, Prepare: prepare(c, smp, log.With(slog.String("engine", a.Name)))})
		}
		log.Info("pool", slog.Int("engines", len(pool)), slog.String("file", cfg.enginesFile))
	}
	// The manager marks runs the last instance left unfinished as
	// interrupted; their containers went with the reaping in prepare.
	mgr := workshop.NewManager(one, opts)
	hosts := splitList(cfg.allowHosts)
	if h, _, err := net.SplitHostPort(cfg.addr); err == nil && isLoopback(h) {
		hosts = append(hosts, web.LoopbackHosts...)
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		_ = mgr.Shutdown(context.Background())
		return err
	}
	srv := &http.Server{
		Addr: cfg.addr,
		Handler: web.NewRouter(web.Deps{
			Runs: mgr, History: mgr.Archive(), Featured: mgr.Featured(), Finder: mgr.Finder(), Static: limitlab.Static(), Log: log,
			AllowedHosts: hosts, AllowedOrigins: splitList(cfg.allowOrigins), PresenterToken: cfg.presenter, JoinCode: cfg.joinCode,
			TrustedProxies: cfg.proxies, MaxViewersPerRun: cfg.viewersRun, MaxViewersPerAddress: cfg.viewersAddr, Secret: secret,
		}),
		ReadHeaderTimeout: 10 * time.Second,
		// Keep-alive connections idle this long are closed; bodies have
		// their own deadline (web.Deps.BodyTimeout).
		IdleTimeout: 2 * time.Minute,
	}
	errc := make(chan error, 1)
	// The listener lives until Shutdown.
	if h, _, err := net.SplitHostPort(cfg.addr); err == nil && !isLoopback(h) && cfg.tlsCert == "" && len(cfg.proxies) == 0 {
		log.Warn("the dashboard listens beyond this machine over plain http: the join code and the presenter token cross the network in clear. " +
			"Serve it over https (-tls-cert, -tls-key), or behind a TLS proxy (-trusted-proxies), or on loopback only (docs/workshops.md)")
	}
	lo := web.ListenOptions{MaxConns: cfg.maxConns, PerAddress: cfg.addressConns, TrustedProxies: cfg.proxies}
	go func() {
		if cfg.tlsCert != "" {
			log.Info("listening", slog.String("url", "https://"+cfg.addr))
			errc <- srv.ServeTLS(web.Listener(ln, lo), cfg.tlsCert, cfg.tlsKey)
			return
		}
		log.Info("listening", slog.String("url", "http://"+cfg.addr))
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
	log.Info("shutting down: stopping runs and removing their containers")
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
