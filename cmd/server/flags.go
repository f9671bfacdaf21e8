package main

// The dashboard's flags: what each means, and the checks that refuse a
// dangerous or inconsistent set before anything starts.

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/docker/go-units"
	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workshop"
	"github.com/limitlab/limitlab/web"
	"github.com/peterbourgon/ff/v3"
)

type config struct {
	addr         string
	allowHosts   string
	allowOrigins string
	embedOrigins []string
	interval     time.Duration
	cgroupRoot   string
	workloadBin  string
	verbose      bool
	logFormat    string // text (the default) or json
	dataDir      string
	maxRunning   int
	queueWait    time.Duration
	presenter    string
	metricsToken string // GET /metrics must send it, if set
	maxConns     int
	addressConns int
	joinCode     string
	joinCodeMade bool // -join-code auto: the server made it
	maxQueue     int
	addressRuns  int
	quotas       workshop.Quotas
	labsDir      string
	enginesFile  string
	kubernetes   bool // lanes on a cluster: -kubernetes, or -kubeconfig given
	kubeconfig   string
	kubeContext  string
	namespace    string
	kubeTolerate []string              // taint keys of others' that lanes may tolerate
	kubeImage    string                // the workload image the nodes pull, if not imported
	sampler      engine.SamplerAddress // the single engine's, if any
	proxies      web.Proxies
	tlsCert      string
	tlsKey       string
	viewersRun   int
	viewersAddr  int
	images       []string // -allow-image: a facilitator's images
	keep         workshop.Retention
	defaultMem   int64 // -default-memory: a lane's memory limit when it sets none
}

// DefaultLaneMemory is -default-memory's default: far more than any
// built-in workload uses beside its own --memory, far less than a host.
const DefaultLaneMemory = 512 << 20

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

// EnvPrefix names the environment variable of each flag: -max-conns is
// also LIMITLAB_MAX_CONNS. A flag on the command line wins over its
// variable.
const EnvPrefix = "LIMITLAB"

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("limitlab", flag.ContinueOnError)
	raw := c.define(fs)
	fs.Usage = func() { usage(fs) }
	if err := ff.Parse(fs, args, ff.WithEnvVarPrefix(EnvPrefix)); err != nil {
		return c, err
	}
	if err := c.finish(raw); err != nil {
		return c, err
	}
	return c, c.checkEngines()
}

// rawFlags are the flags read into c only once they are checked.
type rawFlags struct {
	tokenFile, proxies *string
	metricsTokenFile   *string
	keepDays           *float64
}

// define defines the server's flags on fs, into c.
func (c *config) define(fs *flag.FlagSet) rawFlags {
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8080", "address to listen on; use 0.0.0.0:8080 to open the dashboard to the network for a workshop")
	fs.StringVar(&c.allowHosts, "allow-host", "", "comma-separated extra Host names to answer to (on loopback only localhost, 127.0.0.1 and ::1 are accepted)")
	fs.Func("embed-origins", "comma-separated sites (`https://blog.example.com,...`) whose pages may frame /embed/runs/ID and /embed/labs/ID (docs/tutorials.md); no other site may frame a page", func(s string) (err error) {
		c.embedOrigins, err = web.ParseEmbedOrigins(s)
		return err
	})
	fs.StringVar(&c.allowOrigins, "allow-origin", "", "comma-separated origin host patterns allowed besides the page's own (e.g. slides.example.com)")
	fs.DurationVar(&c.interval, "sample", 250*time.Millisecond, "stats sampling interval, a multiple of 50ms from 50ms to 5s (a run may ask for its own)")
	fs.StringVar(&c.cgroupRoot, "cgroup-root", "/sys/fs/cgroup", "where the engine host's cgroup filesystem is visible")
	fs.StringVar(&c.workloadBin, "workload-bin", "", "static binary to put in the workload image (default: this binary)")
	fs.BoolVar(&c.verbose, "v", false, "debug logging")
	fs.Func("log-format", "`format` of the log: text or json (one JSON object a line, for a log collector)", func(v string) error {
		if v != "text" && v != "json" {
			return fmt.Errorf("want text or json, got %q", v)
		}
		c.logFormat = v
		return nil
	})
	fs.StringVar(&c.dataDir, "data", "data", "directory of the run store (created on first start)")
	fs.IntVar(&c.maxRunning, "max-running", 1, "runs that may run at once; the others wait in the queue (raise it only on a host with CPUs to spare: runs disturb each other's measurements)")
	fs.DurationVar(&c.queueWait, "queue-wait", 10*time.Minute, "longest a run may wait in the queue before it is refused")
	raw := rawFlags{}
	raw.metricsTokenFile = fs.String("metrics-token-file", "", "file holding a token that GET /metrics must send as Authorization: Bearer (default: /metrics is open, as /api/runs is)")
	raw.tokenFile = fs.String("presenter-token-file", "", "file holding the token the presenter sends as Authorization: Bearer, at least 16 characters (default $LIMITLAB_PRESENTER_TOKEN; neither: no presenter). Not a flag's value: argv is visible to every user of the host")
	fs.IntVar(&c.maxConns, "max-conns", web.MaxConns, "connections the server holds at once; more wait until one closes")
	fs.IntVar(&c.addressConns, "max-conns-per-address", web.DefaultConnsPerAddress, "connections one client address (an IPv6 /64 as one) may hold at once; more are closed as they arrive. A trusted proxy is held to -max-conns only. Raise it for a room of more than about fifty browsers behind one NAT")
	fs.StringVar(&c.joinCode, "join-code", "", "code a participant must enter once before running anything, at least 10 characters, or auto to have one made and printed; without it a browser can watch (default $LIMITLAB_JOIN_CODE; none: anyone may run). The presenter page shows it")
	fs.IntVar(&c.maxQueue, "max-queue", workshop.DefaultMaxQueue, "runs that may wait in the queue at once")
	fs.IntVar(&c.addressRuns, "address-runs", workshop.DefaultAddressRuns, "queued or running runs one client address may have, whatever participants it claims to be (-1: no limit)")
	fs.StringVar(&c.enginesFile, "engines", "", "file listing a pool of Docker engines to place runs on, one run per engine at a time (docs/deploying.md: More than one host); without it, the engine DOCKER_HOST names")
	fs.BoolVar(&c.kubernetes, "kubernetes", false, "run the lanes as pods on a Kubernetes cluster instead of a Docker engine, found as kubectl finds it: -kubeconfig, else the files $KUBECONFIG lists, else ~/.kube/config, else in a pod its own service account (docs/deploying.md: On Kubernetes). A $KUBECONFIG alone never chooses a cluster")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig `file` of the Kubernetes cluster to run the lanes on (implies -kubernetes)")
	fs.StringVar(&c.kubeContext, "context", "", "the kubeconfig's `context` to use, with -kubernetes (default: its current context)")
	fs.StringVar(&c.namespace, "namespace", engine.DefaultNamespace, "the Kubernetes namespace of the lanes' pods, with -kubernetes")
	fs.Func("kube-image", "the workload image the cluster's nodes pull for the lanes, `ref` as registry/repository:tag or @sha256:digest (a release's limitlab-workload image, of this version); default: the image this server writes, imported on each node with ctr", func(v string) error {
		ref, err := engine.ParsePulledImage(v)
		c.kubeImage = ref
		return err
	})
	fs.Func("kube-tolerate", "taint `keys` (comma-separated) that others put on nodes which lanes may tolerate all the same, e.g. node-role.kubernetes.io/control-plane; without it a node tainted NoSchedule or NoExecute by anyone else never takes a lane", func(v string) error {
		for _, k := range strings.Split(v, ",") {
			if k = strings.TrimSpace(k); k != "" {
				if !taintKey.MatchString(k) || k == "io.limitlab/run" {
					return fmt.Errorf("%q is not a taint key of another's", k)
				}
				c.kubeTolerate = append(c.kubeTolerate, k)
			}
		}
		return nil
	})
	fs.StringVar(&c.sampler.URL, "sampler", "", "URL of a limitlab sampler on a remote engine's host (http://host:port or https://), to read its containers' cgroup files at the run's interval (docs/deploying.md: More than one host); in a pool, each engine's entry names its own")
	fs.StringVar(&c.sampler.TokenFile, "sampler-token-file", "", "file holding the sampler's token")
	fs.StringVar(&c.sampler.CA, "sampler-ca", "", "CA file that signed an https sampler's certificate (default: the system's)")
	fs.StringVar(&c.labsDir, "labs", "", "directory of extra lab files (the JSON of docs/labs.md), loaded at start and again whenever it changes")
	c.defaultMem = DefaultLaneMemory
	fs.Var(memoryFlag{&c.defaultMem}, "default-memory", "--memory of a lane that sets none, so that no service under load takes what it likes of the host; a Kubernetes lane keeps its QoS class (0: none)")
	fs.IntVar(&c.keep.Runs, "keep-runs", workshop.DefaultKeepRuns, "ended runs the store keeps; older ones are removed as new ones end, never a live or the featured run (-1: no bound but -keep-days)")
	fs.IntVar(&c.keep.Imports, "keep-imports", workshop.DefaultKeepImports, "imported runs the store keeps, apart from the runs made here; the first imported are removed first")
	raw.keepDays = fs.Float64("keep-days", 0, "days an ended run is kept, however few runs there are (0: no bound but -keep-runs)")
	c.quotas = workshop.DefaultQuotas
	fs.IntVar(&c.quotas.Participant.Runs, "participant-runs", c.quotas.Participant.Runs, "queued or running runs per participant (0: no limit)")
	fs.Float64Var(&c.quotas.Participant.CPUs, "participant-cpus", 0, "CPUs a participant's queued and running lanes may ask for in all (0: no limit)")
	fs.Var(memoryFlag{&c.quotas.Participant.Memory}, "participant-memory", "--memory a participant's queued and running lanes may ask for in all (0: no limit)")
	fs.IntVar(&c.quotas.Participant.Containers, "participant-containers", 0, "containers a participant's queued and running runs may have (0: no limit)")
	fs.Float64Var(&c.quotas.Host.CPUs, "quota-cpus", 0, "CPUs the running lanes may ask for in all (0: no limit)")
	fs.Var(memoryFlag{&c.quotas.Host.Memory}, "quota-memory", "--memory the running lanes may ask for in all (0: no limit)")
	fs.IntVar(&c.quotas.Host.Containers, "quota-containers", 0, "containers the running runs may have in all (0: no limit)")
	raw.proxies = fs.String("trusted-proxies", "", "comma-separated addresses or CIDR prefixes of the reverse proxies in front of the server (e.g. 127.0.0.1,10.0.0.0/8): only from them are X-Forwarded-For and X-Forwarded-Proto believed")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "certificate `file` (PEM) to serve the dashboard over https, with -tls-key")
	fs.StringVar(&c.tlsKey, "tls-key", "", "private key `file` (PEM) of -tls-cert")
	fs.IntVar(&c.viewersRun, "max-viewers-per-run", web.DefaultMaxViewersPerRun, "live viewers one run may have at once")
	fs.IntVar(&c.viewersAddr, "max-viewers-per-address", web.DefaultMaxViewersPerAddress, "live streams one client address may hold open at once; participants who entered the join code are not counted by address")
	fs.Func("allow-image", "`name` of an image already on the engine that lab files may run as a facilitator's service, with its port and command (repeatable; nothing is pulled, and a participant's spec never names an image)", func(s string) error {
		if err := specs.CheckImageName(s); err != nil {
			return err
		}
		c.images = append(c.images, s)
		return nil
	})
	return raw
}

// finish reads the flags that need reading (files, the environment) and
// checks what the server serves: its addresses, TLS, bounds, the join code
// and the presenter token.
func (c *config) finish(raw rawFlags) error {
	var err error
	if c.proxies, err = web.ParseProxies(*raw.proxies); err != nil {
		return fmt.Errorf("-trusted-proxies: %w", err)
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return errors.New("-tls-cert and -tls-key go together")
	}
	if c.tlsCert != "" {
		if _, err := tls.LoadX509KeyPair(c.tlsCert, c.tlsKey); err != nil {
			return fmt.Errorf("-tls-cert/-tls-key: %w", err)
		}
	}
	if c.keep.Runs == 0 || c.keep.Runs < -1 || *raw.keepDays < 0 {
		return fmt.Errorf("-keep-runs %d, -keep-days %g: want a number of runs of at least 1 (or -1: none), and days of 0 or more", c.keep.Runs, *raw.keepDays)
	}
	if c.keep.Imports < 1 {
		return fmt.Errorf("-keep-imports %d: want at least 1", c.keep.Imports)
	}
	c.keep.Age = time.Duration(*raw.keepDays * 24 * float64(time.Hour))
	if c.addressConns < 1 || c.maxConns < 1 {
		return fmt.Errorf("-max-conns %d, -max-conns-per-address %d: want at least 1 each", c.maxConns, c.addressConns)
	}
	if c.viewersRun < 1 || c.viewersAddr < 1 {
		return fmt.Errorf("-max-viewers-per-run %d, -max-viewers-per-address %d: want at least 1 each", c.viewersRun, c.viewersAddr)
	}
	c.presenter = os.Getenv("LIMITLAB_PRESENTER_TOKEN")
	if c.joinCode == "" {
		c.joinCode = os.Getenv("LIMITLAB_JOIN_CODE")
	}
	if c.joinCode == "auto" {
		c.joinCode, c.joinCodeMade = web.NewJoinCode(), true
	}
	if c.joinCode != "" && len(c.joinCode) < web.MinJoinCode {
		return fmt.Errorf("the join code has %d characters: give at least %d, or -join-code auto to have one made", len(c.joinCode), web.MinJoinCode)
	}
	if *raw.tokenFile != "" {
		b, err := os.ReadFile(*raw.tokenFile)
		if err != nil {
			return fmt.Errorf("-presenter-token-file: %w", err)
		}
		c.presenter = strings.TrimSpace(string(b))
	}
	if *raw.metricsTokenFile != "" {
		b, err := os.ReadFile(*raw.metricsTokenFile)
		if err != nil {
			return fmt.Errorf("-metrics-token-file: %w", err)
		}
		if c.metricsToken = strings.TrimSpace(string(b)); len(c.metricsToken) < web.MinPresenterToken {
			return fmt.Errorf("the metrics token has %d characters: give at least %d", len(c.metricsToken), web.MinPresenterToken)
		}
	}
	if c.presenter != "" && len(c.presenter) < web.MinPresenterToken {
		return fmt.Errorf("the presenter token has %d characters: give at least %d (e.g. openssl rand -hex 16)", len(c.presenter), web.MinPresenterToken)
	}
	return nil
}

// checkEngines checks the flags that choose the engines: one, a pool, or a
// cluster, and how runs are sampled and placed on them.
func (c *config) checkEngines() error {
	if h, _, err := net.SplitHostPort(c.addr); err == nil && !isLoopback(h) && c.allowHosts == "" {
		return fmt.Errorf("-addr %s listens beyond this machine: name the host names attendees will use with -allow-host (e.g. -allow-host lab.example.org,192.0.2.10), so that no other site can reach the dashboard through DNS rebinding", c.addr)
	}
	if c.sampler.URL != "" && c.enginesFile != "" {
		return errors.New("-sampler is for the single engine: in a pool, give each engine's sampler in the engines file")
	}
	c.kubernetes = c.kubernetes || c.kubeconfig != ""
	if c.kubernetes && (c.enginesFile != "" || c.sampler.URL != "" || c.maxRunning != 1) {
		return errors.New("-kubernetes (or -kubeconfig) runs the lanes on a Kubernetes cluster, one run on a node at a time: it goes with none of -engines, -sampler and -max-running")
	}
	if c.kubeContext != "" && !c.kubernetes {
		return errors.New("-context names a kubeconfig's context: it goes with -kubernetes")
	}
	if !engine.ValidNamespace(c.namespace) {
		return fmt.Errorf("-namespace %q: want a namespace name (lowercase letters, digits and dashes, at most 63)", c.namespace)
	}
	if (c.sampler.URL == "") != (c.sampler.TokenFile == "") {
		return errors.New("-sampler and -sampler-token-file go together")
	}
	if c.maxRunning != 1 && c.enginesFile != "" {
		return fmt.Errorf("-max-running %d: in a pool each engine runs one run at a time, so that runs never disturb each other's measurements; -max-running is for the single engine", c.maxRunning)
	}
	if c.maxRunning < 1 {
		return fmt.Errorf("-max-running %d: want at least 1", c.maxRunning)
	}
	if c.interval < runner.MinInterval || c.interval > runner.MaxInterval || c.interval%runner.IntervalStep != 0 {
		return fmt.Errorf("-sample %s: must be a multiple of %s from %s to %s", c.interval, runner.IntervalStep, runner.MinInterval, runner.MaxInterval)
	}
	return nil
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

// taintKey is a taint's key as Kubernetes takes one: an optional DNS
// prefix and a name.
var taintKey = regexp.MustCompile(`^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)

// envName is a flag's environment variable, as ff names it.
func envName(flagName string) string {
	return EnvPrefix + "_" + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(flagName))
}

// usage is -h: every flag with its environment variable.
func usage(fs *flag.FlagSet) {
	w := fs.Output()
	fmt.Fprintf(w, "Usage: limitlab [flags]\n       limitlab version | healthcheck | export | sampler | image\n\n")
	fmt.Fprintf(w, "Every flag may be set from the environment too, as %s_<FLAG> (-max-conns: %s); a flag given on the command line wins.\n\n", EnvPrefix, envName("max-conns"))
	fs.VisitAll(func(f *flag.Flag) {
		name, text := flag.UnquoteUsage(f)
		fmt.Fprintf(w, "  -%s", f.Name)
		if name != "" {
			fmt.Fprintf(w, " %s", name)
		}
		fmt.Fprintf(w, "  ($%s)\n    \t%s", envName(f.Name), strings.ReplaceAll(text, "\n", "\n    \t"))
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" && f.DefValue != "[]" {
			fmt.Fprintf(w, " (default %q)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}
