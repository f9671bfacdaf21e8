package engine

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/moby/moby/client"
)

// probeWeight and probeRate are what the IO probe container asks for.
const (
	probeWeight = 300
	probeRate   = 1 << 20
)

// IOProbe is what a probe container showed of block IO control: what the
// engine said when it was created, and what its cgroup files held.
type IOProbe struct {
	Warnings  []string `json:"warnings"`
	Scheduler string   `json:"scheduler,omitempty"` // the data root disk's IO scheduler
	// LowLatency and Strict are BFQ's low_latency and strict_guarantees
	// for the disk ("1" or "0"; "" where BFQ is not the scheduler). With
	// low_latency on, BFQ raises the weight of newly started queues for
	// their first seconds; without strict_guarantees it fills the disk's
	// idle moments with other queues' requests. Both blur the weights.
	LowLatency string `json:"bfq_low_latency,omitempty"`
	Strict     string `json:"bfq_strict_guarantees,omitempty"`
	// WeightFile and ThrottleFile are the cgroup files read back, and
	// what they held ("" if none could be read).
	WeightFile    string `json:"weight_file,omitempty"`
	WeightValue   string `json:"weight_value,omitempty"`
	ThrottleFile  string `json:"throttle_file,omitempty"`
	ThrottleValue string `json:"throttle_value,omitempty"`
}

// probeIO decides whether block IO weights and throttles work from what a
// probe container is actually given, not from what the engine's info
// claims: it creates one asking for --blkio-weight and a read throttle on
// the data root's disk, reads the create warnings (an engine that cannot
// apply a weight says "Weight discarded" and creates the container
// anyway), starts it, reads its cgroup files back, and removes it. Weights
// also need a disk scheduler that honours them (BFQ): mq-deadline, kyber
// and none ignore them. It updates h's IO support, each with its reason; a
// probe that fails is a reason, never a reason not to start.
func probeIO(ctx context.Context, eng Engine, h *HostInfo, image string, log *slog.Logger) {
	dev := h.DataRootDevice
	if dev == "" {
		why := "not probed: the data root's disk is not known here (" + h.DataRootNote + ")"
		h.Caps.setIO(Support{Reason: why}, Support{Reason: why})
		return
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "limitlab-probe-" + hex.EncodeToString(b)
	res := specs.Resources{BlkioWeight: probeWeight, ReadBps: specs.DeviceRate{Path: dev, Rate: probeRate}}
	opts := CreateOptions("", "probe", 0, specs.PlannedLane{
		Workload: specs.Workload{Kind: specs.KindSpin, Threads: 1, Seconds: 30}, Resources: res, Target: -1}, image, "")
	opts.Name = name
	opts.Config.Labels = map[string]string{LabelRun: name}
	created, err := eng.ContainerCreate(ctx, opts)
	if err != nil {
		// An engine that refuses the probe's limits cannot apply them:
		// the server still starts, and says why.
		why := "a probe container asking for --blkio-weight and a read throttle on " + dev + " was refused: " + err.Error()
		h.Caps.setIO(Support{Reason: why}, Support{Reason: why})
		return
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if _, err := eng.ContainerRemove(rctx, created.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
			log.Warn("IO probe: remove", slog.Any("err", err))
		}
	}()
	p := IOProbe{Warnings: created.Warnings, Scheduler: scheduler(dev)}
	if p.Scheduler == "bfq" {
		read := func(name string) string {
			b, _ := os.ReadFile("/sys/block/" + filepath.Base(dev) + "/queue/iosched/" + name)
			return strings.TrimSpace(string(b))
		}
		p.LowLatency, p.Strict = read("low_latency"), read("strict_guarantees")
	}
	readBack := h.StatsSource == StatsCgroup // the probe's cgroup read here
	if readBack {
		if _, err := eng.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
			p.Warnings = append(p.Warnings, "Limitation discarded: the probe container did not start: "+err.Error())
			readBack = false
		} else if ins, err := eng.ContainerInspect(ctx, created.ID, client.ContainerInspectOptions{}); err != nil || ins.Container.State == nil {
			readBack = false
		} else if cg, err := FindCgroup(h.cgroupRoot, created.ID, ins.Container.State.Pid); err == nil {
			p.readBack(cg)
			if h.local && progressVisible(ins.Container.State.Pid) {
				h.ProgressSource = ProgressFile
			}
		} else {
			readBack = false
		}
	}
	h.IO = &p
	h.Caps.setIO(p.judge(readBack, dev))
}

// readBack reads the weight and throttle files of the probe's cgroup: v1's
// blkio.weight or blkio.bfq.weight and blkio.throttle.read_bps_device, v2's
// io.weight or io.bfq.weight and io.max.
func (p *IOProbe) readBack(cg *CgroupReader) {
	weights, throttle := []string{"blkio.weight", "blkio.bfq.weight"}, "blkio.throttle.read_bps_device"
	if cg.v2 {
		weights, throttle = []string{"io.weight", "io.bfq.weight"}, "io.max"
	}
	for _, f := range weights {
		if b, err := cg.File("blkio", f); err == nil {
			p.WeightFile, p.WeightValue = f, strings.TrimSpace(string(b))
			break
		}
	}
	if b, err := cg.File("blkio", throttle); err == nil {
		p.ThrottleFile, p.ThrottleValue = throttle, strings.TrimSpace(string(b))
	}
}

// judge turns what the probe saw into support and reasons.
func (p *IOProbe) judge(readBack bool, dev string) (weight, throttle Support) {
	for _, w := range p.Warnings {
		if strings.Contains(w, "Weight discarded") || strings.Contains(strings.ToLower(w), "blkio weight") {
			weight.Reason = "the engine discarded a probe container's --blkio-weight: " + w
		}
		if strings.Contains(w, "throttle") || strings.Contains(w, "Limitation discarded") {
			throttle.Reason = "the engine discarded a probe container's read throttle: " + w
		}
	}
	rate := fmt.Sprint(probeRate)
	switch {
	case throttle.Reason != "":
	case !readBack:
		throttle = Support{Supported: true, Reason: "the engine took a probe's throttle without a warning; its cgroup files are not visible here to read it back"}
	case strings.Contains(p.ThrottleValue, rate):
		throttle.Supported = true
	default:
		throttle.Reason = fmt.Sprintf("a probe container asked for a %s B/s read throttle on %s, but its %s holds %q", rate, dev, p.ThrottleFile, p.ThrottleValue)
	}
	switch {
	case weight.Reason != "":
	case p.Scheduler != "bfq":
		weight.Reason = fmt.Sprintf("the data root's disk %s runs the %s IO scheduler, which ignores weights (BFQ honours them: echo bfq > /sys/block/%s/queue/scheduler)",
			dev, p.Scheduler, filepath.Base(dev))
	case readBack && p.WeightFile == "":
		weight.Reason = "a probe container's cgroup has no weight file (blkio.weight, blkio.bfq.weight, io.weight or io.bfq.weight)"
	case p.LowLatency == "1" || p.Strict == "0":
		q := "/sys/block/" + filepath.Base(dev) + "/queue/iosched/"
		weight = Support{Supported: true, Reason: fmt.Sprintf("BFQ honours weights on %s, approximately: its low_latency (%s) raises newly started writers' weights for their first seconds, and without strict_guarantees (%s) it fills idle moments with other queues' requests; for shares close to the weights: echo 0 > %slow_latency; echo 1 > %sstrict_guarantees",
			dev, p.LowLatency, p.Strict, q, q)}
	default:
		weight.Supported = true
	}
	return weight, throttle
}

// scheduler is the IO scheduler the kernel runs for a disk: the bracketed
// one in /sys/block/<disk>/queue/scheduler.
func scheduler(dev string) string {
	b, err := os.ReadFile("/sys/block/" + filepath.Base(dev) + "/queue/scheduler")
	if err != nil {
		return "unknown"
	}
	if i, j := bytes.IndexByte(b, '['), bytes.IndexByte(b, ']'); i >= 0 && j > i {
		return string(b[i+1 : j])
	}
	return strings.TrimSpace(string(b))
}
