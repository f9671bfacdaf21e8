package specs

import (
	"fmt"

	units "github.com/docker/go-units"
)

// memoryHigh checks a lane's memory_high ("96m"), the cgroup v2 throttle
// below memory.max, against its --memory and the host, and gives it in
// bytes. No engine has a flag for it (Docker's --memory-reservation sets
// memory.low, moby/moby#49599), so the server writes it into the lane's
// cgroup itself, as it does a CFS burst.
func memoryHigh(v string, res Resources, host Host) (int64, string) {
	n, err := units.RAMInBytes(v)
	switch {
	case err != nil:
		return 0, fmt.Sprintf("invalid size %q: want e.g. \"96m\"", v)
	case n < MinMemory:
		return 0, "want at least 6MB, as --memory"
	case host.Kubernetes:
		return 0, "a pod's memory.high is kubelet's to write (Memory QoS, KEP-2570), from its memory request and limit: run this lane on a Docker engine"
	}
	if why, no := host.Unsupported["memory_high"]; no {
		return 0, why
	}
	if res.Memory > 0 && n >= res.Memory {
		return 0, fmt.Sprintf("memory.high acts only below memory.max: want less than --memory (%s), got %s", units.BytesSize(float64(res.Memory)), units.BytesSize(float64(n)))
	}
	return n, ""
}
