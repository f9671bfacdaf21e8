package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/moby/moby/client"
)

// Support says whether the host can apply a limit, and why not.
type Support struct {
	Supported bool   `json:"supported"`
	Reason    string `json:"reason,omitempty"`
}

// HostInfo is what GET /api/host reports: the engine, its cgroups, and
// which limits it can apply.
type HostInfo struct {
	EngineVersion    string             `json:"engine_version"`
	APIVersion       string             `json:"api_version"`
	EngineAPIVersion string             `json:"engine_api_version"`
	OS               string             `json:"os"`
	Kernel           string             `json:"kernel"`
	CgroupVersion    string             `json:"cgroup_version"`
	CgroupDriver     string             `json:"cgroup_driver"`
	NCPU             int                `json:"cpus"`
	MemTotal         int64              `json:"memory_bytes"`
	Limits           map[string]Support `json:"limits"`
	// StatsSource is "cgroup" when the server reads the containers' cgroup
	// files itself, "engine" when it must ask the engine (a remote engine).
	StatsSource string   `json:"stats_source"`
	StatsNote   string   `json:"stats_note"`
	Warnings    []string `json:"engine_warnings,omitempty"`
}

// Experiments is the part of HostInfo that validation needs.
func (h HostInfo) Experiments() experiments.Host {
	eh := experiments.Host{NCPU: h.NCPU, Unsupported: map[string]string{}}
	for field, s := range h.Limits {
		if !s.Supported {
			eh.Unsupported[field] = s.Reason
		}
	}
	return eh
}

// ProbeHost asks the engine what it is and what it supports, and decides
// where stats come from: the cgroup files under cgroupRoot if the engine is
// local and they are visible, else the engine's stats endpoint.
func ProbeHost(ctx context.Context, eng Engine, cgroupRoot string) (HostInfo, error) {
	info, err := eng.Info(ctx, client.InfoOptions{})
	if err != nil {
		return HostInfo{}, fmt.Errorf("runner: engine info: %w", err)
	}
	ver, err := eng.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return HostInfo{}, fmt.Errorf("runner: engine version: %w", err)
	}
	i := info.Info
	h := HostInfo{
		EngineVersion:    ver.Version,
		APIVersion:       eng.ClientVersion(),
		EngineAPIVersion: ver.APIVersion,
		OS:               i.OperatingSystem,
		Kernel:           i.KernelVersion,
		CgroupVersion:    i.CgroupVersion,
		CgroupDriver:     i.CgroupDriver,
		NCPU:             i.NCPU,
		MemTotal:         i.MemTotal,
		Warnings:         i.Warnings,
	}
	if h.CgroupVersion == "" {
		h.CgroupVersion = "1" // engines before API 1.40 report no version; they ran v1
	}
	kernel := func(what string) string {
		return "the engine reports no kernel support for " + what + " (cgroup " + h.CgroupVersion + ")"
	}
	support := func(ok bool, why string) Support {
		if ok {
			return Support{Supported: true}
		}
		return Support{Reason: why}
	}
	h.Limits = map[string]Support{
		"cpus":               support(i.CPUCfsQuota && i.CPUCfsPeriod, kernel("CFS bandwidth control")),
		"cpu-period":         support(i.CPUCfsPeriod, kernel("the CFS period")),
		"cpu-quota":          support(i.CPUCfsQuota, kernel("the CFS quota")),
		"cpu-shares":         support(i.CPUShares, kernel("CPU shares")),
		"cpuset-cpus":        support(i.CPUSet, kernel("cpusets")),
		"memory":             support(i.MemoryLimit, kernel("memory limits")),
		"memory-reservation": support(i.MemoryLimit, kernel("memory limits")),
		"memory-swap":        support(i.SwapLimit, kernel("swap limits")),
		"pids-limit":         support(i.PidsLimit, kernel("pids limits")),
	}
	local := strings.HasPrefix(eng.DaemonHost(), "unix://")
	visible := fileExists(filepath.Join(cgroupRoot, "cgroup.controllers")) || fileExists(filepath.Join(cgroupRoot, "cpuacct"))
	switch {
	case local && visible:
		h.StatsSource = "cgroup"
		h.StatsNote = "read from the containers' cgroup files under " + cgroupRoot
	case !local:
		h.StatsSource = "engine"
		h.StatsNote = "the engine at " + eng.DaemonHost() + " is remote: stats come from its stats endpoint, once a second"
	default:
		h.StatsSource = "engine"
		h.StatsNote = "no cgroup files visible under " + cgroupRoot + ": stats come from the engine's stats endpoint, once a second (mount the host's /sys/fs/cgroup read-only to read them directly)"
	}
	return h, nil
}
