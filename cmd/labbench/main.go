// Command labbench measures how faithfully the labs reproduce their
// predictions on this host: it runs every lab with a verdict several times
// on the real engine and writes a table of predicted and measured ratios
// into docs/benchmarks.md. Run it with `make bench-labs`.
//
// The binary is also its own workload program (`labbench workload ...`), as
// the server is, so the workload image can be built from it.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/limitlab/limitlab/internal/benchdoc"
	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/experiments/models"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/workload"
	"github.com/limitlab/limitlab/internal/workshop"
	"github.com/moby/moby/client"
)

const (
	beginMarker = "<!-- labbench:begin -->"
	endMarker   = "<!-- labbench:end -->"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "workload" {
		os.Exit(workload.Main(os.Args[2:], os.Stdout, os.Stderr))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "labbench:", err)
		os.Exit(1)
	}
}

// laneStats collects one row's predicted and measured ratios over the
// runs: a prediction made from what the run measured (a phase's foreign
// load, a disk's operations) is its run's own.
type laneStats struct {
	name      string
	predicted []float64
	measured  []float64
	noise     []string // each run's host load (foreign and steal, cores), on the first row
}

// prediction is the row's median prediction over the runs.
func (s laneStats) prediction() float64 { return median(s.predicted) }

func run(ctx context.Context) error {
	runs := flag.Int("runs", 3, "runs of each lab")
	out := flag.String("out", "docs/benchmarks.md", "markdown file whose labbench section is replaced")
	only := flag.String("labs", "", "comma-separated lab ids (default: every lab with a verdict)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	eng, err := engine.NewClient()
	if err != nil {
		return err
	}
	defer eng.Close()
	if _, err := eng.Ping(ctx, client.PingOptions{}); err != nil {
		return fmt.Errorf("no Docker engine answers at %s: %w", eng.DaemonHost(), err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	image, err := engine.EnsureImage(ctx, eng, self, log)
	if err != nil {
		return err
	}
	// Block IO labs need the probe's word on weights and throttles.
	host, err := engine.ProbeHost(ctx, eng, engine.HostProbe{CgroupRoot: "/sys/fs/cgroup", Image: image, Log: log})
	if err != nil {
		return err
	}
	mgr := workshop.NewManager(eng, workshop.Options{Image: image, Host: host, Log: log})
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = mgr.Shutdown(sctx)
	}()

	var table bytes.Buffer
	fmt.Fprintf(&table, "Measured on %s: Docker %s (API %s), cgroup v%s, %d CPUs, kernel %s; %d runs of each lab, one after another.\n\n",
		time.Now().UTC().Format("2006-01-02"), host.EngineVersion, host.APIVersion, host.Cgroup, host.NCPU, host.Kernel, *runs)
	table.WriteString("Each row is one figure the lab's verdict compares, named by its metric: wall time or CPU relative to the first lane, a phase's rate relative to the first phase, a lane's share of its CPUs' time throttled, or an IO rate against its limit. The host load is each run's foreign load and steal, in cores, while it ran.\n\n")
	table.WriteString("*Against 5%* is the farthest of the runs from the prediction, against the 5% every lab aims at: relative for a ratio, in absolute points for a share of time throttled or a prediction of (almost) nothing. A row past 5% says whether its lab gives the reason for its wider tolerance (`tolerance_why`, which its verdict prints).\n\n")
	table.WriteString("| lab | metric | row | predicted | measured median | spread (min–max) | deviation | against 5% | verdicts passed | host load per run |\n")
	table.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, lab := range experiments.Labs() {
		if lab.Verdict == nil || (*only != "" && !slices.Contains(strings.Split(*only, ","), lab.ID)) {
			continue
		}
		if shows, why := lab.Shows(host.Experiments()); !shows {
			fmt.Fprintf(&table, "| %s | | | | | | | | skipped: %s | |\n", lab.ID, why)
			continue
		}
		stats, passed, inconclusive, err := benchLab(ctx, mgr, lab, *runs)
		if err != nil {
			return fmt.Errorf("lab %s: %w", lab.ID, err)
		}
		for i, s := range stats {
			med, pred := median(s.measured), s.prediction()
			lo, hi := slices.Min(s.measured), slices.Max(s.measured)
			verdicts, noise := "", ""
			if i == 0 {
				verdicts = fmt.Sprintf("%d of %d", passed, *runs)
				if inconclusive > 0 {
					verdicts += fmt.Sprintf(" (%d inconclusive)", inconclusive)
				}
				noise = strings.Join(s.noise, ", ")
			}
			deviation := "not predicted"
			switch {
			case absolute(lab.Verdict.Metric, pred):
				deviation = fmt.Sprintf("%+.3f", med-pred)
			case pred != 0:
				deviation = fmt.Sprintf("%+.1f%%", 100*(med/pred-1))
			}
			fmt.Fprintf(&table, "| %s | %s | %s | %.2f | %.3f | %.3f–%.3f | %s | %s | %s | %s |\n",
				lab.ID, lab.Verdict.Metric, s.name, pred, med, lo, hi, deviation, againstFive(*lab.Verdict, s), verdicts, noise)
		}
	}
	return benchdoc.Replace(*out, beginMarker, endMarker, "## Fidelity of the CPU labs (`make bench-labs`)", table.String())
}

// benchLab runs a lab n times and gathers every lane's measured ratio.
func benchLab(ctx context.Context, mgr *workshop.Manager, lab experiments.Lab, n int) ([]laneStats, int, int, error) {
	spec := lab.LabSpec()
	plan, errs := mgr.Pool().Validate(spec)
	if errs != nil {
		return nil, 0, 0, errs
	}
	var stats []laneStats
	passed, inconclusive := 0, 0
	for k := range n {
		start := time.Now()
		r, err := mgr.SubmitFrom(spec, plan, "", "")
		if err != nil {
			return nil, 0, 0, err
		}
		select {
		case <-r.Done():
		case <-ctx.Done():
			return nil, 0, 0, ctx.Err()
		}
		v := r.View()
		if v.Verdict == nil || !v.Verdict.Judged {
			return nil, 0, 0, fmt.Errorf("run %d not judged (state %s %s): %+v", k+1, v.State, v.Error, v.Verdict)
		}
		if v.Verdict.Metric == specs.MetricRuntimes {
			runtimeRow(v.Verdict)
		}
		// A verdict's rows are its lanes, or its own labels (one per
		// phase for a phased lab): as many as it predicted.
		if stats == nil {
			for i := range v.Verdict.Predicted {
				name := fmt.Sprintf("row %d", i+1)
				switch {
				case i < len(v.Verdict.Labels):
					name = v.Verdict.Labels[i]
				case i < len(v.Lanes):
					name = v.Lanes[i].Name
				}
				stats = append(stats, laneStats{name: name})
			}
		}
		for i, m := range v.Verdict.Measured {
			if i < len(stats) && i < len(v.Verdict.Predicted) {
				stats[i].measured = append(stats[i].measured, m)
				stats[i].predicted = append(stats[i].predicted, v.Verdict.Predicted[i])
			}
		}
		noise := "not measured"
		if v.Noise != nil && v.Noise.Measured {
			noise = fmt.Sprintf("%.2f", v.Noise.ForeignCores+v.Noise.StealCores)
		}
		stats[0].noise = append(stats[0].noise, noise)
		if v.Verdict.Pass {
			passed++
		}
		if v.Verdict.Inconclusive {
			inconclusive++
		}
		fmt.Fprintf(os.Stderr, "labbench: %s run %d/%d in %.0fs: measured %s (pass %v, inconclusive %v, host load %s cores)\n",
			lab.ID, k+1, n, time.Since(start).Seconds(), fmtRatios(v.Verdict.Measured), v.Verdict.Pass, v.Verdict.Inconclusive, noise)
	}
	return stats, passed, inconclusive, nil
}

// absolute says a row is judged in absolute points: a share of time
// throttled, or a prediction of (almost) nothing. (A phase's 0 is no
// prediction at all; a burst's 0 periods throttled is one.)
func absolute(metric string, predicted float64) bool {
	return metric == specs.MetricThrottling ||
		(predicted < models.StarvedRatio && (predicted != 0 || metric == specs.MetricBurst))
}

// againstFive is how far a row's farthest run is from its prediction,
// against 5%, and, past it, whether the lab says why its tolerance is
// wider.
func againstFive(v specs.VerdictSpec, s laneStats) string {
	if pred := s.prediction(); !absolute(v.Metric, pred) && pred == 0 {
		return "no prediction: the verdict says why"
	}
	// Each run against its own prediction; the row is in absolute points
	// or relative as its median prediction is.
	worst, abs := 0.0, absolute(v.Metric, s.prediction())
	for k, m := range s.measured {
		p := s.predicted[k]
		d := math.Abs(m - p)
		switch {
		case !abs && p == 0:
			continue // not predicted in this run; its verdict says why
		case !abs:
			d = math.Abs(m/p - 1)
		}
		worst = max(worst, d)
	}
	text := fmt.Sprintf("within (farthest %.1f%%)", 100*worst)
	if abs {
		text = fmt.Sprintf("within (farthest %.3f)", worst)
	}
	if worst <= 0.05 {
		return text
	}
	text = fmt.Sprintf("%.1f%% past", 100*(worst-0.05))
	if abs {
		text = fmt.Sprintf("%.3f past", worst-0.05)
	}
	if v.ToleranceWhy != "" {
		return text + fmt.Sprintf("; the lab's tolerance %.2f, with its reason", v.Tolerance)
	}
	return text + fmt.Sprintf("; the lab's tolerance %.2f, no reason given", v.Tolerance)
}

func fmtRatios(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.3f", x)
	}
	return strings.Join(parts, " : ")
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return math.NaN()
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// runtimeRow gives a runtimes verdict the one row the table shows of it:
// of the figures judged against their runtime's rule (predicted), how
// many agreed (measured).
func runtimeRow(v *models.Verdict) {
	judged, agree := 0.0, 0.0
	for _, c := range v.Runtimes {
		if c.Judged {
			judged++
			if c.Agrees {
				agree++
			}
		}
	}
	v.Labels, v.Predicted, v.Measured = []string{"figures agreeing with their rule"}, []float64{judged}, []float64{agree}
}
