package engine_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// TestTheEnginesProcessesAreFoundWithoutASearch: the local engine's
// processes are the one that answers its socket (dockerd, the process
// that owns the socket file's listener) and the ones it started (its
// containerd), and a lane's first process's parent is its shim.
func TestTheEnginesProcessesAreFoundWithoutASearch(t *testing.T) {
	eng, image, h := enginetest.Engine(t)
	if !h.ReadsHostLoad() {
		t.Fatalf("the test engine is local, and its host's load is read: %+v", h)
	}
	pids := h.EnginePids()
	if len(pids) == 0 {
		t.Fatal("no engine process found")
	}
	names := map[string]int{}
	for _, pid := range pids {
		names[comm(t, pid)]++
	}
	t.Logf("the engine's processes: %v", names)
	// Found through the socket, not by a search that happens to list
	// dockerd first.
	sock := engine.EngineSocket(h)
	if sock == "" || engine.SocketPeer(sock) != pids[0] {
		t.Fatalf("the first engine process %d is not the peer of the engine's socket %q", pids[0], sock)
	}
	if comm(t, pids[0]) != "dockerd" {
		t.Errorf("the socket's peer is %q, not dockerd", comm(t, pids[0]))
	}
	if names["containerd"] == 0 && !externalContainerd(pids[0]) {
		t.Errorf("dockerd runs its own containerd, and it was not found among %v", names)
	}
	_, pid := enginetest.StartLane(t, eng, image, "enginepids-test", specs.PlannedLane{Target: -1,
		Workload: specs.Workload{Kind: specs.KindSpin, Threads: 1, Seconds: 5}, Resources: specs.Resources{NanoCPUs: 1e8}})
	shim := engine.ProcParent("/proc", pid)
	if got := comm(t, shim); !strings.HasPrefix(got, "containerd-shim") {
		t.Errorf("the lane's first process %d has the parent %d %q, not a shim", pid, shim, got)
	}
}

func comm(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		t.Fatalf("process %d: %v", pid, err)
	}
	return strings.TrimSpace(string(b))
}

// externalContainerd says whether dockerd was told of a containerd it did
// not start.
func externalContainerd(dockerd int) bool {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(dockerd) + "/cmdline")
	return strings.Contains(string(b), "--containerd")
}
