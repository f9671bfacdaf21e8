// Command server runs the Limit Lab dashboard. The same binary is the
// workload program inside the experiment containers (`server workload
// ...`), and the sampler beside a remote engine (`server sampler ...`).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/sampler"
	"github.com/limitlab/limitlab/internal/store"
	"github.com/limitlab/limitlab/internal/workload"
	"github.com/limitlab/limitlab/internal/workshop"
	"github.com/limitlab/limitlab/web"
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
		case "export":
			run, args = exportMain, args[1:]
		case "version":
			fmt.Println("limitlab", web.Version())
			return
		case "healthcheck":
			run, args = healthcheckMain, args[1:]
		case "pause":
			// A pod's sandbox in the test cluster: it holds the pod's
			// namespaces until it is asked to stop.
			<-ctx.Done()
			return
		}
	}
	if err := run(ctx, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
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
func prepareEngine(ctx context.Context, eng engine.Engine, smp *sampler.Client, cgroupRoot, bin string, images []string, st *store.Store, dataDir, instance string, log *slog.Logger) (engine.HostInfo, string, error) {
	var src engine.CgroupSource
	if smp != nil {
		if err := smp.Ping(ctx); err != nil {
			return engine.HostInfo{}, "", err
		}
		src = smp
	}
	image, err := engine.EnsureImage(ctx, eng, bin, log)
	if err != nil {
		return engine.HostInfo{}, "", err
	}
	if old, err := store.SwapImage(dataDir, image); err != nil {
		log.Warn("workload image", slog.Any("err", err))
	} else if old != "" {
		engine.RemoveOldImage(ctx, eng, old, log)
	}
	// A facilitator's images are looked for, never pulled; block IO
	// control is decided by what a probe container is given.
	host, err := engine.ProbeHost(ctx, eng, engine.HostProbe{CgroupRoot: cgroupRoot, Image: image, Images: images, Sampler: src, Log: log})
	if err != nil {
		return host, "", err
	}
	w, th := host.IOWeight(), host.IOThrottle()
	log.Info("engine", slog.String("version", host.EngineVersion), slog.String("api", host.APIVersion),
		slog.String("cgroup", host.Cgroup.String()), slog.Int("cpus", host.NCPU), slog.String("stats", host.StatsSource),
		slog.Bool("io_weights", w.Supported), slog.String("io_weights_why", w.Reason),
		slog.Bool("io_throttles", th.Supported), slog.String("io_throttles_why", th.Reason))
	// Only this server's leftovers: another on the same engine keeps its
	// containers.
	if err := workshop.ReapLeftovers(ctx, engine.Docker{Engine: eng}, st, instance, log); err != nil {
		return host, "", err
	}
	return host, image, nil
}
