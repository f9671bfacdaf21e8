// Command server runs the Limit Lab dashboard. The same binary is the
// workload program inside the experiment containers (`server workload
// ...`), and the sampler beside a remote engine (`server sampler ...`).
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/docker/go-units"
	"github.com/limitlab/limitlab"
	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/kube"
	"github.com/limitlab/limitlab/internal/labfiles"
	"github.com/limitlab/limitlab/internal/runner"
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

type config struct {
	addr         string
	allowHosts   string
	allowOrigins string
	interval     time.Duration
	cgroupRoot   string
	workloadBin  string
	verbose      bool
	dataDir      string
	maxRunning   int
	queueWait    time.Duration
	presenter    string
	maxConns     int
	joinCode     string
	maxQueue     int
	addressRuns  int
	quotas       workshop.Quotas
	labsDir      string
	enginesFile  string
	kubeconfig   string
	namespace    string
	sampler      engine.SamplerAddress // the single engine's, if any
	proxies      web.Proxies
	tlsCert      string
	tlsKey       string
	viewersRun   int
	viewersAddr  int
}

// memoryFlag is a flag of a size in the docker CLI's units (512m, 2g).
type memoryFlag struct{ v *int64 }

func (f memoryFlag) String() string {
	if f.v == nil || *f.v == 0 {
		return "0"
	}
	return units.BytesSize(float64(*f.v))
}

func (f memoryFlag) Set(s string) error {
	n, err := units.RAMInBytes(s)
	if err != nil || n < 0 {
		return fmt.Errorf("want a size such as 512m or 2g, got %q", s)
	}
	*f.v = n
	return nil
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("limitlab", flag.ContinueOnError)
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8080", "address to listen on; use 0.0.0.0:8080 to open the dashboard to the network for a workshop")
	fs.StringVar(&c.allowHosts, "allow-host", "", "comma-separated extra Host names to answer to (on loopback only localhost, 127.0.0.1 and ::1 are accepted)")
	fs.StringVar(&c.allowOrigins, "allow-origin", "", "comma-separated origin host patterns allowed besides the page's own (e.g. slides.example.com)")
	fs.DurationVar(&c.interval, "sample", 250*time.Millisecond, "stats sampling interval, a multiple of 50ms from 50ms to 5s (a run may ask for its own)")
	fs.StringVar(&c.cgroupRoot, "cgroup-root", "/sys/fs/cgroup", "where the engine host's cgroup filesystem is visible")
	fs.StringVar(&c.workloadBin, "workload-bin", "", "static binary to put in the workload image (default: this binary)")
	fs.BoolVar(&c.verbose, "v", false, "debug logging")
	fs.StringVar(&c.dataDir, "data", "data", "directory of the run store (created on first start)")
	fs.IntVar(&c.maxRunning, "max-running", 1, "runs that may run at once; the others wait in the queue (raise it only on a host with CPUs to spare: runs disturb each other's measurements)")
	fs.DurationVar(&c.queueWait, "queue-wait", 10*time.Minute, "longest a run may wait in the queue before it is refused")
	tokenFile := fs.String("presenter-token-file", "", "file holding the token the presenter sends as Authorization: Bearer, at least 16 characters (default $LIMITLAB_PRESENTER_TOKEN; neither: no presenter). Not a flag's value: argv is visible to every user of the host")
	fs.IntVar(&c.maxConns, "max-conns", web.MaxConns, "connections the server holds at once; more wait until one closes")
	fs.StringVar(&c.joinCode, "join-code", "", "code a participant must enter once before running anything; without it a browser can watch (default $LIMITLAB_JOIN_CODE; none: anyone may run). The presenter page shows it")
	fs.IntVar(&c.maxQueue, "max-queue", workshop.DefaultMaxQueue, "runs that may wait in the queue at once")
	fs.IntVar(&c.addressRuns, "address-runs", workshop.DefaultAddressRuns, "queued or running runs one client address may have, whatever participants it claims to be (-1: no limit)")
	fs.StringVar(&c.enginesFile, "engines", "", "file listing a pool of Docker engines to place runs on, one run per engine at a time (README: More than one host); without it, the engine DOCKER_HOST names")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig `file` of a Kubernetes cluster to run the lanes on, as pods, instead of a Docker engine (README: Kubernetes)")
	fs.StringVar(&c.namespace, "namespace", "default", "the Kubernetes namespace of the lanes' pods, with -kubeconfig")
	fs.StringVar(&c.sampler.URL, "sampler", "", "URL of a limitlab sampler on a remote engine's host (http://host:port or https://), to read its containers' cgroup files at the run's interval (README: More than one host); in a pool, each engine's entry names its own")
	fs.StringVar(&c.sampler.TokenFile, "sampler-token-file", "", "file holding the sampler's token")
	fs.StringVar(&c.sampler.CA, "sampler-ca", "", "CA file that signed an https sampler's certificate (default: the system's)")
	fs.StringVar(&c.labsDir, "labs", "", "directory of extra lab files (the JSON of docs/labs.md), loaded at start and again whenever it changes")
	c.quotas = workshop.DefaultQuotas
	fs.IntVar(&c.quotas.Participant.Runs, "participant-runs", c.quotas.Participant.Runs, "queued or running runs per participant (0: no limit)")
	fs.Float64Var(&c.quotas.Participant.CPUs, "participant-cpus", 0, "CPUs a participant's queued and running lanes may ask for in all (0: no limit)")
	fs.Var(memoryFlag{&c.quotas.Participant.Memory}, "participant-memory", "--memory a participant's queued and running lanes may ask for in all (0: no limit)")
	fs.IntVar(&c.quotas.Participant.Containers, "participant-containers", 0, "containers a participant's queued and running runs may have (0: no limit)")
	fs.Float64Var(&c.quotas.Host.CPUs, "quota-cpus", 0, "CPUs the running lanes may ask for in all (0: no limit)")
	fs.Var(memoryFlag{&c.quotas.Host.Memory}, "quota-memory", "--memory the running lanes may ask for in all (0: no limit)")
	fs.IntVar(&c.quotas.Host.Containers, "quota-containers", 0, "containers the running runs may have in all (0: no limit)")
	proxies := fs.String("trusted-proxies", "", "comma-separated addresses or CIDR prefixes of the reverse proxies in front of the server (e.g. 127.0.0.1,10.0.0.0/8): only from them are X-Forwarded-For and X-Forwarded-Proto believed")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "certificate `file` (PEM) to serve the dashboard over https, with -tls-key")
	fs.StringVar(&c.tlsKey, "tls-key", "", "private key `file` (PEM) of -tls-cert")
	fs.IntVar(&c.viewersRun, "max-viewers-per-run", web.DefaultMaxViewersPerRun, "live viewers one run may have at once")
	fs.IntVar(&c.viewersAddr, "max-viewers-per-address", web.DefaultMaxViewersPerAddress, "live streams one client address may hold open at once; participants who entered the join code are not counted by address")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	var err error
	if c.proxies, err = web.ParseProxies(*proxies); err != nil {
		return c, fmt.Errorf("-trusted-proxies: %w", err)
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return c, errors.New("-tls-cert and -tls-key go together")
	}
	if c.tlsCert != "" {
		if _, err := tls.LoadX509KeyPair(c.tlsCert, c.tlsKey); err != nil {
			return c, fmt.Errorf("-tls-cert/-tls-key: %w", err)
		}
	}
	if c.viewersRun < 1 || c.viewersAddr < 1 {
		return c, fmt.Errorf("-max-viewers-per-run %d, -max-viewers-per-address %d: want at least 1 each", c.viewersRun, c.viewersAddr)
	}
	c.presenter = os.Getenv("LIMITLAB_PRESENTER_TOKEN")
	if c.joinCode == "" {
		c.joinCode = os.Getenv("LIMITLAB_JOIN_CODE")
	}
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			return c, fmt.Errorf("-presenter-token-file: %w", err)
		}
		c.presenter = strings.TrimSpace(string(b))
	}
	if c.presenter != "" && len(c.presenter) < web.MinPresenterToken {
		return c, fmt.Errorf("the presenter token has %d characters: give at least %d (e.g. openssl rand -hex 16)", len(c.presenter), web.MinPresenterToken)
	}
	if h, _, err := net.SplitHostPort(c.addr); err == nil && !isLoopback(h) && c.allowHosts == "" {
		return c, fmt.Errorf("-addr %s listens beyond this machine: name the host names attendees will use with -allow-host (e.g. -allow-host lab.example.org,192.0.2.10), so that no other site can reach the dashboard through DNS rebinding", c.addr)
	}
	if c.sampler.URL != "" && c.enginesFile != "" {
		return c, errors.New("-sampler is for the single engine: in a pool, give each engine's sampler in the engines file")
	}
	if c.kubeconfig != "" && (c.enginesFile != "" || c.sampler.URL != "" || c.maxRunning != 1) {
		return c, errors.New("-kubeconfig runs the lanes on a Kubernetes cluster, one run on a node at a time: it goes with none of -engines, -sampler and -max-running")
	}
	if !engine.ValidNamespace(c.namespace) {
		return c, fmt.Errorf("-namespace %q: want a namespace name (lowercase letters, digits and dashes, at most 63)", c.namespace)
	}
	if (c.sampler.URL == "") != (c.sampler.TokenFile == "") {
		return c, errors.New("-sampler and -sampler-token-file go together")
	}
	if c.maxRunning != 1 && c.enginesFile != "" {
		return c, fmt.Errorf("-max-running %d: in a pool each engine runs one run at a time, so that runs never disturb each other's measurements; -max-running is for the single engine", c.maxRunning)
	}
	if c.maxRunning < 1 {
		return c, fmt.Errorf("-max-running %d: want at least 1", c.maxRunning)
	}
	if c.interval < runner.MinInterval || c.interval > runner.MaxInterval || c.interval%runner.IntervalStep != 0 {
		return c, fmt.Errorf("-sample %s: must be a multiple of %s from %s to %s", c.interval, runner.IntervalStep, runner.MinInterval, runner.MaxInterval)
	}
	return c, nil
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

// isLoopback says whether a listening host stays on this machine.
func isLoopback(h string) bool {
	ip := net.ParseIP(h)
	return h == "localhost" || (ip != nil && ip.IsLoopback())
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// prepareEngine makes an engine ready for runs: it probes its host, builds
// the workload image there, probes its block IO control with a container,
// and removes what an earlier life of this server left on it.
func prepareEngine(ctx context.Context, eng engine.Engine, smp *sampler.Client, cgroupRoot, bin string, st *store.Store, instance string, log *slog.Logger) (engine.HostInfo, string, error) {
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

// prepareCluster makes a Kubernetes cluster ready for runs: it finds the
// node runs take, checks that the workload image was imported there (it is
// never pulled), and removes what an earlier life of this server left.
func prepareCluster(ctx context.Context, cl *kube.Cluster, bin string, st *store.Store, instance string, log *slog.Logger) (engine.HostInfo, string, error) {
	host, err := cl.Probe(ctx)
	if err != nil {
		return host, "", err
	}
	image, err := engine.OCIImageRef(bin)
	if err != nil {
		return host, "", err
	}
	if ok, err := cl.HasImage(ctx, image); err != nil {
		return host, "", err
	} else if !ok {
		return host, "", fmt.Errorf("node %s has no image %s: write it with `limitlab image -o limitlab.tar` and import it on the node with `ctr -n k8s.io images import limitlab.tar` (README: Kubernetes)", host.Node, image)
	}
	log.Info("kubernetes node", slog.String("node", host.Node), slog.String("kubelet", host.APIVersion),
		slog.String("cgroup", host.CgroupVersion), slog.Int("cpus", host.NCPU), slog.String("image", image))
	if err := workshop.ReapLeftovers(ctx, cl, st, instance, log); err != nil {
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
	log.Info("store", slog.String("file", filepath.Join(cfg.dataDir, store.FileName)))
	prepare := func(eng engine.Engine, smp *sampler.Client, log *slog.Logger) func(context.Context) (engine.HostInfo, string, error) {
		return func(ctx context.Context) (engine.HostInfo, string, error) {
			return prepareEngine(ctx, eng, smp, cfg.cgroupRoot, bin, st, instance, log)
		}
	}
	opts := workshop.Options{Instance: instance, Interval: cfg.interval, Log: log,
		Store: st, MaxRunning: cfg.maxRunning, MaxQueue: cfg.maxQueue, AddressRuns: cfg.addressRuns, MaxWait: cfg.queueWait, Quotas: &cfg.quotas}
	// cluster is a Kubernetes cluster as an engine of the pool.
	cluster := func(name string, a engine.KubernetesAddress) (workshop.PoolEngine, error) {
		cl, err := kube.Connect(a.Kubeconfig, a.Namespace, instance, cfg.cgroupRoot)
		if err != nil {
			return workshop.PoolEngine{}, err
		}
		log.Info("kubernetes", slog.String("engine", name), slog.String("server", cl.Server()), slog.String("namespace", cl.Namespace()))
		return workshop.PoolEngine{Name: name, Address: cl.Server(), Driver: cl, Prepare: func(ctx context.Context) (engine.HostInfo, string, error) {
			return prepareCluster(ctx, cl, bin, st, instance, log.With(slog.String("engine", name)))
		}}, nil
	}
	var one engine.Engine // the engine without a pool; with one, NewManager takes opts.Pool
	switch {
	case cfg.kubeconfig != "":
		pe, err := cluster("kubernetes", engine.KubernetesAddress{Kubeconfig: cfg.kubeconfig, Namespace: cfg.namespace})
		if err != nil {
			return fmt.Errorf("-kubeconfig: %w", err)
		}
		opts.Pool = []workshop.PoolEngine{pe}
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
				pe, err := cluster(a.Name, *a.Kubernetes)
				if err != nil {
					return fmt.Errorf("-engines: engine %q: %w", a.Name, err)
				}
				opts.Pool = append(opts.Pool, pe)
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
			TrustedProxies: cfg.proxies, MaxViewersPerRun: cfg.viewersRun, MaxViewersPerAddress: cfg.viewersAddr,
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
			"Serve it over https (-tls-cert, -tls-key), or behind a TLS proxy (-trusted-proxies), or on loopback only (README: Running a workshop safely)")
	}
	go func() {
		if cfg.tlsCert != "" {
			log.Info("listening", slog.String("url", "https://"+cfg.addr))
			errc <- srv.ServeTLS(web.Listener(ln, cfg.maxConns), cfg.tlsCert, cfg.tlsKey)
			return
		}
		log.Info("listening", slog.String("url", "http://"+cfg.addr))
		errc <- srv.Serve(web.Listener(ln, cfg.maxConns))
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
