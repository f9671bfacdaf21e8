package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/limitlab/limitlab/internal/experiments/kernelfiles"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"golang.org/x/sys/unix"
)

// KernelReading is one cgroup file a limit writes, and what the
// container's cgroup held when it was read.
type KernelReading struct {
	kernelfiles.KernelFile
	Got     string `json:"got"`
	Present bool   `json:"present"` // the kernel offers the file
	Holds   bool   `json:"holds"`   // it shows the wanted value

	missing bool  // the kernel does not offer it
	err     error // it could not be read
}

// kernelReadMax bounds what one file's reading keeps (io.max and the
// weight files hold a line per device).
const kernelReadMax = 512

// ReadKernel reads back, from a running container's cgroup, each file its
// limits write. A file the kernel does not offer is left absent; a file
// that could not be read (a remote node's sampler too slow to answer) is
// asked for once more, and if that fails too, the error says which.
func ReadKernel(cg CgroupFiles, files []kernelfiles.KernelFile) ([]KernelReading, error) {
	out := make([]KernelReading, len(files))
	var failed error
	for try := 0; try < 2; try++ {
		failed = nil
		for i, f := range files {
			if try > 0 && (out[i].Present || out[i].missing) {
				continue
			}
			out[i] = readKernelFile(cg, f)
			if out[i].err != nil {
				failed = fmt.Errorf("%s: %w", f.File, out[i].err)
			}
		}
		if failed == nil {
			break
		}
	}
	return out, failed
}

func readKernelFile(cg CgroupFiles, f kernelfiles.KernelFile) KernelReading {
	r := KernelReading{KernelFile: f}
	b, err := cg.File(f.Controller, f.File)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		r.missing = true
	case err != nil:
		r.err = err
	default:
		r.Present = true
		r.Got = strings.TrimSpace(string(b[:min(len(b), kernelReadMax)]))
		r.Holds = f.Holds(r.Got)
	}
	return r
}

// DeviceNumbers maps each block device path that r names to its
// "major:minor", as the kernel's IO files name it. Only a local engine's
// devices are visible here; others are left out.
func DeviceNumbers(r specs.Resources) map[string]string {
	out := map[string]string{}
	for _, d := range []specs.DeviceRate{r.ReadBps, r.WriteBps, r.ReadIOps, r.WriteIOps, r.BlkioWeightDevice} {
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

// KernelView is what a lane's limits do in the kernel: each cgroup file
// they write on this host, read back from the running container, and the
// same limits in the other cgroup version's files, for comparison.
type KernelView struct {
	Cgroup string          `json:"cgroup"` // the version read: "1" or "2"
	Files  []KernelReading `json:"files"`
	// Other is the other version's files for the same limits.
	OtherCgroup string                   `json:"other_cgroup"`
	Other       []kernelfiles.KernelFile `json:"other"`
	// Note says why nothing was read back (the cgroup files are not
	// visible here).
	Note string `json:"note,omitempty"`
	// Path is the lane's cgroup, where it was read back
	// (/kubepods/burstable/pod…/… for a pod's container).
	Path string `json:"path,omitempty"`
}

// ReadKernelView reads back what applied wrote (in Kubernetes' words for a
// lane given as a pod), through the lane's reader when it reads cgroup
// files; with another reader it lists the files without values, saying
// why.
func ReadKernelView(h HostInfo, rd Reader, applied specs.Resources, pod *specs.Pod) KernelView {
	v2 := h.CgroupV2()
	devs := map[string]string{}
	if h.local {
		devs = DeviceNumbers(applied)
	}
	kv := KernelView{Cgroup: "1", OtherCgroup: "2", Other: kernelfiles.LaneKernelFiles(applied, pod, !v2, devs)}
	if v2 {
		kv.Cgroup, kv.OtherCgroup = "2", "1"
	}
	files := kernelfiles.LaneKernelFiles(applied, pod, v2, devs)
	if cg, ok := rd.(CgroupFiles); ok {
		var err error
		if kv.Files, err = ReadKernel(cg, files); err != nil {
			kv.Note = "not all read back: " + err.Error()
		}
		if p, ok := rd.(interface{ Path() string }); ok {
			kv.Path = p.Path()
		}
		return kv
	}
	for _, f := range files {
		kv.Files = append(kv.Files, KernelReading{KernelFile: f})
	}
	kv.Note = "the container's cgroup files are not visible here (" + h.StatsNote + "): these are the files the engine writes, not read back"
	return kv
}
