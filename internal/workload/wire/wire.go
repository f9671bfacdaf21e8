// Package wire is the one owner of what passes between the server and the
// workload program in a container: the command line the server writes and
// the workload parses, and the JSON lines the workload prints and the
// server reads from the container's log. Both sides import it, so neither
// can drift from the other; its round-trip tests cover every field.
package wire

import (
	"errors"
	"flag"
	"io"
	"net"
	"strconv"
)

// ServicePort is where an http lane listens by default. Its load lanes share
// its network namespace, so they reach it on loopback.
const ServicePort = 8080

// Loopback is where a load lane reaches its service when it shares the
// service's network namespace (a container's, on Docker).
const Loopback = "127.0.0.1"

// ServiceURL is what a load lane targets: its service, on loopback.
var ServiceURL = ServiceURLAt(Loopback, ServicePort)

// ServiceURLAt is the URL a load lane sends its requests to: its
// service's at host (an address) and port.
func ServiceURLAt(host string, port int) string {
	return "http://" + net.JoinHostPort(host, strconv.Itoa(port)) + "/"
}

// DataDir is where disk workloads write: a volume of the lane's own.
const DataDir = "/data"

// Command is the workload program's command line: `workload KIND [flags]`.
// A zero field is not written and parses back as zero; the workload fills
// its defaults with WithDefaults.
type Command struct {
	Kind        string
	MB          int     // MiB to hash (md5), allocate (mem) or write/read (disk)
	Threads     int     // worker threads (primes, spin)
	Events      int     // events to run (primes)
	MaxPrime    int     // upper bound of each event's prime search (primes)
	Seconds     float64 // how long to run or hold (spin, mem, http, load, disk-read)
	RateMBps    float64 // MiB per second to allocate; 0 is as fast as it can (mem)
	WorkUS      int     // CPU work per request in microseconds (http)
	AllocKB     int     // KiB allocated per request (http)
	GOMAXPROCS  string  // auto, host or a number (http)
	Port        int     // port to listen on (http)
	Target      string  // URL to load (load)
	Requests    int     // requests to send; 0 is until Seconds (load)
	Concurrency int     // requests in flight, closed loop like ab -c (load)
	RPS         float64 // requests per second, open loop; 0 is closed loop (load)
	Burst       int     // requests sent at once in the open loop (load)
	BS          int     // block size in bytes (disk)
	Depth       int     // reads or writes in flight (disk-read, disk-write)
	Dir         string  // directory on the device to measure (disk)
	// ProgressFile is where to keep the latest progress record instead of
	// printing progress lines (ProgressPath); the summary is printed.
	ProgressFile string
	// BeginFile, for lanes that begin together, is a file to wait for
	// before the first unit of work (BeginPath): the server writes it into
	// every such lane at once.
	BeginFile string
}

// flags binds every field of c to its flag, with zero defaults, so that
// Args and Parse share one list; it returns the names in declaration
// order, the order Args writes them in.
func (c *Command) flags(fs *flag.FlagSet) (order []string) {
	i := func(p *int, name, usage string) { fs.IntVar(p, name, 0, usage); order = append(order, name) }
	f := func(p *float64, name, usage string) { fs.Float64Var(p, name, 0, usage); order = append(order, name) }
	s := func(p *string, name, usage string) { fs.StringVar(p, name, "", usage); order = append(order, name) }
	i(&c.MB, "mb", "MiB to hash (md5), allocate (mem) or write/read (disk)")
	i(&c.Threads, "threads", "worker threads (primes, spin)")
	i(&c.Events, "events", "events to run (primes)")
	i(&c.MaxPrime, "max-prime", "upper bound of each event's prime search (primes)")
	f(&c.Seconds, "seconds", "how long to run (spin, http, load, disk-read) or hold memory (mem)")
	f(&c.RateMBps, "rate", "MiB per second to allocate; 0 is as fast as it can (mem)")
	i(&c.WorkUS, "work-us", "CPU work per request, in microseconds of this machine (http)")
	i(&c.AllocKB, "alloc-kb", "KiB to allocate per request (http)")
	s(&c.GOMAXPROCS, "gomaxprocs", "auto, host or a number (http)")
	i(&c.Port, "port", "port to listen on (http)")
	s(&c.Target, "target", "URL to send requests to (load)")
	i(&c.Requests, "requests", "requests to send; 0 is until -seconds (load)")
	i(&c.Concurrency, "concurrency", "requests in flight, closed loop like ab -c (load)")
	f(&c.RPS, "rps", "requests per second, open loop; 0 is closed loop (load)")
	i(&c.Burst, "burst", "requests sent at once in the open loop (load)")
	i(&c.BS, "bs", "block size in bytes (disk-write, disk-read)")
	i(&c.Depth, "depth", "reads or writes in flight (disk-read, disk-write)")
	s(&c.Dir, "dir", "directory on the device to measure (disk-write, disk-read)")
	s(&c.ProgressFile, "progress-file", "keep the latest progress record in this file instead of printing progress lines")
	s(&c.BeginFile, "begin-file", "wait for this file to exist before the first unit of work")
	return order
}

// Args is the command line for c: its kind, then each non-zero field as a
// flag, in the order the flags are declared.
func (c Command) Args() []string {
	args := []string{c.Kind}
	// Binding sets the fields to their zero defaults; the values are put
	// back afterwards, so each flag then reads the field's value.
	var bound Command
	fs := flag.NewFlagSet(c.Kind, flag.ContinueOnError)
	order := bound.flags(fs)
	bound = c
	for _, name := range order {
		if f := fs.Lookup(name); f.Value.String() != f.DefValue {
			args = append(args, "-"+name, f.Value.String())
		}
	}
	return args
}

// Parse reads a command line that Args wrote (or a person typed).
func Parse(args []string) (Command, error) {
	if len(args) == 0 || args[0] == "" || args[0][0] == '-' {
		return Command{}, errors.New("usage: workload md5|primes|spin|mem|http|load|disk-write|disk-read|runtimes [flags]")
	}
	c := Command{Kind: args[0]}
	fs := flag.NewFlagSet(c.Kind, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.flags(fs)
	if err := fs.Parse(args[1:]); err != nil {
		return Command{}, err
	}
	if fs.NArg() > 0 {
		return Command{}, errors.New("unexpected argument " + strconv.Quote(fs.Arg(0)))
	}
	return c, nil
}

// WithDefaults fills the fields left zero with the workload's defaults.
func (c Command) WithDefaults() Command {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	def(&c.MB, 64)
	def(&c.Threads, 1)
	def(&c.Events, 10000)
	def(&c.MaxPrime, 10000)
	def(&c.WorkUS, 1000)
	def(&c.Port, ServicePort)
	def(&c.Concurrency, 1)
	def(&c.Burst, 1)
	def(&c.BS, 1<<20)
	def(&c.Depth, 1)
	if c.Seconds == 0 && c.Kind != "load" && c.Kind != "http" {
		c.Seconds = 10
	}
	if c.GOMAXPROCS == "" {
		c.GOMAXPROCS = "auto"
	}
	if c.Dir == "" {
		c.Dir = DataDir
	}
	return c
}
