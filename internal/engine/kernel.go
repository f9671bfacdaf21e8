package engine

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/limitlab/limitlab/internal/experiments"
)

// KernelReading is one cgroup file a limit writes, and what the
// container's cgroup held when it was read.
type KernelReading struct {
	experiments.KernelFile
	Got     string `json:"got"`
	Present bool   `json:"present"` // the kernel offers the file
	Holds   bool   `json:"holds"`   // it shows the wanted value
}

// kernelReadMax bounds what one file's reading keeps (io.max and the
// weight files hold a line per device).
const kernelReadMax = 512

// ReadKernel reads back, from a running container's cgroup, each file its
// limits write.
func ReadKernel(cg *CgroupReader, files []experiments.KernelFile) []KernelReading {
	out := make([]KernelReading, 0, len(files))
	for _, f := range files {
		r := KernelReading{KernelFile: f}
		if b, err := cg.File(f.Controller, f.File); err == nil {
			r.Present = true
			r.Got = strings.TrimSpace(string(b[:min(len(b), kernelReadMax)]))
			r.Holds = f.Holds(r.Got)
		}
		out = append(out, r)
	}
	return out
}

// Unheld names the flags whose files do not show what they should: a flag
// holds when each of its files does, or, for a flag that writes one of
// several files (Either), when any of them does.
func Unheld(rs []KernelReading) []string {
	var order []string
	held := map[string]bool{}
	for _, r := range rs {
		if _, seen := held[r.Flag]; !seen {
			order = append(order, r.Flag)
			held[r.Flag] = !r.Either
		}
		if r.Either {
			held[r.Flag] = held[r.Flag] || r.Holds
		} else {
			held[r.Flag] = held[r.Flag] && r.Holds
		}
	}
	var out []string
	for _, f := range order {
		if !held[f] {
			out = append(out, f)
		}
	}
	return out
}

// DeviceNumbers maps each block device path that r names to its
// "major:minor", as the kernel's IO files name it. Only a local engine's
// devices are visible here; others are left out.
func DeviceNumbers(r experiments.Resources) map[string]string {
	out := map[string]string{}
	for _, d := range []experiments.DeviceRate{r.ReadBps, r.WriteBps, r.ReadIOps, r.WriteIOps, r.BlkioWeightDevice} {
		if d.Path == "" {
			continue
		}
		if _, done := out[d.Path]; done {
			continue
		}
		var st unix.Stat_t
		if err := unix.Stat(d.Path, &st); err == nil && st.Mode&unix.S_IFMT == unix.S_IFBLK {
			out[d.Path] = fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))
		}
	}
	return out
}
